"""Issue 22, item 3: `return` inside loops (in `for` and `while True:`, in an `if`, in a nested
loop, beside `break`/`continue`, in a helper inlined into the loss), tuple targets that write
into arrays (`s[i], s[i + 1] = step(...)`), and recursion whose depth constants fix when
compiling (unrolled; any other recursion refused at the recursive call).

Every program is compiled and checked (gradgen.verify: sympy where it applies and central
differences of the original) at points chosen so that every `return` of the file runs at
one of them at least: the original is run under sys.settrace and each exit is seen taken.
Forward mode (jvp, hvp) is checked too. The scalar corpus is tests/corpus/control/
returns_in_loops.py (checked by tests/test_control_flow.py at the points it lists there).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

from gradgen import CompileError, compile_source
from gradgen.verify.check import check_source
from gradgen.verify.derivatives import check_kinds

CORPUS = Path(__file__).parent / "corpus" / "control" / "returns_in_loops.py"
VALUE_REL = 1e-12


def returns_taken(source, name, points):
    """The lines of the `return` statements of `source` that ran when `name` was called at
    `points`, and those of every return of the file."""
    filename = "<returns-in-loops>"
    namespace = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - a test's own program
    ran = set()

    def trace(frame, event, arg):
        if frame.f_code.co_filename == filename and event == "line":
            ran.add(frame.f_lineno)
        return trace

    for point in points:
        sys.settrace(trace)
        try:
            namespace[name](**{k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in point.items()})
        finally:
            sys.settrace(None)
    every = {n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Return)}
    return ran & every, every


def check_at(source, name, points, kinds=("jvp", "hvp")):
    """The gradient of `name` right at every point (and jvp, hvp), and every return of the file
    taken at one of them."""
    taken, every = returns_taken(source, name, points)
    assert taken == every, f"returns never taken: lines {sorted(every - taken)}"
    for point in points:
        (report,) = check_source(source, "loops.py", functions=[name], at=point)
        (checked,) = report.points
        assert report.ok, [(r.param, r.generated, r.sympy, r.fd, r.note) for r in checked.rows]
        assert abs(checked.value_generated - checked.value_original) <= VALUE_REL * max(
            1.0, abs(checked.value_original))
        if kinds:
            for kind in check_kinds(source, "loops.py", [name], None, point, ["grad", *kinds]):
                assert kind.ok, (kind.kind, point, [(r.what, r.error) for r in kind.rows])


# ---- the scalar corpus: every exit of every function is taken -----------------------------------

def test_every_return_of_the_scalar_corpus_is_taken_at_its_points():
    from test_control_flow import POINTS, signature_of

    source = CORPUS.read_text(encoding="utf-8")
    taken, every = set(), set()
    for (file_name, name), points in POINTS.items():
        if file_name == CORPUS.name:
            defaults = dict(signature_of(file_name, name))
            ran, every = returns_taken(source, name, [defaults] + [{**defaults, **p} for p in points])
            taken |= ran
    assert taken == every, f"returns never taken: lines {sorted(every - taken)}"


# ---- arrays, helpers, forward mode ----------------------------------------------------------------

SOLVER = """
import numpy as np


def f(w, target):
    x = w * 0.5
    it = 0
    while True:
        r = x - target
        x = x - 0.4 * r * (1.0 + np.tanh(w) ** 2)
        it += 1
        if np.sum(r * r) < 0.05:
            return np.sum(x * w)
        if it >= 6:
            return np.sum(x ** 2) * 0.5
"""


def test_a_solver_s_two_exits_in_while_true():
    near, far = np.array([0.4, -0.2]), np.array([10.0, -5.0])
    check_at(SOLVER, "f", [{"w": near, "target": near * 0.6}, {"w": near, "target": far}])


HELPER_RETURNS_AN_ARRAY = """
import numpy as np


def settle(v, n):
    for i in range(n):
        v = v * 0.8 + 0.1 * np.sin(v)
        if np.sum(v * v) < 0.2:
            return v * 2.0
    return v


def f(w):
    return np.sum(settle(w, 6) ** 2) + np.sum(settle(w * 0.5, 2) * w)
"""


def test_a_helper_returns_an_array_from_inside_its_loop():
    check_at(HELPER_RETURNS_AN_ARRAY, "f", [{"w": np.array([0.4, -0.3, 0.2])}, {"w": np.array([2.0, -1.5, 1.0])}])


NESTED = """
import numpy as np


