"""Arrays made of lists, lists made from arrays, and the oracle that checks both (issue 20,
cases 6, 7, 11 and 12).

* `np.array([np.sum(x) for x in X])` is a vector (one number per row), never one number:
  broadcasting it against a scalar `s` is summed back into d/ds (case 12; the same
  misreading raised `'numpy.float64' object is not iterable`, case 11).
* A comprehension over the elements or rows of an array, with conditions, enumerate, zip
  and nesting, given to np.sum, sum(), np.array, np.stack, np.max, max(), ... is the
  array NumPy makes of the list (case 7 stopped with `AssertionError: ones_like(items)`).
  A list in arithmetic (`[...] * 2` repeats it in Python) is a located error.
* `gradgen check`'s sympy oracle follows a statement that makes or reads an array
  element by element, so an element sympy folds to a constant (`np.array([0.0, c * 0.0])`,
  an ODE state at rest) is a zero derivative, not an internal error (case 6).

Every gradient is compared with central finite differences of the original function (and
with closed forms where the program has one), in reverse and forward mode.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.ir.nodes import Call, Var
from gradgen.analysis.arrays import may_be_array
from gradgen.analysis.stated import shapes_of_point
from gradgen.verify.symbolic import sympy_gradient
from gradgen.verify.check import check_source

RNG = np.random.default_rng(20)
A = RNG.normal(size=4)
B = RNG.normal(size=4)
X = RNG.normal(size=(3, 2))
W = RNG.normal(size=(3, 3))


def _namespace(source):
    scope = {}
    exec(compile(source, "<program>", "exec"), scope)  # noqa: S102 - the test's own program
    return scope


def _flat(values):
    return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in values])


def _unflat(vector, like):
    out, k = [], 0
    for v in like:
        n = np.size(v)
        part = vector[k:k + n].reshape(np.shape(v))
        out.append(float(part) if np.ndim(v) == 0 else part)
        k += n
    return out


def _differences(f, args, eps=1e-6):
    """The gradient of f at args by central differences, flattened over all arguments."""
    x = _flat(args)
    out = np.zeros_like(x)
    for i in range(len(x)):
        step = np.zeros_like(x)
        step[i] = eps
        out[i] = (f(*_unflat(x + step, args)) - f(*_unflat(x - step, args))) / (2 * eps)
    return out


def _as_tuple(g):
    return g if isinstance(g, tuple) else (g,)


def _compiled(body, shapes=None, kinds=("grad", "jvp", "hvp")):
    source = "import numpy as np\n\n\n" + textwrap.dedent(body)
    text = compile_source(source, "program.py", functions=["f"], emit_kinds=kinds, shapes=shapes, wrt="all").text
    return _namespace(source)["f"], load_module(text, "program_grad")


def _assert_every_mode_right(body, args, shapes=None, kinds=("grad", "jvp", "hvp")):
    """grad, value_and_grad, jvp and hvp of f against finite differences of f."""
    f, module = _compiled(body, shapes, kinds)
    truth = _differences(f, args)
    np.testing.assert_allclose(_flat(_as_tuple(module.f_grad(*args))), truth, rtol=1e-6, atol=1e-6)
    value, grads = module.f_value_and_grad(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    np.testing.assert_allclose(_flat(_as_tuple(grads)), truth, rtol=1e-6, atol=1e-6)
    rng = np.random.default_rng(1)
    tangents = [rng.normal(size=np.shape(a)) if np.ndim(a) else float(rng.normal()) for a in args]
    names = [f"d{p}" for p in f.__code__.co_varnames[:len(args)]]
    if "jvp" in kinds:
        value, derivative = module.f_jvp(*args, **dict(zip(names, tangents)))
        assert derivative == pytest.approx(truth @ _flat(tangents), rel=1e-6, abs=1e-6)
    if "hvp" in kinds:
        product = _flat(_as_tuple(module.f_hvp(*args, **dict(zip(names, tangents)))))

        def gradient_along(eps):
            return _flat(_as_tuple(module.f_grad(*_unflat(_flat(args) + eps * _flat(tangents), args))))

        np.testing.assert_allclose(product, (gradient_along(1e-5) - gradient_along(-1e-5)) / 2e-5,
                                   rtol=1e-4, atol=1e-4)


# ---- case 12 and case 11: np.array of a list of numbers is a vector -----------------------

ROWS = {
    "sum": "np.sum(x)",
    "min": "np.min(x)",
    "mean of squares": "np.mean(x ** 2)",
}


@pytest.mark.parametrize("reduce", ROWS)
@pytest.mark.parametrize("shapes", [None, "point"])
def test_an_array_of_per_row_numbers_times_a_scalar_sums_back_into_the_scalar(reduce, shapes):
    body = f"def f(X, s):\n    H = np.array([{ROWS[reduce]} for x in X])\n    return np.sum(H * s)\n"
    point = shapes_of_point({"X": X, "s": 2.0}) if shapes else None
    _assert_every_mode_right(body, (X, 2.0), point)


def test_case_12_closed_forms():
    """d/ds of sum(H * s) is sum(H); d/dX puts s on each row's minimum only."""
    _, module = _compiled("def f(X, s):\n    H = np.array([np.min(x) for x in X])\n    return np.sum(H * s)\n",
                          kinds=("grad",))
    dX, ds = module.f_grad(X, 2.0)
    assert np.ndim(ds) == 0 and ds == pytest.approx(np.sum(np.min(X, axis=1)), rel=1e-12)
    expected = np.zeros_like(X)
    expected[np.arange(3), np.argmin(X, axis=1)] = 2.0
    np.testing.assert_array_equal(dX, expected)
    _, module = _compiled("def f(X, s):\n    H = np.array([np.sum(x) for x in X])\n    return np.sum(H * s)\n",
                          kinds=("grad",))
    dX, ds = module.f_grad(X, 2.0)
    assert ds == pytest.approx(np.sum(X), rel=1e-12)
    np.testing.assert_array_equal(dX, np.full_like(X, 2.0))


