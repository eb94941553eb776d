"""`gradgen compile --backend array-api` (gradgen/codegen/array_api.py): the generated text, the same
gradients as the NumPy backend on NumPy, Dask (lazily), PyTorch and array-api-strict
arrays, the refusals, the header and the command.

array-api-compat, array-api-strict, dask and distributed are in the test extra; PyTorch is
not (a large install): its tests run where `pip install torch==2.13.0` put it, and skip
otherwise. A test whose library is missing skips and says which.
"""

import ast
import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.tools import cli
from gradgen.codegen import freshness
from gradgen.codegen.array_api import recorded
from gradgen.errors import CompileError
from regenerate_goldens import WRT

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden_array_api"
EXAMPLES = ["mlp", "logistic_regression"]


def source(name):
    return (ROOT / "examples" / f"{name}.py").read_bytes()


def compiled(name, backend, wrt="all"):
    return compile_source(source(name), f"examples/{name}.py", backend=backend, wrt=wrt)


def modules(name):
    """(the NumPy backend's module, the array-api backend's) for examples/<name>.py."""
    return (load_module(compiled(name, "numpy").text, f"{name}_numpy"),
            load_module(compiled(name, "array-api").text, f"{name}_xp"))


def point(name, n=60):
    """A seeded point for the example's loss (X, Y or X, y are data)."""
    rng = np.random.default_rng(7)
    if name == "mlp":
        return {"W1": rng.standard_normal((5, 4)), "b1": rng.standard_normal(4),
                "W2": rng.standard_normal((4, 3)), "b2": rng.standard_normal(3),
                "X": rng.standard_normal((n, 5)), "Y": np.eye(3)[rng.integers(0, 3, n)]}
    return {"w": rng.standard_normal(5), "b": 0.3, "X": rng.standard_normal((n, 5)),
            "y": (rng.random(n) > 0.5).astype(float)}


def as_library(values, convert):
    return {k: convert(v) if isinstance(v, np.ndarray) else v for k, v in values.items()}


def assert_close(got, want):
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g, dtype=float), w, rtol=1e-12, atol=1e-15)


# --- the generated text -----------------------------------------------------------------------

@pytest.mark.parametrize("name", EXAMPLES)
def test_generated_text_is_the_golden_file(name):
    golden = (GOLDEN / f"{name}_grad.py").read_bytes()
    assert compiled(name, "array-api", WRT.get(name)).text.encode("utf-8") == golden, (
        f"the array-api text changed: look at it, then write compile_source(..., backend='array-api').text of "
        f"examples/{name}.py to tests/golden_array_api/{name}_grad.py")


def test_the_mlp_module_reads_as_array_api_code():
    text = (GOLDEN / "mlp_grad.py").read_text()
    body = text.split("def loss_grad(")[1].split("\n\n\ndef ")[0]
    assert "    xp = array_namespace(W1, b1, W2, b2, X, Y)\n    # forward pass\n    h = xp.tanh(X @ W1 + b1)\n" in body
    assert "    logits_mask = xp.astype(logits == max_logits, real_dtype(xp, logits))\n" in body
    tree = ast.parse(text)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "np"]
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imports == ["import math", "from array_api_compat import array_namespace"]
    calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not calls & {"float", "int", "bool"} and not any(c.endswith(".item") for c in calls)  # Dask stays lazy


def test_header_records_the_backend_and_the_body_hash():
    text = compiled("mlp", "array-api").text
    lines = text.split("\n")
    body = text.split("\n", 6)[6]
    assert lines[1] == "# Do not edit: run `gradgen compile --backend array-api examples/mlp.py --wrt all` again instead."
    assert lines[2] == f'# Source "examples/mlp.py"; body sha256 {hashlib.sha256(body.encode()).hexdigest()}.'
    assert lines[3] == "# Compiled: loss."
    assert lines[4] == "# Differentiated (--wrt all): loss with respect to W1, b1, W2, b2."
    assert lines[5] == ("# Backend: array-api (the array library is taken from the arguments; needs "
                        "array-api-compat).")
    header = freshness.read_header(text.encode("utf-8"))
    assert (header.source, header.body_ok) == ("examples/mlp.py", True)


