"""Derivative rules for scipy.special and scipy.stats (and NumPy's logaddexp), registered
into the one rule table of gradgen.rules.table.

A module of its own because the table passed 600 lines: primitives.py keeps the operators
and NumPy's elementwise functions, this file the special functions and probability
densities users reach for in statistical models. Same signature as every rule:
`(g, out, *inputs, **static) -> contribution`. A call keeps the module the user imported
(`scipy.special.gammaln`); a rule that needs another function of that module (digamma for
gammaln) calls it there, so the generated module imports nothing the user's file does not.
"""

from __future__ import annotations

from gradgen.ir.nodes import Const, lift
from gradgen.rules.numpy import kept
from gradgen.rules.table import ARRAY_RULES, REQUIRED, F, helper, primitive, sympy, twin

# --- logarithms of sums ---------------------------------------------------------------------
primitive("logaddexp", 2, spellings=["numpy.logaddexp"], sympy=lambda x, y: sympy.log(sympy.exp(x) + sympy.exp(y)),
          vjp=(lambda g, out, x, y: g * F.exp(x - out), lambda g, out, x, y: g * F.exp(y - out)))
primitive("logaddexp2", 2, spellings=["numpy.logaddexp2"],
          sympy=lambda x, y: sympy.log(2**x + 2**y) / sympy.log(2),
          vjp=(lambda g, out, x, y: g * Const(2.0) ** (x - out), lambda g, out, x, y: g * Const(2.0) ** (y - out)))

# --- gamma family -----------------------------------------------------------------------------
primitive("gammaln", spellings=["scipy.special.gammaln"], sympy=twin("loggamma"),
          vjp=lambda g, out, x: g * F.digamma(x))
primitive("digamma", spellings=["scipy.special.digamma", "scipy.special.psi"],
          sympy=lambda x: sympy.polygamma(0, x), vjp=lambda g, out, x: g * F.polygamma(Const(1), x))
primitive("polygamma", 2, spellings=["scipy.special.polygamma"], sympy=twin("polygamma"),
          vjp=(None, lambda g, out, n, x: g * F.polygamma(n + 1, x)))  # n is an order: no derivative

# --- logs and logistic --------------------------------------------------------------------------
primitive("xlogy", 2, spellings=["scipy.special.xlogy"], sympy=lambda x, y: x * sympy.log(y),
          vjp=(lambda g, out, x, y: g * F.log(y), lambda g, out, x, y: g * x / y))
# d/dx log(expit(x)) = 1 - expit(x) = expit(-x) = exp(log_expit(-x)), accurate for any x
primitive("log_expit", spellings=["scipy.special.log_expit"], sympy=lambda x: -sympy.log(1 + sympy.exp(-x)),
          vjp=lambda g, out, x: g * F.exp(F.log_expit(-x)))


# --- along an axis: softmax, log_softmax, logsumexp -----------------------------------------------
def _reduced(p, **more):
    """Static parameters of a reduction inside a rule: axis= only when given."""
    params = {"axis": p["axis"]} if p.get("axis") is not None else {}
    params.update(more)
    return params


primitive("softmax", spellings=["scipy.special.softmax"], keywords=("axis",), elementwise=False, tangent="explicit",
          vjp=lambda g, out, x, **p: out * (g - F.sum(g * out, **_reduced(p, keepdims=True))))
primitive("log_softmax", spellings=["scipy.special.log_softmax"], keywords=("axis",), elementwise=False,
          tangent="explicit",
          vjp=lambda g, out, x, **p: g - F.exp(out) * F.sum(g, **_reduced(p, keepdims=True)))


def _logsumexp(g, out, x, **p):
    """d logsumexp(x, b=b) / dx = b * exp(x - out): the weights softmax gives each element."""
    weights = F.exp(x - kept(out, p))
    if p.get("b") is not None:
        weights = lift(p["b"]) * weights
    return kept(g, p) * weights


primitive("logsumexp", spellings=["scipy.special.logsumexp"], keywords=("axis", "b", "keepdims"),
          elementwise=False, result="reduction", vjp=_logsumexp, tangent="reduction")



