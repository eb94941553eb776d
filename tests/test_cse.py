"""Every forward value computed once (gradgen/transform/cse.py), shapes read from names
(gradgen/analysis/sameshape.py), and the names of issue 11: the generated text says what it should,
and a value is never reused where it could mean another number (branches, loop trips,
overwrites, in-place writes), checked against central differences of the source."""

import ast
import math
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.ir.nodes import Call, Const, Var
from gradgen.frontend.lower import lower_function, sigmoid_helper_name
from gradgen.codegen.naming import ModuleNamer, identifiers
from gradgen.frontend.parse import parse_module
from gradgen.analysis.sameshape import NUMBER, SameShape
from gradgen.analysis.arrays import array_values

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from hand_written import BENCHMARKS, source  # noqa: E402


def _compiled(src, name="f"):
    text = compile_source(textwrap.dedent(src), filename="prog.py", wrt="all").text
    return text, load_module(text, "prog_grad")


def _function(text, name):
    start = text.index(f"\ndef {name}(")
    end = text.find("\n\n\ndef ", start + 1)
    return text[start:end if end > 0 else None]


def _code(text, name):
    """The statements of generated function `name`, without docstring and comments."""
    body = _function(text, name).split('"""')[2]
    return [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]


def _central(f, args, name, h=1e-6):
    """Central differences of f with respect to args[name], element by element."""
    x = np.asarray(args[name], dtype=float)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += h
        minus[i] -= h
        grad[i] = (f(**{**args, name: plus if x.ndim else float(plus)})
                   - f(**{**args, name: minus if x.ndim else float(minus)})) / (2 * h)
    return grad


def _agrees(src, args, wrt):
    namespace = {}
    exec(textwrap.dedent(src), namespace)  # noqa: S102 - the test's own program
    _, module = _compiled(src)
    grads = module.f_grad(**{k: np.copy(v) for k, v in args.items()})
    grads = grads if isinstance(grads, tuple) else (grads,)
    for name, grad in zip(wrt, grads):
        np.testing.assert_allclose(grad, _central(namespace["f"], args, name), rtol=1e-6, atol=1e-8)


# ---- what the text says -------------------------------------------------------------------

def test_the_mlp_computes_each_exp_and_max_once_and_names_them_from_the_source():
    text = compile_source((ROOT / "examples" / "mlp.py").read_bytes(), "examples/mlp.py", wrt="all").text
    for name in ("loss_grad", "loss_value_and_grad"):
        code = "\n".join(_code(text, name))
        assert code.count("np.exp(") == 1 and "exp_shifted = np.exp(shifted)" in code
        assert code.count("np.max(") == 1 and "max_logits = np.max(logits, axis=1, keepdims=True)" in code
        assert "sum_exp_shifted = np.sum(exp_shifted, axis=1, keepdims=True)" in code
        assert "np.size(np.sum" not in code and "np.ones_like(Y * log_probs" not in code


def test_the_value_is_not_computed_by_the_gradient_alone():
    text = compile_source((ROOT / "examples" / "logistic_regression.py").read_bytes(), "lr.py", wrt="all").text
    assert "loss = np.mean(per_sample)" not in "\n".join(_code(text, "loss_grad"))
    assert "loss = np.mean(per_sample)" in "\n".join(_code(text, "loss_value_and_grad"))
    assert "\n".join(_code(text, "loss_grad")).count("np.exp(") == 1


def _calls_made_twice(text):
    shape_queries = {"np.shape", "np.size", "np.ndim", "np.broadcast", "len", "range", "reversed"}
    twice = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name.endswith(("_grad", "_value_and_grad")):
            seen = {}
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and ast.unparse(call.func) not in shape_queries:
                    seen[ast.unparse(call)] = seen.get(ast.unparse(call), 0) + 1
            twice += [(node.name, call) for call, n in seen.items() if n > 1]
    return twice


@pytest.mark.parametrize("path", ["examples/mlp.py", "examples/logistic_regression.py", "examples/seed_net.py",
                                  "examples/vae.py"] + [f"benchmarks/references/{r.name}.py" for r in BENCHMARKS
                                                        if r.name != "euler"])
def test_no_call_is_made_twice_in_straight_line_code(path):
    text = compile_source((ROOT / path).read_bytes(), path, wrt="all").text
    assert _calls_made_twice(text) == []


def test_the_seed_network_unannotated_in_a_numpy_file_is_the_hand_written_pass():
    """Nothing says the eight parameters are numbers but `math.exp` and the result: no
    unbroadcast, and the inline sigmoid's derivative is h * (1 - h)."""
    [seed] = [r for r in BENCHMARKS if r.name == "seed_net"]
    code = _code(compile_source(source(seed), "seed_net.py", wrt="all").text, "loss_grad")
    assert code[:14] == [
        "z1 = w1 * x1 + w2 * x2 + b1",
        "h = 1.0 / (1.0 + math.exp(-z1))",
        "yhat = w3 * h + b2",
        "dloss_dyhat = 2 * (yhat - y)",
        "dloss_dy = -dloss_dyhat",
        "dloss_dw3 = dloss_dyhat * h",
        "dloss_dh = dloss_dyhat * w3",
        "dloss_db2 = dloss_dyhat",
        "dloss_dz1 = dloss_dh * h * (1 - h)",
        "dloss_dw1 = dloss_dz1 * x1",
        "dloss_dx1 = dloss_dz1 * w1",
        "dloss_dw2 = dloss_dz1 * x2",
        "dloss_dx2 = dloss_dz1 * w2",
        "dloss_db1 = dloss_dz1",
    ]


