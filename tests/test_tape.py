"""The tape (gradgen/transform/reverse/tape.py) and scalar code in loops (issue 23, items 1
and 2): a value is saved only where the backward pass reads it, a value a loop trip makes
first is saved once made (no name bound to None, no None pushed), and a value the shapes
prove is a number gets plain arithmetic (no unbroadcast, no zeros of its shape). Every
program's gradient is compared with central differences of the original function, compiled
plain and for its point's shapes (`--shapes`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from differences import central
from gradgen import compile_source, load_module
from gradgen.analysis.stated import shapes_of_point, symbolic_shapes

ROOT = Path(__file__).resolve().parent.parent

KALMAN = """
import numpy as np


def objective(a, log_q, log_r, *, y):
    q = np.exp(log_q)
    r = np.exp(log_r)
    mean = 0.0
    variance = 1.0
    total = 0.0
    for t in range(y.shape[0]):
        mean = a * mean
        variance = a * a * variance + q
        innovation = y[t] - mean
        spread = variance + r
        total = total - 0.5 * (np.log(2 * np.pi * spread) + innovation**2 / spread)
        gain = variance / spread
        mean = mean + gain * innovation
        variance = (1 - gain) * variance
    return total
"""
KALMAN_POINT = {"a": 0.8, "log_q": np.log(0.1), "log_r": np.log(0.2),
                "y": np.array([0.3, -0.1, 0.45, 0.2, -0.35, 0.05, 0.6])}

# (name, source of f, point): loops of every form a trip's values take
PROGRAMS = [
    ("first_bound_in_the_body", """
        def f(w, *, x):
            s = 0.0
            for i in range(len(x)):
                t = w * x[i]
                u = np.sin(t) * w
                s = s + u * t
            return s
        """, {"w": 0.7, "x": np.array([0.5, -1.2, 0.8, 0.3])}),
    ("bound_in_only_one_branch", """
        def f(w, *, x):
            s = 0.0
            for i in range(len(x)):
                if x[i] > 0:
                    u = np.tanh(w * x[i])
                    s = s + u * u
                else:
                    s = s - w * x[i]
            return s
        """, {"w": 0.9, "x": np.array([0.5, -1.2, 0.8, -0.3])}),
    ("bound_in_one_branch_read_after_it", """
        def f(w, *, x):
            s = 0.0
            u = 0.5
            for i in range(len(x)):
                if x[i] > 0:
                    u = np.tanh(w * x[i])
                s = s + u * w
            return s
        """, {"w": 0.9, "x": np.array([0.5, -1.2, 0.8, -0.3])}),
    ("read_before_written", """
        def f(w, *, x):
            s = 0.0
            h = 0.1
            for i in range(len(x)):
                s = s + h * w
                h = np.tanh(w * x[i] + h)
            return s + h
        """, {"w": 0.6, "x": np.array([0.5, -1.2, 0.8, 0.3])}),
    ("read_after_the_loop", """
        def f(w, *, x):
            s = 0.0
            for i in range(len(x)):
                t = np.exp(w * x[i])
                s = s + t * t
            return s + t * w
        """, {"w": 0.4, "x": np.array([0.5, -1.2, 0.8, 0.3])}),
    ("written_in_a_nested_loop", """
        def f(w, *, x):
            s = 0.0
            for i in range(len(x)):
                for j in range(3):
                    t = np.sin(w * x[i] + j)
                    s = s + t * w
            return s
        """, {"w": 0.4, "x": np.array([0.5, -1.2, 0.8])}),
    ("nested_loop_value_read_after_the_inner_loop", """
        def f(w, *, x):
            s = 0.0
            for i in range(len(x)):
                for j in range(3):
                    t = np.sin(w * x[i] + j)
                    s = s + t * t
                s = s + t * w
            return s
        """, {"w": 0.4, "x": np.array([0.5, -1.2, 0.8])}),
    ("two_loops_one_name", """
        def f(w, *, x):
            s = 0.0
            for i in range(len(x)):
                t = np.sin(w * x[i])
                s = s + t * t
            u = t * w
            for i in range(len(x)):
                t = np.cos(w * x[i])
                s = s + t * w
            return s + u
        """, {"w": 0.4, "x": np.array([0.5, -1.2, 0.8])}),
    ("break_after_the_value", """
        def f(w, *, x):
            s = 0.0
            for i in range(len(x)):
                t = w * x[i]
                if t > 1.0:
                    break
                s = s + np.exp(t) * w
            return s
        """, {"w": 0.9, "x": np.array([0.5, -0.2, 1.5, 0.3])}),
    ("continue_before_the_value", """
        def f(w, *, x):
            s = 0.0
            for i in range(len(x)):
                if x[i] < 0:
                    continue
                t = np.tanh(w * x[i])
                s = s + t * t * w
            return s
        """, {"w": 0.9, "x": np.array([0.5, -0.2, 1.5, 0.3])}),
    ("while_loop", """
        def f(w, *, x):
            s = 0.0
            k = 0
            while k < len(x):
                t = np.sin(w * x[k])
                s = s + t * w
                k += 1
            return s
        """, {"w": 0.9, "x": np.array([0.5, -0.2, 1.5])}),
    ("arrays_in_the_trip", """
        def f(W, *, xs):
            h = np.zeros(W.shape[0])
            for t in range(xs.shape[0]):
                pre = W @ h + xs[t]
                h = np.tanh(pre)
            return np.sum(h ** 2)
        """, {"W": np.array([[0.5, -0.3], [0.2, 0.4]]), "xs": np.array([[0.1, 0.2], [0.3, -0.5], [0.7, 0.1]])}),
]


def _grad_text(text, name="f"):
    return text.split(f"def {name}_grad(", 1)[1].split(f"def {name}_value_and_grad(", 1)[0]


def _original(source, name="f"):
    namespace = {}
    exec(source, namespace)  # noqa: S102 - the test's own source
    return namespace[name]


def _check(source, point, shapes=None, name="f", wrt=None):
    """The compiled gradient agrees with central differences of the original function."""
    grad = getattr(load_module(compile_source(source, "tape.py", functions=[name], shapes=shapes, wrt="all").text,
                               f"tape_{abs(hash((source, str(shapes))))}"), f"{name}_grad")
    f = _original(source, name)
    wrt = wrt or [k for k in point if k not in ("x", "xs", "y")]
    got = grad(**point)
    got = got if isinstance(got, tuple) else (got,)
    for k, g in zip(wrt, got):
        want = central(lambda v: f(**{**point, k: v if np.ndim(point[k]) else float(v)}), point[k])
        np.testing.assert_allclose(np.asarray(g, dtype=float), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name, body, point", PROGRAMS, ids=[p[0] for p in PROGRAMS])
@pytest.mark.parametrize("shapes", [None, shapes_of_point, symbolic_shapes], ids=["plain", "shapes", "symbols"])
def test_loop_gradients_agree_with_central_differences(name, body, point, shapes):
    source = "import numpy as np\n\n" + textwrap.dedent(body)
    _check(source, point, shapes(point) if shapes else None)


# the value the trip makes is read back where an earlier trip or the code before the loop left
# it (the inner loop's last t after it; the first loop's last t by `u = t * w`, which the second
# loop's backward sweep reaches after it): saved before each overwrite, from a name bound first
SAVED_BEFORE = {"bound_in_only_one_branch": "u", "nested_loop_value_read_after_the_inner_loop": "t",
                "two_loops_one_name": "t"}


@pytest.mark.parametrize("name, body, point", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_no_name_is_bound_to_none_for_a_value_a_trip_makes_first(name, body, point):
    text = _grad_text(compile_source("import numpy as np\n\n" + textwrap.dedent(body), "tape.py", wrt="all").text)
    if name in SAVED_BEFORE:
        v = SAVED_BEFORE[name]
        assert f"    {v} = None\n" in text and f"{v}_stack.append({v})\n" in text
    else:
        assert " = None" not in text


def test_a_value_bound_in_one_branch_is_saved_before_it_is_overwritten():
    _, body, _ = PROGRAMS[1]
    text = _grad_text(compile_source("import numpy as np\n\n" + textwrap.dedent(body), "tape.py", wrt="all").text)
    assert "    u = None\n" in text and "            u_stack.append(u)\n            u = np.tanh(w * x[i])\n" in text


@pytest.mark.parametrize("shapes", [None, shapes_of_point], ids=["plain", "shapes"])
def test_the_kalman_filter_tape_keeps_only_what_the_backward_pass_reads(shapes):
    text = _grad_text(compile_source(KALMAN, "kalman.py", functions=["objective"],
                                     shapes=shapes(KALMAN_POINT) if shapes else None, wrt="all").text, "objective")
    assert " = None" not in text
    forward, backward = text.split("# forward pass", 1)[1].split("# backward pass", 1)
    # made in the trip, read back by the backward pass: pushed once made, popped as the trip starts
    for name, line in [("innovation", "innovation = y[t] - mean"), ("spread", "spread = variance + r"),
                       ("gain", "gain = variance / spread")]:
        assert f"        {line}\n        {name}_stack.append({name})\n" in forward
        assert forward.count(f"{name}_stack.append(") == 1
        assert f"        {name} = {name}_stack.pop()\n" in backward.split("# line")[0]
    # mean is read back once a trip (mean = a * mean reads it): `mean = mean + gain * innovation`
    # destroys a value no backward code reads (with the shapes; unannotated, unbroadcast measures it)
    assert forward.count("mean_stack.append(mean)") == (1 if shapes else 2)
    assert forward.count("variance_stack.append(variance)") == 2
    assert "total" not in forward  # (the gradient needs no value of the sum)
    assert "    for t in reversed(range(np.shape(y)[0])):\n        innovation = innovation_stack.pop()\n" in backward


def test_the_kalman_filter_with_shapes_is_scalar_code():
    text = compile_source(KALMAN, "kalman.py", functions=["objective"], shapes=shapes_of_point(KALMAN_POINT), wrt="all").text
    grad = _grad_text(text, "objective")
    assert "unbroadcast" not in text and "zeros_like" not in grad and "np.sum" not in grad
    assert "        dtotal_dgain = -dtotal_dvariance * variance\n" in grad
    assert "    return dtotal_da, dtotal_dlog_q, dtotal_dlog_r\n" in grad


@pytest.mark.parametrize("shapes", [None, shapes_of_point, symbolic_shapes], ids=["plain", "shapes", "symbols"])
def test_the_kalman_filter_gradient_agrees_with_central_differences(shapes):
    _check(KALMAN, KALMAN_POINT, shapes(KALMAN_POINT) if shapes else None, name="objective",
           wrt=["a", "log_q", "log_r"])


def test_a_loop_whose_adjoint_reads_nothing_of_the_trip_saves_nothing():
    source = ("import numpy as np\n\n\ndef f(w, *, x):\n    s = 0.0\n    for i in range(len(x)):\n"
              "        t = w * x[i] + 1.0\n        u = 3.0 * t\n        s = s + 2.0 * u\n    return s\n")
    point = {"w": 0.3, "x": np.array([0.5, -1.2, 0.8])}
    text = _grad_text(compile_source(source, "tape.py", shapes=shapes_of_point(point), wrt="all").text)
    assert "_stack" not in text and " = None" not in text and "    for i in range(len(x))" not in text
    plain = _grad_text(compile_source(source, "tape.py", wrt="all").text)  # (the constant adjoint of t stays symbolic)
    assert "_stack" not in plain and "        ds_dw = ds_dw + unbroadcast(6.0 * x[i], w)\n" in plain
    for shapes in (None, shapes_of_point(point)):
        _check(source, point, shapes)


def test_a_number_proven_through_a_loop_needs_a_fixed_point():
    """`e = d * w; d = c; c = b; b = a; a = x * w` carries x's shape into e on the fifth trip:
    a shape analysis that stops after four trips calls e a number, and w's gradient through
    `e = d * w` then is an array (`ds_de * d`, never summed)."""
    source = ("import numpy as np\n\n\ndef f(w, *, x):\n    a = 0.0\n    b = 0.0\n    c = 0.0\n    d = 0.0\n"
              "    e = 0.0\n    s = 0.0\n    for i in range(6):\n        s = s + np.sum(e)\n        e = d * w\n"
              "        d = c\n        c = b\n        b = a\n        a = x * w\n    return s\n")
    point = {"w": 0.7, "x": np.array([0.5, -1.2, 0.8])}
    text = compile_source(source, "tape.py", shapes=shapes_of_point(point), wrt="all").text
    assert "        ds_dw = ds_dw + np.sum(ds_de * d)\n" in _grad_text(text)
    _check(source, point, shapes_of_point(point))


WHILE_AND_DATA = '''
import numpy as np


def settle(a, guess=10.0):
    x, x_prev = guess - 0.05 * (guess ** 2 - a), guess
    while np.abs(x - x_prev) > 1e-4:
        x, x_prev = x - 0.05 * (x ** 2 - a), x
    return x


def reach(q, lengths=None):
    if lengths is None:
        lengths = np.ones(3)
    return np.sum(lengths * np.cos(q))
'''


def test_a_while_test_and_an_undifferentiated_parameter_are_not_saved():
    # the backward pass runs a while loop `count` times (its test is not read again), so x_prev,
    # read only by the test, is never pushed; and a parameter without a gradient (`lengths`) is
    # read back only where backward code reads it, which it is not here
    text = compile_source(WHILE_AND_DATA, "settle.py", functions=["settle", "reach"]).text
    assert "x_stack.append(x)" in text and "x_prev_stack" not in text and "lengths_stack" not in text
    module = load_module(text, "tape_while_and_data")
    namespace = {}
    exec(WHILE_AND_DATA, namespace)  # noqa: S102 - the test's own program
    h = 1e-6
    want = (namespace["settle"](2.0 + h) - namespace["settle"](2.0 - h)) / (2 * h)
    assert module.settle_grad(2.0) == pytest.approx(want, rel=1e-7)
    q = np.array([0.3, -0.5, 1.1])
    np.testing.assert_allclose(module.reach_grad(q), -np.sin(q), rtol=1e-14)
    np.testing.assert_allclose(module.reach_grad(q, np.array([2.0, 1.0, 0.5])), -np.array([2.0, 1.0, 0.5]) * np.sin(q))


RUNGE_KUTTA = """
import numpy as np


