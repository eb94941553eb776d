"""Functions as values (issue 10, item 1): lambdas, nested defs and closures, functions
passed as arguments and defaults, factories. A call through a function known when the
code is compiled is inlined; a closure reads its definer's variables as Python does (the
value they hold when it is called). Each program is checked by gradgen's own checker
(sympy and finite differences) at a point, and its value against the original."""

import textwrap

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.verify.check import check_source

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
    [report] = check_source(source, f"{name}.py", [_loss_name(source)], at=point, n_points=1, wrt="all")
    assert report.ok, report
    assert report.points[0].value_generated == pytest.approx(report.points[0].value_original, rel=1e-12)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_no_function_value_reaches_the_generated_code(name):
    text = compile_source(_source(name), filename="p.py", wrt="all").text
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))  # comments cite the source
    assert "lambda" not in code and "def step" not in code and "objective(" not in code


def test_a_closure_sees_the_value_its_variable_has_when_called():
    generated = load_module(compile_source(_source("closure_late_binding"), filename="c.py", wrt="all").text, "c_grad")
    value, grad = generated.f_value_and_grad(0.9)
    assert value == pytest.approx(0.9 * 3.0 * 0.9) and grad == pytest.approx(6.0 * 0.9)


def test_a_function_default_is_written_in_the_signature_and_guarded():
    text = compile_source(_source("function_default_and_argument"), filename="n.py", wrt="all").text
    assert "def loss_grad(W, b, *, x, nonlinearity=np.tanh):" in text
    generated = load_module(text, "n_grad")
    point = PROGRAMS["function_default_and_argument"][1]
    generated.loss_grad(**point)  # the default: fine
    with pytest.raises(ValueError, match="compiled for nonlinearity=np.tanh"):
        generated.loss_grad(**point, nonlinearity=np.sin)


def test_a_same_file_function_default_is_none_in_the_generated_signature():
    source = "import numpy as np\n\ndef relu(z):\n    return np.maximum(z, 0.0)\n\n" \
             "def loss(w, act=relu):\n    return np.sum(act(w))\n"
    generated = load_module(compile_source(source, filename="r.py", functions=["loss"], wrt="all").text, "r_grad")
    np.testing.assert_array_equal(generated.loss_grad(np.array([-1.0, 2.0])), [0.0, 1.0])
    with pytest.raises(ValueError, match=r"compiled for act=relu \(its default\)"):
        generated.loss_grad(np.array([1.0]), act=np.tanh)


def test_factories_and_higher_order_helpers_get_no_gradient_of_their_own():
    compiled = compile_source(_source("factory"), filename="fa.py", wrt="all")
    assert [f.name for f in compiled.functions] == ["loss"]
    assert compiled.skipped == {
        "make_objective": "returns a function (its closure is inlined where a loss calls it)"}
    compiled = compile_source(_source("lambda_as_argument"), filename="la.py", wrt="all")
    assert compiled.skipped == {
        "apply_twice": "calls its parameter 'g' (it is inlined where a loss passes a function)"}


def test_recursion_through_a_closure_is_refused():
    source = "def f(x):\n    def g(t):\n        return g(t)\n    return g(x)\n"
    with pytest.raises(CompileError, match="recursive call to 'g'"):
        compile_source(source, filename="rec.py", wrt="all")


def test_check_proves_a_keyword_only_function_default():
    """(fuzz: the sympy trace looked for a value of the function parameter and crashed)"""
    source = "import math\n\ndef _h(t):\n    return t * t\n\ndef f(a, b, *, g=_h, act=math.sin):\n" \
             "    return g(a) + act(b)\n"
    [report] = check_source(source, "kw.py", ["f"], at={"a": 0.4, "b": 1.1}, n_points=1, wrt="all")
    assert report.ok and report.wrt == ["a", "b"]
    assert all(row.sympy is not None for row in report.points[0].rows)


def test_a_function_default_imports_its_module():
    """(fuzz, seed 1203 program 280: `*, act=math.tanh` unused; the generated signature named
    math, which the generated module did not import)"""
    source = "import math\n\ndef f(a, b, *, act=math.tanh):\n    return a * b\n"
    text = compile_source(source, filename="m.py", wrt="all").text
    assert "import math\n" in text and "def f_grad(a, b, *, act=math.tanh):" in text
    assert load_module(text, "m_grad").f_grad(2.0, 3.0) == (3.0, 2.0)


def test_a_tuple_of_values_assigned_in_a_loop_is_refused_with_what_to_write():
    source = ("def f(x):\n    pair = (x, 1.0)\n    for i in range(3):\n        a, b = pair\n"
              "        pair = (a * b, b)\n    return pair[0]\n")
    with pytest.raises(CompileError) as caught:
        compile_source(source, filename="t.py", wrt="all")
    assert caught.value.format().splitlines()[0] == (
        "t.py:3:5: 'pair' holds a tuple of values and is assigned inside a loop or branch: unpack it into names "
        "before (a, b = pair) and assign those")


# ---- lists of constants a factory is given: folded while compiling ---------------------------

