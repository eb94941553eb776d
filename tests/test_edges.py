"""Numerical edges: the gradient at points where the derivative does not exist or is not
finite, and how `gradgen check` reports a nan or an inf.

Each edge compiles a tiny function and asserts the exact value gradgen gives there, next to
what JAX and PyTorch give for the same function, as literal numbers. Those were measured
once (JAX 0.10.2 with jax_enable_x64, `jax.grad`; PyTorch 2.13.0+cpu, float64, `.backward()`);
neither is a dependency of gradgen or of this test. Where JAX and PyTorch agree gradgen gives
their value; where they disagree the entry says which one gradgen follows and why. The guide's
page docs/numerics.md ("Numerical conventions") is this table, and the last test here keeps it so.
"""

import math
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.tools.cli import format_report
from gradgen.verify import check as verify
from gradgen.verify.check import check_source

ROOT = Path(__file__).resolve().parent.parent
nan, inf = math.nan, math.inf


def value_and_grad(body, point, params=None, wrt="all"):
    """Compile `def f(<params>): return <body>` and run its f_value_and_grad at `point`."""
    params = params or ", ".join(point)
    source = f"import math\nimport numpy as np\n\n\ndef f({params}):\n    return {body}\n"
    module = load_module(compile_source(source, "edge.py", wrt=wrt).text, "edge_grad")
    with np.errstate(all="ignore"):
        return module.f_value_and_grad(**point)


@dataclass
class Edge:
    construct: str  # the table's first column (docs/numerics.md)
    point: str  # its second column
    body: str  # the function's return expression
    at: dict  # the point (np.float64 numbers: NumPy's arithmetic, inf and nan, not Python's exceptions)
    gradgen: object  # the gradient, in parameter order
    jax: object
    torch: object
    follows: str = "both"  # "both", "jax", "torch", or "neither" (then `why` says what instead)
    wrt: tuple = None
    why: str = ""


