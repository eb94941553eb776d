"""Array corpus: every function in tests/corpus/arrays/ is compiled, imported and checked
against central finite differences of the original function at the inputs its builder
`inputs_<name>()` (in the same file) returns: along three random directions and along every
element (every corpus array has at most 100 elements). Every gradient must have exactly its
parameter's shape and dtype float64. Hand-derived gradients are checked on top.

Functions are discovered with `ast`; the builders are run by exec'ing the corpus file in a
fresh namespace (the compiler itself never runs it; `check_source` runs the original for
finite differences). Writing into an array (`y[i] = ...`) is refused with a CompileError;
tests/test_errors.py checks that message.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import importlib.util

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.verify.check import check_source

CORPUS = Path(__file__).parent / "corpus" / "arrays"

PENDING_FILES = set()  # every file of the corpus is supported now
PENDING = pytest.mark.xfail(strict=False, reason="indexing not yet implemented")
# library.py calls scipy.stats and scipy.linalg: real SciPy, which the tests/stubs stand-in is not
SCIPY_FILES = {"library.py"}
SCIPY = pytest.mark.skipif(importlib.util.find_spec("scipy.stats") is None,
                           reason="needs SciPy (the tests/stubs stand-in has scipy.special.expit only)")

VALUE_REL = 1e-12
DIRECTIONS = 3  # rows 'p.v1'..'p.v3' per array parameter, as check_source makes them


def source_of(file_name):
    return (CORPUS / file_name).read_text(encoding="utf-8")


def function_nodes(file_name):
    """The corpus functions of a file: all but the input builders and the helpers that
    return arrays (named `inputs_...` or not, a function the others call and that has no
    builder is a helper: it has no gradient of its own)."""
    tree = ast.parse(source_of(file_name), filename=str(CORPUS / file_name))
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    names = {n.name for n in defs}
    called = {c.func.id for n in defs for c in ast.walk(n) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    return [
        n
        for n in defs
        if not n.name.startswith("inputs_") and (f"inputs_{n.name}" in names or n.name not in called)
    ]


def discover():
    """Every (file name, function name) of the corpus, in file order."""
    return [
        (path.name, node.name)
        for path in sorted(CORPUS.glob("*.py"))
        for node in function_nodes(path.name)
    ]


CASES = discover()
FILES = sorted({f for f, _ in CASES})


def _marks(file_name):
    return ([PENDING] if file_name in PENDING_FILES else []) + ([SCIPY] if file_name in SCIPY_FILES else [])


def case_params(cases):
    return [
        pytest.param(
            f, n, id=f"{f}::{n}", marks=_marks(f)
        )
        for f, n in cases
    ]


def file_params(files):
    return [
        pytest.param(f, id=f, marks=_marks(f))
        for f in files
    ]


def differentiated(file_name, function_name):
    """The parameters before `*`: the ones differentiated by default (the rest are data)."""
    (node,) = [n for n in function_nodes(file_name) if n.name == function_name]
    return [a.arg for a in node.args.posonlyargs + node.args.args]


_BUILT = {}


def inputs_for(file_name, function_name):
    """The dict `inputs_<function_name>()` returns, the file exec'd in a fresh namespace."""
    if file_name not in _BUILT:
        namespace = {"__name__": "arrays_inputs_" + file_name[:-3]}
        exec(compile(source_of(file_name), str(CORPUS / file_name), "exec"), namespace)
        _BUILT[file_name] = namespace
    builder = _BUILT[file_name].get(f"inputs_{function_name}")
    assert builder is not None, f"{file_name} has no inputs_{function_name}()"
    return builder()


def expected_rows(name, value):
    """The row names check_source gives a parameter at `value`."""
    if np.ndim(value) == 0:
        return [name]
    return [f"{name}.v{k + 1}" for k in range(DIRECTIONS)] + [f"{name} (all"]


def describe(row):
    return (
        f"{row.param}: generated={row.generated!r} fd={row.fd!r} sympy={row.sympy!r} "
        f"rel_error={row.rel_error!r} ok={row.ok} note={row.note!r}"
    )


def close(a, b, rel):
    a, b = float(a), float(b)
    return (
        math.isfinite(a)
        and math.isfinite(b)
        and abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)
    )


# ---- the corpus itself -------------------------------------------------------------------


