"""Derivative rules for linear algebra (np.linalg, scipy.linalg, trace, diag, tril/triu),
registered into the one rule table of gradgen.rules.table.

A module of its own because the table passed 600 lines, and because these rules are of one
kind: matrix results, from the standard collection (M. B. Giles, "An extended collection of
matrix derivative results for forward and reverse mode algorithmic differentiation", 2008;
I. Murray, "Differentiation of the Cholesky decomposition", 2016). Each is checked against
finite differences in tests/test_library_rules.py. Rules for 2-D matrices (and vectors
where NumPy takes them); the longer ones are NumPy helpers written into the generated
module when used.

Where a function reads only one triangle of its matrix (np.linalg.cholesky and SciPy's
multivariate normal read the lower one, solve_triangular the one `lower=` names), the
gradient is given there: it is the derivative of the function as it runs, and along any
symmetric change of a symmetric matrix it equals the symmetric gradient other libraries
give.
"""

from __future__ import annotations

from gradgen.ir.nodes import Call, Const
from gradgen.rules.table import ARRAY_RULES, F, helper, primitive


def _matmul(a, b):
    return Call("matmul", (a, b), "op")


def component(g, k):
    """Gradient of item k of a tuple-valued result, given g, the gradient of the tuple: the
    gradient scattered into item k when the program read `f(...)[k]`, else g[k]."""
    if isinstance(g, Call) and g.prim == "scatter" and dict(g.params)["index"] == ("i",) and len(g.args) == 3:
        index = g.args[2]
        if isinstance(index, Const) and isinstance(index.value, int):
            return g.args[0] if index.value in (k, k - 2) else Const(0)
    return Call("getitem", (g, Const(k)), "op", params=(("index", ("i",)),))


# --- solving and inverting ----------------------------------------------------------------
helper("solve_grad_a", '''def solve_grad_a(g, a, x):
    """Gradient of x = np.linalg.solve(a, b) with respect to a, given g, the gradient of x:
    -(a^-T g) x^T (an outer product where b and x are vectors)."""
    gb = np.linalg.solve(np.swapaxes(a, -1, -2), g)
    if np.ndim(x) == 1:
        return -np.outer(gb, x)
    return -gb @ np.swapaxes(x, -1, -2)
''', tangent="explicit")
# tangent="explicit": forward mode's rule is written out (gradgen.rules.tangents.EXPLICIT), for
# the helpers that compute these gradients too (a second derivative: forward over reverse)
primitive("solve", 2, spellings=["numpy.linalg.solve", "scipy.linalg.solve"], elementwise=False, tangent="explicit",
          vjp=(lambda g, out, a, b: F.solve_grad_a(g, a, out), lambda g, out, a, b: F.solve(F.T(a), g)))
primitive("inv", spellings=["numpy.linalg.inv", "scipy.linalg.inv"], elementwise=False, tangent="explicit",
          vjp=lambda g, out, a: -_matmul(_matmul(F.T(out), g), F.T(out)))
primitive("det", spellings=["numpy.linalg.det", "scipy.linalg.det"], elementwise=False, result="number",
          vjp=lambda g, out, a: g * out * F.T(F.inv(a)), tangent="explicit")
# (sign, logdet): only logdet has a derivative, g * a^-T
primitive("slogdet", spellings=["numpy.linalg.slogdet"], elementwise=False, result="tuple",
          vjp=lambda g, out, a: component(g, 1) * F.T(F.inv(a)), tangent="explicit")