def f(W, x):
    h = x
    for i in range(3):
        for j in range(2):
            h = np.tanh(W @ h) + 0.5 * h
            if np.sum(h) > 1.0:
                return np.sum(h * x)
            if np.sum(h) < -1.0:
                break
        if np.sum(h) < -0.5:
            continue
        h = h * 0.9
    return np.sum(h ** 2)
"""


def test_a_return_in_an_inner_loop_leaves_both_beside_break_and_continue():
    W = np.array([[0.5, -0.2], [0.1, 0.3]])
    # returns on the first trip; runs every trip; breaks out of the inner loop and continues the outer one
    check_at(NESTED, "f", [{"W": W, "x": np.array([1.5, 1.0])}, {"W": W, "x": np.array([0.1, -0.2])},
                           {"W": W, "x": np.array([-2.5, -2.4])}])


HELPER_IN_A_WHILE = """
import numpy as np


def shrink(v, k):
    for i in range(k):
        v = v - 0.3 * np.tanh(v)
        if np.sum(v ** 2) < 0.1:
            return v
    return v * 0.5


def f(w):
    total = 0.0
    it = 0
    while it < 3:
        total = total + np.sum(shrink(w * (it + 1), 2) * w)
        it += 1
    return total
"""


def test_a_helper_that_returns_from_its_loop_inlined_into_a_while_loop():
    check_at(HELPER_IN_A_WHILE, "f", [{"w": np.array([0.2, 0.1])}, {"w": np.array([1.5, -0.8])}])


PLACES = {
    "over_a_list": ("""
import numpy as np


def f(x):
    hs = [x, x * 2.0, x * 3.0]
    acc = 0.0
    for h in hs:
        acc = acc + np.sum(np.sin(h))
        if acc > 1.0:
            return acc * 2.0
    return acc
""", [{"x": np.array([0.3, 0.2])}, {"x": np.array([0.01, 0.02])}]),
    "over_the_parts_of_a_structured_parameter": ("""
import numpy as np


def f(params, x):
    h = x
    for W, b in params:
        h = np.tanh(h @ W + b)
        if np.sum(h) > 0.5:
            return np.sum(h ** 2)
    return np.sum(h)
""", [{"x": np.array([0.3, 0.2]), "params": [(np.eye(2) * 0.5, np.zeros(2)), (np.eye(2), np.ones(2))]},
      {"x": np.array([-0.3, 0.2]), "params": [(np.eye(2) * 0.5, np.zeros(2)), (np.eye(2), np.zeros(2))]}]),
    "in_a_nested_def": ("""
def f(x=0.5):
    def inner(z):
        for i in range(4):
            z = z * 1.5
            if z > 1.0:
                return z * z
        return z
    return inner(x) + inner(x * 0.3)
""", [{"x": 0.5}, {"x": 0.1}]),
    "in_a_helper_called_in_a_while_condition": ("""
def halve(z):
    for i in range(3):
        z = z * 0.5
        if z < 0.2:
            return z
    return z + 1.0


def f(x=0.9):
    k = 0
    while halve(x) > 0.1 and k < 5:
        x = x * 0.7
        k += 1
    return x
""", [{"x": 0.9}, {"x": 0.1}, {"x": 3.0}]),
    "in_a_loop_inside_a_branch": ("""
def f(x=0.5, n=3):
    if x > 0.0:
        for i in range(n):
            x = x * 1.2 + 0.1
            if x > 1.0:
                return x * 3.0
    return x
""", [{"x": 0.5}, {"x": 0.1}, {"x": -0.5}]),
    "recursion_unrolled_inside_a_loop_that_returns": ("""
def horner(x, cs):
    if not cs:
        return 0.0
    return cs[0] + x * horner(x, cs[1:])


def f(x=0.4):
    t = 0.0
    for i in range(3):
        t = t + horner(x + 0.1 * t, [1.0, -2.0, 0.5]) * x ** 3
        if t < -5.0:
            return t
    return t * 0.5
""", [{"x": 0.4}, {"x": 1.6}]),
}


@pytest.mark.parametrize("name", sorted(PLACES))
def test_a_return_inside_a_loop_wherever_the_loop_is(name):
    source, points = PLACES[name]
    check_at(source, "f", points, kinds=() if "structured" in name else ("jvp", "hvp"))


NAMES = """
def f(x=0.5):
    returned = x * 2.0
    for i in range(3):
        returned = returned * 1.1
        if returned > 1.2:
            return returned + 1.0
    return returned
