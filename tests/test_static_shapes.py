"""Static shapes (gradgen/analysis/stated.py): what annotations, defaults and `--shapes` say,
how it flows, and that a gradient written for known shapes is the gradient.

The corpus sweep compiles every corpus function that has an example point three ways (no
shapes, the point's shapes as numbers, the point's shapes as symbols, as jaxtyping states
them) and asserts the three gradients agree to rounding; the plain gradient is checked
against sympy and finite differences elsewhere (test_corpus)."""

from __future__ import annotations

import ast
import copy
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from differences import central
from gradgen import compile_source, load_module
from gradgen.errors import CompileError
from gradgen.ir.nodes import Call, Var
from gradgen.analysis.stated import (StaticShapes, annotated_shape, broadcast, dims_of, shapes_of_point,
                                   symbolic_shapes)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.glob("*/*.py"))


# ---- what the source says ------------------------------------------------------------------

@pytest.mark.parametrize("text, shape", [
    ('Float[np.ndarray, "n d"]', ("n", "d")),
    ('Float[np.ndarray, ""]', ()),
    ('jaxtyping.Float64[np.ndarray, "3 k"]', (3, "k")),
    ('Shaped[Array, "batch _"]', ("batch", None)),
    ('Float[np.ndarray, "*batch d"]', None),
    ('Float[np.ndarray, "#n"]', (None,)),
    ('"Float[np.ndarray, \'h\']"', ("h",)),
    ("float", ()),
    ("int", ()),
    ("np.ndarray", None),
    ("list[float]", None),
])
def test_annotations_state_shapes(text, shape):
    assert annotated_shape(ast.parse(text, mode="eval").body) == shape


def test_dimension_strings():
    assert dims_of("n d") == ("n", "d")
    assert dims_of("...") is None
    assert dims_of("n=3 d") == (None, "d")


def test_broadcasting_of_stated_dimensions():
    assert broadcast(("n", "h"), ("h",)) == ("n", "h")
    assert broadcast(("n", 1), ("n", "k")) == ("n", "k")
    assert broadcast(("n",), ("m",)) == (None,)
    assert broadcast((), (3, 4)) == (3, 4)
    assert broadcast(None, (3,)) is None


def _shapes_of(source, name="f", assumed=None):
    """The StaticShapes of `name` in source, as the compiler sees its lowered body."""
    compiled = compile_source(source, "s.py", [name], shapes=assumed, wrt="all")
    return StaticShapes(compiled.functions[0].ir, compiled.module, assumed), compiled.functions[0].ir


FLOW = '''
import numpy as np
from jaxtyping import Float


def f(x: Float[np.ndarray, "n"], W: Float[np.ndarray, "n k"], b: Float[np.ndarray, "k"], c: float, s=2.0):
    head = x[:-1]
    tail = x[1:]
    gap = tail - head ** 2
    z = x @ W + b
    t = W.T
    r = np.sum(W, axis=0, keepdims=True)
    m = np.mean(W, axis=1)
    return np.sum(gap) + np.sum(z * c) + np.sum(t) + np.sum(r) + np.sum(m) + np.sum(s)
'''


def test_shapes_flow_through_slices_matmul_transposes_and_reductions():
    static, fn = _shapes_of(FLOW)
    by_display = {}
    for name, shape in static.env.items():
        by_display.setdefault(fn.display.get(name, name), shape)
    assert by_display["head"] == by_display["tail"] == by_display["gap"] == ("n - 1",)
    assert by_display["z"] == ("k",)
    assert by_display["t"] == ("k", "n")
    assert by_display["r"] == (1, "k")
    assert by_display["m"] == ("n",)
    assert static.env["c"] == ()
    assert static.env["s"] is None  # a default states nothing: s=2.0 may be called with an array
    assert static.witness("n") == Call("len", (Var("x"),), "builtins")
    assert static.size(Var("W")) == Call("mul", (Call("len", (Var("x"),), "builtins"),
                                                 static.witness("k")), "op")


def test_symbolic_shapes_name_each_length_once():
    point = {"X": np.zeros((5, 3)), "w": np.zeros(3), "b": 0.5, "one": np.zeros((1, 3))}
    assert shapes_of_point(point) == {"X": (5, 3), "w": (3,), "b": (), "one": (1, 3)}
    assert symbolic_shapes(point) == {"X": ("a", "b"), "w": ("b",), "b": (), "one": (1, "b")}