# --- the normal distribution: scipy.stats.norm.logpdf / pdf / cdf / logcdf -------------------------
# norm.f(x, loc=0, scale=1): loc and scale positional (differentiated), or constant keywords.
def _location(xs, p):
    loc = xs[1] if len(xs) > 1 else lift(p.get("loc", 0))
    scale = xs[2] if len(xs) > 2 else lift(p.get("scale", 1))
    return xs[0], loc, scale


def _standard(xs, p):
    x, loc, scale = _location(xs, p)
    return (x - loc) / scale, scale


def _density_args(xs, p):
    """(x, loc, scale) for calling another norm function, without the defaults."""
    x, loc, scale = _location(xs, p)
    if scale == Const(1):
        return (x,) if loc == Const(0) else (x, loc)
    return x, loc, scale


def _norm_rule(d_dx, d_dscale):
    """Rules for a function of z = (x - loc) / scale: d/dloc is -d/dx."""

    def rule_for(i):
        def rule(g, out, *xs, **p):
            if i == 2:
                return d_dscale(g, out, xs, p)
            return d_dx(g, out, xs, p) if i == 0 else -d_dx(g, out, xs, p)

        return rule

    return rule_for


def _sympy_z(x, loc=0, scale=1):
    return (x - loc) / scale


def _sqrt_2pi():
    return sympy.sqrt(2 * sympy.pi)


_NORM = dict(arity=None, keywords=("loc", "scale"), elementwise=True, min_args=1,
             positional=(("x", REQUIRED), ("loc", 0), ("scale", 1)))

primitive("norm_logpdf", spellings=["scipy.stats.norm.logpdf"], **_NORM,
          sympy=lambda x, loc=0, scale=1: -_sympy_z(x, loc, scale) ** 2 / 2 - sympy.log(scale * _sqrt_2pi()),
          vjp=_norm_rule(lambda g, out, xs, p: -g * _standard(xs, p)[0] / _standard(xs, p)[1],
                         lambda g, out, xs, p: g * (_standard(xs, p)[0] ** 2 - 1) / _standard(xs, p)[1]))
primitive("norm_pdf", spellings=["scipy.stats.norm.pdf"], **_NORM,
          sympy=lambda x, loc=0, scale=1: sympy.exp(-_sympy_z(x, loc, scale) ** 2 / 2) / (scale * _sqrt_2pi()),
          vjp=_norm_rule(lambda g, out, xs, p: -g * out * _standard(xs, p)[0] / _standard(xs, p)[1],
                         lambda g, out, xs, p: g * out * (_standard(xs, p)[0] ** 2 - 1) / _standard(xs, p)[1]))
primitive("norm_cdf", spellings=["scipy.stats.norm.cdf"], **_NORM,
          sympy=lambda x, loc=0, scale=1: (1 + sympy.erf(_sympy_z(x, loc, scale) / sympy.sqrt(2))) / 2,
          vjp=_norm_rule(lambda g, out, xs, p: g * F.norm_pdf(*_density_args(xs, p)),
                         lambda g, out, xs, p: -g * F.norm_pdf(*_density_args(xs, p)) * _standard(xs, p)[0]))
# d logcdf = pdf / cdf = exp(logpdf - logcdf): finite far in the left tail, where cdf underflows
primitive("norm_logcdf", spellings=["scipy.stats.norm.logcdf"], **_NORM,
          sympy=lambda x, loc=0, scale=1: sympy.log((1 + sympy.erf(_sympy_z(x, loc, scale) / sympy.sqrt(2))) / 2),
          vjp=_norm_rule(lambda g, out, xs, p: g * F.exp(F.norm_logpdf(*_density_args(xs, p)) - out),
                         lambda g, out, xs, p: -g * F.exp(F.norm_logpdf(*_density_args(xs, p)) - out)
                         * _standard(xs, p)[0]))