"""


def test_the_flag_and_the_value_never_take_a_name_of_the_function():
    check_at(NAMES, "f", [{"x": 0.5}, {"x": 0.2}])
    text = compile_source(NAMES, "names.py").text
    assert "returned_1 = False" in text and "returned_1 = True" in text


def test_a_while_true_left_only_by_returning_needs_no_flag():
    body = compile_source(SOLVER, "solver.py").text.split("def f_value_and_grad")[1]
    assert "returned" not in body and "    while True:\n" in body
    assert "            f = np.sum(x * w)\n            break\n" in body


def test_the_loop_s_result_cites_the_return_it_came_from():
    text = compile_source(CORPUS.read_text(), "returns_in_loops.py", functions=["first_crossing"]).text
    grad = text.split("def first_crossing_grad")[1].split("def first_crossing_value_and_grad")[0]
    assert "# line 13: return y * y\n" in grad
    assert "    returned = False\n" in grad and "            returned = True\n            break\n" in grad


# ---- tuple targets that write into arrays ------------------------------------------------------------

TUPLES = {
    "chain": ("""
import numpy as np


def step(a, b):
    return a * 0.9 + b * 0.1, b - 0.2 * np.sin(a)


def f(x):
    s = np.zeros(4)
    s[0] = x[0]
    for i in range(3):
        (s[i], s[i + 1]) = step(s[i], x[i + 1])
    return np.sum(s ** 2)
""", {"x": np.array([0.5, -0.3, 0.8, 0.1])}),
    "rotation": ("""
import numpy as np


def f(v, theta=0.3):
    v = v.copy()
    c, s = np.cos(theta), np.sin(theta)
    for i in range(len(v) - 1):
        v[i], v[i + 1] = c * v[i] - s * v[i + 1], s * v[i] + c * v[i + 1]
    return np.sum(v ** 3)
""", {"v": np.array([0.5, -0.3, 0.8, 0.1]), "theta": 0.3}),
    "swap_in_a_loop": ("""
import numpy as np


def f(x, n=3):
    y = x * 1.0
    for k in range(n):
        y[0], y[1] = y[1] * 2.0, y[0] + y[2]
    return y[0] * 3.0 + y[1] * y[2]
""", {"x": np.array([0.5, -0.3, 0.8])}),
    "write_and_name": ("""
import numpy as np


def split(a, b):
    return a * b, np.tanh(a - b)


def f(x):
    y = x * 1.0
    y[0], z = split(x[0], x[1])
    t = np.zeros(3)
    t[2], u = np.sin(x[1]), x * x
    return y[0] * z + np.sum(y) + np.sum(t * u)
""", {"x": np.array([0.5, -0.3, 0.8])}),
    "nested": ("""
import numpy as np


def f(x):
    y = x * 1.0
    a, (y[1], c) = x[0] * 2.0, (x[2], x[1] ** 2)
    w = np.stack([x, x ** 2])
    y[0:3], (p, q, r) = w
    return a * y[1] + c * np.sum(y) + p * q * r
""", {"x": np.array([0.5, -0.3, 0.8])}),
    "assigned_left_to_right": ("""
import numpy as np


def f(x):
    y = x * 1.0
    i = 0
    i, y[i] = 1, x[2] * 5.0
    y[i], i = x[0] ** 2, 2
    y[i] = y[i] * x[1]
    return np.sum(y * x)
""", {"x": np.array([0.5, -0.3, 0.8])}),
}


@pytest.mark.parametrize("name", sorted(TUPLES))
def test_tuple_targets_that_write_into_arrays(name):
    source, point = TUPLES[name]
    check_at(source, "f", [point])


def test_a_value_is_computed_before_any_target_is_written():
    # Python computes b - 0.2 * sin(a) before s[0] changes: the generated code names it first
    text = compile_source(TUPLES["chain"][0], "chain.py", functions=["f"]).text
    forward = text.split("def f_value_and_grad")[1].split("# backward pass")[0]
    assert forward.index("s_new = ") < forward.index("s[i] = ")


# ---- recursion ---------------------------------------------------------------------------------------

RECURSION = """
import numpy as np


def g(x):
    return np.sin(x) + 0.5 * x


def iterate(x, n):
    return x if n == 0 else iterate(g(x), n - 1)


def horner(x, cs):
    if not cs:
        return 0.0
    return cs[0] + x * horner(x, cs[1:])