COLUMNS = {  # case 11, third part, and what it was used in
    "summed": "    return np.sum(H)\n",
    "times a row": "    return np.sum(H * W[0])\n",
    "times a scalar": "    return np.sum(H * s + s ** 2)\n",
    "dot and max": "    return np.dot(H, H) + np.max(H) * s\n",
    "matmul": "    return np.sum(W @ H) * s\n",
    "normalised": "    return np.sum(np.log(H / np.sum(H)) * W[1]) + s\n",
}


@pytest.mark.parametrize("use", COLUMNS)
@pytest.mark.parametrize("shapes", [None, "point"])
def test_an_array_of_column_norms_in_every_mode(use, shapes):
    body = "def f(W, s):\n    H = np.array([np.sum(W[:, j] ** 2) for j in range(3)])\n" + COLUMNS[use]
    point = shapes_of_point({"W": W, "s": 0.7}) if shapes else None
    _assert_every_mode_right(body, (W, 0.7), point)


@pytest.mark.parametrize("cast", ["np.array(a * 2.5, dtype=int)", "np.asarray(a * 2.5).astype(int)",
                                  "np.array([x * 2.5 for x in a]).astype(int)"])
def test_an_array_cast_to_whole_numbers_has_no_derivative(cast):
    """(np.array(x, dtype=int) passed the gradient through the truncation; .astype(int) did in
    forward mode: jvp and hvp)"""
    a = np.array([0.3, 1.7, 2.2])
    _assert_every_mode_right(f"def f(a):\n    return np.sum({cast} * a) + np.sum(np.asarray(a).astype(float) ** 2)\n",
                             (a,))
    _, module = _compiled(f"def f(a):\n    return np.sum({cast} * a)\n", kinds=("grad",))
    np.testing.assert_array_equal(module.f_grad(a), [0.0, 4.0, 5.0])


