"""Structured parameters (issue 10, item 2): a parameter that is a list, tuple or dict of
arrays and numbers, nested, of a length known only at run time. Each form users write is
compiled once, then its gradient is compared with central differences of the original
function computed here, leaf by leaf (independently of `gradgen check`), and with sympy
where the leaves are numbers; the gradient has the parameter's structure (a tuple stays a
tuple, a dict keeps its keys), and `gradgen check` passes at the same point."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

from differences import central_leaves
from gradgen import CompileError, compile_source, load_module
from gradgen.verify.check import check_source

HEADER = "import numpy as np\nimport math\n\n"


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for key in value for leaf in _leaves(value[key])]
    if isinstance(value, (list, tuple)):
        return [leaf for part in value for leaf in _leaves(part)]
    return [value]


def _replace(value, leaves):
    if isinstance(value, dict):
        return {key: _replace(part, leaves) for key, part in value.items()}
    if isinstance(value, (list, tuple)):
        parts = [_replace(part, leaves) for part in value]
        return tuple(parts) if isinstance(value, tuple) else parts
    return leaves.pop(0)


def _structure(value):
    """The containers of a value, with each leaf replaced by its shape."""
    if isinstance(value, dict):
        return {key: _structure(part) for key, part in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_structure(part) for part in value)
    return ("leaf", np.shape(value))


def compiled(source, function="f"):
    text = HEADER + source
    module = load_module(compile_source(text, functions=[function], wrt="all").text, "structured_generated")
    original = {}
    exec(text, original)  # noqa: S102 - the test's own program
    return getattr(module, f"{function}_value_and_grad"), original[function]


def assert_gradient(source, kwargs, name="params", function="f"):
    """Value, structure and every element of the gradient of `name` (the first parameter)."""
    value_and_grad, f = compiled(source, function)
    value, grads = value_and_grad(**kwargs)
    grad = grads[0]  # (every program here differentiates `params`, first, and one more parameter)
    assert value == pytest.approx(f(**kwargs), rel=1e-12, abs=1e-12)
    assert _structure(grad) == _structure(kwargs[name])
    for got, want in zip(_leaves(grad), central_leaves(f, kwargs, name, _leaves, _replace)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert all(np.asarray(leaf).dtype == np.float64 for leaf in _leaves(grad))
    [report] = check_source(HEADER + source, functions=[function], at=kwargs, wrt="all")
    assert report.ok, report
    return grad


RS = np.random.RandomState(7)
LAYERS = [(RS.randn(3, 4), RS.randn(4)), (RS.randn(4, 4), RS.randn(4)), (RS.randn(4, 2), RS.randn(2))]
X = RS.randn(5, 3)

MLP = """
def f(params, x):
    for W, b in params:
        x = np.tanh(x @ W + b)
    return np.sum(x ** 2)
"""


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_list_of_layers_of_any_length_runs_through_one_compiled_module(depth):
    """`for W, b in params`: the same generated code for one, two and three layers (the
    length is known only at run time); the gradient is a list of (dW, db) tuples."""
    params = LAYERS[:depth - 1] + [(RS.randn(3 if depth == 1 else 4, 2), RS.randn(2))]
    grad = assert_gradient(MLP, {"params": params, "x": X})
    assert isinstance(grad, list) and all(isinstance(layer, tuple) for layer in grad)


FORMS = {
    "starred unpacking": """
def f(params, x):
    *hidden, (W_out, b_out) = params
    for W, b in hidden:
        x = np.tanh(x @ W + b)
    return np.sum((x @ W_out + b_out) ** 2)
""",
    "enumerate and an index": """
def f(params, x):
    total = 0.0
    for i, (W, b) in enumerate(params):
        x = np.tanh(x @ W + b)
        total = total + (i + 1) * np.sum(W ** 2)
    return total + np.sum(x)
""",
    "zip with a list of scales": """