def power(x, n):
    if n == 0:
        return 1.0
    half = power(x, n // 2)
    if n % 2 == 0:
        return half * half
    return half * half * x


def fib(x, n):
    if n < 2:
        return x
    return fib(x, n - 1) + 0.5 * fib(x, n - 2)


def down(x, n):
    if n == 0:
        return x
    return up(np.tanh(x), n - 1)


def up(x, n):
    return down(x * 1.5, n)


def branchy(x, n):
    if n == 0:
        return x
    if x > 1.0:
        return branchy(x * 0.5, n - 1)
    return branchy(x * x + 0.3, n - 1)


def loss(x=0.5):
    return (iterate(x, 3) + horner(x, [1.0, 2.0, 3.0]) + power(x, 13) + fib(x, 5) + down(x, 3)
            + branchy(x, 3))
"""


def test_recursion_whose_depth_constants_fix_is_unrolled():
    check_at(RECURSION, "loss", [{"x": 0.5}, {"x": 1.7}, {"x": -0.8}], kinds=("jvp",))


LAYERS = """
import numpy as np


def dense(x, W, b):
    return np.tanh(x @ W + b)


def apply(x, layers):
    if len(layers) == 0:
        return x
    W, b = layers[0]
    return apply(dense(x, W, b), layers[1:])


def loss(W1, b1, W2, b2, x):
    layers = []
    layers.append((W1, b1))
    layers.append((W2, b2))
    return np.sum(apply(x, layers) ** 2)
"""


def test_recursion_over_a_list_of_layers_kept_while_compiling():
    rng = np.random.default_rng(3)
    point = {"W1": rng.normal(size=(3, 4)) * 0.5, "b1": rng.normal(size=4) * 0.1,
             "W2": rng.normal(size=(4, 2)) * 0.5, "b2": rng.normal(size=2) * 0.1, "x": rng.normal(size=(2, 3))}
    check_at(LAYERS, "loss", [point], kinds=())


def test_a_whole_file_compile_leaves_out_a_helper_that_calls_itself():
    compiled = compile_source(RECURSION, "recursion.py")
    assert [fn.name for fn in compiled.functions] == ["loss"]  # (g's result may be an array: inlined only)
    assert compiled.skipped["iterate"] == ("inlined where 'loss' calls it; alone: recursive call to 'iterate' on a "
                                           "depth known only when it runs: write it as a loop (line 10)")


@pytest.mark.parametrize(("call", "message"), [
    ("f(x, n)", "recursive call to 'f' on a depth known only when it runs: write it as a loop"),
    ("f(x, 2.5)", "recursive call to 'f' on a depth known only when it runs: write it as a loop"),
    ("f(x, -1)", "recursive call to 'f' more than 50 calls deep when unrolled: gradgen unrolls recursion whose "
                 "depth constants fix when compiling, and stops there; write it as a loop"),
])
def test_other_recursion_is_refused_at_the_recursive_call(call, message):
    source = f"def f(x, n):\n    return x if n == 0 else f(x * x, n - 1)\n\ndef loss(x, n=2):\n    return {call}\n"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "bad.py", functions=["loss"])
    assert caught.value.format().splitlines()[0] == f"bad.py:2:29: {message}"


ONE_TRIP = """
import numpy as np


def f(x, *, data):
    r = np.ones(data.shape)
    while True:
        acc = np.diff(r, prepend=0.0)
        r = x * 2.0
        if np.sum(r) > 0.0:
            return np.sum(r * x) + np.sum(acc)
        return np.sum(x * r) * 3.0
"""


def test_a_loop_every_trip_of_which_returns_is_run_once():
    """Every way through the body returns: the loop runs it once at most, as the `if` (or, for
    `while True:`, the block) it is. r, made from x after np.diff reads it, is no value a next
    trip reads: np.diff (no rule) runs on data as written, where the loop's back edge made r
    differentiated and the call was refused (soak 53002 #13)."""
    text = compile_source(ONE_TRIP, "one_trip.py", wrt=["x"]).text
    assert "while" not in text.split("def f_grad")[1]
    check_at(ONE_TRIP, "f", [{"x": np.array([0.5, -1.0]), "data": np.ones(2)},
                             {"x": np.array([0.5, 1.0]), "data": np.ones(2)}])


ONE_TRIP_OR_BREAK = """
import numpy as np


def f(x, *, data):
    total = 0.0
    while np.sum(data) > 0.0:
        if np.sum(x) > 5.0:
            break
        return np.sum(x * x)
    return total + np.sum(x)
"""


def test_a_loop_that_may_break_before_it_returns_stays_a_loop():
    """A `break` beside the return: the trip may leave the loop and go on after it, so the
    loop is not the `if` a loop every trip of which returns is."""
    check_at(ONE_TRIP_OR_BREAK, "f", [{"x": np.array([1.0, 2.0]), "data": np.ones(2)},
                                      {"x": np.array([3.0, 4.0]), "data": np.ones(2)},
                                      {"x": np.array([1.0, 2.0]), "data": -np.ones(2)}])
