"""Forward-mode (tangent) rules, derived from the one rule table wherever they can be.

A tangent rule answers: given the tangents `t_i` of a primitive's inputs, what is the
tangent of its output? Each primitive declares its class in the table (`primitive(...,
tangent=...)` in its rule module, as JAX's `deflinear` marks a linear primitive where it is
defined), and most answers then follow from its vector-Jacobian rule, so the table stays the
one place a derivative is written:

  elementwise      a ufunc's Jacobian is diagonal, so its vector-Jacobian rule applied to the
                   input's tangent is the tangent: `d(exp(x)) = vjp_exp(dx) = dx * out`
                   (derived: every smooth elementwise primitive with a rule).
  linear           linear in its differentiated inputs jointly (a sum, an index, a reshape, a
                   concatenation, a list): apply it to the tangents of its value slots.
  multilinear      linear in each input apart (a matmul, einsum): the product rule, one term
                   per input with the others as they are.
  reduction        each output element depends on its own slice of the input (amax, prod,
                   logsumexp, var, norm): the vector-Jacobian rule applied to ones gives each
                   slice's partial derivatives; the tangent sums them times the input's tangent.
  linear_in_first  a backward-pass helper (`unbroadcast`, `scatter`, ...) linear in the
                   gradient it carries, reading the others for shapes or indices only.
  bilinear         a helper bilinear in the gradient and one operand (`matmul_grad_a`).
  zero             a made zero (`zero_gradient`): its tangent is zero.
  explicit         a few written out here (softmax, log_softmax, inv, solve, det, slogdet, sort,
                   cholesky, solve_triangular, cumprod, cho_factor, cho_solve, mvn_logpdf), and
                   the backward helpers of prod, einsum, solve, cholesky, solve_triangular,
                   cumprod, cho_factor, cho_solve and mvn_logpdf (a second derivative: linear in the gradient they
                   carry, plus how they move with the values they read).
  none             a result that carries no derivative (comparisons, floor, len, np.zeros).

The helpers make a Hessian-vector product (forward over reverse) possible. A primitive that
declares no class is refused by name: never a silent wrong tangent (the tangent helpers
themselves: no third derivatives).
"""

from __future__ import annotations

from gradgen.ir.nodes import Call, Const, writes_whole_of_any_rank
from gradgen.rules.table import TABLE, F, casts_to_int


def tangent_class(prim):
    """The forward-mode class `prim` declares in the table (None: refused, or not a primitive)."""
    p = TABLE.get(prim)
    return None if p is None else p.tangent


def value_slots(prim, n):
    """The arguments of a linear or bilinear call of `prim` with `n` arguments that carry a
    tangent (the rest are indices, shapes, paths): as declared, else those its rule differentiates."""
    p = TABLE[prim]
    if p.value_slots is not None:
        return p.value_slots
    if p.vjp is None:
        return range(n)
    return [i for i in range(n) if _vjp(prim, i) is not None]


# a backward-pass helper, by the primitive whose gradient it computes (for messages)
_HELPER_OF = {"prod_grad": "prod", "solve_grad_a": "solve", "cholesky_grad": "cholesky", "einsum_grad": "einsum",
              "solve_triangular_grad_a": "solve_triangular", "mvn_logpdf_grad": "mvn_logpdf",
              "cumprod_grad": "cumprod", "cho_factor_grad": "cho_factor", "cho_solve_grad_c": "cho_solve",
              "odeint_vjp": "odeint"}


def spelling(prim):
    """How the user writes `prim` (`np.linalg.cholesky`), for a message; a backward-pass
    helper is named by the primitive it differentiates."""
    p = TABLE.get(_HELPER_OF.get(prim, prim))
    if p is None or not p.names:
        return f"'{prim}'"
    ns, name = next(iter(p.names.items()))
    written = {"numpy": "np.", "math": "math.", "builtins": ""}.get(ns, ns + ".") + name
    return f"the second derivative of {written}" if prim in _HELPER_OF else written


class NoTangentRule(Exception):
    """A primitive forward mode cannot differentiate (yet): the caller names it."""

    def __init__(self, prim):
        super().__init__(prim)
        self.prim = prim


