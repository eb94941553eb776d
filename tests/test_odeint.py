"""`scipy.integrate.odeint(f, y0, t, args=(...))` inside a compiled function (issue 22: the
neural ODE of autograd's examples): the call runs as written, f is written into the generated
module, and the gradient is the adjoint method's. Each gradient is compared with central
differences of the user's own function, run as written, at tolerances tight enough that the
solver's error is far below the differences' (the derivative is that of the exact solution;
at rtol=1e-2, both it and autograd's differ from differences of the solver by percents)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from differences import compiled_beside
from gradgen import CompileError, compile_source

TIGHT = "rtol=1e-11, atol=1e-11"

pytestmark = pytest.mark.usefixtures("fresh_cache")  # (tests/conftest.py)


def compiled(folder, source, function, wrt="all"):
    return compiled_beside(folder, source, function, wrt, "ode")


def flat(x):
    if isinstance(x, dict):
        return np.concatenate([flat(x[k]) for k in sorted(x)])
    if isinstance(x, (list, tuple)):
        return np.concatenate([flat(v) for v in x])
    return np.ravel(np.asarray(x, dtype=float))


def rebuilt(like, v):
    """`like`'s structure with its leaves read from the vector v (flat's order)."""
    out, at = [], 0
    for part in like:
        if isinstance(part, (list, tuple)):
            inner = rebuilt(part, v[at:])
            out.append(type(part)(inner))
            at += flat(part).size
        else:
            n = np.size(part)
            out.append(np.reshape(v[at:at + n], np.shape(part)) if np.ndim(part) else float(v[at]))
            at += n
    return out


def central(f, args, index, h=1e-4):
    """d f(*args) / d args[index] (any structure) by central differences, as one vector."""
    x = flat(args[index])
    out = np.zeros(x.size)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        up, down = list(args), list(args)
        if isinstance(args[index], (list, tuple)):
            up[index], down[index] = rebuilt(args[index], x + e), rebuilt(args[index], x - e)
        else:
            shape = np.shape(args[index])
            up[index], down[index] = np.reshape(x + e, shape), np.reshape(x - e, shape)
        out[i] = (f(*up) - f(*down)) / (2 * h)
    return out


def assert_gradient(got, f, args, indices, rtol=2e-6, atol=1e-7):
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(indices)
    for g, index in zip(got, indices):
        np.testing.assert_allclose(flat(g), central(f, args, index), rtol=rtol, atol=atol)


CUBIC = f'''
import numpy as np
from scipy.integrate import odeint


def cubic(y, t, A):
    return np.dot(y**3, A)


def loss(A, y0, t, target):
    ys = odeint(cubic, y0, t, args=(A,), {TIGHT})
    return np.sum((ys - target) ** 2)
'''


def _cubic_inputs():
    t = np.linspace(0.0, 1.0, 8)
    return np.array([[-0.1, 2.0], [-2.0, -0.1]]), np.array([1.5, 0.2]), t, np.ones((8, 2))


def test_odeint_gradient_with_respect_to_its_args_and_y0(tmp_path):
    mod, user, text = compiled(tmp_path, CUBIC, "loss", wrt="A,y0")
    args = _cubic_inputs()
    assert_gradient(mod.loss_grad(*args), user.loss, args, (0, 1))
    # the call as written, the function as the file writes it, its vjp beside it
    assert "scipy.integrate.odeint(cubic, y0, t, (A,), rtol=1e-11, atol=1e-11)" in text
    assert "def cubic(y, t, A):\n    return np.dot(y**3, A)\n" in text
    assert "def cubic_vjp(y, t, A, *, cotangent):" in text
    assert "import gradgen" not in text


NET = f'''
import numpy as np
from scipy.integrate import odeint


def nn_predict(inputs, t, params):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs


def ode_pred(params, y0, t):
    return odeint(nn_predict, y0, t, tuple((params,)), {TIGHT})


def train_loss(params, y0, t, true_y):
    pred = ode_pred(params, y0, t)
    return np.mean((pred - true_y) ** 2)
'''


def test_a_structured_parameter_passed_whole_as_an_arg(tmp_path):
    """autograd's ode_net: a list of (W, b) layers, passed whole through a helper; the
    gradient comes back with the parameter's structure."""
    mod, user, _ = compiled(tmp_path, NET, "train_loss", wrt="params")
    rs = np.random.RandomState(0)
    params = [(rs.randn(2, 6) * 0.5, rs.randn(6) * 0.5), (rs.randn(6, 2) * 0.5, rs.randn(2) * 0.5)]
    t = np.linspace(0.0, 1.0, 6)
    args = (params, np.array([1.0, -0.5]), t, np.zeros((6, 2)))
    got = mod.train_loss_grad(*args)
    assert [tuple(np.shape(a) for a in layer) for layer in got] == [((2, 6), (6,)), ((6, 2), (2,))]
    assert_gradient(got, user.train_loss, args, (0,))