CONSTANT_LISTS = textwrap.dedent('''
    import numpy as np


    def make_net(layer_sizes, scale=1.0):
        shapes = list(zip(layer_sizes[:-1], layer_sizes[1:]))
        num_weights = sum((m + 1) * n for m, n in shapes)

        def unpack(weights):
            layers = []
            start = 0
            for m, n in shapes:
                W = weights[start:start + m * n].reshape((m, n))
                b = weights[start + m * n:start + (m + 1) * n]
                layers.append((W, b))
                start += (m + 1) * n
            return layers

        def predict(weights, inputs):
            for W, b in unpack(weights):
                outputs = np.dot(inputs, W) + b
                inputs = np.tanh(outputs)
            return outputs * scale

        return num_weights, predict


    def net_loss(weights, *, inputs, targets):
        num_weights, predict = make_net([2, 3, 1], scale=2.0)
        return np.sum((predict(weights[:num_weights], inputs) - targets) ** 2)


    def make_chain(sizes):
        sizes_of_blocks = [m * n for m, n in zip(sizes[:-1], sizes[1:])]

        def total(w, xs):
            s = 0.0
            start = 0
            for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
                block = w[start:start + sizes_of_blocks[i]].reshape(m, n)
                s = s + (i + 1) * np.sum(np.sin(block)) / len(sizes)
                start = start + sizes_of_blocks[i]
            for k in range(len(sizes)):
                s = s + np.sum(w[k] * np.array(sizes)) * xs[k]
            return s
        return total


    def chain_loss(w, xs):
        total = make_chain((3, 2, 2))
        return total(w, xs)


    def pairs_kept(W1, b1, W2, b2, x):
        layers = [(W1, b1)]
        layers.append((W2, b2))
        h = x
        for W, b in layers:
            h = np.tanh(h @ W + b)
        last_W, last_b = layers[-1]
        return np.sum(h ** 2) + len(layers) * np.sum(last_b * last_W[0])
''')

_RS = np.random.RandomState(3)
CONSTANT_POINTS = {
    "net_loss": {"weights": 0.5 * _RS.randn(13), "inputs": _RS.randn(4, 2), "targets": _RS.randn(4, 1)},
    "chain_loss": {"w": _RS.randn(10), "xs": _RS.randn(3)},
    "pairs_kept": {"W1": _RS.randn(2, 3), "b1": _RS.randn(3), "W2": _RS.randn(3, 2), "b2": _RS.randn(2),
                   "x": _RS.randn(4, 2)},
}


@pytest.mark.parametrize("name", sorted(CONSTANT_POINTS))
def test_lists_of_constants_fold_and_their_loops_unroll(name):
    [report] = check_source(CONSTANT_LISTS, "constant_lists.py", [name], at=CONSTANT_POINTS[name], n_points=1, wrt="all")
    rows = report.points[0].rows
    assert report.ok and rows and all(row.ok for row in rows), name
    assert report.points[0].value_generated == pytest.approx(report.points[0].value_original, rel=1e-12)


def test_a_factory_layout_is_numbers_in_the_generated_code():
    """shapes and num_weights are gone: each layer's slice and reshape read constants, the
    offset is an integer expression of them, and no list is left in the forward pass."""
    text = compile_source(CONSTANT_LISTS, "constant_lists.py", functions=["net_loss"], wrt="all").text
    forward = text.split("def net_loss_grad(", 1)[1].split("# backward pass", 1)[0]
    assert "np.reshape(weights_1[start : start + 2 * 3], (2, 3))" in forward
    assert "start_1 = start + (2 + 1) * 3\n" in forward
    assert "np.reshape(weights_1[start_1 : start_1 + 3 * 1], (3, 1))" in forward
    assert "    num_weights = 13\n" in forward and "weights_1 = weights[:num_weights" in forward
    assert not any(piece in forward for piece in ("[2, 3, 1]", "zip(", "list(", "append(", "shapes", "layers"))


MODULE_SIZES = textwrap.dedent('''
    import numpy as np

    SIZES = [2, 3, 1]


    def mlp(weights, inputs):
        for m, n in zip(SIZES[:-1], SIZES[1:]):
            W = weights[: m * n].reshape((m, n))
            weights = weights[m * n:]
            inputs = np.tanh(inputs @ W)
        return np.sum(inputs) * len(SIZES)
''')


def test_a_module_list_of_sizes_folds_as_a_factorys_does():
    """`zip(SIZES[:-1], SIZES[1:])` over a module constant was refused ("'SIZES' is a sequence:
    only a loop may run over it"); it unrolls as the same list given to a factory does."""
    point = {"weights": 0.5 * _RS.randn(9), "inputs": _RS.randn(4, 2)}
    [report] = check_source(MODULE_SIZES, "module_sizes.py", ["mlp"], at=point, n_points=1, wrt="all")
    assert report.ok and report.points[0].rows and all(row.ok for row in report.points[0].rows)
    text = compile_source(MODULE_SIZES, "module_sizes.py", wrt="all").text
    assert "np.reshape(weights[: 2 * 3], (2, 3))" in text and "zip(" not in text