# --- the standard normal's cdf as scipy.special writes it: ndtr, log_ndtr, and its inverse ndtri ---
primitive("ndtr", spellings=["scipy.special.ndtr"], sympy=lambda x: (1 + sympy.erf(x / sympy.sqrt(2))) / 2,
          vjp=lambda g, out, x: g * F.norm_pdf(x))
# d log_ndtr = pdf / cdf = exp(logpdf - log_ndtr): finite far in the left tail, where ndtr underflows
primitive("log_ndtr", spellings=["scipy.special.log_ndtr"],
          sympy=lambda x: sympy.log((1 + sympy.erf(x / sympy.sqrt(2))) / 2),
          vjp=lambda g, out, x: g * F.exp(F.norm_logpdf(x) - out))
# x = ndtri(p) solves ndtr(x) = p: dx/dp = 1 / pdf(x)
primitive("ndtri", spellings=["scipy.special.ndtri"], sympy=lambda p: sympy.sqrt(2) * sympy.erfinv(2 * p - 1),
          vjp=lambda g, out, p: g / F.norm_pdf(out))

# --- Student's t: scipy.stats.t.logpdf(x, df, loc=0, scale=1) --------------------------------------
# With z = (x - loc) / scale: logpdf = gammaln((df + 1) / 2) - gammaln(df / 2) - log(df pi) / 2
# - log(scale) - (df + 1) / 2 log1p(z^2 / df).
def _t_parts(xs, p):
    loc = xs[2] if len(xs) > 2 else lift(p.get("loc", 0))
    scale = xs[3] if len(xs) > 3 else lift(p.get("scale", 1))
    return xs[1], (xs[0] - loc) / scale, scale


def _t_rule(i):
    def rule(g, out, *xs, **p):
        df, z, scale = _t_parts(xs, p)
        d_dx = -(df + 1) * z / (scale * (df + z * z))
        if i == 1:  # the degrees of freedom (digamma: scipy.special, imported where used)
            return g * (F.digamma((df + 1) / 2) - F.digamma(df / 2) - 1 / df - F.log1p(z * z / df)
                        + (df + 1) * z * z / (df * (df + z * z))) / 2
        return (g * d_dx, None, -g * d_dx, g * df * (z * z - 1) / (scale * (df + z * z)))[i]

    return rule


def _sympy_t(x, df, loc=0, scale=1):
    z = (x - loc) / scale
    return (sympy.loggamma((df + 1) / 2) - sympy.loggamma(df / 2) - sympy.log(df * sympy.pi) / 2 - sympy.log(scale)
            - (df + 1) / 2 * sympy.log(1 + z**2 / df))


primitive("t_logpdf", None, spellings=["scipy.stats.t.logpdf"], keywords=("loc", "scale"), elementwise=True,
          min_args=2, sympy=_sympy_t, vjp=(_t_rule,), positional=(("x", REQUIRED), ("df", REQUIRED), ("loc", 0),
                                                                  ("scale", 1)))