HELPERS = f'''
import math
import numpy as np
from scipy.integrate import odeint

DECAY = 0.3


def pull(y, k):
    return -k * np.sin(y) - DECAY * y


def pendulum(t, y, k, c):
    theta, omega = y
    return np.array([omega, pull(theta, k) - c * omega * math.exp(-t)])


def loss(k, c, y0):
    ys = odeint(pendulum, y0, [0.0, 0.5, 1.0, 2.0], args=(k, c), tfirst=True, {TIGHT})
    return np.sum(ys[:, 0] ** 2) + ys[-1, 1]
'''


def test_tfirst_numbers_a_list_of_times_helpers_and_constants(tmp_path):
    """f(t, y) with tfirst=True, numbers as args, times written as a list; f calls another
    function of the file and reads a constant: both are written into the generated module."""
    mod, user, text = compiled(tmp_path, HELPERS, "loss")
    args = (1.3, 0.4, np.array([0.8, 0.0]))
    got = mod.loss_grad(*args)
    assert all(isinstance(g, float) for g in got[:2])
    assert_gradient(got, user.loss, args, (0, 1, 2))
    assert "DECAY = 0.3" in text and "def pull(y, k):" in text


def test_a_number_as_y0(tmp_path):
    source = f'''
import numpy as np
from scipy.integrate import odeint


def growth(y, t, r):
    return r * y * (1 - y)


def loss(r, y0):
    ys = odeint(growth, y0, np.linspace(0, 2, 5), args=(r,), {TIGHT})
    return np.sum(ys)
'''
    mod, user, _ = compiled(tmp_path, source, "loss")
    args = (0.9, 0.1)
    got = mod.loss_grad(*args)
    assert all(isinstance(g, float) for g in got)
    assert_gradient(got, user.loss, args, (0, 1))


def test_whole_file_compiles_the_loss_that_integrates(tmp_path):
    """A function passing f to odeint is no driver: the file compiles whole, f is skipped as
    a helper (its result is an array) and written into the module for odeint."""
    path = tmp_path / "cubic.py"
    path.write_text(CUBIC)
    made = compile_source(CUBIC, str(path))
    assert [f.name for f in made.functions] == ["loss"]
    assert "loss" not in made.skipped and "cubic" in made.skipped


@pytest.mark.parametrize("call, message", [
    ("odeint(lambda y, t: -y, y0, t)",
     "'odeint' integrates a function of this file named directly: write odeint(f, y0, t, args=(...)), f defined "
     "at the top level of this file"),
    ("odeint(decay, y0, t, args=k)", "write the args of 'odeint' as a tuple in the call: args=(A, k)"),
    ("odeint(decay, y0, t, args=(k,), Dfun=None)",
     "'odeint' with Dfun= is not supported where its result is differentiated (gradgen passes rtol=, atol=, "
     "tcrit=... to the backward solve): leave it out"),
    ("odeint(decay, y0, t, args=(k,), rtol=k)",
     "rtol= of 'odeint' must be a number gradgen can read when compiling (written in the call, or a constant of "
     "the file)"),
    ("odeint(decay, y0, t)", "'odeint' calls 'decay' with y, t and 0 args, but 'decay' takes 3 parameters"),
    ("odeint(decay, y0, t, args=([k, k],))",
     "an arg of 'odeint' that is a list made in the function is not supported: pass its arrays as args of "
     "their own (args=(W, b)), or a parameter whole"),
    ("odeint(leaky, y0, t, args=(k,))",
     "'leaky', which 'odeint' integrates, reads 'rate', which gradgen cannot write into the generated module: "
     "pass it through args="),
])
def test_refusals_name_the_call_and_what_to_write(tmp_path, call, message):
    source = f'''
import numpy as np
from scipy.integrate import odeint


def decay(y, t, k):
    return -k * y


def leaky(y, t, k):
    return -k * y * rate


def loss(k, y0, t):
    ys = {call}
    return np.sum(ys)
'''
    path = tmp_path / "refused.py"
    path.write_text(source)
    with pytest.raises(CompileError) as caught:
        compile_source(source, str(path), functions=["loss"], wrt="k")
    assert caught.value.message == message
    assert caught.value.line == 15


def test_an_odeint_no_derivative_flows_through_runs_as_written(tmp_path):
    """Data made by odeint inside the loss (nothing it reads is differentiated): the call
    and its function are written into the module, and no derivative of it is taken."""
    source = '''
import numpy as np
from scipy.integrate import odeint


def decay(y, t, k):
    return -k * y


def loss(k, t):
    reference = odeint(decay, 1.0, t, args=(0.5,))
    return np.sum((np.exp(-k * t) - reference[:, 0]) ** 2)
'''
    mod, user, text = compiled(tmp_path, source, "loss", wrt="k")
    args = (0.7, np.linspace(0.0, 2.0, 7))
    assert_gradient(mod.loss_grad(*args), user.loss, args, (0,), rtol=1e-6)
    assert "odeint_vjp(" not in text.split("def loss_grad")[1]