def test_the_oracle_reads_a_cast_to_whole_numbers_as_a_constant():
    source = ("import numpy as np\n\n\ndef g(c):\n    k = np.array([c * 2.5, c])\n"
              "    return np.sum(np.array(k, dtype=int) * c) + np.sum(np.array([c, 1.0]).astype(int)) * c\n")
    [report] = check_source(source, "cast.py", at={"c": 1.3}, wrt="all")
    [row] = report.points[0].rows
    assert report.ok and row.generated == row.sympy == 6.0


def test_an_array_of_numbers_has_its_stated_shape():
    """np.array([a, b]) of numbers has shape (2,): with the shapes stated, d/ds of sum(k * s)
    is a sum written out, not a helper that looks at run time."""
    body = "def f(c, s):\n    k = np.array([c * 2.0, c * 0.0, s])\n    return np.sum(k * s) + np.sum(np.array(k) * k)\n"
    point = {"c": 0.7, "s": 1.5}
    source = "import numpy as np\n\n\n" + body
    text = compile_source(source, "program.py", shapes=shapes_of_point(point), wrt="all").text
    assert "unbroadcast" not in text
    _assert_every_mode_right(body, (0.7, 1.5), shapes_of_point(point))


@pytest.mark.parametrize("prim", ["array_list", "stack_list", "concatenate_list", "vstack_list", "hstack_list"])
def test_an_array_made_of_a_list_may_be_an_array(prim):
    assert may_be_array(Call(prim, (Var("items"),), "numpy"), set())


# ---- case 7: comprehensions over arrays and lists -----------------------------------------