def test_recorded_backend(tmp_path):
    (tmp_path / "a.py").write_text(compiled("mlp", "array-api").text)
    (tmp_path / "n.py").write_text(compiled("mlp", "numpy").text)
    (tmp_path / "other.py").write_text("x = 1\n")
    assert [recorded(tmp_path / f) for f in ("a.py", "n.py", "other.py", "missing.py")] == [
        "array-api", "numpy", None, None]


# --- the same numbers as the NumPy backend ------------------------------------------------------

@pytest.mark.parametrize("name", EXAMPLES)
def test_numpy_arrays_give_the_numpy_backends_gradient_exactly(name):
    pytest.importorskip("array_api_compat", reason="the array-api extra (array-api-compat) is not installed")
    reference, xp_module = modules(name)
    p = point(name)
    for want, got in zip(reference.loss_grad(**p), xp_module.loss_grad(**p), strict=True):
        np.testing.assert_array_equal(got, want)
    value, grads = xp_module.loss_value_and_grad(**p)
    want_value, want_grads = reference.loss_value_and_grad(**p)
    assert float(value) == float(want_value)
    assert_close(grads, want_grads)


@pytest.mark.parametrize("name", EXAMPLES)
def test_dask_gradient_is_lazy_and_equals_numpys(name):
    pytest.importorskip("array_api_compat", reason="the array-api extra (array-api-compat) is not installed")
    dask = pytest.importorskip("dask", reason="dask is not installed (it is in the test extra)")
    da = pytest.importorskip("dask.array", reason="dask.array is not installed (dask[array], the test extra)")
    reference, xp_module = modules(name)
    p = point(name, n=200)
    chunked = as_library(p, lambda a: da.from_array(a, chunks=(50,) + a.shape[1:]))

    def no_computing(*args, **kwargs):
        raise AssertionError("the generated code computed a Dask array")

    with dask.config.set(scheduler=no_computing):  # any compute (float(), bool(), .item()) would raise
        grads = xp_module.loss_grad(**chunked)
        value, grads_too = xp_module.loss_value_and_grad(**chunked)
    assert all(isinstance(g, da.Array) for g in (*grads, value, *grads_too))
    assert grads[0].numblocks == chunked["W1" if name == "mlp" else "w"].numblocks
    assert len(dict(grads[0].__dask_graph__())) > 4 * 4  # a graph over every chunk of X
    computed = dask.compute(*grads, scheduler="synchronous")
    assert_close(computed, reference.loss_grad(**p))
    assert float(dask.compute(value, scheduler="synchronous")[0]) == pytest.approx(
        float(reference.loss_value_and_grad(**p)[0]), rel=1e-14)


@pytest.mark.parametrize("name", EXAMPLES)
def test_torch_cpu_tensors(name):
    pytest.importorskip("array_api_compat", reason="the array-api extra (array-api-compat) is not installed")
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    reference, xp_module = modules(name)
    p = point(name)
    grads = xp_module.loss_grad(**as_library(p, torch.asarray))
    assert all(isinstance(g, torch.Tensor) and g.dtype == torch.float64 for g in grads)
    assert_close([g.numpy() for g in grads], reference.loss_grad(**p))


@pytest.mark.parametrize("name", EXAMPLES)
def test_array_api_strict_runs_it_so_only_the_standard_is_called(name):
    pytest.importorskip("array_api_compat", reason="the array-api extra (array-api-compat) is not installed")
    xs = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed (the test extra)")
    reference, xp_module = modules(name)
    p = point(name)
    grads = xp_module.loss_grad(**as_library(p, xs.asarray))
    assert all(g.dtype == xs.float64 for g in grads)
    assert_close([np.asarray(g) for g in grads], reference.loss_grad(**p))
    # float32 stays float32: the helpers take the arrays' own real dtype
    grads32 = xp_module.loss_grad(**as_library(p, lambda a: xs.asarray(a, dtype=xs.float32)))
    assert all(g.dtype == xs.float32 for g in grads32)


