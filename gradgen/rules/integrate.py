"""scipy.integrate.odeint of a function of the user's file, registered into the one rule
table of gradgen.rules.table.

`ys = odeint(f, y0, t, args, rtol=...)` runs as written (the generated module defines `f`
as the file does: gradgen/frontend/odeint.py). Its gradient is the adjoint method's, as
autograd, JAX and torchdiffeq compute it: from the last time to the first, the system
(y, a, a_args) with dy/ds = f, da/ds = -a f_y, da_args/ds = -a f_args is integrated backward
between each pair of output times by the same solver with the same tolerances, and each
time's gradient added to a on the way; the times' gradient is f at each output (the first
time's: minus the adjoint of the later outputs along f there). `a f_y` and `a f_args` are one call of f's
vector-Jacobian product, which gradgen compiles from f (`f_vjp`). The derivative is that of
the exact solution: finite differences of the solver's output agree with it only as closely
as the solver's tolerances (rtol=1e-2 moves both by percents).
"""

from __future__ import annotations

from gradgen.ir.nodes import Call, Const, Spelled
from gradgen.rules.table import helper, primitive

# what odeint's keywords may be (all static: numbers, booleans, written in the call or folded)
KEYWORDS = ("rtol", "atol", "tcrit", "h0", "hmax", "hmin", "ixpr", "mxstep", "mxhnil", "mxordn", "mxords",
            "tfirst", "ml", "mu")


def _item(value, k):
    return Call("getitem", (value, Const(k)), "op", params=(("index", ("i",)),))


def _adjoint(i):
    """The rule for input i of odeint(y0, t, *args): y0's gradient, the times', each arg's."""

    def rule(g, out, y0, t, *args, **p):
        if not isinstance(p["func_vjp"], Spelled):  # f's vjp could not be compiled (gradgen.frontend.odeint)
            raise p["func_vjp"]
        solved = Call("odeint_vjp", (g, out, y0, t, Call("tuple", args, "builtins")), None, params=tuple(p.items()))
        return _item(solved, i) if i < 2 else _item(_item(solved, 2), i - 2)

    return rule


primitive("odeint", None, spellings=["scipy.integrate.odeint"], keywords=("func", "func_vjp") + KEYWORDS,
          elementwise=False, min_args=2, vjp=(_adjoint,))

helper("odeint_vjp", '''def odeint_vjp(g, ys, y0, t, args, func, func_vjp, **options):
    """Gradients of ys = scipy.integrate.odeint(func, y0, t, args, **options) with respect to
    y0, to the times t and to each of args, given g, the gradient of ys: the adjoint system
    integrated backward from each output time to the one before, by the same solver with
    the same options. func_vjp(y, t, *args, cotangent=c) is c times the Jacobian of func with
    respect to y and the args; an arg that is a list, tuple or dict gets its gradient as
    flatten_tree's vector. A later time moves its own output along func; the first moves
    every later one back."""
    tfirst = options.get("tfirst", False)
    n = np.size(ys[0])
    sizes = [np.size(flatten_tree(a)) for a in args]

    def dynamics(state, s, *_):
        y, a = state[:n], state[n : 2 * n]
        at = (s, y) if tfirst else (y, s)
        grads = func_vjp(*at, *args, cotangent=-a)
        grads = grads if args else (grads,)
        parts = [np.ravel(func(*at, *args)), np.ravel(grads[0])]
        parts += [flatten_tree(d) for d in grads[1:]]
        return np.concatenate(parts)

    def backward(first, second, *_):  # (state, s), or (s, state) where tfirst
        return dynamics(second, first) if tfirst else dynamics(first, second)

    def rate(k):  # func at the k-th output, raveled
        return np.ravel(func(t[k], ys[k], *args) if tfirst else func(ys[k], t[k], *args))

    d_t = np.array([np.dot(np.ravel(g[k]), rate(k)) if k else 0.0 for k in range(len(t))])
    a = np.ravel(g[-1]).astype(float)
    a_args = np.zeros(sum(sizes))
    for k in range(len(t) - 1, 0, -1):
        state = np.concatenate([np.ravel(ys[k]), a, a_args])
        state = scipy.integrate.odeint(backward, state, [t[k], t[k - 1]], **options)[1]
        a, a_args = state[n : 2 * n] + np.ravel(g[k - 1]), state[2 * n :]
    ends = np.cumsum([0] + sizes)
    d_args = []
    for arg, lo, hi in zip(args, ends[:-1], ends[1:]):
        part = a_args[lo:hi]
        if isinstance(arg, (list, tuple, dict)):
            d_args.append(part)
        else:
            d_args.append(np.reshape(part, np.shape(arg)) if np.ndim(arg) else float(part[0]))
    d_t[0] = -np.dot(a - np.ravel(g[0]), rate(0))
    d_y0 = np.reshape(a, np.shape(y0)) if np.ndim(y0) else float(a[0])
    return d_y0, d_t, tuple(d_args)
''', needs=("flatten_tree",))
