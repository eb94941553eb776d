"""autograd's names through gradgen's Python API (gradgen/live/aliases.py), and derivatives of
derivatives that the Python API compiles from a module gradgen generated (issue 22: autograd's
examples `tanh.py`, `gmm.py`, `negative_binomial_maxlike.py`, `sinusoid.py`): every value is
compared with hand derivatives or central differences of the user's own functions, run as
written."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pytest

import gradgen
from gradgen import compile_source, load_module
from gradgen.errors import CompileError

_imports = itertools.count()

PROGRAMS = '''\
import numpy as np
import numpy.random as npr
import gradgen
from scipy.special import gammaln


def tanh(x):
    return (1.0 - np.exp(-2 * x)) / (1.0 + np.exp(-(2 * x)))


def spread(x):
    return x * np.sum(x)


def rosen(x, a):
    return np.sum(a * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen100(x):
    return rosen(x, 100.0)


def negbin_loglike(r, p, x):
    return gammaln(r + x) - gammaln(r) - gammaln(x + 1) + x * np.log(p) + r * np.log(1 - p)


def fit_maxlike(x):
    """autograd's negative binomial example: Newton's method on the derivative of a closure."""
    loglike = lambda r, p: np.sum(negbin_loglike(r, p, x))
    p = lambda r: np.sum(x) / np.sum(r + x)
    rprime = lambda r: gradgen.grad(loglike, argnum=0)(r, p(r))
    return rprime


def score_squared(r, p, x):
    return gradgen.grad(loglike_of, argnum=0)(r, p, x) ** 2


def loglike_of(r, p, x):
    return np.sum(negbin_loglike(r, p, x))


def taylor_sin(x):
    currterm = x
    ans = currterm
    for i in range(1000):
        currterm = -currterm * x**2 / ((2 * i + 3) * (2 * i + 2))
        ans = ans + currterm
        if np.abs(currterm) < 0.2:
            break
    return ans


SCALE = 2.0
scaled = lambda x: np.sin(SCALE * x)
'''

COUNTS = np.array([3.0, 7.0, 1.0, 4.0, 9.0, 2.0, 5.0, 6.0])


pytestmark = pytest.mark.usefixtures("fresh_cache")  # (tests/conftest.py)


@pytest.fixture
def user(tmp_path):
    path = Path(tmp_path) / "programs.py"
    path.write_text(PROGRAMS)
    spec = importlib.util.spec_from_file_location(f"programs_{next(_imports)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def central(f, x, h=1e-5):
    """d f / d x by central differences, f of one number."""
    return (f(x + h) - f(x - h)) / (2 * h)


def test_elementwise_grad_of_tanh_to_the_fourth_derivative(user):
    x = np.linspace(-3.0, 3.0, 13)
    t = np.tanh(x)
    d1 = gradgen.elementwise_grad(user.tanh)
    d2 = gradgen.elementwise_grad(d1)
    d3 = gradgen.elementwise_grad(d2)
    d4 = gradgen.elementwise_grad(d3)
    np.testing.assert_allclose(d1(x), 1 - t**2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d2(x), -2 * t * (1 - t**2), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d3(x), (6 * t**2 - 2) * (1 - t**2), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d4(x), central(d3, x), rtol=1e-6, atol=1e-8)
    assert d1.__name__ == "sum_of_tanh_grad"
    assert "def sum_of_tanh_grad(x):" in d1.source


def test_elementwise_grad_of_a_lambda_reading_a_module_constant(user):
    x = np.array([0.1, -0.7, 2.0])
    np.testing.assert_allclose(gradgen.elementwise_grad(user.scaled)(x), 2.0 * np.cos(2.0 * x), rtol=1e-12)


def test_elementwise_grad_is_the_gradient_of_the_sum_when_not_elementwise(user):
    """autograd's definition (a cotangent of ones): for `x * np.sum(x)`, 2 sum(x) everywhere."""
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(gradgen.elementwise_grad(user.spread)(x), np.full(3, 2 * np.sum(x)), rtol=1e-12)


