"""Nested derivatives (issue 22): `gradgen.grad(potential)` called inside a function gradgen
compiles is compiled by gradgen itself and inlined as a helper, so the outer gradient is
reverse over reverse. Each gradient is compared with central differences of the user's own
function, run as written (its `gradgen.grad` compiled at run time by the Python API)."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from differences import compiled_beside
from gradgen import CompileError, compile_source, load_module



pytestmark = pytest.mark.usefixtures("fresh_cache")  # (tests/conftest.py)


def compiled(folder, source, function, wrt="all"):
    return compiled_beside(folder, source, function, wrt, "nested")


def central(f, args, index, h=1e-6):
    """d f(*args) / d args[index] by central differences, shaped like that argument."""
    x = np.asarray(args[index], dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        up, down = list(args), list(args)
        up[index], down[index] = x + e, x - e
        out[i] = (f(*up) - f(*down)) / (2 * h)
    return out


def assert_gradient(grad, f, args, kwargs=None, rtol=1e-6, atol=1e-7):
    kwargs = kwargs or {}
    got = grad(*args, **kwargs)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(args)
    for index, g in enumerate(got):
        want = central(lambda *a: f(*a, **kwargs), args, index)
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol)


SIMULATION = '''
import numpy as np
import gradgen

TARGET = np.array([0.0, 1.2, 2.1, 3.3])


def potential(x, k):
    """Springs of stiffness k and rest length 1 between neighbours, in a quartic well."""
    d = x[1:] - x[:-1]
    return k * np.sum((d - 1.0) ** 2) / 2 + 0.1 * np.sum(x ** 4)


def simulate(x0, k, *, v0, dt=0.05, steps=20):
    """Symplectic Euler: the force is the gradient of the potential."""
    force = gradgen.grad(potential, wrt="x")
    x = x0
    v = v0
    for _ in range(steps):
        v = v - dt * force(x, k)
        x = x + dt * v
    return np.sum((x - TARGET) ** 2)


def simulate_direct(x0, k, *, v0, dt=0.05, steps=20):
    x = x0
    v = v0
    for _ in range(steps):
        v = v - dt * gradgen.grad(potential, wrt="x")(x, k)
        x = x + dt * v
    return np.sum((x - TARGET) ** 2)
'''

X0 = np.array([0.1, 0.9, 2.2, 2.8])
V0 = np.array([0.3, -0.2, 0.1, 0.0])


@pytest.mark.parametrize("function", ["simulate", "simulate_direct"])
def test_particle_simulation_with_a_gradient_as_its_force(tmp_path, function):
    gen, user, text = compiled(tmp_path, SIMULATION, function)
    assert "gradgen" not in {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}  # (no import)
    assert_gradient(getattr(gen, f"{function}_grad"), getattr(user, function), (X0, 1.5), {"v0": V0})


DIRECT = '''
import numpy as np
import gradgen
from gradgen import grad


def energy(x):
    return np.sum(np.tanh(x) ** 2) + np.sum(x[1:] * x[:-1])


def potential(x, k):
    return k * np.sum(x ** 4) / 4 + np.sum(np.cos(x))


def loss(x):
    return np.sum(np.sin(gradgen.grad(energy)(x)))


def imported(x):
    return np.sum(grad(potential, wrt="x")(x, 2.0) ** 2)


def both(x, k):
    gx, gk = gradgen.grad(potential, wrt="all")(x, k)
    return np.sum(gx ** 2) * gk


def valued(x, k):
    e, g = gradgen.value_and_grad(potential, "x")(x, k)
    return e * np.sum(g ** 2)


def curvature(x, k, *, v):
    h = gradgen.hvp(potential, wrt="x")(x, k, dx=v)
    return np.sum(h ** 2)


def slope(x, k, *, v):
    e, d = gradgen.jvp(potential, wrt="x,k")(x, k, dx=v, dk=1.0)
    return e * d
'''

X = np.array([0.3, -0.7, 1.1])
V = np.array([1.0, 0.5, -2.0])


@pytest.mark.parametrize("function, args, kwargs", [
    ("loss", (X,), {}),
    ("imported", (X,), {}),
    ("both", (X, 0.8), {}),
    ("valued", (X, 0.8), {}),
    ("curvature", (X, 0.8), {"v": V}),
    ("slope", (X, 0.8), {"v": V}),
])
def test_direct_derivative_inside_a_loss(tmp_path, function, args, kwargs):
    gen, user, _ = compiled(tmp_path, DIRECT, function)
    assert_gradient(getattr(gen, f"{function}_grad"), getattr(user, function), args, kwargs)


def refusal(tmp_path, source, function):
    with pytest.raises(CompileError) as caught:
        compiled(tmp_path, source, function)
    return str(caught.value).split(":", 1)[1]  # without the folder of the file


REFUSALS = '''
import numpy as np
import gradgen


def spread(x):
    return np.sum(np.unique(x) ** 2)


def loss(x):
    return np.sum(gradgen.grad(spread)(x))


def itself(x):
    return np.sum(gradgen.grad(itself)(x))


def with_lambda(x):
    return np.sum(gradgen.grad(lambda y: np.sum(y ** 2))(x))


def matrix(x):
    return np.sum(gradgen.hessian(spread)(x))


def unknown(x):
    return np.sum(gradgen.grad(spread, wrt="z")(x))
'''


def test_a_function_without_a_gradient_is_refused_at_the_inner_call(tmp_path):
    assert refusal(tmp_path, REFUSALS, "loss") == (
        "11:19: 'gradgen.grad(spread)': gradgen cannot differentiate 'spread': no derivative rule for 'np.unique' "
        "on the value of 'x' (a differentiated parameter) (line 7)\n"
        "        return np.sum(gradgen.grad(spread)(x))\n"
        "                      ^")


@pytest.mark.parametrize("function, message", [
    ("itself", "15:19: 'gradgen.grad(itself)' is needed to compile 'itself' itself: gradgen compiles a nested "
               "derivative of another function; write the derivative out"),
    ("with_lambda", "19:19: 'gradgen.grad' inside a compiled function differentiates a function of this file named "
                    "directly: write gradgen.grad(f) or gradgen.grad(f, wrt=\"x\"), f a function defined at the top "
                    "level of this file"),
    ("matrix", "23:19: 'gradgen.hessian' inside a compiled function is not supported (its result is a matrix or "
               "takes a cotangent): call gradgen.grad, gradgen.jvp or gradgen.hvp there, or call 'gradgen.hessian' "
               "outside the function gradgen compiles"),
    ("unknown", "27:44: 'spread' has no parameter 'z'; its parameters are: x"),
])
def test_forms_gradgen_does_not_nest_are_refused_where_written(tmp_path, function, message):
    assert refusal(tmp_path, REFUSALS, function).split("\n")[0] == message


def test_the_python_api_compiles_a_nested_gradient_too(tmp_path):
    import gradgen  # the public API, as a user calls it (the module above imports its parts)

    _, user, _ = compiled(tmp_path, SIMULATION, "simulate")
    assert_gradient(gradgen.grad(user.simulate, wrt="all"), user.simulate, (X0, 1.5), {"v0": V0})


SHAPES = '''
import numpy as np
import gradgen
from jaxtyping import Float


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def response(w: float, x: Float[np.ndarray, "n"]):
    return np.sum(sigmoid(x * w))


def pairwise(x: Float[np.ndarray, "n"]):
    d = x[:, None] - x[None, :]
    return np.sum(np.cos(d) * d ** 2)


def unstated(w, x):
    return np.sum(sigmoid(x * w))


def sensitivity(w, x):
    return np.sum(gradgen.grad(response, wrt="w")(w, x) ** 2)


def relax(x):
    return np.sum(np.tanh(x - 0.1 * gradgen.grad(pairwise)(x)))


def broadcast(w, x):
    return gradgen.grad(unstated, wrt="w")(w, x) ** 2
'''


@pytest.mark.parametrize("function, args", [("sensitivity", (0.7, X)), ("relax", (X,))])
def test_stated_shapes_and_a_helper_of_the_file_in_the_inner_function(tmp_path, function, args):
    gen, user, _ = compiled(tmp_path, SHAPES, function)
    assert_gradient(getattr(gen, f"{function}_grad"), getattr(user, function), args)


@pytest.mark.parametrize("w", [0.7, np.array([0.7, -0.4, 0.2]), np.array([[0.5], [1.5]])],
                         ids=["number", "row", "column"])
def test_an_inner_gradient_that_undoes_a_broadcast_is_differentiated_again(tmp_path, w):
    """The inner gradient sums what broadcasting stretched (`unbroadcast(g, w)`, shapes
    unknown when compiling); the outer pass differentiates that through its smooth twin
    (`sum_to`), the adjoint of a broadcast. Once refused; checked here for a number, a row
    and a column w against x, and the Hessian-vector product too."""
    x = np.array([[0.3, -1.2, 0.8], [1.1, 0.4, -0.6]])
    gen, user, text = compiled(tmp_path, SHAPES.replace("gradgen.grad(unstated, wrt=\"w\")(w, x) ** 2",
                                                          "np.sum(gradgen.grad(unstated, wrt=\"w\")(w, x) ** 2)"),
                               "broadcast")
    assert "sum_to(" in text and "import gradgen" not in text
    assert_gradient(gen.broadcast_grad, user.broadcast, (w, x))
    hvp = load_module(compile_source(SHAPES, "broadcast.py", functions=["broadcast"], wrt=["w"],
                                     emit_kinds=("grad", "hvp")).text)
    v, h = np.ones_like(np.asarray(w, dtype=float)), 1e-6
    if np.ndim(w) == 0:  # (the hvp of a result that is one number)
        numeric = (hvp.broadcast_grad(w + h * v, x) - hvp.broadcast_grad(w - h * v, x)) / (2 * h)
        np.testing.assert_allclose(hvp.broadcast_hvp(w, x, dw=v), numeric, rtol=1e-6, atol=1e-8)