def f(params, x, scales):
    for (W, b), s in zip(params, scales):
        x = np.tanh(s * (x @ W) + b)
    return np.sum(x ** 2)
""",
    "index by position and len": """
def f(params, x):
    n = len(params)
    for i in range(n):
        W = params[i][0]
        x = np.sin(x @ W + params[i][1])
    return np.sum(x) * params[-1][1][0]
""",
    "a slice of the layers": """
def f(params, x):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    return np.sum(x @ W + b)
""",
    "reversed layers": """
def f(params, x):
    penalty = 0.0
    for W, b in reversed(params):
        penalty = penalty * 0.5 + np.sum(b ** 2)
    for W, b in params:
        x = np.tanh(x @ W + b)
    return np.sum(x) + penalty
""",
    "a helper that takes the list": """
def predict(params, x, act=np.tanh):
    for W, b in params:
        x = act(x @ W + b)
    return x

def l2(params):
    return sum(np.sum(W ** 2) + np.sum(b ** 2) for W, b in params)

def f(params, x):
    return np.sum(predict(params, x) ** 2) + 0.1 * l2(params)
""",
    "the flattening idiom": """
def f(params, x):
    for W, b in params:
        x = np.tanh(x @ W + b)
    flat = np.concatenate([np.ravel(p) for layer in params for p in layer])
    return np.sum(x) + np.dot(flat, flat)
""",
    "a layer bound to a name": """
def f(params, x):
    for k in range(len(params)):
        layer = params[k]
        x = np.tanh(x @ layer[0] + layer[1])
    return np.sum(x ** 3)
""",
}


@pytest.mark.parametrize("form", FORMS)
def test_each_form_of_a_list_of_layers(form):
    extra = {"scales": np.array([0.5, 1.5, 2.0])} if "scales" in FORMS[form] else {}
    assert_gradient(FORMS[form], {"params": LAYERS, "x": X, **extra})


DICTS = {
    "string keys": """
def f(params, X):
    return np.sum(np.tanh(X @ params["W"] + params["b"]) ** 2)
""",
    "items with a filter": """
def f(params, X):
    penalty = sum(np.sum(v ** 2) for k, v in params.items() if k != "b")
    return np.sum(np.tanh(X @ params["W"] + params["b"])) + penalty
""",
    "values and keys": """
def f(params, X):
    total = 0.0
    for v in params.values():
        total = total + np.sum(v ** 2)
    for k in params.keys():
        total = total + np.sum(params[k])
    return total
""",
    "nested dicts visited by a list of names": """
def f(params, X):
    h = X
    for name in ["layer1", "layer2"]:
        layer = params[name]
        h = np.tanh(h @ layer["W"] + layer["b"])
    return np.sum((h @ params["out"]) ** 2)
""",
}


@pytest.mark.parametrize("form", DICTS)
def test_each_form_of_a_dict_of_arrays(form):
    if "layer1" in DICTS[form]:
        params = {"layer1": {"W": RS.randn(3, 4), "b": RS.randn(4)},
                  "layer2": {"W": RS.randn(4, 4), "b": RS.randn(4)}, "out": RS.randn(4)}
    else:
        params = {"W": RS.randn(3, 2), "b": RS.randn(2)}
    grad = assert_gradient(DICTS[form], {"params": params, "X": X})
    assert list(grad) == list(params)  # the same keys, in the same order


def test_a_tuple_of_numbers_matches_sympy():
    """Number leaves: the gradient is a tuple of floats, each sympy's derivative."""
    source = """
def f(params, x):
    a, b = params
    return math.sin(a * x) + b ** 3 * a
"""
    value_and_grad, _ = compiled(source)
    _, (grad, dx) = value_and_grad((0.7, -1.3), 0.4)
    a, b, x = sympy.symbols("a b x")
    expr = sympy.sin(a * x) + b ** 3 * a
    at = {a: 0.7, b: -1.3, x: 0.4}
    assert isinstance(grad, tuple)
    assert grad[0] == pytest.approx(float(sympy.diff(expr, a).subs(at)), rel=1e-12)
    assert grad[1] == pytest.approx(float(sympy.diff(expr, b).subs(at)), rel=1e-12)
    assert dx == pytest.approx(float(sympy.diff(expr, x).subs(at)), rel=1e-12)