# ---- what the gradient looks like where shapes are known ------------------------------------

def _grad_function(text, name="loss_grad"):
    start = text.index(f"def {name}(")
    end = text.index("\ndef ", start + 1)
    return text[start:end]


def test_the_annotated_mlp_reads_like_the_hand_written_pass():
    text = compile_source((ROOT / "examples" / "mlp_typed.py").read_bytes(), "examples/mlp_typed.py", wrt="all").text
    body = _grad_function(text)
    assert "unbroadcast" not in text and "matmul_grad" not in text and "ones_like" not in text
    for line in ("dloss_dlog_probs = -Y / len(X)", "dloss_dh = dloss_dlogits @ W2.T",
                 "dloss_dW2 = h.T @ dloss_dlogits", "dloss_db2 = np.sum(dloss_dlogits, axis=0)",
                 "dloss_dW1 = X.T @ dloss_dh_inner", "dloss_db1 = np.sum(dloss_dh_inner, axis=0)"):
        assert f"    {line}\n" in body
    assert "sum_prod" not in body  # (computed only to be measured: the count comes from X)


def test_unannotated_code_keeps_its_run_time_dispatch():
    text = (ROOT / "generated" / "mlp_grad.py").read_text()
    assert "matmul_grad_b(" in text and "unbroadcast(" in text


SUMS = '''
import numpy as np
from jaxtyping import Float


def f(a: Float[np.ndarray, "m n"], row: Float[np.ndarray, "1 n"], col: Float[np.ndarray, "m 1"],
      v: Float[np.ndarray, "n"], s: float):
    return np.sum(np.sin(a * row + col * v * s))
'''


def test_broadcasting_is_undone_by_exact_sums():
    text = compile_source(SUMS, "sums.py", wrt="all").text
    body = _grad_function(text, "f_grad")
    assert "unbroadcast" not in text
    assert "axis=0, keepdims=True)" in body and "axis=1, keepdims=True)" in body and "axis=0)" in body
    m = load_module(text, "sums_grad")
    rng = np.random.default_rng(0)
    point = dict(a=rng.standard_normal((4, 3)), row=rng.standard_normal((1, 3)), col=rng.standard_normal((4, 1)),
                 v=rng.standard_normal(3), s=0.7)
    unannotated = load_module(compile_source(_strip_annotations(SUMS), "u.py", wrt="all").text, "u")
    for got, want, x in zip(m.f_grad(**point), unannotated.f_grad(**point), point.values()):
        assert np.shape(got) == np.shape(x)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def _strip_annotations(source):
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = None
    return ast.unparse(tree)


# ---- --shapes ---------------------------------------------------------------------------------

def _partial_batch_is_right_and_another_pattern_an_error(tmp_path):
    """Issue 20 case 2: compiled for a batch of 16, the last batch of 7 gets its own
    gradient (against finite differences); shapes that break the stated pattern raise."""
    sys.path.insert(0, str(tmp_path))
    sys.path.insert(0, str(tmp_path / "generated"))
    try:
        import importlib

        inputs, mlp, mlp_grad = (importlib.import_module(m) for m in ("inputs", "mlp", "mlp_grad"))
        importlib.reload(mlp_grad)
    finally:
        del sys.path[:2]
    p = inputs.mlp()
    data = {"X": p["X"][:7], "Y": p["Y"][:7]}
    params = [p[k] for k in ("W1", "b1", "W2", "b2")]
    grads = mlp_grad.loss_grad(*params, **data)
    for i, (param, grad) in enumerate(zip(params, grads)):
        assert grad.shape == param.shape
        np.testing.assert_allclose(grad, central(lambda x: mlp.loss(*params[:i], x, *params[i + 1:], **data), param),
                                   rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError) as raised:
        mlp_grad.loss_grad(*params, X=p["X"][:7], Y=p["Y"][:6])
    assert str(raised.value) == ("loss_grad: Y has shape (6, 3), but it was written for Y (d, c); d is 7 from X; "
                                 "c is 3 from W2: compile it again for these shapes")
    with pytest.raises(ValueError, match=r"^loss_value_and_grad: b1 has shape \(1, 8\), but it was written for "
                                         r"b1 \(b,\); b is 8 from W1: compile it again"):
        mlp_grad.loss_value_and_grad(params[0], params[1][None], *params[2:], **data)




