"""The library rules (gradgen/rules/special.py, rules_linalg.py, rules_shape.py) against
central finite differences: for each array rule, a small loss `np.sum(W * f(...))` (W a
fixed random weight, so every element of the result counts differently) is compiled with
compile_source, and its gradient is compared with central differences of the original
function, element by element, at 1e-6 relative. Inputs are random and well conditioned
(SPD matrices where cholesky, slogdet or a covariance needs one).

The scalar special functions (gammaln, digamma, xlogy, log_expit, logaddexp, norm.*) are
checked against sympy.diff by tests/test_rules.py, with every other scalar rule; they are
checked here on arrays too. Needs real SciPy (skipped under the tests/stubs stand-in).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.errors import CompileError
from gradgen.rules.table import TABLE

if importlib.util.find_spec("scipy.linalg") is None:
    pytest.skip("needs SciPy (the tests/stubs stand-in has scipy.special.expit only)", allow_module_level=True)
import scipy.linalg  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

HEADER = (
    "import numpy as np\n"
    "import scipy.linalg\n"
    "import scipy.special\n"
    "from scipy.special import gammaln, digamma, xlogy, softmax, log_softmax, log_expit, logsumexp, expit\n"
    "from scipy.stats import norm, multivariate_normal, t\n"
    "from scipy.linalg import solve_triangular\n\n\n"
)
REL = 1e-6


def _rng(name):
    return np.random.default_rng(sum(map(ord, name)))


def spd(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def lower(rng, n):
    return np.tril(rng.standard_normal((n, n))) + 3 * np.eye(n)


# name -> (expression of the loss's body, inputs builder): the loss is sum(W * expression)
CASES = {
    "logsumexp": ("logsumexp(x)", lambda r: {"x": r.standard_normal((3, 4))}),
    "logsumexp_axis": ("logsumexp(x, axis=1)", lambda r: {"x": r.standard_normal((3, 4))}),
    "logsumexp_keepdims": ("logsumexp(x, axis=0, keepdims=True)", lambda r: {"x": r.standard_normal((3, 4))}),
    "logsumexp_b": ("logsumexp(x, axis=1, b=np.array([0.5, 1.0, 2.0, 0.25]))",
                    lambda r: {"x": r.standard_normal((3, 4))}),
    "logaddexp": ("np.logaddexp(x, y)", lambda r: {"x": r.standard_normal(4), "y": r.standard_normal((3, 4))}),
    "logaddexp2": ("np.logaddexp2(x, y)", lambda r: {"x": r.standard_normal(4), "y": r.standard_normal(4)}),
    "gammaln": ("gammaln(x)", lambda r: {"x": r.uniform(0.5, 4.0, 5)}),
    "digamma": ("digamma(x)", lambda r: {"x": r.uniform(0.5, 4.0, 5)}),
    "polygamma": ("scipy.special.polygamma(1, x)", lambda r: {"x": r.uniform(0.5, 4.0, 5)}),
    "xlogy": ("xlogy(x, y)", lambda r: {"x": r.standard_normal(5), "y": r.uniform(0.5, 2.0, 5)}),
    "softmax": ("softmax(x, axis=1)", lambda r: {"x": r.standard_normal((3, 4))}),
    "softmax_all": ("softmax(x)", lambda r: {"x": r.standard_normal((3, 4))}),
    "log_softmax": ("log_softmax(x, axis=0)", lambda r: {"x": r.standard_normal((3, 4))}),
    "log_expit": ("log_expit(x)", lambda r: {"x": 3 * r.standard_normal(6)}),
    "expit": ("expit(x)", lambda r: {"x": r.standard_normal(6)}),
    "erf": ("scipy.special.erf(x)", lambda r: {"x": r.standard_normal(6)}),
    "norm_logpdf": ("norm.logpdf(x, m, s)", lambda r: {"x": r.standard_normal(5), "m": r.standard_normal(5),
                                                       "s": r.uniform(0.5, 2.0, 5)}),
    "norm_logpdf_scalar_loc": ("norm.logpdf(x, m, s)", lambda r: {"x": r.standard_normal(5), "m": 0.3, "s": 1.7}),
    "norm_logpdf_keywords": ("norm.logpdf(x, loc=1.0, scale=2.0)", lambda r: {"x": r.standard_normal(5)}),
    "norm_logpdf_keyword_values": ("norm.logpdf(x, loc=m, scale=np.exp(s))",  # (keywords by position)
                                   lambda r: {"x": r.standard_normal(5), "m": r.standard_normal(5), "s": 0.2}),
    "norm_logcdf_scale_only": ("norm.logcdf(x, scale=s)", lambda r: {"x": r.standard_normal(5), "s": 1.3}),
    "t_logpdf": ("t.logpdf(x, d, m, s)", lambda r: {"x": r.standard_normal(5), "d": r.uniform(1.5, 5.0, 5),
                                                    "m": r.standard_normal(5), "s": r.uniform(0.5, 2.0, 5)}),
    "t_logpdf_keywords": ("t.logpdf(x, 2.4, scale=s)", lambda r: {"x": r.standard_normal(5), "s": 0.7}),
    "norm_pdf": ("norm.pdf(x, m, s)", lambda r: {"x": r.standard_normal(5), "m": r.standard_normal(5),
                                                 "s": r.uniform(0.5, 2.0, 5)}),
    "norm_cdf": ("norm.cdf(x, m, s)", lambda r: {"x": r.standard_normal(5), "m": r.standard_normal(5),
                                                 "s": r.uniform(0.5, 2.0, 5)}),
    "norm_logcdf": ("norm.logcdf(x, m, s)", lambda r: {"x": 3 * r.standard_normal(5), "m": r.standard_normal(5),
                                                       "s": r.uniform(0.5, 2.0, 5)}),
    "norm_cdf_standard": ("norm.cdf(x)", lambda r: {"x": r.standard_normal(5)}),
    "ndtr": ("scipy.special.ndtr(x)", lambda r: {"x": 2 * r.standard_normal(5)}),
    "log_ndtr": ("scipy.special.log_ndtr(x)", lambda r: {"x": 3 * r.standard_normal(5)}),
    "ndtri": ("scipy.special.ndtri(x)", lambda r: {"x": r.uniform(0.05, 0.95, 5)}),
    "mvn_logpdf_rows": ("multivariate_normal.logpdf(x, m, S)",
                        lambda r: {"x": r.standard_normal((4, 3)), "m": r.standard_normal(3), "S": spd(r, 3)}),
    "mvn_logpdf_keywords": ("multivariate_normal.logpdf(x, mean=m, cov=S)",
                            lambda r: {"x": r.standard_normal((4, 3)), "m": r.standard_normal(3), "S": spd(r, 3)}),
    "mvn_logpdf_one": ("multivariate_normal.logpdf(x, m, S)",
                       lambda r: {"x": r.standard_normal(3), "m": r.standard_normal(3), "S": spd(r, 3)}),
    "solve_matrix": ("np.linalg.solve(A, B)", lambda r: {"A": spd(r, 3) + r.standard_normal((3, 3)),
                                                          "B": r.standard_normal((3, 2))}),
    "solve_vector": ("np.linalg.solve(A, b)", lambda r: {"A": spd(r, 3) + r.standard_normal((3, 3)),
                                                         "b": r.standard_normal(3)}),
    "scipy_solve": ("scipy.linalg.solve(A, b)", lambda r: {"A": spd(r, 3), "b": r.standard_normal(3)}),
    "inv": ("np.linalg.inv(A)", lambda r: {"A": spd(r, 3) + r.standard_normal((3, 3))}),
    "det": ("np.linalg.det(A)", lambda r: {"A": r.standard_normal((3, 3)) + 2 * np.eye(3)}),
    "slogdet": ("np.linalg.slogdet(A)[1]", lambda r: {"A": spd(r, 3) + 0.5 * r.standard_normal((3, 3))}),
    "cholesky": ("np.linalg.cholesky(A)", lambda r: {"A": spd(r, 3)}),
    "solve_triangular_lower": ("solve_triangular(L, B, lower=True)",
                               lambda r: {"L": lower(r, 3), "B": r.standard_normal((3, 2))}),
    "solve_triangular_upper": ("solve_triangular(U, b)", lambda r: {"U": lower(r, 3).T, "b": r.standard_normal(3)}),
    "solve_triangular_trans": ("solve_triangular(L, b, trans=1, lower=True)",
                               lambda r: {"L": lower(r, 3), "b": r.standard_normal(3)}),
    "trace": ("np.trace(A)", lambda r: {"A": r.standard_normal((3, 4))}),
    "trace_offset": ("np.trace(A, offset=1)", lambda r: {"A": r.standard_normal((3, 4))}),
    "diag_of_matrix": ("np.diag(A)", lambda r: {"A": r.standard_normal((3, 4))}),
    "diag_offset": ("np.diag(A, k=-1)", lambda r: {"A": r.standard_normal((3, 4))}),
    "diag_of_vector": ("np.diag(v)", lambda r: {"v": r.standard_normal(3)}),
    "tril": ("np.tril(A, k=-1)", lambda r: {"A": r.standard_normal((3, 4))}),
    "triu": ("np.triu(A)", lambda r: {"A": r.standard_normal((3, 4))}),
    "repeat": ("np.repeat(x, 2)", lambda r: {"x": r.standard_normal((2, 3))}),
    "repeat_axis": ("np.repeat(x, 3, axis=1)", lambda r: {"x": r.standard_normal((2, 3))}),
    "tile": ("np.tile(x, (2, 1, 2))", lambda r: {"x": r.standard_normal((2, 3))}),
    "roll": ("np.roll(x, 2)", lambda r: {"x": r.standard_normal((2, 3))}),
    "roll_axes": ("np.roll(x, (1, -1), axis=(0, 1))", lambda r: {"x": r.standard_normal((2, 3))}),
    "atleast_2d": ("np.atleast_2d(x)", lambda r: {"x": r.standard_normal(3)}),
    "atleast_3d": ("np.atleast_3d(x)", lambda r: {"x": r.standard_normal((2, 3))}),
    "meshgrid_x": ("np.meshgrid(x, y)[0] * np.meshgrid(x, y)[1]",
                   lambda r: {"x": r.standard_normal(3), "y": r.standard_normal(4)}),
    "meshgrid_3": ("np.meshgrid(x, y, z)[2] * np.meshgrid(x, y, z)[0]",
                   lambda r: {"x": r.standard_normal(3), "y": r.standard_normal(4), "z": r.standard_normal(2)}),
    "var": ("np.var(x, axis=0)", lambda r: {"x": r.standard_normal((4, 3))}),
    "var_ddof": ("np.var(x, ddof=1)", lambda r: {"x": r.standard_normal((4, 3))}),
    "std": ("np.std(x, axis=1, keepdims=True)", lambda r: {"x": r.standard_normal((4, 3))}),
    "std_method": ("x.std(axis=0, ddof=1)", lambda r: {"x": r.standard_normal((4, 3))}),
    "mod": ("np.mod(x, y)", lambda r: {"x": r.uniform(0.1, 5.0, 5), "y": r.uniform(1.1, 1.9, 5)}),
    "ufuncs": ("np.add(np.multiply(x, y), np.divide(np.negative(x), np.subtract(y, 3.0)))",
               lambda r: {"x": r.standard_normal(4), "y": r.standard_normal(4)}),
    "true_divide": ("np.true_divide(x, np.power(y, 2))", lambda r: {"x": r.standard_normal(4),
                                                                    "y": r.uniform(0.5, 2.0, 4)}),
    "copy": ("x.copy() * np.copy(x)", lambda r: {"x": r.standard_normal((2, 3))}),
    "astype": ("x.astype(dtype=float) * 2", lambda r: {"x": r.standard_normal(4)}),
    "sort": ("np.sort(x)", lambda r: {"x": r.standard_normal((3, 4))}),
    "sort_axis0": ("np.sort(x, axis=0)", lambda r: {"x": r.standard_normal((3, 4))}),
    "take_along_axis": ("np.take_along_axis(x, np.argsort(x, axis=1), axis=1) * np.arange(4.0)",
                        lambda r: {"x": r.standard_normal((3, 4))}),
    # issue 22: cross, swapaxes, convolve, cho_factor/cho_solve, norm's forms, cumprod, cumsum with an axis
    "cross": ("np.cross(a, b)", lambda r: {"a": r.standard_normal(3), "b": r.standard_normal(3)}),
    "cross_stack": ("np.cross(a, b)", lambda r: {"a": r.standard_normal((4, 3)), "b": r.standard_normal(3)}),
    "swapaxes": ("np.swapaxes(x, 0, 2)", lambda r: {"x": r.standard_normal((2, 3, 4))}),
    "swapaxes_method": ("x.swapaxes(1, -1) * 2.0", lambda r: {"x": r.standard_normal((2, 3, 4))}),
    "convolve": ("np.convolve(a, v)", lambda r: {"a": r.standard_normal(5), "v": r.standard_normal(3)}),
    "convolve_longer_kernel": ("np.convolve(a, v)", lambda r: {"a": r.standard_normal(2), "v": r.standard_normal(4)}),
    "cho_factor_cho_solve": ("scipy.linalg.cho_solve(scipy.linalg.cho_factor(A), b)",
                             lambda r: {"A": spd(r, 3), "b": r.standard_normal(3)}),
    "cho_factor_lower_matrix": ("scipy.linalg.cho_solve(scipy.linalg.cho_factor(A, lower=True), B)",
                                lambda r: {"A": spd(r, 3), "B": r.standard_normal((3, 2))}),
    "norm": ("np.linalg.norm(x)", lambda r: {"x": r.standard_normal(4)}),
    "norm_frobenius": ("np.linalg.norm(x)", lambda r: {"x": r.standard_normal((3, 4))}),
    "norm_axis": ("np.linalg.norm(x, axis=1)", lambda r: {"x": r.standard_normal((3, 4))}),
    "norm_axis_keepdims": ("np.linalg.norm(x, ord=2, axis=0, keepdims=True)",
                           lambda r: {"x": r.standard_normal((3, 4))}),
    "norm_ord_1": ("np.linalg.norm(x, ord=1, axis=-1)", lambda r: {"x": r.standard_normal((3, 4))}),
    "norm_ord_inf": ("np.linalg.norm(x, ord=np.inf, axis=1)", lambda r: {"x": r.standard_normal((3, 4))}),
    "norm_vector_ord_1": ("np.linalg.norm(x, 1)", lambda r: {"x": r.standard_normal(5)}),
    "cumprod": ("np.cumprod(x)", lambda r: {"x": r.uniform(0.5, 1.5, (2, 3))}),
    "cumprod_axis": ("np.cumprod(x, axis=0)", lambda r: {"x": r.uniform(-1.5, 1.5, (3, 4))}),
    "cumprod_method": ("x.cumprod(axis=1)", lambda r: {"x": r.uniform(-1.5, 1.5, (3, 4))}),
    "cumprod_with_a_zero": ("np.cumprod(x)", lambda r: {"x": np.array([0.5, 0.0, 2.0, -1.5])}),
    "cumsum_axis": ("np.cumsum(x, axis=1) ** 2", lambda r: {"x": r.standard_normal((3, 4))}),
    # issue 22's leftovers: convolve's modes, and the numbers np.vdot, np.inner and np.einsum make
    "convolve_same": ("np.convolve(a, v, mode='same')", lambda r: {"a": r.standard_normal(5), "v": r.standard_normal(3)}),
    "convolve_same_longer_kernel": ("np.convolve(a, v, 'same')",
                                    lambda r: {"a": r.standard_normal(3), "v": r.standard_normal(6)}),
    "convolve_valid": ("np.convolve(a, v, mode='valid')",
                       lambda r: {"a": r.standard_normal(6), "v": r.standard_normal(3)}),
    "convolve_valid_longer_kernel": ("np.convolve(a, v, mode='valid')",
                                     lambda r: {"a": r.standard_normal(2), "v": r.standard_normal(4)}),
    "vdot": ("np.vdot(a, b)", lambda r: {"a": r.standard_normal((2, 3)), "b": r.standard_normal(6)}),
    "inner_vectors": ("np.inner(a, b)", lambda r: {"a": r.standard_normal(4), "b": r.standard_normal(4)}),
    "inner_matrices": ("np.inner(a, b)", lambda r: {"a": r.standard_normal((3, 3)), "b": r.standard_normal((3, 3))}),
    "inner_stacks": ("np.inner(a, b)", lambda r: {"a": r.standard_normal((2, 2, 3)), "b": r.standard_normal((4, 3))}),
    "inner_number": ("np.inner(a, b)", lambda r: {"a": 0.7, "b": r.standard_normal((2, 3))}),
    "einsum_to_a_number": ("np.einsum('ij,ij->', a, b)", lambda r: {"a": r.standard_normal((2, 3)),
                                                                    "b": r.standard_normal((2, 3))}),
}


def loss_source(expression, names):
    params = ", ".join(names)
    return HEADER + f"def loss({params}, *, W):\n    return np.sum(W * ({expression}))\n"


def finite_differences(f, inputs, name, h=1e-6):
    x = np.asarray(inputs[name], dtype=float)
    grad = np.zeros(x.shape)
    for k in np.ndindex(x.shape):
        values = []
        for step in (h, -h):
            moved = x.copy()
            moved[k] += step
            values.append(f(**{**inputs, name: moved if moved.shape else float(moved)}))
        grad[k] = (values[0] - values[1]) / (2 * h)
    return grad


@pytest.mark.parametrize("case", sorted(CASES))
def test_library_rule_matches_finite_differences(case):
    expression, build = CASES[case]
    inputs = build(_rng(case))
    names = list(inputs)
    source = loss_source(expression, names)
    namespace = {}
    exec(compile(source, f"<{case}>", "exec"), namespace)  # noqa: S102 - our own test source
    original = namespace["loss"]
    shape = np.shape(np.asarray(eval(expression, namespace, dict(inputs))))  # noqa: S307
    W = _rng(case + "W").standard_normal(shape)
    module = load_module(compile_source(source, f"{case}.py", functions=["loss"], wrt="all").text, f"library_{case}")
    value, grads = module.loss_value_and_grad(**inputs, W=W)
    grads = grads if len(names) > 1 else (grads,)
    assert value == pytest.approx(original(**inputs, W=W), rel=1e-12)
    for name, got in zip(names, grads):
        want = finite_differences(lambda **kw: original(**kw, W=W), inputs, name)
        assert np.shape(got) == np.shape(inputs[name]), name
        scale = max(np.max(np.abs(want)), 1e-3)
        np.testing.assert_allclose(got, want, rtol=REL, atol=REL * scale, err_msg=f"{case}: d/d{name}")


# forward mode (a jvp along a random direction) for the rules issue 22 added, against central
# differences of the original function along the same direction
FORWARD_CASES = sorted({"cross", "cross_stack", "swapaxes", "swapaxes_method", "convolve", "convolve_longer_kernel",
                        "cho_factor_cho_solve", "cho_factor_lower_matrix", "norm", "norm_frobenius",
                        "norm_vector_ord_1", "cumprod", "cumprod_axis", "cumprod_method", "cumprod_with_a_zero",
                        "cumsum_axis", "solve_triangular_lower", "solve_triangular_trans", "convolve_same",
                        "convolve_same_longer_kernel", "convolve_valid", "convolve_valid_longer_kernel", "vdot",
                        "inner_matrices", "inner_stacks", "einsum_to_a_number",
                        "mvn_logpdf_rows", "mvn_logpdf_keywords", "mvn_logpdf_one"})


@pytest.mark.parametrize("case", FORWARD_CASES)
def test_forward_rule_matches_central_differences(case):
    expression, build = CASES[case]
    inputs = build(_rng(case))
    names = list(inputs)
    source = loss_source(expression, names)
    namespace = {}
    exec(compile(source, f"<{case}>", "exec"), namespace)  # noqa: S102 - our own test source
    original = namespace["loss"]
    W = _rng(case + "W").standard_normal(np.shape(np.asarray(eval(expression, namespace, dict(inputs)))))  # noqa: S307
    direction = {name: _rng(case + name).standard_normal(np.shape(v)) for name, v in inputs.items()}
    module = load_module(compile_source(source, f"{case}.py", functions=["loss"], emit_kinds=("jvp",), wrt="all").text,
                         f"forward_{case}")
    value, tangent = module.loss_jvp(**inputs, W=W, **{"d" + name: d for name, d in direction.items()})
    h = 1e-6
    moved = [original(**{n: np.asarray(v) + s * direction[n] for n, v in inputs.items()}, W=W) for s in (h, -h)]
    want = (moved[0] - moved[1]) / (2 * h)
    assert value == pytest.approx(original(**inputs, W=W), rel=1e-12)
    assert tangent == pytest.approx(want, rel=1e-6, abs=1e-8)


def test_every_library_rule_is_exercised():
    library = {"logsumexp", "logaddexp", "logaddexp2", "gammaln", "digamma", "polygamma", "xlogy", "softmax",
               "log_softmax", "log_expit", "norm_logpdf", "norm_pdf", "norm_cdf", "norm_logcdf", "mvn_logpdf",
               "solve", "inv", "det", "slogdet", "cholesky", "solve_triangular", "trace", "diag", "tril", "triu",
               "repeat", "tile", "roll", "atleast_2d", "atleast_3d", "meshgrid", "var", "std", "astype", "sort", "copy",
               "t_logpdf", "ndtr", "log_ndtr", "ndtri",
               "take_along_axis", "cross", "swapaxes", "convolve", "cho_factor", "cho_solve", "norm", "cumprod",
               "vdot", "inner", "einsum"}
    assert library <= set(TABLE)
    tried = {name for name in library if any(name in case for case in CASES)}
    assert tried == library


def test_cholesky_gradient_lives_on_the_lower_triangle():
    # np.linalg.cholesky reads only the lower triangle: the upper one gets exactly 0
    source = HEADER + "def f(A, *, W):\n    return np.sum(W * np.linalg.cholesky(A))\n"
    module = load_module(compile_source(source, "chol.py", wrt="all").text, "library_chol")
    r = _rng("chol")
    grad = module.f_grad(spd(r, 4), W=r.standard_normal((4, 4)))
    assert np.all(np.triu(grad, 1) == 0.0)
    assert np.all(grad[np.tril_indices(4)] != 0.0)


def test_generated_module_imports_the_scipy_module_the_user_imported():
    source = HEADER + "def f(x):\n    return np.sum(gammaln(x))\n"
    text = compile_source(source, "g.py", wrt="all").text
    assert "import scipy.special\n" in text
    assert "scipy.special.digamma(" in text
    assert "import gradgen" not in text and "scipy.stats" not in text


def test_positional_dtype_of_astype_is_the_identity():
    source = "import numpy as np\n\n\ndef f(x):\n    return np.sum(x.astype(float) ** 2)\n"
    generated = load_module(compile_source(source, "a.py", wrt="all").text, "a_grad")
    np.testing.assert_array_equal(generated.f_grad(np.array([0.5, -2.0])), [1.0, -4.0])


def test_a_keyword_given_twice_or_a_required_one_missing_is_located():
    for call, message in [("norm.logpdf(x, 0.0, loc=1.0)", "'norm.logpdf' got two values for its argument 'loc'"),
                          ("t.logpdf(x, scale=2.0)", "'t.logpdf' needs its argument 'df'")]:
        with pytest.raises(CompileError) as info:
            compile_source(HEADER + f"def f(x):\n    return np.sum({call})\n", "k.py", wrt="all")
        assert (info.value.message, info.value.line, info.value.col) == (message, 10, 19)


def test_string_keywords_are_refused_until_lowering_reads_them():
    # indexing='ij' (and trans='T', einsum's subscripts) are strings: the lowering takes
    # numbers only as static parameters today
    source = HEADER + "def f(x, y):\n    return np.sum(np.meshgrid(x, y, indexing='ij')[0])\n"
    with pytest.raises(CompileError) as info:
        compile_source(source, "m.py", wrt="all")
    assert info.value.message == "'indexing=' must be a constant here"


def test_cho_factor_named_then_passed_to_cho_solve():
    # factor = cho_factor(A); cho_solve(factor, b): reverse and forward mode against central
    # differences along a symmetric direction (cho_factor reads one triangle of A)
    source = HEADER + ("def f(A, b):\n    factor = scipy.linalg.cho_factor(A, lower=True)\n"
                       "    return np.sum(scipy.linalg.cho_solve(factor, b) * b)\n")
    module = load_module(compile_source(source, "cho.py", emit_kinds=("grad", "jvp"), wrt="all").text, "library_cho_named")
    namespace = {}
    exec(compile(source, "<cho>", "exec"), namespace)  # noqa: S102 - our own test source
    r = _rng("cho_named")
    A, b, E, e = spd(r, 3), r.standard_normal(3), r.standard_normal((3, 3)), r.standard_normal(3)
    E = E + E.T
    h = 1e-6
    want = (namespace["f"](A + h * E, b + h * e) - namespace["f"](A - h * E, b - h * e)) / (2 * h)
    gA, gb = module.f_grad(A, b)
    assert np.sum(gA * E) + gb @ e == pytest.approx(want, rel=1e-6)
    assert module.f_jvp(A, b, dA=E, db=e)[1] == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("lower", ["", ", lower=True"])
def test_cho_factor_unpacked_then_passed_to_cho_solve_as_a_pair(lower):
    # `c, low = cho_factor(A)` then cho_solve((c, low), b): the pair rebuilt is the pair, so
    # the gradient flows as when it is passed whole; reverse and forward mode against central
    # differences along a symmetric direction
    source = HEADER + (f"def f(A, b):\n    c, low = scipy.linalg.cho_factor(A{lower})\n"
                       "    return np.sum(scipy.linalg.cho_solve((c, low), b) * b)\n")
    text = compile_source(source, "cho.py", emit_kinds=("grad", "jvp"), wrt="all").text
    assert "scipy.linalg.cho_solve(c_low, b)" in text
    module = load_module(text, "library_cho_unpacked")
    namespace = {}
    exec(compile(source, "<cho>", "exec"), namespace)  # noqa: S102 - our own test source
    r = _rng("cho_unpacked" + lower)
    A, b, E, e = spd(r, 3), r.standard_normal(3), r.standard_normal((3, 3)), r.standard_normal(3)
    E = E + E.T
    h = 1e-6
    want = (namespace["f"](A + h * E, b + h * e) - namespace["f"](A - h * E, b - h * e)) / (2 * h)
    gA, gb = module.f_grad(A, b)
    assert np.sum(gA * E) + gb @ e == pytest.approx(want, rel=1e-6)
    assert module.f_jvp(A, b, dA=E, db=e)[1] == pytest.approx(want, rel=1e-6)


def test_norm_refuses_the_orders_it_has_no_rule_for():
    for call in ("np.linalg.norm(x, ord=3)", "np.linalg.norm(x, ord=-np.inf, axis=0)",
                 "np.linalg.norm(x, ord=1, axis=(0, 1))"):
        with pytest.raises(CompileError) as info:
            compile_source(HEADER + f"def f(x):\n    return {call}\n", "n.py", wrt="all")
        assert "has no derivative rule: gradgen differentiates vector norms (ord None, 2, 1, np.inf)" \
            in info.value.message


GP_LIKELIHOOD = '''import numpy as np
from scipy.linalg import cho_factor, cho_solve


def loss(log_params, X, Y):
    ell, sf2, sn2 = np.exp(log_params)
    K = sf2 * np.exp(-0.5 * (X - X.T) ** 2 / ell ** 2) + sn2 * np.eye(len(Y))
    FACTOR
    return 0.5 * Y @ alpha + np.sum(np.log(np.diag(c)))
'''


@pytest.mark.parametrize("factor", [
    "c, low = cho_factor(K, lower=True)\n    alpha = cho_solve((c, low), Y)",
    "cf = cho_factor(K, lower=True)\n    alpha = cho_solve(cf, Y)\n    c = cf[0]",
])
def test_a_cholesky_factor_read_by_a_solve_and_for_its_diagonal(factor):
    """New users' repro 6 (Rasmussen and Williams' Algorithm 2.1): the factor of cho_factor
    goes to cho_solve as the pair (c, lower) and to the log-determinant as c. Its gradient
    came as a tuple from one and an array scattered at [0] from the other, and `tuple +
    np.zeros_like(pair)` raised at run time: the gradient of the pair is now a list, item by
    item, whichever reads first. Gradient and hvp against central differences."""
    source = GP_LIKELIHOOD.replace("FACTOR", factor)
    module = load_module(compile_source(source, "gp.py", emit_kinds=("grad", "hvp")).text)
    namespace = {}
    exec(source, namespace)
    X = np.linspace(-2.0, 2.0, 6)[:, None]
    Y, p, v, h = np.sin(X[:, 0]), np.array([0.1, -0.2, -1.5]), np.array([0.3, -0.2, 0.5]), 1e-5
    numeric = [(namespace["loss"](p + h * e, X, Y) - namespace["loss"](p - h * e, X, Y)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(module.loss_grad(p, X, Y), numeric, rtol=1e-6)
    hvp = (module.loss_grad(p + h * v, X, Y) - module.loss_grad(p - h * v, X, Y)) / (2 * h)
    np.testing.assert_allclose(module.loss_hvp(p, X, Y, dlog_params=v), hvp, rtol=1e-6)