# --- triangular factors and solves ---------------------------------------------------------------
helper("cholesky_grad", '''def cholesky_grad(g, L):
    """Gradient of L = np.linalg.cholesky(a) with respect to a, given g, the gradient of L
    (Murray 2016): S = L^-T Phi(L^T g) L^-1, Phi the lower triangle with half its diagonal.
    np.linalg.cholesky reads only the lower triangle of a, so that is where the gradient
    goes: tril(S + S^T) - diag(S)."""
    phi = np.tril(L.T @ g)
    phi[np.diag_indices_from(phi)] *= 0.5
    s = np.linalg.solve(L.T, np.linalg.solve(L.T, phi).T).T
    return np.tril(s + s.T) - np.diag(np.diag(s))
''', tangent="explicit")
helper("cholesky_grad_tangent", '''def cholesky_grad_tangent(g, L, dL):
    """How cholesky_grad(g, L) changes as L moves along dL, g fixed (a second derivative):
    s = L^-T Phi(L^T g) L^-1 moves by L^-T Phi(dL^T g) L^-1 - L^-T dL^T s - s dL L^-1,
    folded onto the lower triangle as cholesky_grad folds s."""
    def between(m):  # L^-T m L^-1
        return np.linalg.solve(L.T, np.linalg.solve(L.T, m).T).T

    phi, dphi = np.tril(L.T @ g), np.tril(dL.T @ g)
    phi[np.diag_indices_from(phi)] *= 0.5
    dphi[np.diag_indices_from(dphi)] *= 0.5
    s = between(phi)
    ds = between(dphi) - np.linalg.solve(L.T, dL.T @ s) - np.linalg.solve(L.T, dL.T @ s.T).T
    return np.tril(ds + ds.T) - np.diag(np.diag(ds))
''')
primitive("cholesky", spellings=["numpy.linalg.cholesky"], elementwise=False, tangent="explicit",
          vjp=lambda g, out, a: F.cholesky_grad(g, out))

helper("solve_triangular_grad_a", '''def solve_triangular_grad_a(g, a, x, trans=0, lower=False):
    """Gradient of x = scipy.linalg.solve_triangular(a, b, trans, lower) with respect to a,
    given g, the gradient of x: -(op(a)^-T g) x^T for op(a) = a or a^T, transposed back for
    trans, and kept on the triangle of a that is read."""
    t = np.tril(a) if lower else np.triu(a)
    op = t if trans in (0, "N") else t.T
    gb = np.linalg.solve(op.T, g)
    d = -np.outer(gb, x) if np.ndim(x) == 1 else -gb @ x.T
    d = d if trans in (0, "N") else d.T
    return np.tril(d) if lower else np.triu(d)
''', tangent="explicit")


_TRANS = {"N": 0, "T": 1, "C": 1}


def _transposed(p):
    """solve_triangular's static parameters for the transposed system."""
    params = dict(p)
    params["trans"] = 0 if p.get("trans", 0) not in (0, "N") else 1
    if params["trans"] == 0:
        del params["trans"]
    return params


primitive("solve_triangular", 2, spellings=["scipy.linalg.solve_triangular"], keywords=("trans", "lower"),
          elementwise=False, tangent="explicit",
          vjp=(lambda g, out, a, b, **p: F.solve_triangular_grad_a(g, a, out, Const(_TRANS.get(p.get("trans"), p.get("trans")) or 0),
                                                                   Const(bool(p.get("lower", False)))),
               lambda g, out, a, b, **p: F.solve_triangular(a, g, **_transposed(p))))