def slope(x, y):
    return x * np.concatenate([np.ones(1), y[:-1]])


def f(x, *, s):
    h = 2.0 / s
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = slope(x, y)
        k2 = slope(x, y + h / 2 * k1)
        y = y + h / 2 * (k1 + k2)
    return np.sum(y * y)
"""


@pytest.mark.parametrize("shapes", [shapes_of_point, symbolic_shapes], ids=["shapes", "symbols"])
def test_a_value_the_backward_pass_only_measures_is_measured_on_a_parameter_not_saved(shapes):
    """GradBench's ode (a Runge-Kutta step): `y_1 = y + h / 2 * k1` is read back only for its
    shape (zeros of it, for the slice `y_1[:-1]`'s gradient); where the shapes say it has x's,
    x is measured instead and the tape keeps only the slopes' inputs (issue 23: 12 arrays a
    step became 4 on GradBench's ode, half its gradient's time)."""
    point = {"x": np.linspace(0.1, 0.9, 6), "s": 4}
    text = _grad_text(compile_source(RUNGE_KUTTA, "rk.py", functions=["f"], wrt=["x"], shapes=shapes(point)).text)
    stacks = sorted({line.split("_stack")[0].strip() for line in text.splitlines() if "_stack = []" in line})
    assert stacks == ["k1_concatenate", "k2_concatenate"]
    assert "        df_dy_1 = np.zeros_like(x, dtype=float)\n        df_dy_1[:-1] = df_dk2_concatenate[1:]\n" in text
    plain = _grad_text(compile_source(RUNGE_KUTTA, "rk.py", functions=["f"], wrt=["x"]).text)
    assert "y_1_stack.append(y_1)" in plain  # (no shapes stated: y_1 is measured as it was)
    for stated in (None, shapes(point)):
        _check(RUNGE_KUTTA, point, stated, name="f", wrt=["x"])


INNER_ASCENT = """
import numpy as np