# --- the multivariate normal: scipy.stats.multivariate_normal.logpdf(x, mean, cov) ----------------
helper("mvn_logpdf_grad", '''def mvn_logpdf_grad(g, x, mean, cov, i):
    """Gradient of scipy.stats.multivariate_normal.logpdf(x, mean, cov) with respect to x
    (i = 0), mean (1) or cov (2), given g, the gradient of its result (one per row of x).
    With r = x - mean and a = cov^-1 r: d/dx = -g a, d/dmean = g a, and d/dcov is
    (a a^T - cov^-1) g / 2 summed over the rows. SciPy reads only the lower triangle of
    cov (the matrix it factors is that triangle, mirrored), so that is where its gradient
    goes (tril(S + S^T) - diag(S) for the symmetric S)."""
    cov = np.tril(cov) + np.tril(cov, -1).T
    d = cov.shape[-1]
    r = np.reshape(np.asarray(x, dtype=float) - mean, (-1, d))
    weights = np.reshape(np.broadcast_to(g, np.shape(r)[:1]), (-1, 1))
    a = np.linalg.solve(cov, r.T).T
    if i == 0:
        return np.reshape(-weights * a, np.shape(x))
    if i == 1:
        return np.reshape(np.sum(weights * a, axis=0), np.shape(mean))
    s = 0.5 * (a.T @ (weights * a) - np.sum(weights) * np.linalg.inv(cov))
    return np.tril(s + s.T) - np.diag(np.diag(s))
''', tangent="explicit")
# forward mode: the tangent of the log-density, and of its gradient (a Hessian-vector product)
helper("mvn_moving", '''def mvn_moving(x, mean, cov, dx, dmean, dcov):
    """What the multivariate normal's tangents read: cov and dcov (0.0 where it stays) as the
    lower triangles mirrored that SciPy factors, a = cov^-1 (x - mean) and d(x - mean), one
    row per point."""
    cov = np.tril(cov) + np.tril(cov, -1).T
    d = cov.shape[-1]
    dcov = np.broadcast_to(dcov, cov.shape)
    r = np.reshape(np.asarray(x, dtype=float) - mean, (-1, d))
    dr = np.reshape(np.broadcast_to(np.subtract(dx, dmean), np.shape(x)), (-1, d))
    return cov, np.tril(dcov) + np.tril(dcov, -1).T, np.linalg.solve(cov, r.T).T, dr
''')
helper("mvn_logpdf_tangent", '''def mvn_logpdf_tangent(x, mean, cov, dx, dmean, dcov):
    """Tangent of scipy.stats.multivariate_normal.logpdf(x, mean, cov) along dx, dmean, dcov
    (0.0 where one stays): with r = x - mean and a = cov^-1 r, each row moves by
    -a . dr + (a^T dcov a - trace(cov^-1 dcov)) / 2, cov and dcov their lower triangles
    mirrored (what SciPy reads). Squeezed as SciPy squeezes the log-density."""
    cov, dcov, a, dr = mvn_moving(x, mean, cov, dx, dmean, dcov)
    t = -np.sum(a * dr, axis=1) + 0.5 * (np.sum((a @ dcov) * a, axis=1) - np.trace(np.linalg.solve(cov, dcov)))
    t = np.squeeze(t)
    return t[()] if t.ndim == 0 else t
''', needs=("mvn_moving",))
helper("mvn_logpdf_grad_tangent", '''def mvn_logpdf_grad_tangent(g, x, mean, cov, i, dx, dmean, dcov):
    """How mvn_logpdf_grad(g, x, mean, cov, i) moves as x, mean and cov move along dx, dmean,
    dcov, g fixed (0.0 where one stays; a second derivative): a = cov^-1 r moves by
    cov^-1 (dr - dcov a), cov^-1 by -cov^-1 dcov cov^-1, and each gradient by its product rule."""
    cov, dcov, a, dr = mvn_moving(x, mean, cov, dx, dmean, dcov)
    w = np.reshape(np.broadcast_to(g, np.shape(a)[:1]), (-1, 1))
    da = np.linalg.solve(cov, (dr - a @ dcov).T).T
    if i == 0:
        return np.reshape(-w * da, np.shape(x))
    if i == 1:
        return np.reshape(np.sum(w * da, axis=0), np.shape(mean))
    inv = np.linalg.inv(cov)
    ds = 0.5 * (da.T @ (w * a) + a.T @ (w * da) + np.sum(w) * inv @ dcov @ inv)
    return np.tril(ds + ds.T) - np.diag(np.diag(ds))
''', needs=("mvn_moving",))
primitive("mvn_logpdf", 3, spellings=["scipy.stats.multivariate_normal.logpdf"], elementwise=False,
          positional=(("x", REQUIRED), ("mean", REQUIRED), ("cov", REQUIRED)), tangent="explicit",
          vjp=tuple((lambda k: lambda g, out, x, mean, cov: F.mvn_logpdf_grad(g, x, mean, cov, Const(k)))(k)
                    for k in range(3)))

ARRAY_RULES.update({"softmax", "log_softmax", "logsumexp", "mvn_logpdf"})