# --- a Cholesky factor kept for solves: scipy.linalg.cho_factor / cho_solve ------------------------
# cho_factor(a, lower=False) is the pair (c, lower): c holds the factor in the triangle `lower`
# names (the other triangle is arbitrary, and gets no gradient). cho_solve((c, lower), b) solves
# a x = b: its gradient to c is solve's gradient to a, -(a^-1 g) x^T, carried back through
# a = L L^T (G -> (G + G^T) L on the factor's triangle), and cho_factor's carries that
# to a as cholesky's does, onto the triangle of a it reads.
helper("cho_solve_grad_c", '''def cho_solve_grad_c(g, factor, x):
    """Gradient of x = scipy.linalg.cho_solve(factor, b) with respect to c, factor = (c, lower)
    from cho_factor, given g, the gradient of x: with G = -(a^-1 g) x^T, (G + G^T) L on L's
    triangle (its transpose for an upper factor)."""
    c, lower = factor
    L = np.tril(c) if lower else np.triu(c).T
    gb = scipy.linalg.cho_solve(factor, g)
    G = -np.outer(gb, x) if np.ndim(x) == 1 else -gb @ x.T
    d = np.tril((G + G.T) @ L)
    return d if lower else d.T
''', needs=(), tangent="explicit")
helper("cho_solve_grad_c_tangent", '''def cho_solve_grad_c_tangent(g, factor, x, dfactor, dx):
    """How cho_solve_grad_c(g, factor, x) changes as the factor and x move along dfactor and
    dx, g fixed (a second derivative): a^-1 g moves by -a^-1 da a^-1 g (da = dL L^T + L dL^T),
    G with it and with x, and (G + G^T) L by its product rule."""
    c, lower = factor
    dc = dfactor[0] if isinstance(dfactor, tuple) else np.zeros(np.shape(c))  # (0.0: the factor stays)
    L, dL = (np.tril(c), np.tril(dc)) if lower else (np.triu(c).T, np.triu(dc).T)
    dx = np.broadcast_to(dx, np.shape(x))
    gb = scipy.linalg.cho_solve(factor, g)
    dgb = -scipy.linalg.cho_solve(factor, (dL @ L.T + L @ dL.T) @ gb)
    if np.ndim(x) == 1:
        G, dG = -np.outer(gb, x), -(np.outer(dgb, x) + np.outer(gb, dx))
    else:
        G, dG = -gb @ x.T, -(dgb @ x.T + gb @ dx.T)
    d = np.tril((dG + dG.T) @ L + (G + G.T) @ dL)
    return d if lower else d.T
''')
helper("cho_factor_grad", '''def cho_factor_grad(g, c, lower=False):
    """Gradient of (c, lower) = scipy.linalg.cho_factor(a, lower) with respect to a, given g,
    the gradient of c: cholesky's, on the triangle of a that cho_factor reads."""
    if lower:
        return cholesky_grad(np.tril(g), np.tril(c))
    return cholesky_grad(np.triu(g).T, np.triu(c).T).T
''', needs=("cholesky_grad",), tangent="explicit")
helper("cho_factor_tangent", '''def cho_factor_tangent(da, c, lower=False):
    """Tangent of (c, lower) = scipy.linalg.cho_factor(a, lower) along da: cholesky's,
    dL = L Phi(L^-1 da L^-T), on the factor's triangle (lower is a flag: tangent 0). Only the
    triangle of a that cho_factor reads moves it: da is that triangle, mirrored."""
    L = np.tril(c) if lower else np.triu(c).T
    da = np.tril(da) + np.tril(da, -1).T if lower else np.triu(da) + np.triu(da, 1).T
    inner = np.linalg.solve(L, np.linalg.solve(L, da).T).T
    dL = L @ (np.tril(inner, -1) + 0.5 * np.diag(np.diag(inner)))
    return (dL if lower else dL.T), 0.0
''')
helper("cho_solve_tangent", '''def cho_solve_tangent(dfactor, factor, x):
    """Tangent of x = scipy.linalg.cho_solve(factor, b) as the factor moves along dfactor
    (b fixed): -a^-1 da x, da = dL L^T + L dL^T from the factor's tangent."""
    (c, lower), dc = factor, dfactor[0]
    L, dL = (np.tril(c), np.tril(dc)) if lower else (np.triu(c).T, np.triu(dc).T)
    return -scipy.linalg.cho_solve(factor, (dL @ L.T + L @ dL.T) @ x)
''')
primitive("cho_factor", spellings=["scipy.linalg.cho_factor"], keywords=("lower",), elementwise=False, result="tuple",
          tangent="explicit",
          vjp=lambda g, out, a, **p: F.cho_factor_grad(component(g, 0), component(out, 0),
                                                       *((Const(True),) if p.get("lower") else ())))