def test_corpus_is_big_enough():
    assert len(set(CASES)) == len(CASES)
    active = [c for c in CASES if c[0] not in PENDING_FILES]
    assert len(active) >= 55
    assert len(FILES) >= 8
    for name in (
        "elementwise.py",
        "broadcasting.py",
        "reductions.py",
        "linalg.py",
        "shapes.py",
        "control.py",
        "losses.py",
        "indexing.py",
    ):
        assert name in FILES


@pytest.mark.parametrize("file_name", file_params(FILES))
def test_every_function_has_an_input_builder(file_name):
    tree = ast.parse(source_of(file_name))
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in function_nodes(file_name):
        assert f"inputs_{node.name}" in names
    for name in names:
        if name.startswith("inputs_"):
            assert name[len("inputs_") :] in names, f"builder {name} builds for nothing"


@pytest.mark.parametrize("file_name", file_params(FILES))
def test_inputs_are_small_and_complete(file_name):
    # Every array has at most 100 elements, so check_source compares every element; every
    # parameter without a default gets a value.
    for node in function_nodes(file_name):
        inputs = inputs_for(file_name, node.name)
        params = [
            a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        ]
        assert sorted(inputs) == sorted(params), node.name
        for key, value in inputs.items():
            assert (
                np.size(value) <= 100
            ), f"{node.name}: {key} has {np.size(value)} elements"
            if key in differentiated(file_name, node.name):
                assert np.asarray(value).dtype == np.float64 or isinstance(
                    value, float
                ), f"{node.name}: differentiated parameter {key} is not float64"


@pytest.mark.parametrize(("file_name", "function_name"), case_params(CASES))
def test_array_corpus_function(file_name, function_name):
    source = source_of(file_name)
    inputs = inputs_for(file_name, function_name)
    reports = check_source(
        source, str(CORPUS / file_name), functions=[function_name], at=inputs, wrt="all"
    )
    assert [r.name for r in reports] == [function_name]
    report = reports[0]
    wrt = differentiated(file_name, function_name)
    assert list(report.wrt) == wrt
    assert len(report.points) == 1
    (point,) = report.points
    problems = []
    if not close(point.value_generated, point.value_original, VALUE_REL):
        problems.append(
            f"value_generated={point.value_generated!r} != value_original={point.value_original!r}"
        )
    expected = [r for p in wrt for r in expected_rows(p, inputs[p])]
    got = [row.param for row in point.rows]
    if len(got) != len(expected) or not all(
        g == e or (e.endswith("(all") and g.startswith(e))
        for g, e in zip(got, expected)
    ):
        problems.append(f"rows {got} != expected {expected}")
    for row in point.rows:
        if not row.ok:
            problems.append("row not ok: " + describe(row))
    assert not problems, f"{file_name}::{function_name}\n" + "\n".join(problems)
    assert report.ok


@pytest.mark.parametrize(("file_name", "function_name"), case_params(CASES))
def test_gradient_shapes_and_dtypes(file_name, function_name):
    # Called directly: `<f>_grad` returns one gradient per differentiated parameter, each
    # of exactly its parameter's shape and dtype float64; `<f>_value_and_grad` agrees.
    inputs = inputs_for(file_name, function_name)
    compiled = compile_source(
        source_of(file_name), file_name, functions=[function_name], wrt="all"
    )
    module = load_module(compiled.text, "shapes_" + file_name[:-3])
    wrt = differentiated(file_name, function_name)
    assert list(compiled.functions[0].wrt) == wrt, "differentiated parameters"
    grad = getattr(module, function_name + "_grad")(**inputs)
    value, grad2 = getattr(module, function_name + "_value_and_grad")(**inputs)
    grads = (grad,) if len(wrt) == 1 else tuple(grad)
    grads2 = (grad2,) if len(wrt) == 1 else tuple(grad2)
    assert len(grads) == len(wrt) == len(grads2)
    assert np.ndim(value) == 0
    for name, g, g2 in zip(wrt, grads, grads2):
        x = inputs[name]
        assert np.shape(g) == np.shape(
            x
        ), f"d/d{name}: shape {np.shape(g)} != {np.shape(x)}"
        assert (
            np.asarray(g).dtype == np.float64
        ), f"d/d{name}: dtype {np.asarray(g).dtype}"
        if np.ndim(x) == 0:
            assert isinstance(g, (float, np.floating)), f"d/d{name}: {type(g).__name__}"
        else:
            assert isinstance(g, np.ndarray), f"d/d{name}: {type(g).__name__}"
        assert np.all(np.isfinite(g)), f"d/d{name} not finite"
        np.testing.assert_array_equal(
            g, g2, err_msg=f"_grad and _value_and_grad disagree on {name}"
        )