def test_an_annotation_makes_a_parameter_structured():
    """Used only as `for p in params` (a 2-d array would do too), `params: list` says it is
    a list of arrays of different shapes."""
    source = """
def f(params: list, x):
    return sum(np.sum(np.sin(p) * x[0]) for p in params)
"""
    assert_gradient(source, {"params": [RS.randn(3), RS.randn(2, 2)], "x": RS.randn(2)})


@pytest.mark.parametrize("coeffs", [[1.0, -2.0, 0.5, 3.0], (1.0, -2.0, 0.5), np.array([1.0, -2.0, 0.5, 3.0])])
def test_a_loop_over_a_parameter_takes_a_list_of_numbers_or_an_array(coeffs):
    """`for c in reversed(coeffs)` (Horner's rule): a loop over a parameter's parts compiles
    it as structured, so a list, a tuple and an array all work, each with its own kind of
    gradient; given an array, `gradgen check` compares it with sympy too."""
    source = """
def f(coeffs, t):
    result = 0.0
    for c in reversed(coeffs):
        result = result * t + c
    return result
"""
    grad = assert_gradient(source, {"coeffs": coeffs, "t": 0.7}, name="coeffs")
    assert type(grad) is type(coeffs)
    np.testing.assert_allclose(np.asarray(grad, dtype=float), 0.7 ** np.arange(len(coeffs)), rtol=1e-12)
    if isinstance(coeffs, np.ndarray):
        [report] = check_source(HEADER + source, functions=["f"], at={"coeffs": coeffs, "t": 0.7}, wrt="all")
        assert all(row.sympy is not None for row in report.points[0].rows)


def test_a_parameter_looped_over_and_used_whole_stays_an_array():
    """`for w in x` and `np.tanh(x)`: a list would not do, so x is compiled as an array."""
    source = """
def f(x, c):
    s = np.sum(np.tanh(x))
    for w in x:
        s = s + c * np.sum(w ** 2)
    return s
"""
    text = compile_source(HEADER + source, wrt="all").text
    assert "zeros_like_tree" not in text
    value_and_grad, _ = compiled(source)
    x = RS.randn(3, 2)
    _, (dx, dc) = value_and_grad(x, 0.5)
    np.testing.assert_allclose(dx, 1 - np.tanh(x) ** 2 + 2 * 0.5 * x, rtol=1e-12)


def test_an_array_passed_for_a_structured_parameter_still_works():
    """The parts of an array are its rows: `W, b = params` of a (2, 3) array."""
    source = """
def f(params, x):
    W, b = params
    return np.sum(np.tanh(W * x + b))
"""
    grad = assert_gradient(source, {"params": RS.randn(2, 3), "x": RS.randn(3)})
    assert isinstance(grad, np.ndarray) and grad.shape == (2, 3)


def test_the_rows_of_an_array_unpacked_in_a_loop():
    """`for x, y in m` (m an (n, 2) array): m is lowered as a structured parameter, whose
    parts are its rows' elements; the gradient is an array again."""
    source = """
def f(m, c):
    s = 0.0
    for x, y in m:
        s = s + x * np.sin(y) * c
    return s
"""
    grad = assert_gradient(source, {"m": RS.randn(4, 2), "c": 1.5}, name="m")
    assert isinstance(grad, np.ndarray) and grad.shape == (4, 2)


def test_the_generated_code_reads_like_the_source():
    text = compile_source(HEADER + MLP, wrt="all").text
    assert "    for i in range(len(params)):\n" in text
    assert "        W = params[i][0]\n        W_stack.append(W)\n        b = params[i][1]\n        b_stack.append(b)\n" in text
    assert "    dL_dparams = zeros_like_tree(params)\n" in text.replace("df_dparams", "dL_dparams")
    assert "dparams[i][0] = " in text.replace("df_dparams", "dparams")
    assert "return shaped_like(params, df_dparams), df_dx" in text