def no_tangent(prim):
    """A primitive whose result carries no derivative (comparisons, floor, len, np.zeros)."""
    return tangent_class(prim) == "none"


def tangent(expr, tangents, zero, out):
    """The tangent of `expr` (a Call) given its inputs' tangents (None: zero); `zero(arg)`
    builds an explicit zero shaped like `arg`; `out` is the call's value (a name or the call)."""
    prim, args, params = expr.prim, expr.args, dict(expr.params)
    kind = tangent_class(prim)
    if kind == "zero" or casts_to_int(expr):
        return None
    if kind == "elementwise":
        return _sum(_vjp(prim, i)(t, out, *args, **params) for i, t in enumerate(tangents)
                    if t is not None and _vjp(prim, i) is not None)
    if kind == "linear":
        slots = value_slots(prim, len(args))
        # a tangent folded to the number 0 (`ds * 0.0`) is no zero of an array's shape, which
        # `np.stack`/`np.array` of parts needs (soak seed 35000 #1676): zeros shaped like the part
        new = [(t if t is not None and not _folded_zero(t) else zero(a)) if i in slots else a
               for i, (a, t) in enumerate(zip(args, tangents))]
        if prim == "getitem" and writes_whole_of_any_rank(params.get("index")):
            # `x[..., None]` of a NumPy scalar: its tangent may be a bare 0.0, which takes no index
            # (soak seed 32000 #857)
            new[0] = Call("array", (new[0],), "numpy")
        return _rebuilt(expr, new)
    if kind == "linear_in_first":
        if tangents[0] is None:
            return None
        return _rebuilt(expr, [tangents[0], *args[1:]])
    if kind == "multilinear":
        return _sum(_rebuilt(expr, [t if j == i else a for j, a in enumerate(args)])
                    for i, t in enumerate(tangents) if t is not None)
    if kind == "bilinear":
        slots = value_slots(prim, len(args))
        return _sum(_rebuilt(expr, [tangents[i] if j == i else a for j, a in enumerate(args)])
                    for i in slots if tangents[i] is not None)
    if kind == "reduction":
        return _reduction(prim, tangents, out, args, params)
    if kind == "explicit":
        return EXPLICIT[prim](tangents, out, *args, **params)
    raise NoTangentRule(prim)


def _reduction(prim, tangents, out, args, params):
    """sum(weights * t) along the reduced axes, the weights the vjp of ones: each result's
    partial derivatives in its own slice."""
    if any(t is not None for t in tangents[1:]):
        raise NoTangentRule(prim)
    weights = _vjp(prim, 0)(F.ones_like(out), out, *args, **params)
    kept = tuple((k, params[k]) for k in ("axis", "keepdims") if params.get(k) is not None)
    return Call("sum", (weights * tangents[0],), None, params=kept)


def _vjp(prim, i):
    p = TABLE[prim]
    return p.vjp[0](i) if p.arity is None else p.vjp[i]


def _rebuilt(expr, args):
    return Call(expr.prim, tuple(args), expr.ns, expr.loc, expr.params)


def _sum(terms):
    total = None
    for term in terms:
        total = term if total is None else total + term
    return total


def _softmax(ts, out, x, axis=-1):
    (t,) = ts
    return out * (t - F.sum(out * t, axis=axis, keepdims=True))


def _log_softmax(ts, out, x, axis=-1):
    (t,) = ts
    return t - F.sum(F.exp(out) * t, axis=axis, keepdims=True)


def _inv(ts, out, a):
    (t,) = ts
    return -F.matmul(F.matmul(out, t), out)


def _solve(ts, out, a, b):
    ta, tb = ts
    rhs = tb if ta is None else (F.matmul(ta, out) * -1 if tb is None else tb - F.matmul(ta, out))
    return F.solve(a, rhs)


def _det(ts, out, a):
    (t,) = ts
    return out * F.trace(F.solve(a, t))


def _slogdet(ts, out, a):
    (t,) = ts
    # (sign, logdet): the sign is piecewise constant, logdet's tangent is trace(a^-1 da)
    return Call("tuple", (Const(0.0), F.trace(F.solve(a, t))))


