"""Writing into arrays (issue 10, item 8): `x[i] = e`, `x[1:-1] = e`, `x[i, j] += e`, also in
loops and branches and inside helpers. A write is differentiated as a new value of x: what
it overwrote gets no gradient (`dx[idx] = 0.0`), the value written gets the gradient at the
index, summed back to its shape where it was broadcast. The generated forward pass writes
into your array as you did wherever that is safe, after saving a copy where the backward
pass still needs the old values; a write another name sharing the array would see is refused (see
tests/test_errors.py). Every gradient here is checked against sympy and finite differences."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.verify.check import check_source

SOURCE = textwrap.dedent('''
    import numpy as np


    def heat_step(u, alpha, dx, dt):
        u_new = u.copy()
        u_new[1:-1] = u[1:-1] + alpha * dt / dx**2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_new[0] = 0.0
        u_new[-1] = 0.0
        return u_new


    def heat(u0, log_alpha, target, num_steps=4, dx=0.1, dt=0.002):
        alpha = np.exp(log_alpha)
        u = u0
        for step in range(num_steps):
            u = heat_step(u, alpha, dx, dt)
        return np.sum((u - target) ** 2)


    def cells(u, nu):
        n = len(u)
        u_new = np.zeros(n)
        for i in range(1, n - 1):
            u_new[i] = u[i] - 0.1 * u[i] * (u[i] - u[i - 1]) + nu * (u[i + 1] - 2 * u[i] + u[i - 1])
        u_new[0] = u_new[n - 2]
        u_new[n - 1] = u_new[1]
        return np.sum(u_new ** 2)


    def updates(x, w):
        y = np.zeros_like(x)
        y[0] += w * x[0]
        y[1:] = x[:-1] * w
        y[2] *= x[2]
        return np.sum(y ** 2)


    def matrix(A, s):
        B = A * 1.0
        B[:, 0] = s
        for j in range(1, 3):
            if A[0, j] > 0:
                B[0, j] += s * A[1, j]
            else:
                B[1, j] = np.tanh(A[0, j])
        return np.sum(B * A)


    def parameter(x, w):
        x[1] = w * x[0]
        return np.sum(np.sin(x))
''')

POINTS = {
    "heat": {"u0": np.sin(np.pi * np.linspace(0, 1, 7)), "log_alpha": np.log(0.5),
             "target": 0.8 * np.sin(np.pi * np.linspace(0, 1, 7))},
    "cells": {"u": np.sin(np.linspace(0.0, 3.0, 6)), "nu": 0.3},
    "updates": {"x": np.array([0.5, -1.0, 2.0, 0.7]), "w": 1.3},
    "matrix": {"A": np.array([[0.4, -0.3, 0.8], [1.1, 0.2, -0.6]]), "s": 0.7},
    "parameter": {"x": np.array([0.3, -0.8, 1.2]), "w": 0.9},
}


@pytest.mark.parametrize("name", sorted(POINTS))
def test_writes_match_sympy_and_finite_differences(name):
    [report] = check_source(SOURCE, "writes.py", [name], at=POINTS[name], wrt="all")
    assert report.ok and report.points, name
    assert all(row.ok for row in report.points[0].rows)


def _forward(name):
    text = compile_source(SOURCE, "writes.py", functions=[name], wrt="all").text
    body = text.split(f"def {name}_grad(", 1)[1].split("# backward pass", 1)[0]
    return text, [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_a_write_the_backward_pass_does_not_undo_stays_in_place():
    """The cells' writes read nothing the backward pass needs from the old array: they are
    made into u_new itself; its gradient is zeroed in place where it was overwritten."""
    text, forward = _forward("cells")
    assert "u_new = np.zeros(n)" in forward
    loop = forward[forward.index("for i in range(1, n - 1):"):forward.index("u_new_stack = []")]
    assert loop[:2] == ["for i in range(1, n - 1):", "u_new[i] = ("]  # (no save, no copy)
    assert "        dcells_du_new[i] = 0.0\n" in text


def test_a_write_whose_old_values_the_backward_pass_reads_saves_a_copy_first():
    """`y[2] *= x[2]` needs the old y[2] backward: a copy of y is saved, and the write is
    made into y itself (a caller's array changes exactly as it does in yours)."""
    _, forward = _forward("updates")
    assert forward[-2:] == ["y_stack.append(np.copy(y))", "y[2] = y[2] * x[2]"]


def test_writing_into_a_parameter_changes_the_callers_array_as_yours_does():
    module = load_module(compile_source(SOURCE, "writes.py", functions=["parameter"], wrt="all").text, "writes_grad")
    namespace = {}
    exec(SOURCE, namespace)  # noqa: S102 - the test's own source
    x, mine = POINTS["parameter"]["x"].copy(), POINTS["parameter"]["x"].copy()
    value, (dx, dw) = module.parameter_value_and_grad(x, 0.9)
    assert value == namespace["parameter"](mine, 0.9)
    np.testing.assert_array_equal(x, mine)  # both wrote x[1]
    x0 = POINTS["parameter"]["x"]
    np.testing.assert_allclose(dx, [np.cos(x0[0]) + 0.9 * np.cos(0.9 * x0[0]), 0.0, np.cos(x0[2])], rtol=1e-14)
    assert dw == pytest.approx(x0[0] * np.cos(0.9 * x0[0]), rel=1e-14)


def test_a_scalar_broadcast_into_a_slice_gets_the_sum_of_its_gradient():
    source = "import numpy as np\n\n\ndef f(x, s):\n    y = x.copy()\n    y[1:] = s\n    return np.sum(y * x)\n"
    module = load_module(compile_source(source, "b.py", wrt="all").text, "b_grad")
    x = np.array([0.5, 2.0, -3.0])
    dx, ds = module.f_grad(x, 0.25)
    np.testing.assert_array_equal(dx, [1.0, 0.25, 0.25])
    assert ds == -1.0


def test_a_write_into_an_array_an_earlier_name_held_is_refused():
    """Seed 1210, program 366 (on 05cb88e), shrunk: `inputs = z` hands z's array to a loop
    whose backward pass reads it again (saved by reference), then `z[1, -2] = 0.5` changed
    it in place: a silently wrong gradient. A write or in-place update into an array
    another name held before, and read, is refused with what to write."""
    source = ("import numpy as np\n\n\ndef predict2(inputs, w, bias):\n    outputs = inputs @ w\n"
              "    inputs = outputs\n    return inputs\n\n\ndef f(a, b, *, X):\n    z = X * 1.0\n    inputs = z\n"
              "    for i in range(2):\n        inputs = predict2(inputs, a.T, b)\n    z[1, -2] = 0.5\n"
              "    return np.sum(z + inputs)\n")
    with pytest.raises(CompileError) as caught:
        compile_source(source, filename="w.py", wrt="all")
    assert caught.value.format().splitlines()[0] == (
        "w.py:15:5: 'z[...] = ...' would change an array another name held before (a copy or a view), whose old "
        "numbers the gradient needs; write 'z = z.copy()' just before it")
    advised = source.replace("    z[1, -2] = 0.5\n", "    z = z.copy()\n    z[1, -2] = 0.5\n")  # the advice works
    at = {"a": np.array([[0.3, -0.2], [0.1, 0.4]]), "b": 0.2, "X": np.array([[0.5, -1.0], [2.0, 0.7]])}
    [report] = check_source(advised, "w.py", ["f"], at=at, wrt="all")
    assert report.ok, report


def test_a_fresh_array_each_iteration_is_written_without_refusal():
    """The recency abstraction still holds: `u_new` is a new array every iteration, and
    `u = u_new` names last iteration's, never the one written now."""
    source = ("import numpy as np\n\n\ndef f(u0):\n    u = u0\n    for step in range(3):\n"
              "        u_new = np.zeros(len(u))\n        for i in range(1, len(u) - 1):\n"
              "            u_new[i] = u[i] - 0.1 * (u[i + 1] - u[i - 1])\n        u = u_new\n    return np.sum(u ** 2)\n")
    [report] = check_source(source, "w.py", ["f"], at={"u0": np.array([0.3, 1.2, -0.5, 0.8, 0.1])}, wrt="all")
    assert report.ok, report


ZERO_D = '''import numpy as np


def whole(w, Y):
    z = np.empty(np.shape(np.median(Y, axis=0)))
    z[...] = np.median(Y, axis=0) * w
    return np.mean(z) * w


def overwritten(w):
    z = np.array(w * 2.0)
    z[...] = 3.0
    return float(z * w)
'''


@pytest.mark.parametrize("Y", [np.array([1.0, 4.0, 2.0]), np.array([[1.0, 4.0], [2.0, 0.5], [3.0, 3.0]])],
                         ids=["0-d", "1-d"])
def test_a_write_of_all_of_a_0d_array(Y):
    """Fuzz soak seed 2016 #527: `z[...] = v` on a 0-d z. The gradient's (and the jvp's)
    in-place zeroing met a NumPy scalar (`np.ones_like(z) / 1` is one), a TypeError; and the
    helper that zeroes a copy took any 0-d adjoint for "no gradient yet". Checked against
    central differences, with the jvp and hvp."""
    from gradgen import load_module

    module = load_module(compile_source(ZERO_D, "zero_d.py", functions=["whole"], wrt=["w"],
                                        emit_kinds=("grad", "jvp", "hvp")).text)
    w, h = 0.7, 1e-6

    def f(v):
        return float(np.mean(np.median(Y, axis=0) * v) * v)

    numeric = (f(w + h) - f(w - h)) / (2 * h)
    assert float(module.whole_grad(w, Y)) == pytest.approx(numeric, rel=1e-7)
    assert float(module.whole_jvp(w, Y, dw=1.0)[1]) == pytest.approx(numeric, rel=1e-7)
    assert float(module.whole_hvp(w, Y, dw=1.0)) == pytest.approx(2 * np.mean(np.median(Y, axis=0)), rel=1e-7)
    overwritten = load_module(compile_source(ZERO_D, "zero_d.py", functions=["overwritten"], wrt="all").text)
    assert overwritten.overwritten_grad(0.7) == 3.0  # what the write overwrote has no gradient