def test_unpacking_a_part_of_the_wrong_length_raises_as_python_does():
    value_and_grad, f = compiled(MLP)
    bad = [(LAYERS[0][0], LAYERS[0][1], LAYERS[0][1])]
    with pytest.raises(ValueError, match="too many values to unpack"):
        f(bad, X)
    with pytest.raises(ValueError, match="cannot unpack 3 values into 2 names"):
        value_and_grad(bad, X)


@pytest.mark.parametrize("source, message", [
    ("def f(params):\n    W, b = params\n    return np.sum(params)\n",
     "<string>:6:19: 'params' is a structured parameter (a list, tuple or dict): use its parts (params[0], "
     "`for W, b in params`, params['W'])"),
    ("def f(params):\n    for W, b in params[1:][::2]:\n        pass\n    return np.sum(W)\n",
     None),
])
def test_a_structured_parameter_used_whole_is_refused_with_what_to_write(source, message):
    if message is None:
        with pytest.raises(CompileError):
            compile_source(HEADER + source, wrt="all")
        return
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + source, wrt="all")
    assert info.value.format().splitlines()[0] == message


def test_check_needs_the_value_of_a_structured_parameter():
    with pytest.raises(CompileError) as info:
        check_source(HEADER + MLP, functions=["f"], wrt="all")
    assert str(info.value.message if hasattr(info.value, "message") else info.value).startswith(
        "'params' of 'f' is a structured parameter (a list, tuple or dict): give its value with --inputs")


def test_check_says_to_annotate_a_parameter_compiled_as_an_array():
    """`params[0] * x + params[1]` reads an array as well as a list: compiled for an array,
    which a list given to check is not."""
    source = "def f(params, x):\n    return np.sum(params[0] * x + params[1])\n"
    with pytest.raises(CompileError) as info:
        check_source(HEADER + source, functions=["f"], at={"params": [RS.randn(2), RS.randn(2)], "x": RS.randn(2)}, wrt="all")
    assert "'params' is a list at the check point, but 'f' uses it only as a number or an array: annotate it " \
           "(`params: list`, tuple or dict)" in info.value.format()


def test_a_module_level_dict_of_numbers_is_read_by_key():
    source = """
HYPER = {"l2": 0.5, "t": 2.0}

def f(w):
    return np.sum(w ** 2) * HYPER["l2"] / HYPER["t"]
"""
    value_and_grad, _ = compiled(source)
    w = RS.randn(3)
    value, grad = value_and_grad(w)
    assert value == pytest.approx(np.sum(w ** 2) * 0.25)
    np.testing.assert_allclose(grad, 0.5 * w)
    assert math.isfinite(value)


def test_a_parameter_bound_whole_in_a_loop_then_rebound_in_an_inner_loop_is_read_whole():
    # (a grammar fuzz program, seed 0 #107) `for row in h` makes h look like a list; `m = h` in a
    # loop, then `m = p * m` in an inner loop: m's first value there is h itself. The assignment
    # was lost (m read None); h is now compiled as the array it is, read whole
    source = HEADER + ("def f(p, h):\n    for it in range(2):\n        m = h\n        for step in range(2):\n"
                       "            m = p * m\n    total = 0.0\n    for row in h:\n        total = total + row\n"
                       "    return np.mean(m) + total\n")
    module = load_module(compile_source(source, functions=["f"], wrt="all").text, "whole_in_loop")
    p, h = np.array([0.5, 2.0]), np.array([1.0, -1.0])
    dp, dh = module.f_grad(p, h)
    np.testing.assert_allclose(dp, p * h, rtol=1e-14)
    np.testing.assert_allclose(dh, p ** 2 / 2 + 1.0, rtol=1e-14)