def f(p1, *, start, steps):
    p2 = start
    for _ in range(steps):
        slope = np.zeros_like(p2)
        slope[0] = -2 * p2[0]
        slope[1] = slope[1] - 2 * p2[1]
        p2 = p2 + 0.1 * slope
    return np.sum(p1 ** 2) - np.sum(p2 ** 2)
"""


def test_data_written_into_in_a_loop_is_not_saved():
    """GradBench's saddle: the inner ascent's slope, written into (`slope[0] = ...`), carries no
    gradient (p2 depends on start alone): it was saved and popped every trip all the same
    (a name written into was always read back, for the zeros of its gradient); now only a
    written name with a gradient is, and the ascent is left out of the gradient."""
    text = _grad_text(compile_source(INNER_ASCENT, "ascent.py", functions=["f"], wrt=["p1"]).text)
    assert "_stack" not in text and "for _ in" not in text
    point = {"p1": np.array([0.4, -0.3]), "start": np.array([1.0, 1.0]), "steps": 3}
    _check(INNER_ASCENT, point, name="f", wrt=["p1"])


FRESH_LISTS = """
import numpy as np


def f(a, b):
    acc = 0.0
    v = a + a
    for _ in range(2):
        parts = [b * (j + 1.0) for j in range(2)]
        acc = acc + np.sum(sum(t * t for t in parts))
    return np.sum(v) + 0.01 * acc
