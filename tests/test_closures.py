"""Functions as values (issue 10, item 1): lambdas, nested defs and closures, functions
passed as arguments and defaults, factories. A call through a function known when the
code is compiled is inlined; a closure reads its definer's variables as Python does (the
value they hold when it is called). Each program is checked by gradgen's own checker
(sympy and finite differences) at a point, and its value against the original."""

import textwrap

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.verify import check_source

PROGRAMS = {
    "lambda_called": ("""
        import math

        def f(x, y):
            sq = lambda t: t * t
            return sq(x) + math.sin(sq(y))
        """, {"x": 0.7, "y": -0.4}),
    "lambda_as_argument": ("""
        import math

        def apply_twice(g, v):
            return g(g(v))

        def f(x):
            return apply_twice(lambda t: math.sin(t) + t, x)
        """, {"x": 0.3}),
    "closure_late_binding": ("""
        def f(x):
            s = 2.0
            def scale(t):
                return t * s
            s = 3.0 * x
            return scale(x)
        """, {"x": 0.9}),
    "closure_in_a_loop": ("""
        import math

        def f(x, w):
            def step(h):
                return math.tanh(w * h + x)
            h = 0.1
            for i in range(5):
                h = step(h)
            return h
        """, {"x": 0.2, "w": 0.8}),
    "closure_of_a_closure": ("""
        def f(a, b):
            def outer(u):
                def inner(v):
                    return u * v + a
                return inner(b) * inner(u)
            return outer(a * b)
        """, {"a": 0.6, "b": -1.3}),
    "factory": ("""
        import numpy as np

        def make_objective(X, y):
            n = len(y)
            def objective(w):
                return np.sum((X @ w - y) ** 2) / n
            return objective

        def loss(w, *, X, y):
            objective = make_objective(X, y)
            return objective(w)
        """, {"w": np.array([0.3, -0.2, 0.5]), "X": np.arange(12.0).reshape(4, 3) / 10,
              "y": np.array([0.1, 0.4, -0.3, 0.2])}),
    "factory_of_several": ("""
        import numpy as np

        def make_funs(scale):
            def predict(w, x):
                return np.tanh(x * w) * scale
            def penalty(w):
                return scale * np.sum(w ** 2)
            return predict, penalty

        def loss(w, *, x):
            predict, penalty = make_funs(2.0)
            return np.sum(predict(w, x)) + penalty(w)
        """, {"w": np.array([0.3, -0.2]), "x": np.array([1.5, 0.5])}),
    "function_default_and_argument": ("""
        import numpy as np

        def relu(z):
            return np.maximum(z, 0.0)

        def net(W, b, x, nonlinearity=np.tanh):
            return nonlinearity(x @ W + b)

        def loss(W, b, *, x, nonlinearity=np.tanh):
            return np.sum(net(W, b, x, nonlinearity) ** 2) + np.sum(net(W, b, x, relu)) + np.sum(net(W, b, x))
        """, {"W": np.array([[0.3, -0.2], [0.5, 0.1]]), "b": np.array([0.05, -0.3]),
              "x": np.array([[1.0, 2.0], [-0.5, 0.3], [0.2, 0.7]])}),
    "library_function_as_value": ("""
        import numpy as np

        def f(x):
            act = np.sin
            g = act
            return np.sum(g(x) * act(2.0 * x))
        """, {"x": np.array([0.3, 1.1, -0.4])}),
    "star_args_helper": ("""
        import numpy as np

        def concat_and_multiply(weights, *args):
            cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
            return np.dot(cat_state, weights)

        def scaled(*args):
            return args[-1] * len(args) + sum_two(*args[:2])

        def sum_two(a, b):
            return a + b

        def f(W, h, x):
            return np.sum(np.tanh(concat_and_multiply(W, x, h)) ** 2) + np.sum(scaled(h, x, h))
        """, {"W": np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.6], [0.2, 0.2], [0.1, -0.7]]),
              "h": np.array([[0.1, -0.3], [0.7, 0.2]]), "x": np.array([[0.5, -0.1], [0.2, 0.3]])}),
    "tuple_of_values_bound_to_a_name": ("""
        import numpy as np

        def unpack(params):
            a, b = params
            return np.tanh(a), b * 2.0

        def use(pair, x):
            u, v = pair
            return np.sum(u * x + v)

        def f(params, x):
            natural = unpack(params)
            fixed = (x, 3.0)
            y, c = fixed
            return use(natural, x) + np.sum(y) * c
        """, {"params": (np.array([0.3, -0.5]), np.array([1.5, 0.2])), "x": np.array([0.7, -0.1])}),
    "repeat_by_a_runtime_count": ("""
        import numpy as np

        def f(h0, inputs):
            hiddens = np.repeat(h0, inputs.shape[1], axis=0)
            return np.sum(np.tanh(hiddens * inputs[0]))
        """, {"h0": np.array([[0.3, -0.5, 0.8]]), "inputs": np.array([[[0.2, 0.1, -0.4], [1.0, 0.3, 0.5]]])}),
}