def _sort(ts, out, x, axis=-1):
    (t,) = ts
    # sorting permutes: the tangent is permuted the same way
    return F.take_along_axis(t, F.argsort(x, axis=axis), axis=axis)


def _cholesky(ts, out, a):
    (t,) = ts
    # a = L L^T: dL = L phi(L^-1 da L^-T), phi the lower triangle with half its diagonal
    inner = F.T(F.solve(out, F.T(F.solve(out, t))))
    return F.matmul(out, F.tril(inner, k=-1) + 0.5 * F.diag(F.diag(inner)))


def _triangle(a, lower, trans):
    """The matrix solve_triangular reads from `a` (its triangle), transposed where trans says."""
    t = F.tril(a) if lower else F.triu(a)
    return t if trans in (0, "N", None) else F.T(t)


def _solve_triangular(ts, out, a, b, trans=0, lower=False):
    ta, tb = ts
    rhs = tb if ta is None else (-F.matmul(_triangle(ta, lower, trans), out) if tb is None
                                 else tb - F.matmul(_triangle(ta, lower, trans), out))
    params = {k: v for k, v in (("trans", trans), ("lower", lower)) if v}
    return F.solve_triangular(a, rhs, **params)


# --- the backward pass's helpers, for a second derivative (forward over reverse) -----------
# Each is linear in the gradient g it carries; the other terms say how it changes as the
# primal values it reads move. `_plus` adds the terms that are there.

def _plus(*terms):
    return _sum(t for t in terms if t is not None)


def _solve_grad_a(ts, out, g, a, x):
    # -(a^-T g) x^T: the a^-T g moves by a^-T (dg - da^T a^-T g), the x^T by dx^T
    tg, ta, tx = ts
    moved = tg if ta is None else (-F.matmul(F.T(ta), F.solve(F.T(a), g)) if tg is None
                                   else tg - F.matmul(F.T(ta), F.solve(F.T(a), g)))
    return _plus(None if moved is None else F.solve_grad_a(moved, a, x),
                 None if tx is None else F.solve_grad_a(g, a, tx))


def _solve_triangular_grad_a(ts, out, g, a, x, trans, lower):
    # as solve's, with the triangle of a that is read, transposed for trans
    tg, ta, tx = ts[:3]
    t, low = trans.value, lower.value
    pushed = None if ta is None else -F.matmul(F.T(_triangle(ta, low, t)), F.solve(F.T(_triangle(a, low, t)), g))
    moved = _plus(tg, pushed)
    return _plus(None if moved is None else F.solve_triangular_grad_a(moved, a, x, trans, lower),
                 None if tx is None else F.solve_triangular_grad_a(g, a, tx, trans, lower))


def _cholesky_grad(ts, out, g, L):
    tg, tL = ts
    return _plus(None if tg is None else F.cholesky_grad(tg, L),
                 None if tL is None else F.cholesky_grad_tangent(g, L, tL))


def _prod_grad(ts, out, g, x, **p):
    tg, tx = ts
    return _plus(None if tg is None else F.prod_grad(tg, x, **p),
                 None if tx is None else F.prod_grad_tangent(g, x, tx, **p))


def _einsum_grad(ts, out, g, operands, i, subscripts):
    # multilinear in g and each operand but i (operand i gives only its shape): the product rule
    tg, t_operands = ts[:2]
    terms = [None if tg is None else F.einsum_grad(tg, operands, i, subscripts)]
    if t_operands is not None:
        if not (isinstance(operands, Call) and operands.prim == "tuple" and isinstance(t_operands, Call)
                and t_operands.prim == "tuple"):
            raise NoTangentRule("einsum_grad")
        for k, tk in enumerate(t_operands.args):
            if k != i.value and not _made_zero(tk):
                moved = Call("tuple", tuple(tk if j == k else x for j, x in enumerate(operands.args)), operands.ns)
                terms.append(F.einsum_grad(g, moved, i, subscripts))
    return _plus(*terms)


def _cumprod_grad(ts, out, g, x, *axis):
    tg, tx = ts[:2]
    return _plus(None if tg is None else F.cumprod_grad(tg, x, *axis),
                 None if tx is None else F.cumprod_grad_tangent(g, x, tx, *axis))