def test_a_function_of_numbers_keeps_numpys_spelling():
    text = compile_source(source("seed_net"), "examples/seed_net.py", backend="array-api", wrt="all").text
    assert "import numpy as np" in text and "array_namespace" not in text
    assert "def sigmoid(xp, x):" in text and "    h = sigmoid(np, z1)\n" in text
    module = load_module(text, "seed_xp")
    assert module.loss_grad() == (1.0, 2.0, 1.0, 1.0, 2.0)


# --- refusals ---------------------------------------------------------------------------------

REFUSALS = [
    ("scipy", "import numpy as np\nimport scipy.special\n\n\ndef loss(w, *, x):\n"
              "    return np.sum(scipy.special.gammaln(w * x))\n",
     "loss.py:6:19: --backend array-api: scipy.special.gammaln is SciPy's, and the Array API standard has no "
     "equivalent; compile with --backend numpy\n        return np.sum(scipy.special.gammaln(w * x))\n"
     "                      ^"),
    ("not in the standard", "import numpy as np\n\n\ndef loss(w):\n    return np.sum(np.diag(w) ** 2)\n",
     "loss.py:5:19: --backend array-api: np.diag is not in the Array API standard; compile with --backend numpy\n"
     "        return np.sum(np.diag(w) ** 2)\n                      ^"),
    ("write", "import numpy as np\n\n\ndef loss(w):\n    u = w * 2.0\n    u[0] = 1.0\n    return np.sum(u ** 2)\n",
     "loss.py:6:5: --backend array-api: the code for this line writes into an array in place (`u[0] = ...`), "
     "which not every array library allows (JAX arrays are immutable); compile with --backend numpy\n"
     "        u[0] = 1.0\n        ^"),
    ("the gradient's write", "import numpy as np\n\n\ndef loss(x):\n    return np.sum((x[1:] - x[:-1]) ** 2)\n",
     "loss.py:5:5: --backend array-api: the code for this line writes into an array in place (`dloss_dx[1:] = "
     "...`), which not every array library allows (JAX arrays are immutable); compile with --backend numpy\n"
     "        return np.sum((x[1:] - x[:-1]) ** 2)\n        ^"),
    ("draw", "import numpy as np\n\n\ndef loss(w, rs):\n    eps = rs.randn(3)\n    return np.sum((w + eps) ** 2)\n",
     "loss.py:5:11: --backend array-api: the random draw rs.randn(...) makes NumPy arrays; pass the noise in as a "
     "parameter, or compile with --backend numpy\n        eps = rs.randn(3)\n              ^"),
    ("constant", "import numpy as np\n\nW0 = np.array([1.0, 2.0])\n\n\ndef loss(w):\n    return np.sum((w - W0) ** 2)\n",
     "loss.py:3:1: --backend array-api: the module-level array 'W0' is a NumPy array, and the generated code takes "
     "every array's library from the arguments; pass it as a parameter, or compile with --backend numpy\n"
     "    W0 = np.array([1.0, 2.0])\n    ^"),
    ("helper", "import numpy as np\n\n\ndef loss(w):\n    return np.prod(w) + np.sum(w)\n",
     "loss.py:5:5: --backend array-api: the code generated here needs gradgen's NumPy helper 'prod_grad', which "
     "has no Array API version; compile with --backend numpy\n        return np.prod(w) + np.sum(w)\n        ^"),
    ("reserved name", "import numpy as np\n\n\ndef loss(w):\n    real_dtype = w * 2.0\n    return np.sum(real_dtype ** 2)\n",
     "loss.py:5:5: --backend array-api: the name 'real_dtype' is one the array-api backend writes into the "
     "generated module; rename it\n        real_dtype = w * 2.0\n        ^"),
    ("function default", "import numpy as np\n\n\ndef loss(w, *, x, act=np.tanh):\n    return np.sum(act(w * x))\n",
     "loss.py:4:1: --backend array-api: the function default np.tanh is NumPy's; pass the function at the call "
     "instead, or compile with --backend numpy\n    def loss(w, *, x, act=np.tanh):\n    ^"),
]