def test_rosenbrock_reads_shapes_from_slices_and_multiplies_by_no_ones():
    [rosen] = [r for r in BENCHMARKS if r.name == "rosenbrock"]
    code = _code(compile_source(source(rosen), "rosenbrock.py", wrt="all").text, "rosenbrock_grad")
    assert code == [
        "diff = x[1:] - x[:-1] ** 2",
        "drosenbrock_ddiff = 200.0 * diff",
        "drosenbrock_dx = np.zeros_like(x, dtype=float)",
        "drosenbrock_dx[1:] = drosenbrock_ddiff",  # (the first write into fresh zeros: no sum)
        "drosenbrock_dx[:-1] -= 2 * (drosenbrock_ddiff * x[:-1] + (1.0 - x[:-1]))",  # (one write, 2 factored)
        "return drosenbrock_dx",
    ]


def test_an_accumulator_keeps_its_constant_gradient_through_the_loop():
    [euler] = [r for r in BENCHMARKS if r.name == "euler"]
    code = _code(compile_source(source(euler), "euler.py", wrt="all").text, "loss_grad")
    assert "dtotal_dx += DT * 2 * (x - TARGET)" in code
    assert not any("dtotal_dtotal" in line for line in code)


def test_a_mean_gradient_reads_no_value_and_folds_its_ones():
    text, module = _compiled("""
        import numpy as np

        def f(p, *, q):
            return np.mean((p - q) ** 2)
    """)
    assert _code(text, "f_grad")[:2] == ["diff = p - q", "df_dp = unbroadcast(2 * diff / np.size(diff), p)"]
    p, q = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(module.f_grad(p, q=q), 2 * (p - q) / 3, rtol=1e-15)


def test_a_mean_along_an_axis_counts_that_axis():
    src = """
        import numpy as np

        def f(a):
            return np.sum(np.mean(a * a, axis=1))
    """
    text, module = _compiled(src)
    assert "np.shape(a)[1]" in "\n".join(_code(text, "f_grad"))
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(module.f_grad(a), 2 * a / 3, rtol=1e-15)


def test_a_helper_keeps_its_own_parameter_name():
    text, module = _compiled("""
        import math

        def sigmoid(t):
            return 1 / (1 + math.exp(-t))

        def f(x=0.5):
            return sigmoid(x) * 2
    """)
    assert "def sigmoid(t):\n" in text and "return 1 / (1 + math.exp(-t))" in text
    assert module.f_grad(0.0) == 0.5


def test_a_named_gradient_belongs_to_the_variable_that_receives_it_alone():
    """(yhat - y)'s gradient is yhat's adjoint; in (u*b + a) * (u*u + a), a receives two, so
    neither is named after it (closure_of_a_closure: a silently wrong gradient once)."""
    text, module = _compiled("""
        def f(a, b):
            u = a * b
            return (u * b + a) * (u * u + a)
    """)
    code = _code(text, "f_grad")
    assert "df_da = df_dsum" in code and "df_da += df_dsum_1" in code
    a, b, h = 0.6, -1.3, 1e-6

    def f(a, b):
        u = a * b
        return (u * b + a) * (u * u + a)

    da, db = module.f_grad(a, b)
    assert da == pytest.approx((f(a + h, b) - f(a - h, b)) / (2 * h), rel=1e-7)
    assert db == pytest.approx((f(a, b + h) - f(a, b - h)) / (2 * h), rel=1e-7)


def test_the_inline_sigmoid_stays_finite_where_exp_overflows():
    _, module = _compiled("""
        import numpy as np

        def f(z):
            return np.sum(1.0 / (1.0 + np.exp(-z)))
    """)
    with np.errstate(over="ignore"):
        grad = module.f_grad(np.array([-800.0, 0.0, 800.0]))
    assert grad.tolist() == [0.0, 0.25, 0.0]


# ---- never the wrong number ------------------------------------------------------------------

def test_a_value_computed_in_one_branch_is_not_reused_in_the_other():
    src = """
        import numpy as np

        def f(x, c):
            if c > 0:
                y = np.exp(x) * 2.0
            else:
                y = np.exp(x * 0.5) + 1.0
            return np.sum(y * np.exp(x))
    """
    for c in (1.0, -1.0):
        _agrees(src, {"x": np.array([0.3, -0.2]), "c": c}, ["x"])