def _cho_factor_grad(ts, out, g, c, *lower):
    # cholesky_grad's, on the triangle the factor holds (the upper one: transposed)
    tg, tc = ts[:2]
    moved = None
    if tc is not None and lower and lower[0].value:
        moved = F.cholesky_grad_tangent(F.tril(g), F.tril(c), F.tril(tc))
    elif tc is not None:
        moved = F.T(F.cholesky_grad_tangent(F.T(F.triu(g)), F.T(F.triu(c)), F.T(F.triu(tc))))
    return _plus(None if tg is None else F.cho_factor_grad(tg, c, *lower), moved)


def _cho_solve_grad_c(ts, out, g, factor, x):
    tg, tf, tx = ts[:3]
    moved = None if tf is None and tx is None else \
        F.cho_solve_grad_c_tangent(g, factor, x, Const(0.0) if tf is None else tf, Const(0.0) if tx is None else tx)
    return _plus(None if tg is None else F.cho_solve_grad_c(tg, factor, x), moved)


def _zero_or(t):
    return Const(0.0) if t is None else t


def _mvn_logpdf(ts, out, x, mean, cov):
    return F.mvn_logpdf_tangent(x, mean, cov, *(_zero_or(t) for t in ts[:3]))


def _mvn_logpdf_grad(ts, out, g, x, mean, cov, i):
    # linear in g; the other terms say how it moves with the values it reads
    tg, moved = ts[0], ts[1:4]
    return _plus(None if tg is None else F.mvn_logpdf_grad(tg, x, mean, cov, i),
                 None if all(t is None for t in moved) else
                 F.mvn_logpdf_grad_tangent(g, x, mean, cov, i, *(_zero_or(t) for t in moved)))


def _cumprod(ts, out, x, axis=None):
    (t,) = ts
    return F.cumprod_tangent(t, x, *(() if axis is None else (Const(axis),)))


def _arange(ts, out, *args, dtype=None):
    """np.arange(start, stop, step): point k is start + k * step (its count piecewise in them)."""
    start, step = (ts[0] if len(args) > 1 else None), (ts[2] if len(args) > 2 else None)
    return _sum(term for term in (None if start is None else F.zeros_like(out) + start,
                                  None if step is None else step * F.arange(F.size(out))) if term is not None)


def _cho_factor(ts, out, a, lower=False):
    (t,) = ts
    return F.cho_factor_tangent(t, Call("getitem", (out, Const(0)), "op", params=(("index", ("i",)),)),
                                *((Const(True),) if lower else ()))


def _cho_solve(ts, out, factor, b):
    tf, tb = ts
    return _plus(None if tf is None else F.cho_solve_tangent(tf, factor, out),
                 None if tb is None else F.cho_solve(factor, tb))


def _folded_zero(t):
    """A tangent the simplifier folded to the number zero (`t * 0.0` is 0), whatever t's shape."""
    return isinstance(t, Const) and not isinstance(t.value, bool) and t.value == 0


def _made_zero(t):
    """Whether `t` is the zero forward mode builds for an input without a tangent (0.0 * x)."""
    return t == Const(0.0) or (isinstance(t, Call) and t.prim == "mul" and t.args[0] == Const(0.0))


EXPLICIT = {"softmax": _softmax, "log_softmax": _log_softmax, "inv": _inv, "solve": _solve, "det": _det,
            "slogdet": _slogdet, "sort": _sort, "cholesky": _cholesky, "solve_triangular": _solve_triangular,
            "solve_grad_a": _solve_grad_a, "solve_triangular_grad_a": _solve_triangular_grad_a,
            "cholesky_grad": _cholesky_grad, "prod_grad": _prod_grad, "einsum_grad": _einsum_grad, "cumprod": _cumprod,
            "cho_factor": _cho_factor, "cho_solve": _cho_solve, "cumprod_grad": _cumprod_grad,
            "cho_factor_grad": _cho_factor_grad, "cho_solve_grad_c": _cho_solve_grad_c,
            "mvn_logpdf": _mvn_logpdf, "mvn_logpdf_grad": _mvn_logpdf_grad, "arange": _arange}

