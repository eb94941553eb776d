"""autograd's fixed_points example, piece by piece (issue 22): `gradgen.grad(np.sqrt)` (a
library function itself, gradgen/live/library.py), `gradgen.fixed_point` (gradgen/inlined.py,
inlined where a compiled function calls it), and `grad(grad(f))` where the gradient keeps a
tape (forward mode over it, gradgen/live/second.py). Each against central differences."""

import math

import numpy as np
import pytest

import gradgen
from test_live import write_module

pytestmark = pytest.mark.usefixtures("fresh_cache")  # (tests/conftest.py)

FIXED = '''import numpy as np
from gradgen import fixed_point


def step(a):
    return lambda x: x - 0.05 * (x ** 2 - a)


def distance(x, y):
    return np.abs(x - y)


def sqrt(a, guess=10.0):
    return fixed_point(step, a, guess, distance, 1e-4)


def settle(x, y):
    z, before = x, x + 1.0
    while np.abs(z - before) > 1e-9:
        z, before = 0.5 * z + 0.5 * np.sin(z) * y + 0.1 * x, z
    return z * y


def rows(x):
    z = x
    while np.max(np.abs(z)) > 0.1:
        z = 0.5 * z
    return np.sum(z ** 2)
'''


def central(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("f, x, want", [
    (np.sqrt, 2.0, 0.5 / math.sqrt(2.0)), (math.sin, 0.3, math.cos(0.3)), (np.tanh, 0.4, 1 - math.tanh(0.4) ** 2),
    (np.arctan2, 0.5, 2.0 / (0.25 + 4.0)),
])
def test_a_library_function_has_a_gradient(f, x, want):
    args = (x, 2.0) if f is np.arctan2 else (x,)
    assert gradgen.grad(f)(*args) == pytest.approx(want, rel=1e-14)


def test_a_gradient_of_a_library_functions_gradient():
    assert gradgen.grad(gradgen.grad(np.sqrt))(2.0) == pytest.approx(-0.25 * 2.0 ** -1.5, rel=1e-14)
    np.testing.assert_allclose(gradgen.elementwise_grad(np.tanh)(np.array([0.1, -0.7])),
                               1 - np.tanh([0.1, -0.7]) ** 2, rtol=1e-14)


def test_fixed_point_is_inlined_and_differentiated_through_its_iterations(tmp_path):
    user = write_module(tmp_path, FIXED)
    assert user.sqrt(2.0) == pytest.approx(1.4147939385813015, rel=1e-15)
    g = gradgen.grad(user.sqrt)
    assert "gradgen" not in g.source.split('"""', 2)[2]  # (the generated module never imports gradgen)
    assert g(2.0) == pytest.approx(central(user.sqrt, 2.0), rel=1e-7)
    second = gradgen.grad(g)
    assert second(2.0) == pytest.approx(central(g, 2.0), rel=1e-6)
    value, slope = gradgen.value_and_grad(g)(2.0)
    assert (value, slope) == (g(2.0), second(2.0))


def test_a_second_derivative_across_parameters_through_a_while_loop(tmp_path):
    user = write_module(tmp_path, FIXED)
    x, y = 0.6, 0.9
    dx = gradgen.grad(user.settle, wrt="x")
    assert dx(x, y) == pytest.approx(central(lambda v: user.settle(v, y), x), rel=1e-6)
    dxdy = gradgen.grad(dx, wrt="y")
    assert dxdy(x, y) == pytest.approx(central(lambda v: dx(x, v), y), rel=1e-5)
    dxdx = gradgen.grad(dx)
    assert dxdx(x, y) == pytest.approx(central(lambda v: dx(v, y), x), rel=1e-5)
    # the other way round: d/dx of df/dy (the hvp's parts are in parameter order, whichever came first)
    dy = gradgen.grad(user.settle, wrt="y")
    dydx = gradgen.grad(dy, wrt="x")
    assert dydx(x, y) == pytest.approx(central(lambda v: dy(v, y), x), rel=1e-5)
    assert dydx(x, y) == pytest.approx(dxdy(x, y), rel=1e-9)  # (the mixed partials agree)
    both = gradgen.grad(dy, wrt=["y", "x"])(x, y)  # (in parameter order, as every gradient's parts)
    assert both[0] == pytest.approx(dydx(x, y), rel=1e-12)
    assert both[1] == pytest.approx(central(lambda v: dy(x, v), y), rel=1e-5)


def test_a_gradient_of_an_array_gradient_says_what_to_use_instead(tmp_path):
    user = write_module(tmp_path, FIXED)
    g = gradgen.grad(user.rows)
    second = gradgen.grad(g)
    with pytest.raises(ValueError) as info:
        second(np.array([0.3, -0.2]))
    assert str(info.value) == ("gradgen.grad(rows_grad): rows_grad returns an array (the gradient with respect to "
                               "'x', an array here), and a gradient needs one number: gradgen.hessian(rows) gives "
                               "every second derivative")