COMPREHENSIONS = {
    "case 7": ("def f(a):\n    return np.sum([i * 3 for i in a])\n", (A,)),
    "sum() of a list": ("def f(a):\n    return sum([i * i for i in a])\n", (A,)),
    "sum() of a generator": ("def f(a):\n    return sum(i * i for i in a)\n", (A,)),
    "rows into np.array": ("def f(W):\n    return np.sum(np.array([np.sum(r ** 2) for r in W]))\n", (W,)),
    "rows into np.stack": ("def f(W):\n    return np.sum(np.stack([r * 2.0 for r in W]) ** 2)\n", (W,)),
    "stack on axis 1": ("def f(X, a):\n    M = np.stack([r * a[:2] for r in X], axis=1)\n"
                        "    return np.sum(M * np.arange(3.0))\n", (X, A)),
    "rows into np.concatenate": ("def f(X, a):\n    return np.sum(np.concatenate([r * a[0] for r in X]) ** 2)\n",
                                 (X, A)),
    "a condition": ("def f(a):\n    return np.sum([i ** 2 for i in a if i > 0])\n", (A,)),
    "enumerate": ("def f(a):\n    return np.sum([i * x ** 2 for i, x in enumerate(a)])\n", (A,)),
    "enumerate rows": ("def f(X, w):\n    return np.sum(np.stack([w[i] * r for i, r in enumerate(X)]) ** 2)\n",
                       (X, A[:3])),
    "zip": ("def f(a, b):\n    return np.sum([x * y ** 2 for x, y in zip(a, b)])\n", (A, B)),
    "zip of a list and an array": ("def f(a, b):\n    ys = [x * 2.0 for x in a]\n"
                                   "    return sum(y * z for y, z in zip(ys, b))\n", (A, B)),
    "nested": ("def f(a, b):\n    return np.sum([x * y for x in a for y in b])\n", (A, B)),
    "nested over rows, with a condition": ("def f(X):\n    return np.sum([x * y for r in X for x in r for y in r "
                                           "if x > y])\n", (X,)),
    "over a list": ("def f(a):\n    xs = [a, a * 2.0]\n    return np.sum([np.sum(x ** 2) for x in xs])\n", (A,)),
    "max() of a list": ("def f(a):\n    return max([x ** 2 for x in a])\n", (A,)),
    "min() of a list": ("def f(a):\n    return min([x ** 2 for x in a])\n", (A,)),
    "max() and min() of generators": ("def f(a, s):\n    rs = [a, a * s]\n"
                                      "    return max(x * s for x in a) + min(np.sum(r) for r in rs)\n", (A, 1.5)),
    "max() and min() of a list variable": ("def f(a, s):\n    ys = [x * s for x in a]\n    return max(ys) - min(ys)\n",
                                           (A, 1.5)),
    "np.max": ("def f(a):\n    return np.max([x ** 2 for x in a])\n", (A,)),
    "np.min": ("def f(a):\n    return np.min([x ** 2 for x in a])\n", (A,)),
    "np.mean": ("def f(a):\n    return np.mean([x ** 2 for x in a])\n", (A,)),
    "np.exp": ("def f(a):\n    return np.sum(np.exp([x for x in a]))\n", (A,)),
    "np.dot's second argument": ("def f(a, b):\n    return np.dot(b, [x ** 2 for x in a])\n", (A, B)),
    "in a loop": ("def f(a, s):\n    t = 0.0\n    for k in range(2):\n"
                  "        t = t + np.sum(np.array([x * s + k for x in a]) ** 2)\n    return t\n", (A, 1.5)),
    "an element of a comprehension": ("def f(a):\n    return [x ** 2 for x in a][1] - [np.sin(x) for x in a][-1]\n",
                                      (A,)),
    "np.sum of rows": ("def f(X, s):\n    return np.sum([r * s for r in X]) + np.sum(np.mean([r ** 2 for r in X], axis=0) "
                       "* X[0])\n", (X, 1.5)),
    "a helper's list": ("def make(a, s):\n    return [x * s for x in a]\n\n\ndef f(a, s):\n    t = 0.0\n"
                        "    for k in range(3):\n        t = t + sum(make(a, s * k)) + np.sum(make(a, s)) * max(make(a, s))"
                        "\n        if t > 0:\n            t = t + min(make(a, t)) + np.sum(np.stack(make(a, t)) ** 2)\n"
                        "    return t\n", (A, 1.5)),
    "np.sum along an axis, Python's sum of rows": ("def f(X, s):\n    return np.sum(np.sum([r * s for r in X], axis=0) ** 2)"
                                                   " + np.sum(sum([r * s for r in X]) ** 2)\n", (X, 1.5)),
    "a list of lists": ("def f(a, b):\n    return np.sum(np.array([[x * y for y in b] for x in a]) ** 2)\n", (A, B)),
    "np.linalg.norm and np.where": ("def f(a):\n    return np.linalg.norm([x - 1.0 for x in a]) + "
                                    "np.sum(np.where([x > 0 for x in a], a, 0.0) ** 2)\n", (A,)),
    "np.vstack and np.hstack": ("def f(X, s):\n    return np.sum(np.vstack([r * s for r in X]) ** 2) + "
                                "np.sum(np.hstack([r * s for r in X]))\n", (X, 1.5)),
    "zip of three": ("def f(a, b):\n    return np.sum([x * y * z for x, y, z in zip(a, b, a[1:])])\n", (A, B)),
    "a helper in the element": ("def g(x, s):\n    return np.tanh(x * s)\n\n\ndef f(a, s):\n"
                                "    return np.sum([g(x, s) for x in a])\n", (A, 1.5)),
    "neighbours": ("def f(a):\n    return np.sum(np.array([a[i] * a[i + 1] for i in range(len(a) - 1)]))\n", (A,)),
    "a list variable into np.array": ("def f(a, s):\n    h = [x * s for x in a]\n    return np.sum(np.array(h) * s)\n",
                                      (A, 1.5)),
}


LISTS_ON_TWO_PATHS = ("def make(a, s):\n    if s > 0:\n        return [x * s for x in a]\n    return [x ** 2 for x in a]"
                      "\n\n\ndef f(a, s):\n    hs = make(a, s)\n    ys = [x * 2.0 for x in a] if s > 0 else "
                      "[x * 3.0 for x in a]\n    return np.sum(np.stack(hs) * s) + hs[0] + sum(make(a, s * 2.0)) + "
                      "np.sum(ys) * s + max(ys) + np.sum([x for x in a] if s > 0 else [x * s for x in a])\n")


