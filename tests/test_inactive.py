"""Issue 22 item 1: code no derivative flows through runs as written.

The corpus in tests/corpus/inactive/ writes each form the issue names (np.empty, a
function gradgen has never heard of, `dtype=X.dtype`, `dtype=bool`, `(*w.shape, 1)`,
`range(...)` kept as a value, `[0] * (n + 1)`, builtin `sum(xs, start)`, `is None` on a None
default, None passed to a helper, isinstance, f-strings, string comparisons, a generator
made by np.random.default_rng inside the loss, sliding_window_view, multigammaln of
integers, a method of a data array) inside a loss whose gradient `gradgen check` compares
with finite differences and sympy. Where a derivative would have to pass through such code,
the error is located at it and names the call, the value and the parameter.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.verify.check import check_source

CORPUS = Path(__file__).parent / "corpus" / "inactive"
CASES = [(path.name, node.name[len("inputs_"):]) for path in sorted(CORPUS.glob("*.py"))
         for node in ast.parse(path.read_text()).body
         if isinstance(node, ast.FunctionDef) and node.name.startswith("inputs_")]


def _program(file_name):
    namespace = {"__name__": "inactive_" + file_name[:-3]}
    exec(compile((CORPUS / file_name).read_text(), str(CORPUS / file_name), "exec"), namespace)
    return namespace


def _first_parameter(file_name, function_name):
    """The parameter each loss of this corpus is fitted in (its builder's first input): the
    rest is data. tests/oldest_numpy.py compiles the corpus with the same choice."""
    return next(iter(_program(file_name)["inputs_" + function_name]()))


WRT = {(f, n): [_first_parameter(f, n)] for f, n in CASES}


def inputs_for(file_name, function_name):
    """The point the corpus's own builder gives (tests/oldest_numpy.py calls it)."""
    return _program(file_name)["inputs_" + function_name]()


def seed_for(file_name, function_name):
    return 0


def test_the_corpus_writes_every_form_of_the_issue():
    text = "".join(p.read_text() for p in CORPUS.glob("*.py"))
    for form in ("np.empty(", "dtype=X.dtype", "dtype=bool", "(*w.shape, 1)", "range(n)\n", "[0] * (n + 1)",
                 "sum(counts, 0)", "is None", "penalty(w, None)", "isinstance(", 'f"', '== "l1"',
                 "default_rng(", "RandomState(0)", "sliding_window_view(", "multigammaln(", "X.argmax(", "polyvander("):
        assert form in text, form
    assert len(CASES) >= 5


@pytest.mark.parametrize(("file_name", "function_name"), CASES, ids=[f"{f}::{n}" for f, n in CASES])
def test_inactive_code_runs_as_written_and_the_gradient_is_right(file_name, function_name):
    path = CORPUS / file_name
    program = _program(file_name)
    inputs = program["inputs_" + function_name]()
    (first,) = WRT[file_name, function_name]
    (report,) = check_source(path.read_text(), str(path), functions=[function_name], wrt=[first], at=inputs)
    (point,) = report.points
    assert report.wrt == [first]
    a, b = float(point.value_generated), float(point.value_original)
    assert math.isclose(a, b, rel_tol=1e-9), (a, b)
    assert point.rows and all(row.ok for row in point.rows), [(r.param, r.generated, r.fd) for r in point.rows]
    assert report.ok


def _refusal(source):
    with pytest.raises(CompileError) as caught:
        compile_source(source, "loss.py", wrt="all")
    return caught.value.format()


def test_an_active_value_into_a_call_without_a_rule_is_located_and_named():
    source = ("import numpy as np\nfrom mystery import smooth\n\n\ndef loss(w, X):\n    z = X @ w\n"
              "    s = smooth(z)\n    return np.sum(s)\n")
    assert _refusal(source.replace("def loss(w, X)", "def loss(w, *, X)")) == (
        "loss.py:7:9: no derivative rule for 'smooth' on the value of 'z' (which depends on 'w'); 'smooth' comes "
        "from 'mystery', which gradgen does not read: it differentiates functions of this file, of the files beside "
        "it that it imports, and known library functions; copy the function into this file\n        s = smooth(z)\n            ^")


def test_a_method_without_a_rule_on_an_active_value():
    source = "import numpy as np\n\n\ndef loss(w):\n    v = (w * 2).tolist()\n    return sum(v)\n"
    assert _refusal(source) == (
        "loss.py:5:9: no derivative rule for '.tolist()' on the value of 'w' (a differentiated parameter)\n"
        "        v = (w * 2).tolist()\n            ^")


def test_inactive_code_that_only_decides_a_branch_runs_even_on_a_differentiated_value():
    # cond(X) reads X, which is differentiated, but only picks a branch: no derivative flows there
    source = ("import numpy as np\n\n\ndef loss(w, X):\n    z = X @ w\n    if np.linalg.cond(X) > 1e8:\n"
              "        z = z * 0.5\n    return np.sum(z ** 2)\n")
    compiled = compile_source(source, "loss.py", wrt="all")
    assert "np.linalg.cond(X)" in compiled.text


def test_forward_mode_refuses_an_expression_kept_as_written_that_a_tangent_reaches():
    source = "import numpy as np\nfrom mystery import smooth\n\n\ndef loss(w):\n    return np.sum(smooth(w))\n"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "loss.py", emit_kinds=("hvp",), wrt="all")
    assert caught.value.message.startswith("no derivative rule for 'smooth' on the value of 'w'")