def _source(name):
    return textwrap.dedent(PROGRAMS[name][0])


def _loss_name(source):
    return "loss" if "def loss(" in source else "f"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_matches_sympy_and_finite_differences(name):
    source, point = _source(name), PROGRAMS[name][1]
    [report] = check_source(source, f"{name}.py", [_loss_name(source)], at=point, n_points=1)
    assert report.ok, report
    assert report.points[0].value_generated == pytest.approx(report.points[0].value_original, rel=1e-12)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_no_function_value_reaches_the_generated_code(name):
    text = compile_source(_source(name), filename="p.py").text
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))  # comments cite the source
    assert "lambda" not in code and "def step" not in code and "objective(" not in code


def test_a_closure_sees_the_value_its_variable_has_when_called():
    generated = load_module(compile_source(_source("closure_late_binding"), filename="c.py").text, "c_grad")
    value, grad = generated.f_value_and_grad(0.9)
    assert value == pytest.approx(0.9 * 3.0 * 0.9) and grad == pytest.approx(6.0 * 0.9)


def test_a_function_default_is_written_in_the_signature_and_guarded():
    text = compile_source(_source("function_default_and_argument"), filename="n.py").text
    assert "def loss_grad(W, b, *, x, nonlinearity=np.tanh):" in text
    generated = load_module(text, "n_grad")
    point = PROGRAMS["function_default_and_argument"][1]
    generated.loss_grad(**point)  # the default: fine
    with pytest.raises(ValueError, match="compiled for nonlinearity=np.tanh"):
        generated.loss_grad(**point, nonlinearity=np.sin)


def test_a_same_file_function_default_is_none_in_the_generated_signature():
    source = "import numpy as np\n\ndef relu(z):\n    return np.maximum(z, 0.0)\n\n" \
             "def loss(w, act=relu):\n    return np.sum(act(w))\n"
    generated = load_module(compile_source(source, filename="r.py", functions=["loss"]).text, "r_grad")
    np.testing.assert_array_equal(generated.loss_grad(np.array([-1.0, 2.0])), [0.0, 1.0])
    with pytest.raises(ValueError, match=r"compiled for act=relu \(its default\)"):
        generated.loss_grad(np.array([1.0]), act=np.tanh)


def test_factories_and_higher_order_helpers_get_no_gradient_of_their_own():
    compiled = compile_source(_source("factory"), filename="fa.py")
    assert [f.name for f in compiled.functions] == ["loss"]
    assert compiled.skipped == {
        "make_objective": "no gradient: it returns a function (its closure is inlined where a loss calls it)"}
    compiled = compile_source(_source("lambda_as_argument"), filename="la.py")
    assert compiled.skipped == {
        "apply_twice": "no gradient: it calls its parameter 'g' (it is inlined where a loss passes a function)"}


def test_recursion_through_a_closure_is_refused():
    source = "def f(x):\n    def g(t):\n        return g(t)\n    return g(x)\n"
    with pytest.raises(CompileError, match="recursive call to 'g'"):
        compile_source(source, filename="rec.py")


def test_check_proves_a_keyword_only_function_default():
    """(fuzz: the sympy trace looked for a value of the function parameter and crashed)"""
    source = "import math\n\ndef _h(t):\n    return t * t\n\ndef f(a, b, *, g=_h, act=math.sin):\n" \
             "    return g(a) + act(b)\n"
    [report] = check_source(source, "kw.py", ["f"], at={"a": 0.4, "b": 1.1}, n_points=1)
    assert report.ok and report.wrt == ["a", "b"]
    assert all(row.sympy is not None for row in report.points[0].rows)


def test_a_function_default_imports_its_module():
    """(fuzz, seed 1203 program 280: `*, act=math.tanh` unused; the generated signature named
    math, which the generated module did not import)"""
    source = "import math\n\ndef f(a, b, *, act=math.tanh):\n    return a * b\n"
    text = compile_source(source, filename="m.py").text
    assert "import math\n" in text and "def f_grad(a, b, *, act=math.tanh):" in text
    assert load_module(text, "m_grad").f_grad(2.0, 3.0) == (3.0, 2.0)


def test_a_tuple_of_values_assigned_in_a_loop_is_refused_with_what_to_write():
    source = ("def f(x):\n    pair = (x, 1.0)\n    for i in range(3):\n        a, b = pair\n"
              "        pair = (a * b, b)\n    return pair[0]\n")
    with pytest.raises(CompileError) as caught:
        compile_source(source, filename="t.py")
    assert caught.value.format().splitlines()[0] == (
        "t.py:3:5: 'pair' holds a tuple of values and is assigned inside a loop or branch: unpack it into names "
        "before (a, b = pair) and assign those")
