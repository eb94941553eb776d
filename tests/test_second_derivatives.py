"""Second derivatives through the backward pass's helpers (issue 22): forward mode's rule for
prod_grad, einsum_grad, solve_grad_a, cholesky_grad, solve_triangular_grad_a, cumprod_grad,
cho_factor_grad, cho_solve_grad_c and inner_grad_a/b (and for scipy.linalg.solve_triangular
itself), checked by `--emit hessian` against central
differences of the generated gradient, and the Gaussian-process marginal likelihood of
examples/gaussian_process.py the same way."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from gradgen import compile_source, load_module

if importlib.util.find_spec("scipy.linalg") is None:
    pytest.skip("needs SciPy (the tests/stubs stand-in has scipy.special.expit only)", allow_module_level=True)

HEADER = "import numpy as np\nimport scipy.linalg\nimport scipy.stats\nfrom scipy.linalg import solve_triangular\n\n\n"
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gaussian_process.py"


def _spd(x):
    """A symmetric positive definite matrix from the parameter vector x (9 numbers)."""
    return "(np.reshape(x, (3, 3)) @ np.reshape(x, (3, 3)).T + 3.0 * np.eye(3))"


def _lower(x):
    return "(np.tril(np.reshape(x, (3, 3))) + 3.0 * np.eye(3))"


# name -> (body of f(x), x); each reads x through the rule whose backward helper is named
CASES = {
    "prod": ("np.prod(x) + np.sum(np.prod(np.reshape(x, (2, 3)), axis=1) ** 2)",
             np.array([0.5, -1.2, 2.0, 0.7, 1.1, -0.4])),
    "prod_zero": ("np.prod(x)", np.array([0.5, 0.0, 2.0, -1.5])),
    "prod_keepdims": ("np.sum(np.sin(np.prod(np.reshape(x, (2, 3)), axis=0, keepdims=True)))",
                      np.array([0.5, -1.2, 2.0, 0.7, 1.1, -0.4])),
    "einsum": ("np.sum(np.einsum('ij,jk->ik', np.reshape(x, (2, 3)), np.reshape(x, (3, 2))) ** 2)",
               np.linspace(-1.0, 1.2, 6)),
    "einsum_three": ("np.sum(np.einsum('i,ij,j->', x[:2], np.reshape(x, (2, 3)), x[3:]) ** 2)",
                     np.linspace(-1.0, 1.2, 6)),
    "solve": (f"np.sum(np.linalg.solve({_spd('x')}, np.sin(x[:3])) ** 2)", np.linspace(-1.0, 1.3, 9)),
    "solve_matrix": (f"np.sum(np.linalg.solve({_spd('x')} + np.reshape(x, (3, 3)), np.reshape(x, (3, 3))) ** 2)",
                     np.linspace(-1.0, 1.3, 9)),
    "cholesky": (f"np.sum(np.linalg.cholesky({_spd('x')}) ** 3)", np.linspace(-1.0, 1.3, 9)),
    "solve_triangular": (f"np.sum(solve_triangular({_lower('x')}, np.cos(x[:3]), lower=True) ** 2)",
                         np.linspace(-1.0, 1.3, 9)),
    # the rules issue 22 added whose backward helpers have tangents
    "cross": ("np.sum(np.cross(np.reshape(x, (2, 3)), x[:3]) ** 2)", np.linspace(-1.0, 1.2, 6)),
    "convolve": ("np.sum(np.convolve(x[:4], x[4:]) ** 2)", np.linspace(-1.0, 1.2, 6)),
    "swapaxes": ("np.sum(np.sin(np.swapaxes(np.reshape(x, (2, 3)), 0, 1)) * np.arange(6.0).reshape(3, 2))",
                 np.linspace(-1.0, 1.2, 6)),
    "norm": ("np.linalg.norm(x) ** 3", np.linspace(-1.0, 1.2, 6)),
    "solve_triangular_upper_trans": (f"np.sum(solve_triangular({_lower('x')}.T, np.reshape(x, (3, 3)), trans=1) ** 2)",
                                     np.linspace(-1.0, 1.3, 9)),
    # and the last of them (cumprod, cho_factor/cho_solve), with np.inner's and np.vdot's
    "cumprod": ("np.sum(np.cumprod(x) ** 2) + np.sum(np.cumprod(np.reshape(x, (2, 3)), axis=1) * np.arange(6.0).reshape(2, 3))",
                np.array([0.5, -1.2, 2.0, 0.7, 1.1, -0.4])),
    "cumprod_zero": ("np.sum(np.sin(np.cumprod(x)))", np.array([0.5, 0.0, 2.0, -1.5])),
    "cho_factor_cho_solve": (f"np.sum(scipy.linalg.cho_solve(scipy.linalg.cho_factor({_spd('x')}), np.sin(x[:3])) ** 2)",
                             np.linspace(-1.0, 1.3, 9)),
    "cho_factor_lower_matrix": (f"np.sum(scipy.linalg.cho_solve(scipy.linalg.cho_factor({_spd('x')}, lower=True), "
                                "np.reshape(x, (3, 3))[:, :2]) ** 2)", np.linspace(-1.0, 1.3, 9)),
    "cho_factor_unpacked": (f"np.sum(scipy.linalg.cho_solve((c, low), x[:3]) * x[3:6])",
                            np.linspace(-1.0, 1.3, 9)),
    "inner": ("np.sum(np.inner(np.reshape(x, (2, 3)), np.reshape(x, (2, 3))) ** 2) + np.inner(x, x) ** 2",
              np.linspace(-1.0, 1.2, 6)),
    "vdot": ("np.vdot(np.reshape(x, (2, 3)), np.sin(x)) ** 2", np.linspace(-1.0, 1.2, 6)),
    # the multivariate normal's log-density in every argument, rows and one point (autograd's gmm)
    "mvn_logpdf_rows": (f"np.sum(np.sin(scipy.stats.multivariate_normal.logpdf(np.reshape(x[:6], (2, 3)) ** 2, "
                        f"x[6:9], {_spd('x')})))", np.linspace(-1.0, 1.3, 9)),
    "mvn_logpdf_one": (f"scipy.stats.multivariate_normal.logpdf(x[:3], np.cos(x[3:6]), {_spd('x')}) ** 2",
                       np.linspace(-1.0, 1.3, 9)),
    "mvn_logpdf_lower": (f"np.sum(scipy.stats.multivariate_normal.logpdf(np.reshape(x[:6], (2, 3)), x[3:6], "
                         f"{_lower('x')} @ {_lower('x')}.T + np.triu(np.reshape(x, (3, 3)), 1)))",
                         np.linspace(-1.0, 1.3, 9)),
}
PREAMBLE = {"cho_factor_unpacked": f"    c, low = scipy.linalg.cho_factor({_spd('x')})\n"}


def central_hessian(grad, x, h=1e-5):
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = h
        columns.append((grad(x + step) - grad(x - step)) / (2 * h))
    return np.array(columns).T


def _check(hessian, grad, x):
    want = central_hessian(grad, x)
    np.testing.assert_allclose(hessian(x), want, rtol=1e-6, atol=1e-6 * max(1.0, np.max(np.abs(want))))


@pytest.mark.parametrize("case", sorted(CASES))
def test_hessian_through_a_backward_helper_matches_central_differences(case):
    body, x = CASES[case]
    source = HEADER + f"def f(x):\n{PREAMBLE.get(case, '')}    return {body}\n"
    module = load_module(compile_source(source, f"{case}.py", emit_kinds=("grad", "hvp", "hessian")).text,
                         f"second_{case}")
    _check(module.f_hessian, module.f_grad, x)


def test_gaussian_process_hessian_matches_central_differences_of_its_gradient():
    compiled = compile_source(EXAMPLE.read_text(), "gaussian_process.py",
                              functions=["neg_log_marginal_likelihood"], emit_kinds=("grad", "hvp", "hessian"))
    m = load_module(compiled.text, "second_gp")
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(8, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(8)
    x = np.log(np.array([0.8, 1.2, 0.1]))
    _check(lambda p: m.neg_log_marginal_likelihood_hessian(p, X=X, y=y),
           lambda p: m.neg_log_marginal_likelihood_grad(p, X=X, y=y), x)


POPPED_UNDER_A_TEST = '''
import numpy as np


def f(alpha, W, *, X):
    hs = []
    hs.append(alpha * W)
    if np.sum(X) > 0.0:
        hs.append(X * X)
    total = 0.0
    for item in hs:
        total = total + np.sum(item * item)
    return total
'''


@pytest.mark.parametrize("X", [np.array([1.0, 0.5, -0.2]), np.array([-1.0, 0.5, -0.2])], ids=["appended", "not"])
def test_an_hvp_keeps_a_pop_under_a_test_that_nothing_else_needs(X):
    """The gradient pops the entry of an append no derivative flows through (`hs.append(X *
    X)` under a test) only to reach the one before it: the hvp's dead-code pass dropped that
    branch (its popped value is unused) and then took the wrong entry for alpha's (soak seed
    53000 #488: an alpha gradient of shape (4, 3))."""
    module = load_module(compile_source(POPPED_UNDER_A_TEST, "popped.py", emit_kinds=("grad", "hvp"),
                                        wrt=["alpha", "W"]).text, f"popped_{X[0] > 0}")
    alpha, W, t_alpha, t_W = 0.7, np.array([0.3, -0.4, 0.9]), 0.5, np.array([1.0, -2.0, 0.25])
    product = module.f_hvp(alpha, W, X=X, dalpha=t_alpha, dW=t_W)
    h = 1e-6
    plus = module.f_grad(alpha + h * t_alpha, W + h * t_W, X=X)
    minus = module.f_grad(alpha - h * t_alpha, W - h * t_W, X=X)
    for got, p, m in zip(product, plus, minus):
        assert np.shape(got) == np.shape(p)
        np.testing.assert_allclose(got, (np.asarray(p) - np.asarray(m)) / (2 * h), rtol=1e-6, atol=1e-8)