def test_python_errors_stay_errors():
    # keeping an expression as written never hides what Python itself would refuse
    assert _refusal("def f(x):\n    return x + None\n") == (
        "loss.py:2:12: 'x + None' computes with None\n        return x + None\n               ^")
    assert _refusal("def f(x):\n    return x * 'a'\n") == (
        "loss.py:2:16: only real numbers are supported, not str constants\n        return x * 'a'\n"
        "                   ^")


def test_the_generated_code_keeps_the_users_text_with_generated_names():
    source = ("import numpy as np\n\n\ndef loss(w, X):\n    buf = np.empty(X.shape[0], dtype=X.dtype)\n"
              "    buf[:] = 1.0\n    for i in range(3):\n        w = w * 1.5\n    return np.sum(buf * (X @ w))\n")
    text = compile_source(source, "loss.py", wrt="all").text
    assert "buf = np.empty(X.shape[0], dtype=X.dtype)" in text
    ns = {}
    exec(text, ns)
    rng = np.random.RandomState(0)
    w, X = rng.randn(2), rng.randn(4, 2)
    dw, dX = ns["loss_grad"](w, X)
    np.testing.assert_allclose(dw, 1.5 ** 3 * X.sum(axis=0))
    np.testing.assert_allclose(dX, np.outer(np.ones(4), 1.5 ** 3 * w))


SORTS = '''import numpy as np


def sorted_first(w, X):
    X.sort()
    return np.sum(w * X)


def sorted_after(w, X):
    y = w * X
    X.sort()
    return np.sum(y)


def sorted_copy(w, X):
    y = w * X
    X = X.copy()
    X.sort()
    return np.sum(y) + np.sum(X)


def filled(w, X):
    buf = np.zeros(3)
    y = w * buf[:2]
    np.copyto(buf, X)
    return np.sum(y)
'''


@pytest.mark.parametrize("name", ["sorted_first", "sorted_copy"])
def test_a_call_that_changes_data_in_place_runs_where_the_gradient_does_not_need_the_old_numbers(name):
    compiled = compile_source(SORTS, "sorts.py", functions=[name], wrt=["w"])
    ns = {}
    exec(compiled.text, ns)
    X = np.array([3.0, 1.0, 2.0])
    expected = np.sort(X)
    assert np.allclose(ns[f"{name}_grad"](np.array([0.5, 0.5, 0.5]), X.copy()),
                       expected if name == "sorted_first" else X)


@pytest.mark.parametrize(("name", "message"), [
    ("sorted_after", "sorts.py:11:5: 'X.sort()' may change 'X' in place, and the gradient reads 'X' as it was: "
                     "work on a copy ('X = X.copy()' first)"),
    ("filled", "sorts.py:25:5: 'np.copyto(buf, X)' may change 'buf' in place, and the gradient reads 'buf' as it "
               "was: work on a copy ('buf = buf.copy()' first)"),
])
def test_a_call_that_changes_what_the_gradient_reads_is_refused_with_advice_that_works(name, message):
    with pytest.raises(CompileError) as caught:
        compile_source(SORTS, "sorts.py", functions=[name], wrt=["w"])
    assert caught.value.format().splitlines()[0] == message