"""


def test_a_loop_no_gradient_flows_through_is_left_out_with_its_lists():
    """A list made afresh in each trip of a loop that carries no gradient (acc depends on b,
    not a) was pushed every trip and popped again, for nothing: the backward loop of its
    `sum(...)` had only restores, and reading its range made them needed (fuzz --jit numba
    63000 #24). Now a loop or an if whose backward code is only restores reads its range or
    test only where one of them is kept."""
    text = _grad_text(compile_source(FRESH_LISTS, "tape.py", functions=["f"], wrt=["a"]).text)
    assert "_stack" not in text and "parts" not in text and "for _ in range(2)" not in text
    grad = load_module(compile_source(FRESH_LISTS, "tape.py", functions=["f"], wrt=["a"]).text, "fresh_lists").f_grad
    a, b = np.array([0.3, -1.2]), np.array([[0.5], [2.0]])
    np.testing.assert_array_equal(grad(a, b), np.full(2, 2.0))
    _check(FRESH_LISTS, {"a": a, "b": b}, name="f")  # (with b's gradient, the lists are read back)


LAYERS = """
import numpy as np


def f(w, xs):
    total = 0.0
    x = xs[0]
    for t in range(3):
        new = []
        for i in range(2):
            g = np.tanh(w[i] * x)
            x = g * 2.0
            new.append(x)
        h = np.stack(new)
        total = total + np.sum(h)
    return total
"""


def test_an_inner_loops_temporaries_start_afresh_in_each_of_its_trips():
    """g, first bound at the top of the inner loop's trip and read only in it, is that loop's
    temporary: its adjoint starts in each trip (`dtotal_dg = dtotal_dx * 2.0`), not carried
    from a `dtotal_dg = 0.0` before the outer loop and reset at each trip's end. A name read
    inside the inner loop itself counted as read "elsewhere in the enclosing loop" (lstm's
    gates, weights and cell values: 14 adjoints carried and reset per layer)."""
    text = _grad_text(compile_source(LAYERS, "tape.py", functions=["f"]).text)
    assert "dtotal_dg = 0.0" not in text and "            dtotal_dg = dtotal_dx * 2.0\n" in text
    _check(LAYERS, {"w": np.array([0.3, -0.7]), "xs": np.array([[0.5, -0.2], [1.0, 0.4]])}, name="f", wrt=["w"])


APPENDED = """
import numpy as np


def f(a):
    parts = [a * (j + 1.0) for j in range(3)]
    joined = np.concatenate([np.sin(q) for q in parts])
    return np.sum(joined**2)
"""


def test_a_value_appended_is_saved_only_where_the_backward_pass_reads_it():
    """`items.append(np.sin(q))` backward pops sin(q)'s gradient and reads nothing of sin(q):
    it was saved every trip (`sin_q_stack`) and restored for nothing; q, which cos(q) reads,
    still is."""
    text = _grad_text(compile_source(APPENDED, "tape.py", functions=["f"]).text)
    assert "sin_q_stack" not in text and "q_stack.append(q)" in text
    _check(APPENDED, {"a": np.array([0.3, -0.7])}, name="f", wrt=["a"])