def test_forward_mode_refuses_odeint_by_name(tmp_path):
    path = tmp_path / "cubic.py"
    path.write_text(CUBIC)
    with pytest.raises(CompileError) as caught:
        compile_source(CUBIC, str(path), functions=["loss"], wrt="A", emit_kinds=("hvp",))
    assert caught.value.message == (
        "forward mode (jvp, hvp, hessian, jacobian) cannot differentiate scipy.integrate.odeint yet; emit only the "
        "gradient here (--emit grad, or grad/vjp), or write it with operations it knows")


_RIGHT_SIDES = ["-k * y", "-k * y ** 3 + np.sin(t)", "np.array([y[1], -k * np.sin(y[0])])",
                "np.tanh(k * y) - 0.5 * y", "k * y * (1 - y) * np.exp(-t)"]
_BY_SIDE = {}


def _side_module(tmp_path, index):
    """(generated, user) for one right-hand side (compiled once per side)."""
    if index not in _BY_SIDE:
        source = f'''
import numpy as np
from scipy.integrate import odeint


def rhs(y, t, k):
    return {_RIGHT_SIDES[index]}


def loss(k, y0):
    ys = odeint(rhs, y0, np.linspace(0.0, 1.0, 4), args=(k,), {TIGHT})
    return np.sum(ys ** 2) + np.sum(ys[-1])
'''
        _BY_SIDE[index] = compiled(tmp_path, source, "loss")[:2]
    return _BY_SIDE[index]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(_RIGHT_SIDES) - 1), k=st.floats(0.2, 1.5),
       y0=st.lists(st.floats(0.05, 0.9), min_size=2, max_size=2))  # (the logistic blows up below 0)
def test_odeint_gradients_of_drawn_systems(tmp_path, index, k, y0):
    """Right-hand sides drawn from a family (linear, cubic, a pendulum, saturating, logistic
    with a decaying rate), parameters and starts drawn by hypothesis: the adjoint gradient
    agrees with central differences of the user's function."""
    mod, user = _side_module(tmp_path, index)
    args = (k, np.array(y0))
    assert_gradient(mod.loss_grad(*args), user.loss, args, (0, 1), rtol=1e-5, atol=1e-6)


def test_one_function_integrated_two_ways_is_refused(tmp_path):
    source = '''
import numpy as np
from scipy.integrate import odeint


def decay(y, t, k, c=0.0):
    return -k * y + c


def loss(k, y0, t):
    first = odeint(decay, y0, t, args=(k,))
    second = odeint(decay, y0, t, args=(k, 0.5))
    return np.sum(first) + np.sum(second)
'''
    path = tmp_path / "twice.py"
    path.write_text(source)
    with pytest.raises(CompileError) as caught:
        compile_source(source, str(path), functions=["loss"], wrt="k")
    assert caught.value.message == ("'odeint' integrates 'decay' here with 2 args, and elsewhere otherwise: call "
                                    "it the same way everywhere")
    assert caught.value.line == 12


def test_the_times_get_their_gradient(tmp_path):
    """t = np.linspace(0, T, n) with T differentiated: a later time moves its output along f,
    the first moves every later one back (it got no gradient before: a silent zero)."""
    source = f'''
import numpy as np
from scipy.integrate import odeint


def decay(y, t, k):
    return -k * y * (1.0 + 0.5 * np.sin(t))


def loss(k, T, t0):
    t = np.linspace(t0, T, 5)
    ys = odeint(decay, np.array([1.0, 0.5]), t, args=(k,), {TIGHT})
    return np.sum(ys ** 2)
'''
    mod, user, _ = compiled(tmp_path, source, "loss")
    args = (0.7, 1.3, 0.2)
    assert_gradient(mod.loss_grad(*args), user.loss, args, (0, 1, 2))


def test_an_odeint_no_derivative_flows_through_needs_no_vjp(tmp_path):
    """f has no derivative gradgen can take (np.ptp): where nothing differentiated reaches the
    call it runs as written; where something does, the refusal says why, at the call."""
    source = '''
import numpy as np
from scipy.integrate import odeint


def spread(y, t, k):
    return -k * y * np.ptp(y)


def loss(w, k, t):
    reference = odeint(spread, np.array([1.0, 0.5]), t, args=(k,))
    return np.sum(w * reference[-1])
'''
    mod, user, _ = compiled(tmp_path, source, "loss", wrt="w")
    args = (np.array([0.3, -0.2]), 0.7, np.linspace(0.0, 1.0, 4))
    assert_gradient(mod.loss_grad(*args), user.loss, args, (0,))
    path = tmp_path / "spread.py"
    path.write_text(source)
    with pytest.raises(CompileError) as caught:
        compile_source(source, str(path), functions=["loss"], wrt="w,k")
    assert caught.value.message.startswith("'odeint' integrates 'spread', and its gradient needs the derivative of "
                                           "'spread', which gradgen cannot take: ")
    assert caught.value.line == 11