def test_what_cannot_be_folded_is_refused_with_what_to_write():
    head = "import numpy as np\n\n\ndef make(sizes):\n"
    cases = [
        ("    sizes.append(4)\n    return lambda w: w * len(sizes)\n", "(w)",
         "5:5: 'sizes' is a list of constants gradgen folds while compiling, which does not change: build the list "
         "it should become in one expression (a comprehension, or sizes + [...])"),
        ("    def total(w, xs):\n        s = 0.0\n        for m, x in zip(sizes, xs):\n            s = s + m * x * w\n"
         "        return s\n    return total\n", "(w, xs)",
         "7:21: the loop over 'zip(sizes, xs)' reads a list known when compiling ('sizes': gradgen unrolls a loop "
         "over it) and values known only when the code runs: loop over range(len(sizes)) and index each sequence "
         "by the counter"),
        ("    def total(w, n):\n        layers = []\n        for i in range(n):\n            layers.append((w, w))\n"
         "        return w\n    return total\n", "(w, n)",
         "8:13: 'layers' holds tuples, which gradgen keeps while compiling: append to it outside loops and branches, "
         "or in a loop over a list of constants (which gradgen unrolls)"),
        ("    def total(w):\n        return np.sum(np.exp(sizes) * w)\n    return total\n", "(w)",
         "6:30: 'sizes' is a list of constants gradgen folds while compiling ([1, 2, 3]): use it in a loop "
         "(unrolled), len(...), an index known when compiling, zip, a slice, sum(...) or np.array(sizes), or pass it "
         "to a helper"),
        ("    def total(w, n):\n        s = 0.0\n        for i in range(n):\n            s = s + sizes[i] * w\n"
         "        return s\n    return total\n", "(w, n)",
         "8:21: 'sizes' is a list of constants gradgen folds while compiling ([1, 2, 3]): use it in a loop "
         "(unrolled), len(...), an index known when compiling, zip, a slice, sum(...) or np.array(sizes), or pass it "
         "to a helper"),
        ("    sizes[0] = 4\n    return lambda w: w * len(sizes)\n", "(w)",
         "5:5: 'sizes' is a list of constants gradgen folds while compiling ([1, 2, 3]): use it in a loop "
         "(unrolled), len(...), an index known when compiling, zip, a slice, sum(...) or np.array(sizes), or pass it "
         "to a helper"),
        ("    pairs = zip(sizes, sizes)\n    return lambda w: w\n", "(w)",
         "5:13: 'zip(sizes, sizes)' is an iterator, which gradgen folds only where it is used up: loop over it, or "
         "write list(zip(sizes, sizes))"),
        ("    def total(w, n):\n        s = 0.0\n        for i in range(n):\n            more = list(sizes)\n"
         "            s = s + w * i\n        return s\n    return total\n", "(w, n)",
         "8:13: 'more' is bound to a list known when compiling inside a loop or branch; bind it before the loop or "
         "branch"),
        ("    def total(w):\n        layers = [(w, w)]\n        a, b = layers[3]\n        return a\n    return total\n",
         "(w)", "7:16: 'layers' is a list gradgen keeps while compiling (1 item): index it by a constant from -1 to 0"),
        ("    def total(w):\n        s = 0.0\n        for m in sizes:\n            if m > 2:\n                break\n"
         "            s = s + m * w\n        return s\n    return total\n", "(w)",
         "7:9: 'break' and 'continue' are not supported in a loop over a list known when compiling (gradgen unrolls "
         "it)"),
    ]
    for body, call, message in cases:
        source = head + body + f"\n\ndef f(w, xs, n):\n    total = make([1, 2, 3])\n    return total{call}\n"
        with pytest.raises(CompileError) as caught:
            compile_source(source, "bad.py", functions=["f"], wrt="all")
        line, col, text = message.split(":", 2)
        assert (caught.value.line, caught.value.col, caught.value.message) == (int(line), int(col), text.strip())


AXIS_HELPER = textwrap.dedent('''
    import numpy as np


    def logsumexp(x, axis=None, keepdims=False):
        m = np.max(x, axis=axis, keepdims=True)
        return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=keepdims))


    def loss(w, X):
        z = X * w
        return np.sum(logsumexp(z, 1)) + np.sum(logsumexp(z, axis=0, keepdims=True)) + logsumexp(np.ravel(z))
''')


def test_a_helper_passes_its_axis_parameter_on_to_numpy():
    """GradBench's gmm and autograd's convnet write `def logsumexp(x, axis)` and call
    `np.max(x, axis=axis)`: once "'axis=' must be a constant here" though every call passes a
    constant. Checked against sympy and central differences."""
    rng = np.random.RandomState(7)
    [report] = check_source(AXIS_HELPER, "axis_helper.py", ["loss"], at={"w": rng.randn(3), "X": rng.randn(4, 3)},
                            n_points=1, wrt="all")
    assert report.ok and report.points[0].rows and all(row.ok for row in report.points[0].rows)