primitive("cho_solve", 2, spellings=["scipy.linalg.cho_solve"], elementwise=False, tangent="explicit",
          vjp=(lambda g, out, factor, b: Call("tuple", (F.cho_solve_grad_c(g, factor, out), Const(0.0))),
               lambda g, out, factor, b: F.cho_solve(factor, g)))

# --- the cross product of 3-vectors, along the last axis (stacks broadcast) ---------------------
# (tangent="multilinear": the product rule; the adjoints sum back over the broadcast stack)
primitive("cross", 2, spellings=["numpy.cross"], elementwise=True, tangent="multilinear",
          vjp=(lambda g, out, a, b: F.cross(b, g), lambda g, out, a, b: F.cross(g, a)))

# --- trace, diagonal, triangles -------------------------------------------------------------------
def _offset(p, name):
    """The diagonal's offset as a helper's last argument, when it is not the main diagonal."""
    return (Const(p[name]),) if p.get(name) else ()


helper("trace_grad", '''def trace_grad(g, a, offset=0):
    """Gradient of np.trace(a, offset) with respect to a: g on that diagonal."""
    return g * np.eye(np.shape(a)[0], np.shape(a)[1], k=offset)
''', tangent="linear_in_first")
primitive("trace", spellings=["numpy.trace"], keywords=("offset",), method=True, elementwise=False, tangent="linear",
          result="number", vjp=lambda g, out, a, **p: F.trace_grad(g, a, *_offset(p, "offset")))

helper("diag_grad", '''def diag_grad(g, v, k=0):
    """Gradient of np.diag(v, k): a vector's makes a matrix (its gradient is g's diagonal k);
    a matrix's diagonal k is read (its gradient is g placed there, zeros elsewhere)."""
    if np.ndim(v) == 1:
        return np.diag(g, k)
    out = np.zeros(np.shape(v))
    n = len(g)
    out[np.arange(n) + max(-k, 0), np.arange(n) + max(k, 0)] = g
    return out
''', tangent="linear_in_first")
primitive("diag", spellings=["numpy.diag"], keywords=("k",), elementwise=False, tangent="linear",
          vjp=lambda g, out, v, **p: F.diag_grad(g, v, *_offset(p, "k")))
primitive("tril", spellings=["numpy.tril"], keywords=("k",), elementwise=False, tangent="linear",
          vjp=lambda g, out, a, **p: F.tril(g, **p))
primitive("triu", spellings=["numpy.triu"], keywords=("k",), elementwise=False, tangent="linear",
          vjp=lambda g, out, a, **p: F.triu(g, **p))

# np.inner(a, b): a's last axis summed against b's, the result of a's leading axes then b's
# (one number for two vectors); the gradient sums g against the other operand's leading axes
helper("inner_grad_a", '''def inner_grad_a(g, a, b):
    """Gradient of np.inner(a, b) with respect to a, given g, the gradient of the result."""
    if np.ndim(a) == 0:  # a number times b
        return np.sum(g * b)
    if np.ndim(b) == 0:
        return g * b
    k = np.ndim(b) - 1  # g's last k axes are b's leading ones
    return np.tensordot(g, b, axes=(list(range(np.ndim(g) - k, np.ndim(g))), list(range(k))))
''', tangent="bilinear", value_slots=(0, 2))
helper("inner_grad_b", '''def inner_grad_b(g, a, b):
    """Gradient of np.inner(a, b) with respect to b, given g, the gradient of the result."""
    if np.ndim(b) == 0:
        return np.sum(g * a)
    if np.ndim(a) == 0:
        return g * a
    k = np.ndim(a) - 1  # g's first k axes are a's leading ones
    return np.tensordot(g, a, axes=(list(range(k)), list(range(k))))
''', tangent="bilinear", value_slots=(0, 1))
primitive("inner", 2, spellings=["numpy.inner"], sympy=lambda a, b: a * b, elementwise=False, tangent="multilinear",
          vjp=(lambda g, out, a, b: F.inner_grad_a(g, a, b), lambda g, out, a, b: F.inner_grad_b(g, a, b)))