def test_a_buffer_shaped_like_a_differentiated_value_is_data_until_written():
    # GradBench's ode: `out = np.empty_like(y)` reads y for its shape only; the writes carry y
    source = ("import numpy as np\n\n\ndef rhs(x, y):\n    out = np.empty_like(y)\n    out[0] = x[0]\n"
              "    for i in range(1, len(y)):\n        out[i] = x[i] * y[i - 1]\n    return out\n\n\n"
              "def loss(x, s=10):\n    y = np.zeros(len(x))\n    for _ in range(s):\n        y = y + rhs(x, y) / s\n"
              "    return np.sum(y)\n")
    from differences import central
    ns = {}
    exec(compile_source(source, "ode.py", functions=["loss"], wrt="all").text, ns)
    original = {}
    exec(source, original)
    x = np.array([0.3, 0.5, 0.7, 1.1])
    np.testing.assert_allclose(ns["loss_grad"](x), central(original["loss"], x), rtol=1e-6)


@pytest.mark.parametrize(("file_name", "function_name"), CASES, ids=[f"{f}::{n}" for f, n in CASES])
def test_the_hvp_runs_the_inactive_code_too(file_name, function_name):
    """Forward mode over the gradient: code kept as written has no tangent, and the
    Hessian-vector product agrees with central differences of the gradient."""
    from gradgen import load_module

    path = CORPUS / file_name
    inputs = _program(file_name)["inputs_" + function_name]()
    first = next(iter(inputs))
    rest = {k: v for k, v in inputs.items() if k != first}
    module = load_module(compile_source(path.read_text(), str(path), functions=[function_name], wrt=[first],
                                        emit_kinds=("grad", "hvp")).text)
    w = inputs[first]
    v = np.random.default_rng(0).normal(size=np.shape(w))
    hvp = getattr(module, f"{function_name}_hvp")(w, **rest, **{f"d{first}": v})
    grad = getattr(module, f"{function_name}_grad")
    step = 1e-5
    expected = (grad(w + step * v, **rest) - grad(w - step * v, **rest)) / (2 * step)
    np.testing.assert_allclose(hvp, expected, rtol=1e-4, atol=1e-6)


def test_data_read_before_a_loop_overwrites_its_name_is_still_data():
    """Fuzz seed 2015 #1428: `y[...] = np.quantile(X, 0.25)` reads the data X; a later loop
    rebinds X to a differentiated value. The refusal once looked at what X is anywhere, not
    where it is read, and refused the quantile (which no derivative goes through)."""
    source = ("import numpy as np\n\n\ndef f(w, H, *, X):\n    y = np.empty(np.shape(H))\n"
              "    y[...] = np.quantile(X, 0.25)\n    for row in y:\n        X = H * w[0]\n"
              "    return np.sum(y * H) + np.sum(X)\n")
    ns = {}
    exec(compile_source(source, "f.py", wrt="all").text, ns)
    w, H, X = np.array([2.0]), np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 5.0, 9.0])
    dw, dH = ns["f_grad"](w, H, X=X)
    assert dw[0] == pytest.approx(np.sum(H))
    np.testing.assert_allclose(dH, np.quantile(X, 0.25) + w[0])
    assert _refusal(source.replace("np.quantile(X, 0.25)", "np.quantile(H, 0.25)")).startswith(
        "loss.py:6:14: no derivative rule for 'np.quantile' on the value of 'H' (a differentiated parameter)")


def test_forward_mode_reads_data_before_a_loop_gives_it_a_tangent():
    """The forward half of fuzz seed 2015 #1428: the hvp's tangent of X is zero until the
    loop, so the quantile before it has no tangent to refuse; one after the loop does."""
    source = ("import numpy as np\n\n\ndef f(w, H, *, X):\n    y = np.empty(np.shape(H))\n"
              "    y[...] = np.quantile(X, 0.25)\n    for row in y:\n        X = H * w[0]\n"
              "    return np.sum(y * H * w[0]) + np.sum(X * w[0])\n")
    ns = {}
    exec(compile_source(source, "f.py", emit_kinds=("grad", "hvp"), wrt=["w"]).text, ns)
    w, H, X, v, h = np.array([2.0]), np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 5.0, 9.0]), np.array([0.5]), 1e-6
    numeric = (ns["f_grad"](w + h * v, H, X=X) - ns["f_grad"](w - h * v, H, X=X)) / (2 * h)
    np.testing.assert_allclose(ns["f_hvp"](w, H, X=X, dw=v), numeric, rtol=1e-6)
    assert float(ns["f_hvp"](w, H, X=X, dw=v)[0]) == pytest.approx(2 * np.sum(H) * 0.5)  # d2/dw2 of w q sum(H) + w**2 sum(H)
    after = source.replace("    return", "    z = np.quantile(X, 0.25)\n    return").replace("np.sum(X * w[0])", "z")
    with pytest.raises(CompileError) as caught:
        compile_source(after, "f.py", emit_kinds=("hvp",), wrt=["w"])
    assert caught.value.message.startswith("no derivative rule for 'np.quantile' on the value of 'X'")