def test_shapes_option_names_the_shapes_and_a_recompile_keeps_them(tmp_path):
    for name in ("mlp.py", "inputs.py"):
        (tmp_path / name).write_text((ROOT / "examples" / name).read_text())
    run = [sys.executable, "-m", "gradgen"]
    done = subprocess.run(run + ["compile", "mlp.py", "--shapes", "inputs.py:mlp", "--wrt", "all"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "generated" / "mlp_grad.py").read_text()
    header = text.splitlines()[:4]
    assert header[1] == "# Do not edit: run `gradgen compile mlp.py --wrt all --shapes inputs.py:mlp` again instead."
    assert header[3] == ("# Shapes assumed (--shapes inputs.py:mlp): W1 (a, b), b1 (b,), W2 (b, c), b2 (c,), "
                         "X (d, a), Y (d, c).")
    assert "It is written for the shapes W1 (a, b), b1 (b,), W2 (b, c), b2 (c,), X (d, a) and Y\n" in text
    assert "unbroadcast" not in text and "dloss_dW1 = X.T @ dloss_dh_inner" in text
    assert "dloss_dlog_probs = -Y / len(X)" in text  # the count from the argument, not the 16 of the point
    _partial_batch_is_right_and_another_pattern_an_error(tmp_path)
    again = subprocess.run(run + ["compile", "mlp.py"], cwd=tmp_path, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "generated" / "mlp_grad.py").read_text() == text
    checked = subprocess.run(run + ["check", "mlp.py", "--shapes", "inputs.py:mlp"], cwd=tmp_path,
                             capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout.strip().endswith("all gradients match (1 point(s) checked)")
    # --emit is kept too, and --shapes none writes the module for any shapes again
    subprocess.run(run + ["compile", "mlp.py", "--emit", "grad,jvp"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(run + ["compile", "mlp.py"], cwd=tmp_path, check=True, capture_output=True)
    kept = (tmp_path / "generated" / "mlp_grad.py").read_text()
    assert "--emit grad,jvp --shapes inputs.py:mlp` again" in kept and "def loss_jvp(" in kept
    subprocess.run(run + ["compile", "mlp.py", "--shapes", "none", "--emit", "grad"], cwd=tmp_path, check=True,
                   capture_output=True)
    plain = (tmp_path / "generated" / "mlp_grad.py").read_text()
    assert plain.splitlines()[1] == "# Do not edit: run `gradgen compile mlp.py --wrt all` again instead."
    assert "Shapes assumed" not in plain and "unbroadcast(" in plain


# ---- the corpus, three ways -------------------------------------------------------------------

def _user_module(path):
    spec = importlib.util.spec_from_file_location(f"shapes_corpus_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _leaves(value):
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    return [value]


def _agree(got, want):
    a, b = _leaves(got), _leaves(want)
    return len(a) == len(b) and all(np.shape(x) == np.shape(y) and np.allclose(x, y, rtol=1e-9, atol=1e-12)
                                    for x, y in zip(a, b))


@pytest.mark.parametrize("name", FILES)
def test_corpus_gradients_for_stated_shapes_equal_the_plain_ones(name):
    path = CORPUS / name
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    user, failures = None, []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("inputs_") or not any(
                getattr(n, "name", None) == f"inputs_{node.name}" for n in tree.body):
            continue
        user = user or _user_module(path)
        point = getattr(user, f"inputs_{node.name}")()
        try:
            plain = compile_source(source, name, [node.name], wrt="all")
        except CompileError:
            continue
        f = plain.functions[0]
        want = getattr(load_module(plain.text, "shapes_plain"), f.grad_name)(**copy.deepcopy(point))
        for shapes in (shapes_of_point(point), symbolic_shapes(point)):
            text = compile_source(source, name, [node.name], shapes=shapes, wrt="all").text
            got = getattr(load_module(text, "shapes_stated"), f.grad_name)(**copy.deepcopy(point))
            if not _agree(got, want):
                failures.append(f"{node.name} with shapes {shapes}: {got} != {want}")
    assert not failures, "\n".join(failures)


def _statements(function_text):
    [fn] = ast.parse(function_text).body
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    return sum(1 for node in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(node, ast.stmt))


def test_the_annotated_mlp_is_at_most_twice_the_hand_written_pass():
    import inspect

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from hand_written import mlp_grad
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    text = compile_source((ROOT / "examples" / "mlp_typed.py").read_bytes(), "examples/mlp_typed.py", wrt="all").text
    generated, hand = _statements(_grad_function(text)), _statements(inspect.getsource(mlp_grad))
    assert (generated, hand) == (18, 13)  # 17 and the entry check of the shapes (benchmarks/run.py prints these)
    assert generated <= 2 * hand


STRETCHED_MATMUL = '''
import numpy as np
from jaxtyping import Float


def f(A: Float[np.ndarray, "_ _"], B: Float[np.ndarray, "k m"], C: Float[np.ndarray, "p 1 m"]):
    return np.sum(np.sin(A @ B + C))
'''


@pytest.mark.parametrize("stated", ["_ _", "n k"])
def test_a_matmul_whose_gradient_was_stretched(stated):
    """(A @ B) + C with C larger: the gradient reaching A @ B is summed back exactly where
    the shapes are all stated, and by the helper (never by recomputing A @ B) where not."""
    from gradgen.verify.check import check_source

    source = STRETCHED_MATMUL.replace('"_ _"', f'"{stated}"')
    text = compile_source(source, "mm.py", wrt="all").text
    assert "unbroadcast(np.sin" not in text and ("matmul_grad_a(" in text) == (stated == "_ _")
    rng = np.random.default_rng(2)
    point = dict(A=rng.standard_normal((2, 3)), B=rng.standard_normal((3, 4)), C=rng.standard_normal((5, 1, 4)))
    [report] = check_source(source, "mm.py", ["f"], at=point, n_points=1, wrt="all")
    assert report.ok


CONCATENATED = '''
import numpy as np
from jaxtyping import Float


def f(a: Float[np.ndarray, "n"], b: Float[np.ndarray, "m"], W: Float[np.ndarray, "k 3"], V: Float[np.ndarray, "k 2"]):
    z = np.concatenate([a, b, a])
    M = np.concatenate([W, V], axis=1)
    return np.sum(np.sin(z) ** 2) + np.sum(M * M)
'''


def test_a_concatenations_gradient_is_slices():
    from gradgen.verify.check import check_source

    text = compile_source(CONCATENATED, "cat.py", wrt="all").text
    code = " ".join(_grad_function(text, "f_grad").split())
    for line in ("df_dM = 2.0 * M", "df_dW = df_dM[:, :3]", "df_dV = df_dM[:, 3:]",
                 "df_db = df_dz[len(a) : len(a) + len(b)]", "df_da = df_dz[: len(a)] + df_dz[len(a) + len(b) :]"):
        assert line in code
    assert "concatenate_grad" not in text
    rng = np.random.default_rng(0)
    point = dict(a=rng.standard_normal(3), b=rng.standard_normal(4), W=rng.standard_normal((2, 3)),
                 V=rng.standard_normal((2, 2)))
    [report] = check_source(CONCATENATED, "cat.py", ["f"], at=point, n_points=1, wrt="all")
    assert report.ok


def test_an_adjoint_a_loop_starts_at_zero_is_summed_back_by_the_helper():
    """Fuzz seed 1226 #1798: a loop starts w's adjoint at 0.0 (`df_dw = 0.0`), and an exact
    `np.sum(df_dw, axis=(0, 1))` cannot sum a number; the helper, which accepts it, does. t is
    one number (its shape is ()), so the sum back is np.sum of everything, which sums 0.0 too."""
    source = ("import numpy as np\n\n\ndef f(a, b, *, X):\n    w = a\n    h = np.dot(w, b.T)\n"
              "    t = np.sum(a, axis=(0, 1))\n    for i in range(1):\n        w += t\n"
              "    parts = [t + np.mean(h)]\n    return parts[0]\n")
    rng = np.random.default_rng(1)
    point = dict(a=rng.standard_normal((3, 4)), b=rng.standard_normal((1, 4)), X=rng.standard_normal((3, 4)))
    want = load_module(compile_source(source, "z.py", wrt="all").text, "zero_plain").f_grad(**point)
    for shapes in (shapes_of_point(point), symbolic_shapes(point)):
        text = compile_source(source, "z.py", shapes=shapes, wrt="all").text
        assert "df_dt = df_dt + np.sum(df_dw)" in text
        got = load_module(text, "zero_stated").f_grad(**point)
        assert _agree(got, want)