# np.vdot(a, b): the sum of a.ravel() * b.ravel() (real arrays of one size, of any shapes): one number
def _vdot_grad(g, own, other):
    """g times the other operand, in this one's shape (the same array: as it is)."""
    return g * other if own == other else F.reshape(g * F.ravel(other), F.shape(own))


primitive("vdot", 2, spellings=["numpy.vdot"], sympy=lambda a, b: a * b, elementwise=False, tangent="multilinear",
          result="number", vjp=(lambda g, out, a, b: _vdot_grad(g, a, b), lambda g, out, a, b: _vdot_grad(g, b, a)))

# np.einsum(subscripts, *operands), no index repeated within one operand, no `...`: the
# gradient of operand i is the output's gradient contracted with the other operands back to
# operand i's indices (and spread over the indices only operand i has)
helper("einsum_grad", '''def einsum_grad(g, operands, i, subscripts):
    """Gradient of np.einsum(subscripts, *operands) with respect to operand i."""
    inputs, output = subscripts.split("->")
    parts = inputs.split(",")
    others = [p for k, p in enumerate(parts) if k != i]
    seen = output + "".join(others)
    kept = "".join(c for c in parts[i] if c in seen)
    own = "".join(c for c in parts[i] if c not in seen)
    rest = [x for k, x in enumerate(operands) if k != i]
    piece = np.einsum(",".join([output] + others) + "->" + kept, g, *rest)
    if own:  # summed in operand i alone: every element there gets the same gradient
        sizes = [np.shape(operands[i])[parts[i].index(c)] for c in own]
        piece = np.einsum(kept + "," + own + "->" + parts[i], piece, np.ones(sizes))
    return piece
''', tangent="explicit")


def _einsum_vjp(i):
    """The gradient of operand i: the output's gradient contracted with the other operands back
    to operand i's letters, an einsum written out when compiling (`np.einsum("nki,nkj->kij",
    g, centered)` for "kij,nkj->nki", as a person writes it); einsum_grad where operand i has
    letters of its own (summed in it alone), whose gradient is spread over them. Where np.einsum
    may have stretched a letter of length 1 of operand i, the reverse pass sums the gradient
    back (gradgen.transform.reverse.expression._einsum_stretches)."""
    def vjp(g, out, *xs, subscripts):
        inputs, output = subscripts.split("->")
        parts = inputs.split(",")
        others = [part for k, part in enumerate(parts) if k != i]
        if any(c not in output + "".join(others) for c in parts[i]):
            return Call("einsum_grad", (g, Call("tuple", xs, "builtins"), Const(i), Const(subscripts)), None)
        rest = tuple(x for k, x in enumerate(xs) if k != i)
        if output == "" or [output] == others == [parts[i]]:  # a number, or "ij,ij->ij": g times the rest
            kept = rest[0] if others == [parts[i]] else Call(
                "einsum", rest, None, params=(("subscripts", f"{','.join(others)}->{parts[i]}"),))
            return F.mul(g, kept)
        return Call("einsum", (g, *rest), None, params=(("subscripts", f"{','.join([output, *others])}->{parts[i]}"),))
    return vjp


primitive("einsum", None, spellings=["numpy.einsum"], keywords=("subscripts",), min_args=1, elementwise=False,
          tangent="multilinear", vjp=(_einsum_vjp,))

ARRAY_RULES.update({"einsum", "solve", "inv", "det", "slogdet", "cholesky", "solve_triangular", "trace", "diag", "tril",
                    "triu", "cho_factor", "cho_solve", "cross", "vdot"})