@pytest.mark.parametrize("text, message", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_refusals_name_the_call_and_the_backend(text, message):
    compile_source(text, "loss.py", wrt="all")  # the NumPy backend writes it
    with pytest.raises(CompileError) as caught:
        compile_source(text, "loss.py", backend="array-api", wrt="all")
    assert caught.value.format() == message


def test_the_users_call_is_named_before_its_derivatives():
    """gammaln's derivative calls scipy.special.digamma; the refusal names what the user wrote."""
    text = "import numpy as np\nimport scipy.special\n\n\ndef loss(w, *, x):\n    return np.sum(scipy.special.gammaln(w) * x)\n"
    with pytest.raises(CompileError) as caught:
        compile_source(text, "loss.py", backend="array-api", wrt="all")
    assert caught.value.message == ("--backend array-api: scipy.special.gammaln is SciPy's, and the Array API "
                                    "standard has no equivalent; compile with --backend numpy")
    assert (caught.value.line, caught.value.col) == (6, 19)


def test_an_unknown_backend_is_refused():
    with pytest.raises(CompileError, match="unknown backend 'cupy'; the backends are: numpy, array-api"):
        compile_source(source("mlp"), "examples/mlp.py", backend="cupy", wrt="all")


# --- the command --------------------------------------------------------------------------------

def test_compile_writes_keeps_and_switches_the_backend(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mlp.py").write_bytes(source("mlp"))
    module = tmp_path / "generated" / "mlp_grad.py"

    assert cli.main(["compile", "--backend", "array-api", "mlp.py", "--wrt", "all"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        "wrote generated/mlp_grad.py (loss_grad, loss_value_and_grad)", "  backend: array-api"]
    first = module.read_bytes()
    assert recorded(module) == "array-api"

    assert cli.main(["compile", "mlp.py"]) == 0  # as the pre-commit hook runs it: the backend stays
    assert capsys.readouterr().out.splitlines()[1] == (
        "  backend: array-api (the backend of the module it replaced; --backend numpy changes it)")
    assert module.read_bytes() == first
    assert cli.main(["status"]) == 0
    assert capsys.readouterr().out == "fresh  generated/mlp_grad.py (from mlp.py)\n1 fresh\n"

    assert cli.main(["compile", "--backend", "numpy", "mlp.py"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("  loss: d/d(W1, b1, W2, b2)")
    assert recorded(module) == "numpy"
    assert module.read_text() == compile_source(source("mlp"), "mlp.py", wrt="all").text


def test_compile_refusal_is_located_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loss.py").write_text(REFUSALS[1][1])
    assert cli.main(["compile", "--backend", "array-api", "loss.py"]) == 1
    assert capsys.readouterr().err == REFUSALS[1][2] + "\n"
    assert not (tmp_path / "generated").exists()


def test_the_dask_example_runs_on_a_local_cluster():
    pytest.importorskip("array_api_compat", reason="the array-api extra (array-api-compat) is not installed")
    pytest.importorskip("dask.array", reason="dask[array] is not installed (the dask extra)")
    pytest.importorskip("distributed", reason="distributed is not installed (the dask extra)")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "dask_mlp.py")], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "the gradient is a lazy dask.array.core.Array: 352 tasks over 8 chunks of 2500 rows"
    losses = [float(line.split()[-1]) for line in lines[1:-1]]
    assert len(losses) == 5 and all(a > b for a, b in zip(losses, losses[1:]))
    assert float(lines[-1].split()[-1]) < 1e-12  # the NumPy backend's gradient, to rounding