@pytest.mark.parametrize("file_name", file_params(FILES))
def test_compile_is_deterministic(file_name):
    names = [n for f, n in CASES if f == file_name]
    source = source_of(file_name)
    first = compile_source(source, str(CORPUS / file_name), functions=names, wrt="all").text
    second = compile_source(source, str(CORPUS / file_name), functions=names, wrt="all").text
    assert first.encode("utf-8") == second.encode("utf-8")
    module = load_module(first, "arrays_det_" + file_name[:-3])
    for name in names:
        assert callable(getattr(module, f"{name}_grad"))
        assert callable(getattr(module, f"{name}_value_and_grad"))


def test_scalar_function_without_numpy_has_no_array_plumbing():
    source = (
        "import math\n"
        "\n"
        "\n"
        "def f(x, y):\n"
        "    z = math.sin(x) * y + x**2\n"
        "    return math.exp(z) / (1.0 + y * y)\n"
    )
    text = compile_source(source, "scalar_only.py", wrt="all").text
    assert "unbroadcast" not in text
    assert "np." not in text
    assert "numpy" not in text
    assert compile_source(source, "scalar_only.py", wrt="all").text == text
    module = load_module(text, "arrays_scalar_only")
    gx, gy = module.f_grad(0.3, 0.7)
    assert isinstance(gx, float) and isinstance(gy, float)


# ---- hand-derived gradients -----------------------------------------------------------------


def grad_of(source, name, *args, **kwargs):
    module = load_module(
        compile_source(source, "hand.py", functions=[name], wrt="all").text, "arrays_hand"
    )
    return getattr(module, name + "_grad")(*args, **kwargs)


def assert_exact(got, expected):
    assert np.shape(got) == np.shape(expected)
    assert np.asarray(got).dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


RNG = np.random.default_rng(20240)


def test_hand_sum_of_matvec():
    source = "import numpy as np\n\n\ndef f(w, *, X):\n    return np.sum(X @ w)\n"
    X, w = RNG.standard_normal((5, 3)), RNG.standard_normal(3)
    assert_exact(grad_of(source, "f", w, X=X), X.sum(axis=0))


def test_hand_row_bias_broadcast():
    source = "import numpy as np\n\n\ndef f(x, b):\n    return np.sum(x + b)\n"
    x, b = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    gx, gb = grad_of(source, "f", x, b)
    assert_exact(gx, np.ones((4, 3)))
    assert_exact(gb, 4.0 * np.ones(3))


def test_hand_column_times_row():
    source = "import numpy as np\n\n\ndef f(u, v):\n    return np.sum(u * v)\n"
    u, v = RNG.standard_normal((4, 1)), RNG.standard_normal((1, 3))
    gu, gv = grad_of(source, "f", u, v)
    assert_exact(gu, np.full((4, 1), v.sum()))
    assert_exact(gv, np.full((1, 3), u.sum()))


def test_hand_mean_of_squares():
    source = "import numpy as np\n\n\ndef f(x):\n    return np.mean(x**2)\n"
    x = RNG.standard_normal((3, 5))
    assert_exact(grad_of(source, "f", x), 2.0 * x / x.size)


def test_hand_scalar_times_array():
    source = "import numpy as np\n\n\ndef f(a, x):\n    return np.sum(a * x)\n"
    x = RNG.standard_normal((2, 3))
    ga, gx = grad_of(source, "f", 0.7, x)
    assert np.shape(ga) == () and isinstance(ga, (float, np.floating))
    assert math.isclose(float(ga), float(x.sum()), rel_tol=1e-12)
    assert_exact(gx, np.full((2, 3), 0.7))


def test_hand_softmax_cross_entropy():
    source = (
        "import numpy as np\n\n\n"
        "def f(Z, *, Y):\n"
        "    shifted = Z - np.max(Z, axis=1, keepdims=True)\n"
        "    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))\n"
        "    return -np.mean(np.sum(Y * log_probs, axis=1))\n"
    )
    n, k = 6, 4
    Z = RNG.standard_normal((n, k))
    Y = np.eye(k)[RNG.integers(0, k, n)]
    softmax = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    assert_exact(grad_of(source, "f", Z, Y=Y), (softmax - Y) / n)