def test_hessian_vector_product_in_autograds_order(user):
    x, v, a, h = np.array([0.3, 0.7, -0.2, 1.1]), np.array([1.0, -2.0, 0.5, 0.25]), 100.0, 1e-6
    hvp = gradgen.hessian_vector_product(user.rosen)
    g = gradgen.grad(user.rosen, argnum=0)
    numeric = (g(x + h * v, a) - g(x - h * v, a)) / (2 * h)
    np.testing.assert_allclose(hvp(x, a, v), numeric, rtol=1e-6, atol=1e-6)


def test_scipy_newton_cg_takes_the_hessian_vector_product(user):
    from scipy.optimize import minimize

    found = minimize(user.rosen100, np.array([-1.2, 1.0, 0.5]), method="Newton-CG",
                     jac=gradgen.grad(user.rosen100), hessp=gradgen.hessian_vector_product(user.rosen100))
    np.testing.assert_allclose(found.x, np.ones(3), atol=1e-5)


def test_argnum_chooses_parameters_by_position(user):
    x, a = np.array([0.3, 0.7, -0.2]), 100.0
    da = np.sum((x[1:] - x[:-1] ** 2) ** 2)
    assert gradgen.grad(user.rosen, argnum=1)(x, a) == pytest.approx(da, rel=1e-12)
    dx, da_both = gradgen.grad(user.rosen, argnum=(0, 1))(x, a)
    np.testing.assert_allclose(dx, gradgen.grad(user.rosen, wrt="x")(x, a), rtol=1e-12)
    assert da_both == pytest.approx(da, rel=1e-12)
    assert gradgen.value_and_grad(user.rosen, argnum=-1)(x, a)[1] == pytest.approx(da, rel=1e-12)


def test_argnum_out_of_range_and_with_wrt_are_refused(user):
    with pytest.raises(CompileError) as found:
        gradgen.grad(user.rosen, argnum=2)
    assert found.value.message == "argnum 2 of 'rosen': it has 2 parameters (x, a)"
    with pytest.raises(TypeError, match="give wrt= .parameter names. or argnum= .their positions., not both"):
        gradgen.grad(user.rosen, wrt="x", argnum=0)


def test_newtons_method_on_the_derivative_of_a_closure(user):
    """grad(rprime) and grad(grad(rprime)): rprime a lambda calling the gradient of another
    lambda over data; second and third derivatives, gradgen compiling its own output."""
    rprime = user.fit_maxlike(COUNTS)
    d1 = gradgen.grad(rprime)
    d2 = gradgen.grad(d1)
    for r in (0.8, 2.5, 6.0):
        assert d1(r) == pytest.approx(central(rprime, r), rel=1e-6)
        assert d2(r) == pytest.approx(central(d1, r), rel=1e-6)
    import scipy.optimize

    r = scipy.optimize.newton(rprime, 1.0, fprime=d1, fprime2=d2)
    assert abs(rprime(r)) < 1e-8


def test_a_nested_gradient_spelled_with_argnum_and_imports_the_file_lacks(tmp_path, user):
    """The inner gradient calls scipy.special.digamma, which the file never imports (only
    gammaln): the generated call is read as scipy's; argnum=0 is the parameter r."""
    text = compile_source(PROGRAMS, str(tmp_path / "programs.py"), functions=["score_squared"], wrt=["r"]).text
    gen = load_module(text)
    for r in (0.8, 3.0):
        want = central(lambda s: user.score_squared(s, 0.4, COUNTS), r)
        assert gen.score_squared_grad(r, 0.4, COUNTS) == pytest.approx(want, rel=1e-6)


def test_a_nested_argnum_that_is_no_position_is_refused(tmp_path):
    source = PROGRAMS.replace("gradgen.grad(loglike_of, argnum=0)", "gradgen.grad(loglike_of, argnum=3)")
    with pytest.raises(CompileError) as found:
        compile_source(source, str(tmp_path / "programs.py"), functions=["score_squared"], wrt=["r"])
    assert found.value.message == ("argnum= of 'gradgen.grad' must be written out: a position of a parameter of "
                                   "'loglike_of' (r, p, x) or a tuple of them")


def test_the_first_derivative_of_a_taylor_series_with_a_break(user):
    d1 = gradgen.grad(user.taylor_sin)
    for x in (-2.0, 0.3, 1.7):
        assert d1(x) == pytest.approx(central(user.taylor_sin, x), rel=1e-6)