def test_a_kept_expression_reading_a_name_gradgen_cannot_read_there_says_why():
    """Fuzz soak seed 2017 #1578: the refusal of `S` (parts of a structured parameter bound in
    a loop) was replaced by "no derivative rule for 'np.empty'", which said nothing true."""
    source = ("import numpy as np\n\n\ndef f(s, *, data):\n    acc = sum(s for xi in data)\n"
              "    for t in range(3):\n        S = data[::-1]\n    y = np.empty(np.shape(S))\n"
              "    return np.mean(acc) + 0.0 * np.sum(y)\n")
    assert _refusal(source).splitlines()[0] == (
        "loss.py:8:27: 'S' was bound to parts of 'data' inside a loop or branch, and which parts it names after it "
        "depends on the path taken: write the index into 'data' where it is used")


def test_forward_mode_reads_data_bound_again_in_a_later_branch_as_data():
    """Grammar seed 0 #22: `S` is data kept as written (a comprehension's values), np.quantile
    reads it, and only a later `if` binds S to a differentiated value: the jvp once refused the
    quantile (every name bound to a differentiated value anywhere had a tangent everywhere),
    and the zero tangent of the kept list was `0.0 * [...]`, which raised."""
    source = ("import numpy as np\n\n\ndef f(w, *, Y):\n    parts = [v * 0.5 for v in Y[:2]]\n"
              "    S = np.array(parts).sum()\n    g = np.quantile(S, 0.25)\n    if np.sum(w) > 0.0:\n"
              "        S = np.array([np.sum(w), S])\n    return np.sum(S * w) + g\n")
    module = load_module(compile_source(source, "f.py", emit_kinds=("grad", "jvp", "hvp"), wrt=["w"]).text)
    w, Y, v = np.array([0.5, 0.25]), np.array([1.0, 2.0, 3.0]), np.array([1.0, -2.0])
    value, derivative = module.f_jvp(w, Y=Y, dw=v)
    assert derivative == pytest.approx(float(np.dot(module.f_grad(w, Y=Y), v)), rel=1e-12)
    # S = [w0 + w1, 1.5]: f = (w0 + w1) w0 + 1.5 w1 + 1.5 -> grad (2 w0 + w1, w0 + 1.5)
    np.testing.assert_allclose(module.f_grad(w, Y=Y), [1.25, 2.0])
    np.testing.assert_allclose(module.f_hvp(w, Y=Y, dw=v), [2 * 1.0 - 2.0, 1.0])
    after = source.replace("    return", "    h = np.quantile(S, 0.5)\n    return").replace("+ g", "+ h")
    with pytest.raises(CompileError) as caught:
        compile_source(after, "f.py", emit_kinds=("jvp",), wrt=["w"])
    assert caught.value.message.startswith("no derivative rule for 'np.quantile' on the value of 'S'")


def test_a_check_that_raises_raises_in_the_generated_code_too():
    """New users' repro 4: `else: raise ValueError(...)` closing an if/elif chain on a string
    option was "'raise' is not supported". The branch that raises is an `if` of its own now,
    kept as written (`elif loss != "l1": raise ...`), and the generated gradient raises where
    the user's function does."""
    source = (CORPUS / "checks.py").read_text()
    module = load_module(compile_source(source, "checks.py", functions=["penalised_fit"]).text)
    assert '    elif loss != "l1":\n        raise ValueError("loss must be \'l1\' or \'l2\'")\n' in \
        compile_source(source, "checks.py", functions=["penalised_fit"]).text
    inputs = _program("checks.py")["inputs_penalised_fit"]()
    for options, message in (({"loss": "huber"}, "loss must be 'l1' or 'l2'"),
                             ({"penalty": "elastic"}, "unknown penalty 'elastic'")):
        with pytest.raises(ValueError) as caught:
            module.penalised_fit_grad(**inputs, **options)
        assert str(caught.value) == message