f64 = np.float64
EDGES = [
    Edge("`abs(x)`, `math.fabs`, `np.abs`", "x = 0", "abs(x)", {"x": 0.0}, 0.0, 1.0, 0.0, "torch",
         why="the sign function: the smallest subgradient; JAX's abs' is 1 at 0 (select(x >= 0, g, -g))"),
    Edge("`np.abs(x)` on an array", "x = [0, -1, 2]", "np.sum(np.abs(x))", {"x": np.array([0.0, -1.0, 2.0])},
         [0.0, -1.0, 1.0], [1.0, -1.0, 1.0], [0.0, -1.0, 1.0], "torch", why="as abs"),
    Edge("builtin `max(x, y)`, `min(x, y)`", "x = y = 1", "max(x, y)", {"x": 1.0, "y": 1.0},
         (1.0, 0.0), (1.0, 0.0), (1.0, 0.0)),
    Edge("builtin `max(x, y, z)`", "x, y, z = 0, 1, 1", "max(x, y, z)", {"x": 0.0, "y": 1.0, "z": 1.0},
         (0.0, 1.0, 0.0), (0.0, 1.0, 0.0), (0.0, 1.0, 0.0)),
    Edge("`np.maximum(x, y)`, `np.minimum(x, y)`", "x = y = 1", "np.maximum(x, y)", {"x": f64(1), "y": f64(1)},
         (0.5, 0.5), (0.5, 0.5), (0.5, 0.5)),
    Edge("`np.max(x)`, `np.min`, `np.amax`", "x = [1, 1, 0]", "np.max(x)", {"x": np.array([1.0, 1.0, 0.0])},
         [0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.5, 0.5, 0.0]),
    Edge("`np.max(x, axis=0)`", "x = [[1, 2], [1, 0]]", "np.sum(np.max(x, axis=0))",
         {"x": np.array([[1.0, 2.0], [1.0, 0.0]])},
         [[0.5, 1.0], [0.5, 0.0]], [[0.5, 1.0], [0.5, 0.0]], [[0.5, 1.0], [0.5, 0.0]]),
    Edge("`np.clip(x, lo, hi)`", "x = lo = 0, hi = 1", "np.clip(x, lo, hi)", {"x": f64(0), "lo": f64(0), "hi": f64(1)},
         (1.0, 0.0, 0.0), (0.5, 0.5, 0.0), (1.0, 0.0, 0.0), "torch",
         why="torch.clamp is inclusive; jnp.clip is maximum then minimum, whose ties split in halves"),
    Edge("`np.clip(x, lo, hi)`", "x = hi = 1, lo = 0", "np.clip(x, lo, hi)", {"x": f64(1), "lo": f64(0), "hi": f64(1)},
         (1.0, 0.0, 0.0), (0.5, 0.0, 0.5), (1.0, 0.0, 0.0), "torch", why="as at lo"),
    Edge("`np.sign(x)`, `floor`/`ceil`/`trunc(y)`, `round(z)`", "x = 0, y = 1, z = 0.5",
         "np.sign(x) + math.floor(y) + math.ceil(y) + math.trunc(y) + round(z)",
         {"x": 0.0, "y": 1.0, "z": 0.5}, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), wrt=("x", "y", "z")),
    Edge("`np.sqrt(x)`, `x ** 0.5`", "x = 0", "np.sqrt(x)", {"x": f64(0)}, inf, inf, inf),
    Edge("`y * np.sqrt(x)` (a zero upstream gradient)", "x = y = 0", "y * np.sqrt(x)", {"x": f64(0), "y": f64(0)},
         (nan, 0.0), (nan, 0.0), (nan, 0.0)),
    Edge("`np.log(x)`", "x = 0", "np.log(x)", {"x": f64(0)}, inf, inf, inf),
    Edge("`x ** 2` (a constant exponent)", "x = 0", "x ** 2", {"x": 0.0}, 0.0, 0.0, 0.0),
    Edge("`x ** y`", "x = 0, y = 2", "x ** y", {"x": f64(0), "y": f64(2)}, (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
    Edge("`x ** y`", "x = 0, y = 1", "x ** y", {"x": f64(0), "y": f64(1)}, (1.0, 0.0), (1.0, 0.0), (1.0, 0.0)),
    Edge("`x ** y`", "x = 0, y = 0.5", "x ** y", {"x": f64(0), "y": f64(0.5)}, (inf, 0.0), (inf, 0.0), (inf, 0.0)),
    Edge("`x ** y`", "x = 0, y = 0", "x ** y", {"x": f64(0), "y": f64(0)}, (0.0, 0.0), (nan, 0.0), (0.0, 0.0),
         "torch", why="x ** 0 is the constant 1: its derivative is 0, JAX's nan is 0 * 0 ** -1"),
    Edge("`0.0 ** y`", "y = 2", "0.0 ** y", {"y": f64(2)}, 0.0, 0.0, 0.0),
    Edge("`np.hypot(x, y)`, `math.hypot`", "x = y = 0", "np.hypot(x, y)", {"x": f64(0), "y": f64(0)},
         (0.0, 0.0), (0.5, 0.5), (nan, nan), "neither",
         why="hypot is the norm of its arguments: 0 as np.linalg.norm (and abs), the smallest subgradient"),
    Edge("`np.linalg.norm(x)`", "x = [0, 0, 0]", "np.linalg.norm(x)", {"x": np.zeros(3)},
         [0.0, 0.0, 0.0], [nan, nan, nan], [0.0, 0.0, 0.0], "torch",
         why="torch.linalg.vector_norm: the smallest subgradient, not 0 / 0"),
    Edge("`np.arctan2(y, x)`", "y = x = 0", "np.arctan2(y, x)", {"y": f64(0), "x": f64(0)},
         (nan, nan), (nan, nan), (0.0, 0.0), "jax",
         why="atan2 has no limit at the origin, so no derivative or subgradient: nan says so"),
    Edge("`np.prod(x)`", "x = [2, 0, 3]", "np.prod(x)", {"x": np.array([2.0, 0.0, 3.0])},
         [0.0, 6.0, 0.0], [0.0, 6.0, 0.0], [0.0, 6.0, 0.0]),
    Edge("`np.prod(x)`", "x = [0, 0, 3]", "np.prod(x)", {"x": np.array([0.0, 0.0, 3.0])},
         [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
]


def _ids(edge):
    return f"{edge.body} at {edge.point}"


def _same(got, want):
    """Exactly equal, nan matching nan, shapes included."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return got.shape == want.shape and bool(np.all((got == want) | (np.isnan(got) & np.isnan(want))))


@pytest.mark.parametrize("edge", EDGES, ids=_ids)
def test_gradient_at_the_edge(edge):
    _, grad = value_and_grad(edge.body, edge.at, wrt=list(edge.wrt) if edge.wrt else "all")
    assert _same(grad, edge.gradgen), (grad, edge.gradgen)


@pytest.mark.parametrize("edge", EDGES, ids=_ids)
def test_the_documented_choice_is_the_one_gradgen_makes(edge):
    if edge.follows == "both":
        assert _same(edge.jax, edge.torch) and _same(edge.gradgen, edge.jax)
    elif edge.follows in ("jax", "torch"):
        assert not _same(edge.jax, edge.torch) and edge.why
        assert _same(edge.gradgen, getattr(edge, edge.follows))
    else:
        assert edge.follows == "neither" and edge.why
        assert not _same(edge.gradgen, edge.jax) and not _same(edge.gradgen, edge.torch)


def test_abs_spellings_agree_at_zero():
    for body in ("abs(x)", "math.fabs(x)", "np.abs(x)", "np.absolute(x)", "np.fabs(x)"):
        assert value_and_grad(body, {"x": 0.0})[1] == 0.0, body


def test_min_ties_go_to_the_first_argument_as_python_returns_it():
    assert value_and_grad("min(x, y, z)", {"x": 1.0, "y": 0.0, "z": 0.0})[1] == (0.0, 1.0, 0.0)
    assert value_and_grad("np.minimum(x, y)", {"x": f64(1), "y": f64(1)})[1] == (0.5, 0.5)
    assert _same(value_and_grad("np.amax(x)", {"x": np.array([2.0, 2.0, 2.0])})[1], [1 / 3] * 3)
    assert _same(value_and_grad("np.min(x)", {"x": np.array([0.0, 1.0, 0.0])})[1], [0.5, 0.0, 0.5])
    assert _same(value_and_grad("np.sum(np.min(x, axis=1))", {"x": np.array([[1.0, 1.0], [0.0, 2.0]])})[1],
                 [[0.5, 0.5], [1.0, 0.0]])  # JAX and PyTorch (torch.amin) alike


def test_math_hypot_of_any_arity_at_the_origin():
    assert value_and_grad("math.hypot(x, y, z)", {"x": 0.0, "y": 0.0, "z": 0.0})[1] == (0.0, 0.0, 0.0)
    assert value_and_grad("math.hypot(x, y)", {"x": 0.0, "y": 3.0})[1] == (0.0, 1.0)  # JAX and PyTorch: 0, 1


def test_python_floats_raise_where_numpy_gives_inf():
    """On Python floats the generated code does Python's arithmetic: a division by zero
    raises, as `1 / x` in the user's own code would (NumPy numbers give inf, as JAX and
    PyTorch). `gradgen check` reports where (see the tests below)."""
    with pytest.raises(ZeroDivisionError):
        value_and_grad("math.sqrt(x)", {"x": 0.0})
    with pytest.raises(ZeroDivisionError):
        value_and_grad("np.log(x)", {"x": 0.0})
    with pytest.raises(ZeroDivisionError):
        value_and_grad("x ** 0.5", {"x": 0.0})
    assert value_and_grad("np.sqrt(x)", {"x": f64(0)})[1] == inf
    assert value_and_grad("x ** 0.5", {"x": f64(0)})[1] == inf
    assert value_and_grad("np.log(x)", {"x": f64(0)})[1] == inf


def test_a_literal_zero_factor_is_folded_away_before_any_nan():
    """`0.0 * np.sqrt(x)` is the exact zero at compile time (JAX and PyTorch: nan at x = 0)."""
    assert value_and_grad("0.0 * np.sqrt(x)", {"x": f64(0)}, wrt=["x"])[1] == 0.0


def test_polynomial_at_zero_has_the_derivative_of_its_linear_term():
    """x ** k with a loop's k: k = 0 at x = 0 used to be 0 * 0 ** -1 (ZeroDivisionError)."""
    source = "def f(x, n=4):\n    s = 0.0\n    for k in range(n):\n        s = s + (k + 1) * x ** k\n    return s\n"
    module = load_module(compile_source(source, "poly.py", wrt="all").text, "poly_grad")
    assert module.f_grad(0.0) == 2.0  # d/dx (1 + 2x + 3x^2 + 4x^3) at 0
    assert module.f_grad(1.0) == 2.0 + 6.0 + 12.0


def test_guarded_rules_are_bit_for_bit_the_plain_formula_away_from_the_edge():
    """The guards `(x == 0)` add exactly 0 away from the edge point: the smooth gradient is
    the textbook formula to the last bit."""
    rng = np.random.default_rng(5)
    for x, y in rng.uniform(0.1, 3.0, (20, 2)):
        assert value_and_grad("x ** y", {"x": x, "y": y})[1] == (y * x ** (y - 1), x ** y * math.log(x))
        assert value_and_grad("math.hypot(x, y)", {"x": x, "y": -y})[1] == (x / math.hypot(x, y),
                                                                               -y / math.hypot(x, y))
    v = rng.standard_normal(7)
    v[3] = 0.0
    assert np.array_equal(value_and_grad("np.linalg.norm(v)", {"v": v})[1], v / np.linalg.norm(v))


def test_rule_text_for_a_constant_exponent_is_unchanged():
    text = compile_source("def f(x):\n    return x ** 3 + 2.0 ** x\n", "c.py", wrt="all").text
    assert "    df_dx = 3 * x**2\n    df_dx += 2.0**x * math.log(2.0)\n" in text
    text = compile_source("import math\n\n\ndef f(x, y):\n    return x ** y\n", "v.py", wrt="all").text
    assert "df_dx = y * x ** (y - 1 + (y == 0))" in text
    assert "df_dy = f * math.log(x + (x == 0))" in text


# ---- gradgen check: where a nan or an inf first appears ---------------------------------------

def check(source, filename="loss.py", **kwargs):
    (report,) = check_source(textwrap.dedent(source), filename, **kwargs)
    return report


def test_sqrt_at_zero_on_python_floats_names_the_line():
    report = check("""\
        import math


        def f(x):
            return math.sqrt(x)
        """, at={"x": 0.0})
    (point,) = report.points
    assert not report.ok
    assert point.nonfinite == [
        "loss.py:5: computing df_dx raised ZeroDivisionError (float division by zero) in the backward pass of: "
        "return math.sqrt(x)"]


def test_sqrt_at_zero_on_numpy_names_the_line_and_the_adjoint():
    report = check("""\
        import numpy as np


        def f(x):
            return np.sqrt(x)
        """, at={"x": np.float64(0.0)})
    (point,) = report.points
    assert point.nonfinite == ["loss.py:5: df_dx became inf in the backward pass of: return np.sqrt(x)"]
    assert point.rows[0].generated == inf and not report.ok
    text = format_report(report)
    assert text.splitlines()[-1] == "    loss.py:5: df_dx became inf in the backward pass of: return np.sqrt(x)"


LONGER = """\
import numpy as np


def loss(a=1.0, b=2.0):
    u = np.exp(a - 1.0) * b
    v = np.sqrt(u - 2.0)
    w = v * a + u
    return w * w
"""


def test_a_middle_statement_of_a_longer_program():
    report = check(LONGER)
    first = report.points[0]  # the defaults: u - 2.0 is exactly 0
    assert first.nonfinite == ["loss.py:6: dloss_du became inf in the backward pass of: v = np.sqrt(u - 2.0)"]
    assert [r.generated for r in first.rows] == [inf, inf]
    assert all(p.nonfinite == [] for p in report.points[1:])  # the random points are fine
    assert all(p.ok for p in report.points[1:]) and not report.ok


def test_a_forward_value_that_is_not_finite_is_named_too():
    report = check("""\
        import numpy as np


        def loss(a=1.0, b=2.0):
            u = np.exp(a - 1.0) * b
            v = u - 2.0
            w = np.log(v)
            z = w * 3.0 + a
            return z
        """, at={"a": 1.0, "b": 2.0})
    (point,) = report.points
    assert point.value_generated == -inf and not report.ok
    assert point.nonfinite == [
        "loss.py:7: w became -inf in the forward pass: w = np.log(v)",
        "loss.py:7: dz_dv became inf in the backward pass of: w = np.log(v)"]


def test_an_exception_in_a_middle_statement_names_that_statement():
    report = check("""\
        import numpy as np


        def loss(a, b):
            u = a * b
            v = u - 2.0
            w = np.log(v)
            return w * 3.0 + a
        """, at={"a": 1.0, "b": 2.0})
    (point,) = report.points
    assert point.nonfinite == [
        "loss.py:7: w became -inf in the forward pass: w = np.log(v)",
        "loss.py:7: computing dloss_dv raised ZeroDivisionError (float division by zero) in the backward pass of: "
        "w = np.log(v)"]


def test_an_array_with_a_zero_element():
    report = check("""\
        import numpy as np


        def f(x):
            y = np.sqrt(x)
            return np.sum(y)
        """, at={"x": np.array([0.0, 4.0, 1.0])})
    (point,) = report.points
    assert point.nonfinite == ["loss.py:5: df_dx became inf (1 of 3 elements) in the backward pass of: y = np.sqrt(x)"]
    assert not report.ok


def test_a_loop_names_the_statement_inside_it():
    """x runs 0.5, 0, -0.5: the forward pass is finite, the backward pass's second sweep
    (the middle iteration) meets sqrt'(0) * abs'(0) = inf * 0."""
    report = check("""\
        import numpy as np


        def f(x, n=3):
            s = 0.0
            for i in range(n):
                x = x - 0.5
                s = s + np.sqrt(np.abs(x))
            return s
        """, at={"x": 1.0})
    (point,) = report.points
    assert math.isfinite(point.value_generated)
    assert point.nonfinite == ["loss.py:8: ds_dx became nan in the backward pass of: s = s + np.sqrt(np.abs(x))"]


def test_a_loop_with_a_non_finite_forward_value_in_a_later_iteration():
    report = check("""\
        import numpy as np


        def f(x, n=3):
            s = 0.0
            for i in range(n):
                x = x - 0.5
                r = np.sqrt(x)
                s = s + r
            return s
        """, at={"x": 1.0})
    (point,) = report.points
    assert point.nonfinite == ["loss.py:8: r became nan in the forward pass: r = np.sqrt(x)",
                               "loss.py:8: ds_dx became nan in the backward pass of: r = np.sqrt(x)"]


def test_without_the_generated_text_the_forward_line_is_still_named():
    source = "import numpy as np\n\n\ndef f(x):\n    y = np.log(x)\n    return y\n"
    compiled = compile_source(source, "loss.py", wrt="all")
    generated = load_module(compiled.text, "loss_grad")
    namespace = {}
    exec(compile(source, "loss.py", "exec"), namespace)
    args = (compiled.module, namespace["f"], generated.f_value_and_grad, {"x": np.float64(0.0)})
    forward = "loss.py:5: y became -inf in the forward pass: y = np.log(x)"
    assert verify.locate_nonfinite(*args) == [forward]
    assert verify.locate_nonfinite(*args, "x = 1\n") == [
        forward, "loss.py: the gradient is not finite (the generated code could not be followed)"]
    assert verify.locate_nonfinite(*args, compiled.text) == [
        forward, "loss.py:5: dy_dx became inf in the backward pass of: y = np.log(x)"]


def test_a_finite_point_is_never_traced(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("traced a finite point")

    monkeypatch.setattr(verify, "locate_nonfinite", fail)
    report = check(LONGER, at={"a": 1.3, "b": 2.5})
    assert report.ok and report.points[0].nonfinite == []


def test_the_previous_trace_function_is_restored():
    before = sys.gettrace()
    check(LONGER)
    assert sys.gettrace() is before


def test_check_command_prints_the_table_and_the_line_and_exits_one(tmp_path):
    (tmp_path / "loss.py").write_text("import math\n\n\ndef f(x):\n    y = math.sqrt(x)\n    return y\n")
    result = subprocess.run([sys.executable, "-m", "gradgen", "check", "loss.py", "--at", "x=0"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "f: gradient with respect to x"
    assert lines[2].split("|")[0].strip() == "parameter"
    assert lines[3].split("|")[1].strip() == "nan"
    assert lines[4] == ("    loss.py:5: computing dy_dx raised ZeroDivisionError (float division by zero) "
                        "in the backward pass of: y = math.sqrt(x)")
    assert result.stderr == "MISMATCH in f: parameter(s) x\n"


# ---- the guide's table (docs/numerics.md) is this table -----------------------------------------

def _fmt(value):
    if isinstance(value, tuple):
        return ", ".join(_fmt(v) for v in value)
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    value = float(value) + 0.0  # -0.0 prints as 0
    return "nan" if math.isnan(value) else ("inf" if value == inf else f"{value:g}")


def table_row(edge):
    return f"| {edge.construct} | {edge.point} | {_fmt(edge.gradgen)} | {_fmt(edge.jax)} | {_fmt(edge.torch)} |"


def test_the_guide_numerical_conventions_table_is_this_table():
    text = (ROOT / "docs" / "numerics.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `") or line.startswith("| builtin")]
    assert rows == [table_row(e) for e in EDGES]


@pytest.mark.parametrize("k", [100, 200, 300])
def test_finite_differences_of_a_steep_smooth_function_are_no_kink(k):
    """sin(k x) has a fifth derivative of k**5: the stencils agree only at steps of 1e-4 or
    less, which `finite_difference` reaches before it would call the point a kink."""
    estimate, kink = verify.finite_difference(lambda x: math.sin(k * x), {"x": 0.3}, "x")
    assert kink is None
    assert estimate == pytest.approx(k * math.cos(k * 0.3), rel=1e-7)


def test_finite_differences_at_a_kink_say_so():
    estimate, kink = verify.finite_difference(lambda x: abs(x - 0.3) + x, {"x": 0.3}, "x")
    assert kink == pytest.approx((0.0, 2.0), abs=1e-6)