def test_hand_sum_of_matmat():
    source = "import numpy as np\n\n\ndef f(A, B):\n    return np.sum(A @ B)\n"
    A, B = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))
    gA, gB = grad_of(source, "f", A, B)
    assert_exact(gA, np.ones((3, 2)) @ B.T)
    assert_exact(gB, A.T @ np.ones((3, 2)))


def test_hand_quadratic_form():
    source = "import numpy as np\n\n\ndef f(x, *, A):\n    return x @ A @ x\n"
    x, A = RNG.standard_normal(4), RNG.standard_normal((4, 4))
    assert_exact(grad_of(source, "f", x, A=A), (A + A.T) @ x)


def test_hand_row_max_is_one_hot():
    source = "import numpy as np\n\n\ndef f(X):\n    return np.sum(np.max(X, axis=1))\n"
    X = RNG.permutation(np.arange(12.0)).reshape(3, 4)
    expected = (X == X.max(axis=1, keepdims=True)).astype(float)
    assert_exact(grad_of(source, "f", X), expected)


def test_hand_prod():
    source = "import numpy as np\n\n\ndef f(x):\n    return np.prod(x)\n"
    x = RNG.uniform(0.5, 1.5, 5)
    assert_exact(grad_of(source, "f", x), np.prod(x) / x)


def test_hand_norm():
    source = "import numpy as np\n\n\ndef f(x):\n    return np.linalg.norm(x)\n"
    x = RNG.standard_normal(6)
    assert_exact(grad_of(source, "f", x), x / np.sqrt(np.sum(x * x)))


def test_hand_cumsum_is_reversed_cumsum():
    source = (
        "import numpy as np\n\n\ndef f(x, *, c):\n    return np.sum(np.cumsum(x) * c)\n"
    )
    x, c = RNG.standard_normal(6), RNG.standard_normal(6)
    assert_exact(grad_of(source, "f", x, c=c), np.cumsum(c[::-1])[::-1])


def test_hand_mean_over_axis_tuple():
    source = (
        "import numpy as np\n\n\n"
        "def f(T, *, c):\n"
        "    return np.sum(np.mean(T, axis=(0, 2)) * c)\n"
    )
    T, c = RNG.standard_normal((2, 3, 4)), RNG.standard_normal(3)
    assert_exact(
        grad_of(source, "f", T, c=c), np.broadcast_to(c[None, :, None] / 8.0, T.shape)
    )


def test_hand_transpose_axes():
    source = (
        "import numpy as np\n\n\n"
        "def f(T, *, M):\n"
        "    return np.sum(np.transpose(T, (2, 0, 1)) * M)\n"
    )
    T, M = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 2, 3))
    assert_exact(grad_of(source, "f", T, M=M), np.transpose(M, (1, 2, 0)))


def test_hand_concatenate_splits():
    source = (
        "import numpy as np\n\n\n"
        "def f(a, b, *, c):\n"
        "    return np.sum(np.concatenate([a, b]) * c)\n"
    )
    a, b, c = RNG.standard_normal(2), RNG.standard_normal(3), RNG.standard_normal(5)
    ga, gb = grad_of(source, "f", a, b, c=c)
    assert_exact(ga, c[:2])
    assert_exact(gb, c[2:])


def test_hand_one_step_recurrence():
    # h = tanh(W @ 0 + x): dW = outer(g, 0) = 0, dx = 2 h (1 - h^2) for sum(h^2)
    source = (
        "import numpy as np\n\n\n"
        "def f(W, x, *, T):\n"
        "    h = np.zeros_like(x)\n"
        "    for t in range(T):\n"
        "        h = np.tanh(W @ h + x)\n"
        "    return np.sum(h**2)\n"
    )
    W, x = RNG.standard_normal((3, 3)), RNG.standard_normal(3)
    gW, gx = grad_of(source, "f", W, x, T=1)
    h = np.tanh(x)
    assert_exact(gW, np.zeros((3, 3)))
    assert_exact(gx, 2.0 * h * (1.0 - h**2))


def test_hand_repeated_gather_accumulates():
    # x[idx] with repeated indices: each element's gradient counts its occurrences
    source = (
        "import numpy as np\n\n\ndef f(x, *, idx):\n    return np.sum(x[idx] * 2.0)\n"
    )
    x, idx = RNG.standard_normal(5), np.array([1, 3, 1, 1, 0])
    assert_exact(grad_of(source, "f", x, idx=idx), 2.0 * np.bincount(idx, minlength=5))