@pytest.mark.parametrize("s", [1.5, -1.5])
def test_a_list_chosen_by_a_condition(s):
    """A helper that returns a list on each of two paths, `[...] if c else [...]`: the result
    is a list, its gradient a list (two uses of it were joined by `+`, list concatenation)."""
    _assert_every_mode_right(LISTS_ON_TWO_PATHS, (A, s))


def test_a_list_on_one_path_only_is_located():
    source = ("import numpy as np\n\n\ndef f(a, s):\n"
              "    return np.sum([x * 2.0 for x in a] if s > 0 else np.array([x * 3.0 for x in a])) * s\n")
    with pytest.raises(CompileError) as caught:
        compile_source(source, "bad.py", wrt="all")
    assert str(caught.value).splitlines()[0] == (
        "bad.py:5:54: the conditional expression gives a list on one path and not on another: make it a list on "
        "each, or np.array(...) of the list on each")


@pytest.mark.parametrize("name", COMPREHENSIONS)
def test_comprehensions_in_every_mode(name):
    body, args = COMPREHENSIONS[name]
    _assert_every_mode_right(body, args)


@pytest.mark.parametrize("name", ["case 7", "rows into np.stack", "enumerate rows", "nested", "np.max",
                                  "max() and min() of generators", "a helper's list", "np.sum of rows"])
def test_comprehensions_with_stated_shapes(name):
    body, args = COMPREHENSIONS[name]
    names = _namespace("import numpy as np\n" + body)["f"].__code__.co_varnames[:len(args)]
    _assert_every_mode_right(body, args, shapes_of_point(dict(zip(names, args))))


@pytest.mark.parametrize("name", ["case 7", "rows into np.array", "a condition", "enumerate", "zip", "nested",
                                  "max() of a list", "np.mean", "np.dot's second argument", "a list variable into np.array"])
def test_gradgen_check_passes_comprehensions_with_sympy(name):
    """`gradgen check` at an array point: every row ok, sympy's column filled (a small instance)."""
    body, args = COMPREHENSIONS[name]
    source = "import numpy as np\n\n\n" + body
    names = _namespace(source)["f"].__code__.co_varnames[:len(args)]
    [report] = check_source(source, "program.py", functions=["f"], at=dict(zip(names, args)), wrt="all")
    rows = report.points[0].rows
    assert report.ok and all(row.sympy is not None for row in rows)


def test_np_prod_of_a_comprehension():
    """(its gradient only: forward mode refuses np.prod's second derivative by name)"""
    _assert_every_mode_right("def f(a):\n    return np.prod([x + 2.0 for x in a])\n", (A,), kinds=("grad",))


@pytest.mark.parametrize("body,message", [
    ("    return np.sum(np.array([x for x in a] * 2))\n",
     "6:28: '[x for x in a] * 2' computes with a Python list (`*` repeats one, `+` joins two): gradgen reads a list by "
     "index, len(...), a loop over it, sum(...), or np.array(...) (an array) first"),
    ("    return np.sum([x for x in a].sum())\n",
     "6:19: '[x for x in a]' is a list, which has no method '.sum()': call it on np.array([x for x in a])"),
    ("    return math.exp([x for x in a])\n",
     "6:21: '[x for x in a]' is a list: pass np.array([x for x in a]) (an array) instead"),
    ("    return -[x for x in a]\n",
     "6:12: '-[x for x in a]' computes with a Python list (`*` repeats one, `+` joins two): gradgen reads a list "
     "by index, len(...), a loop over it, sum(...), or np.array(...) (an array) first"),
])
def test_a_list_used_as_a_number_is_located(body, message):
    source = f"import math\nimport numpy as np\n\n\ndef f(a):\n{body}"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "bad.py", wrt="all")
    assert str(caught.value).splitlines()[0] == f"bad.py:{message}"


# ---- case 6: the sympy oracle on arrays whose elements fold to constants ------------------