def test_a_value_computed_in_a_loop_trip_is_not_reused_in_the_next_nor_after():
    src = """
        import numpy as np

        def f(x, w):
            s = 0.0
            for i in range(3):
                x = np.sin(x * w) * 0.9
                s = s + np.sum(np.exp(x)) + np.sum(np.exp(x) * x)
            return s + np.sum(np.exp(x))
    """
    text, _ = _compiled(src)
    _agrees(src, {"x": np.array([0.3, -0.7]), "w": np.array([1.1, 0.4])}, ["x", "w"])
    forward = _function(text, "f_value_and_grad").split("# backward pass")[0]
    assert forward.count("np.exp(x)") == 2  # once in the body (named), once after the loop


def test_a_value_is_not_reused_after_its_name_is_overwritten_or_written_into():
    src = """
        import numpy as np

        def f(x, w):
            y = np.exp(x) * w
            z = np.sum(np.tanh(y))
            y = y * 2.0
            z = z + np.sum(np.tanh(y))
            y[0] = 0.5
            return z + np.sum(np.tanh(y) * w)
    """
    _agrees(src, {"x": np.array([0.3, -0.7, 0.1]), "w": np.array([1.1, 0.4, -0.5])}, ["x", "w"])


def test_a_value_written_into_an_array_by_name_gets_a_copy_of_its_gradient():
    """`e = ...; out[i] = e` in a loop: e's gradient was a view of out's, which the backward
    pass then zeroes in place: every gradient 0 (conv1d of the real corpus once the loop's
    einsum was named; the same with the name written by hand)."""
    src = """
        import numpy as np

        def f(x, w):
            out = np.zeros((3, 2))
            for i in range(3):
                e = np.tanh(x[i] * w)
                out[i] = e
            return np.sum(out ** 2) + np.sum(np.exp(out[1:] * w) * x[:2])
    """
    _agrees(src, {"x": np.array([[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]]), "w": np.array([0.7, -0.8])}, ["x", "w"])


def test_a_call_only_one_branch_of_a_conditional_makes_is_not_moved_out_of_it():
    src = """
        import math

        def f(x):
            y = math.log(x) if x > 0 else -x
            return y + (math.log(x) if x > 0 else 0.0) * x
    """
    text, module = _compiled(src)
    assert module.f_grad(-2.0) == pytest.approx(-1.0)  # log(-2) is never taken
    _agrees(src, {"x": 1.7}, ["x"])


# ---- sameshape ----------------------------------------------------------------------------------

def _same(src, name="f"):
    module = parse_module(textwrap.dedent(src))
    namer = ModuleNamer(identifiers(module.tree), module.constants)
    params = [a.arg for a in module.functions[name].args.args + module.functions[name].args.kwonlyargs]
    fn = lower_function(module, name, namer.function_namer(params), sigmoid_helper_name(module))
    return fn, SameShape(fn, array_values(fn, module))


def test_slices_that_drop_as_many_elements_have_one_shape():
    fn, same = _same("""
        import numpy as np

        def f(x, y):
            a = x[1:] - x[:-1] ** 2
            b = x[2:] * x[:-1]
            c = x[1:-1] + x[2:]
            return np.sum(a) + np.sum(b) + np.sum(c) + np.sum(y)
    """)
    a, b, c = (s.expr for s in fn.body[:3])
    assert same.same(a.args[0], a.args[1]) and same.key(a) == same.key(a.args[0])
    assert same.key(b) is None  # x[2:] is one shorter than x[:-1]
    assert same.same(c.args[0], c.args[1])
    assert not same.same(Var("x"), Var("y")) and same.key(Const(2.0)) == NUMBER
    assert same.proxy(a) == a.args[0] and same.proxy(Var("a")) == a.args[0]


def test_a_reduction_that_keeps_its_axes_broadcasts_into_its_input():
    fn, same = _same("""
        import numpy as np

        def f(logits):
            shifted = logits - np.max(logits, axis=1, keepdims=True)
            return np.sum(shifted)
    """)
    assert same.same(Var("shifted"), Var("logits"))
    kept = fn.body[0].expr.args[1]
    assert isinstance(kept, Call) and not same.same(kept, Var("logits"))


def test_an_overwritten_name_is_its_own_shape():
    fn, same = _same("""
        import numpy as np

        def f(x):
            y = x * 2.0
            for i in range(3):
                y = np.concatenate([y, y])
            return np.sum(y)
    """)
    assert not same.same(Var("y"), Var("x"))


def test_reductions_over_different_axes_are_different_shapes():
    """Soak seed 1218 #17014: f = sum(mean(b, 1) / sum(b)) is 1 for a one-column b, so its
    gradient is 0; it was not, because u / y's gradient for y (1 x 1) was left (n x 1)."""
    source = """
import numpy as np


def f(b):
    u = np.mean(b, axis=1, keepdims=True)
    y = np.sum(b, axis=None, keepdims=True)
    t = u / y
    return np.sum(t)
"""
    from gradgen import compile_source, load_module

    m = load_module(compile_source(source, wrt="all").text, "reductions")
    np.testing.assert_allclose(m.f_grad(np.array([[0.3], [0.9]])), [[0.0], [0.0]], atol=1e-15)
    b = np.array([[0.3, 0.5], [0.9, -0.2]])  # two columns: f = sum(mean(b, 1)) / sum(b) = 1/2
    np.testing.assert_allclose(m.f_grad(b), np.zeros((2, 2)), atol=1e-15)
