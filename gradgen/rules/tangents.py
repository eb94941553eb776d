"""Forward-mode (tangent) rules, derived from the one rule table wherever they can be.

A tangent rule answers: given the tangents `t_i` of a primitive's inputs, what is the
tangent of its output? Most answers follow from the vector-Jacobian rules of
`gradgen.rules.table`, so the table stays the one place a derivative is written:

  elementwise  a ufunc's Jacobian is diagonal, so its vector-Jacobian rule applied to the
               input's tangent is the tangent: `d(exp(x)) = vjp_exp(dx) = dx * out`.
  linear       the primitive is linear in its differentiated inputs jointly (a sum, an
               index, a reshape, a concatenation, a list): apply it to the tangents.
  multilinear  linear in each input apart (a matmul, einsum): the product rule, one term
               per input with the others as they are.
  reduction    each output element depends on its own slice of the input (amax, prod,
               logsumexp, var, norm): the vector-Jacobian rule applied to ones gives each
               slice's partial derivatives; the tangent sums them times the input's tangent.
  explicit     a few written out (softmax, log_softmax, inv, solve, det, slogdet).

Helpers the backward pass calls (`unbroadcast`, `matmul_grad_a`, ...) are linear in the
gradient they carry, which is what a Hessian-vector product (forward over reverse) needs.
A primitive none of these covers is refused by name: never a silent wrong tangent.
"""

from __future__ import annotations

from gradgen.ir.nodes import Call, Const
from gradgen.rules.table import TABLE, F, casts_to_int

LINEAR = {
    "sum", "mean", "cumsum", "sum_list", "T", "transpose", "reshape", "expand_dims", "squeeze", "ravel",
    "flip", "broadcast_to", "concatenate", "stack", "getitem", "setitem", "array", "trace", "diag", "tril",
    "triu", "copy", "atleast_1d", "atleast_2d", "atleast_3d", "repeat", "tile", "roll", "meshgrid", "hstack",
    "vstack", "column_stack", "astype", "take_along_axis", "list", "append", "list_get", "stack_list",
    "array_list", "concatenate_list", "vstack_list", "hstack_list", "tree_get", "tuple", "pop", "unstack",
    "add_lists", "shaped_like", "take",
}
MULTILINEAR = {"matmul", "outer", "inner", "einsum"}
REDUCTIONS = {"amax", "amin", "prod", "norm", "logsumexp", "var", "std"}
ZERO = {"list_zeros", "zeros_like_tree", "zero_gradient"}  # a made zero: its tangent is zero
# helpers the backward pass calls, linear in their first argument (the gradient) and reading
# the others for their shapes or indices only
LINEAR_IN_FIRST = {
    "unbroadcast", "zero_at", "last_writes", "scatter", "trace_grad", "diag_grad", "repeat_grad", "tile_grad",
    "meshgrid_grad", "stack_part_grad", "take_along_axis_grad", "unconcatenate", "unjoin", "concatenate_grad",
}
# helpers bilinear in (gradient, one operand): slot -> the other slot that carries a value
BILINEAR_HELPERS = {"matmul_grad_a": (0, 2), "matmul_grad_b": (0, 1)}
# which inputs of a linear primitive carry values (the rest are indices, shapes, paths)
_VALUE_SLOTS = {"tree_get": (0,), "list_get": (0,), "pop": (0,), "unstack": (0,), "shaped_like": (1,),
                "take_along_axis": (0,), "take": (0,), "setitem": (0, 1), "getitem": (0,)}


# a backward-pass helper, by the primitive whose gradient it computes (for messages)
_HELPER_OF = {"prod_grad": "prod", "solve_grad_a": "solve", "cholesky_grad": "cholesky", "einsum_grad": "einsum",
              "solve_triangular_grad_a": "solve_triangular", "mvn_logpdf_grad": "mvn_logpdf"}


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


def known(prim):
    return (prim in LINEAR or prim in MULTILINEAR or prim in REDUCTIONS or prim in ZERO or prim in EXPLICIT
            or prim in LINEAR_IN_FIRST or prim in BILINEAR_HELPERS or _elementwise(prim))


def _elementwise(prim):
    p = TABLE.get(prim)
    return p is not None and p.kind == "smooth" and p.elementwise and p.vjp is not None


# results that carry no derivative at all: piecewise constant, integers, shapes, made arrays
NO_TANGENT = {
    "sign", "floor", "ceil", "trunc", "round", "floordiv", "lt", "le", "gt", "ge", "eq", "ne", "ge_strict",
    "le_strict", "and", "or", "not", "len", "invert", "logical_and", "shape", "ndim", "size", "zeros_like",
    "ones_like", "zeros", "ones", "eye", "arange", "linspace", "full", "argsort", "argmax", "argmin", "tree_len",
    "tree_keys", "range_slice", "int", "factorial", "range", "pi", "e", "tau",
}


def no_tangent(prim):
    """A primitive whose result carries no derivative (comparisons, floor, len, np.zeros)."""
    return prim in NO_TANGENT


def tangent(expr, tangents, zero, out):
    """The tangent of `expr` (a Call) given its inputs' tangents (None: zero); `zero(arg)`
    builds an explicit zero shaped like `arg`; `out` is the call's value (a name or the call)."""
    prim, args, params = expr.prim, expr.args, dict(expr.params)
    if prim in ZERO or casts_to_int(expr):
        return None
    if _elementwise(prim) and prim not in LINEAR:
        return _sum(_vjp(prim, i)(t, out, *args, **params) for i, t in enumerate(tangents)
                    if t is not None and _vjp(prim, i) is not None)
    if prim in LINEAR:
        slots = _VALUE_SLOTS.get(prim) or _value_slots(prim, len(args))
        new = [(t if t is not None else zero(a)) if i in slots else a for i, (a, t) in enumerate(zip(args, tangents))]
        return _rebuilt(expr, new)
    if prim in LINEAR_IN_FIRST:
        if tangents[0] is None:
            return None
        return _rebuilt(expr, [tangents[0], *args[1:]])
    if prim in MULTILINEAR:
        return _sum(_rebuilt(expr, [t if j == i else a for j, a in enumerate(args)])
                    for i, t in enumerate(tangents) if t is not None)
    if prim in BILINEAR_HELPERS:
        return _sum(_rebuilt(expr, [tangents[i] if j == i else a for j, a in enumerate(args)])
                    for i in BILINEAR_HELPERS[prim] if tangents[i] is not None)
    if prim in REDUCTIONS:
        if any(t is not None for t in tangents[1:]):
            raise NoTangentRule(prim)
        weights = _vjp(prim, 0)(F.ones_like(out), out, *args, **params)
        kept = tuple((k, params[k]) for k in ("axis", "keepdims") if params.get(k) is not None)
        return Call("sum", (weights * tangents[0],), None, params=kept)
    if prim in EXPLICIT:
        return EXPLICIT[prim](tangents, out, *args, **params)
    raise NoTangentRule(prim)


def _vjp(prim, i):
    p = TABLE[prim]
    return p.vjp[0](i) if p.arity is None else p.vjp[i]


def _value_slots(prim, n):
    p = TABLE.get(prim)
    if p is None or p.vjp is None:
        return range(n)
    return [i for i in range(n) if _vjp(prim, i) is not None]


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


EXPLICIT = {"softmax": _softmax, "log_softmax": _log_softmax, "inv": _inv, "solve": _solve, "det": _det,
            "slogdet": _slogdet, "sort": _sort, "cholesky": _cholesky}