AT_REST = {
    "case 6": ("def f(c, t=1.0):\n    k = np.array([0.0, c * 0.0])\n    return np.sum(k) + t * c\n",
               {"c": 0.1}, {"c": 1.0, "t": 0.1}),
    "summed where it is made": ("def f(c, t=1.0):\n    return np.sum(np.array([0.0, c * 0.0])) + t * c\n",
                                {"c": 0.1}, {"c": 1.0, "t": 0.1}),
    "every element folds": ("def f(c):\n    k = np.array([c * 0.0, c * 0.0])\n    return np.sum(k) + c\n",
                            {"c": 0.4}, {"c": 1.0}),
    "an ODE from rest": ("def f(k, dt=0.1):\n    s = np.zeros(2)\n    for i in range(10):\n"
                         "        s = s + dt * np.array([s[1], -k * s[0] + 1.0])\n    return s[0] ** 2 + s[1]\n",
                         {"k": 0.5}, None),
    "an ODE from rest, written element by element": (
        "def f(k, dt=0.1):\n    s = np.zeros(2)\n    for i in range(5):\n        v = s.copy()\n"
        "        v[0] = s[0] + dt * s[1]\n        v[1] = s[1] - dt * k * s[0] + dt\n        s = v\n"
        "    return np.sum(s ** 2)\n", {"k": 0.5}, None),
    "a list of states": ("def f(c, d):\n    hs = [np.array([c, 0.0])]\n    for i in range(3):\n"
                         "        hs.append(hs[-1] * d + np.array([0.0, c * 0.0]))\n"
                         "    return np.sum(np.stack(hs)) + max(c, d)\n", {"c": 0.3, "d": 0.7}, None),
    "a matrix": ("def f(c):\n    A = np.stack([np.array([c, 0.0]), np.array([0.0, c * 0.0])])\n"
                 "    return np.sum(A @ A) + np.sum(np.where(A > 0, A, 0.0)) + c\n", {"c": 0.3}, {"c": 2.6}),
}


@pytest.mark.parametrize("name", AT_REST)
def test_the_oracle_differentiates_arrays_whose_elements_fold(name):
    body, at, known = AT_REST[name]
    [report] = check_source("import numpy as np\n\n\n" + body, "rest.py", at=at, wrt="all")
    assert report.ok
    for row in report.points[0].rows:
        assert row.sympy is not None, row.param
        assert row.sympy == pytest.approx(row.generated, rel=1e-10, abs=1e-12)
        assert row.sympy == pytest.approx(row.fd, rel=1e-6, abs=1e-8)
        if known:
            assert row.sympy == pytest.approx(known[row.param], rel=1e-12)


def test_the_oracle_agrees_with_itself_at_30_digits_on_arrays():
    body = AT_REST["an ODE from rest"][0]
    compiled = compile_source("import numpy as np\n\n\n" + body, "rest.py", wrt="all")
    [cf] = compiled.functions
    point = {"k": 0.5, "dt": 0.1}
    fast = sympy_gradient(cf.ir, compiled.module, point, cf.wrt)
    exact = sympy_gradient(cf.ir, compiled.module, point, cf.wrt, exact=True)
    assert None not in fast and fast == pytest.approx(exact, rel=1e-13)


def test_the_oracle_leaves_a_large_array_statement_to_finite_differences():
    """A statement on more elements than sympy follows in good time shows '-' in the sympy
    column: the check still runs and finite differences judge it."""
    compiled = compile_source("import numpy as np\n\n\ndef f(w, X):\n    return np.sum((X * w - 0.5) ** 2)\n",
                              "big.py", wrt=["w"])
    [cf] = compiled.functions
    X_big = np.linspace(0.0, 1.0, 2000).reshape(200, 10)
    assert sympy_gradient(cf.ir, compiled.module, {"w": 0.5, "X": X_big}, cf.wrt) == [None]
    small = sympy_gradient(cf.ir, compiled.module, {"w": 0.5, "X": X_big[:5]}, cf.wrt)
    assert small[0] == pytest.approx(np.sum(2 * (X_big[:5] * 0.5 - 0.5) * X_big[:5]), rel=1e-12)
