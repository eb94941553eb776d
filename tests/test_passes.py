"""Each pass, text in and text out: source -> IR, IR -> activity, IR -> backward IR."""

import textwrap

from gradgen.analysis import activity
from gradgen.transform.reverse import backward as reverse
from gradgen.frontend.lower import lower_function, sigmoid_helper_name
from gradgen.codegen.naming import ModuleNamer, identifiers
from gradgen.frontend.parse import parse_module


def _lower(source, name="f"):
    module = parse_module(textwrap.dedent(source))
    namer = ModuleNamer(identifiers(module.tree), module.constants)
    params = [a.arg for a in module.functions[name].args.args]
    fnamer = namer.function_namer(params)
    return lower_function(module, name, fnamer, sigmoid_helper_name(module)), fnamer


def _backward(source, wrt=("all",)):
    fn, fnamer = _lower(source)
    act = activity.analyse(fn, activity.choose_wrt(fn, wrt), None)
    return "\n".join(map(str, reverse.backward(fn, act, fnamer, fn.result_name).statements))


def test_lowering_versions_reassigned_names_and_desugars():
    fn, _ = _lower("""
        def f(x, y):
            x = x * 2
            x += y
            a, b = x, y
            a, b = b, a
            return a / b
    """)
    assert str(fn) == textwrap.dedent("""\
        def f(x, y):
            x_1 = mul(x, 2)
            x_2 = add(x_1, y)
            a = x_2
            b = y
            a_1 = b
            b_1 = a
            f = div(a_1, b_1)
            return f""")


def test_helpers_are_inlined_and_the_sigmoid_is_a_primitive():
    fn, _ = _lower("""
        import math
        def sigmoid(t):
            return 1.0 / (1.0 + math.exp(-t))
        def sq(u, p=2):
            v = u * u
            return v ** (p / 2)
        def f(x):
            return sq(sigmoid(x) + 1) + sq(x, p=4)
    """)
    assert str(fn) == textwrap.dedent("""\
        def f(x):
            u = add(sigmoid(x), 1)
            v = mul(u, u)
            v_1 = mul(x, x)
            f = add(pow(v, div(2, 2)), pow(v_1, div(4, 2)))
            return f""")


def test_default_wrt_leaves_out_parameters_used_only_without_derivative():
    fn, _ = _lower("""
        import math
        def f(x, k, c, unused):
            return x * math.floor(k) if c > 0 else x
    """)
    assert activity.choose_wrt(fn, ("all",)) == ["x", "unused"]
    assert activity.choose_wrt(fn, None) == ["x"]
    assert activity.left_out_parameters(fn, None) == {
        "k": "used only where no derivative exists (comparisons, floor, ...)",
        "c": "used only where no derivative exists (comparisons, floor, ...)",
        "unused": activity.NOT_FIRST}


def test_default_wrt_is_the_first_parameter_or_every_number_default():
    # The first parameter (jax.grad, scipy's jac(x, *args)), or every one when each has a number
    # default (the seed lesson's loss); never a count, a function or data, first or not.
    cases = [("def f(x, X, y):\n    return x * X + y", ["x"]),
             ("def loss(params, X, y):\n    return params * X + y", ["params"]),
             ("def loss(w1=0.5, w2=-0.5, b1=0.5, w3=2.0, b2=0.0):\n    return w1 * w2 + b1 * w3 + b2", 
              ["w1", "w2", "b1", "w3", "b2"]),
             ("def f(a=1.0, b=2, *, X):\n    return a * b * X", ["a", "b"]),
             ("def f(a=1.0, b=None):\n    return a * 2.0 if b is None else a * b", ["a"]),
             ("def f(a, b=2.0):\n    return a * b", ["a"]),
             ("def f(n, x):\n    return sum(x for _ in range(n))", ["x"]),
             ("def f(x=1.0, n=3):\n    return sum(x for _ in range(n))", ["x"])]
    for source, chosen in cases:
        fn, _ = _lower("import numpy as np\n" + source + "\n", source[4:source.index("(")])
        assert activity.choose_wrt(fn, None) == chosen, source


def test_activity_is_varied_and_useful():
    fn, _ = _lower("""
        def f(x, y):
            a = x * 2
            b = y * 3
            dead = a * b
            return a + y
    """)
    act = activity.analyse(fn, ["x"], None)
    assert sorted(act.active) == ["a", "f", "x"]


def test_backward_accumulates_fan_out_and_folds_the_seed():
    assert _backward("""
        import math
        def f(x, w):
            h = math.tanh(w * x)
            return h * h + w
    """) == textwrap.dedent("""\
        # line 5: return h * h + w
        df_dh = h
        df_dh += h
        # line 4: h = math.tanh(w * x)
        df_dh_inner = mul(df_dh, sub(1, pow(h, 2)))
        df_dw = add(1.0, mul(df_dh_inner, x))
        df_dx = mul(df_dh_inner, w)""")


def test_backward_guards_the_branch_taken():
    assert _backward("""
        import math
        def f(x):
            return math.log(x) if x > 0 else -x
    """) == textwrap.dedent("""\
        # line 4: return math.log(x) if x > 0 else -x
        df_dx = (div(1, x) if gt(x, 0) else 0.0)
        df_dx += (-1.0 if not(gt(x, 0)) else 0.0)""")  # not `le`: at x = nan the else branch runs
