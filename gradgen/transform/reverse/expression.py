"""Stage 4, reverse: pushing a gradient down one expression.

At each primitive the table's rule (gradgen.rules.table) turns the gradient of the output
into the gradient of each input; every active variable reached receives a contribution.
Broadcasting is undone where it matters: exactly (an explicit sum over the stretched
axes) where the source states the shapes (gradgen.analysis.stated), else by the
`unbroadcast` helper; matmul gradients are `X.T @ dz` and `dz @ W.T` where the ranks are
known. A gradient several variables share is named once (a Temporary).
"""

from __future__ import annotations

from gradgen.analysis import sameshape
from gradgen.analysis.arrays import may_be_array, may_repeat
from gradgen.analysis.stated import known
from gradgen.ir import simplify
from gradgen.ir.nodes import Call, Cond, Const, Spelled, Var, variables
from gradgen.rules.numpy import counts_only
from gradgen.rules.table import TABLE
from gradgen.transform.reverse import factoring


def _is_scatter(expr):
    return isinstance(expr, Call) and expr.prim == "scatter"


# Primitives whose result is an array even of a number (a 0-d array), or may be a view.
_ARRAY_MAKERS = {"zeros_like", "ones_like", "array", "copy", "where", "reshape", "squeeze", "expand_dims", "broadcast_to",
                 "ravel", "transpose", "T", "flip", "getitem", "unbroadcast", "concatenate_grad"}


def _allocates(expr):
    """Whether `expr` always makes a new array (a ufunc's result), never a view or an input."""
    if not isinstance(expr, Call):
        return False
    prim = TABLE[expr.prim]
    return (prim.elementwise and expr.prim not in ("pos", "float")) or expr.prim in ("zeros_like", "ones_like", "array",
                                                                                       "zero_at", "last_writes")


def zero_like(v, arrays):
    if v in arrays:
        return Call("zeros_like", (Var(v),), "numpy", params=(("dtype", Spelled("float")),))
    return Const(0.0)


class Temporary:
    """A gradient pushed into a subexpression that feeds several variables: named once
    (`dL_dh_inner = dL_dh * (1 - h ** 2)`) instead of being written out for each of them."""

    def __init__(self, name, expr, heir=None):
        self.name, self.expr, self.heir = name, expr, heir  # heir: the variable whose adjoint it is


def push_into(expr, g, guards, active, out, value=None, arrays=frozenset(), stretched=False, scalar=False,
              temporary=None, wide=None, exact=True):
    """Send gradient `g` of `expr` (whose value is `value`, else recomputed) to the active
    variables inside it; append (variable, contribution) pairs to `out`.

    Broadcasting is undone where it matters. Through elementwise operations a gradient may
    travel with the larger, broadcast shape (`stretched`): their local derivatives are
    constant along the stretched axes, so summing at the end is the same as summing at
    every step. It is summed back to each variable's shape where it arrives, and to a
    node's shape before a rule that needs its exact shape (a reduction, a reshape).
    `scalar`: `expr` is known to be a number (it is assigned to one); `wide`: an expression
    of the shape a stretched g has (where the source states shapes, the sum back is
    written out: see _fit); `exact`: g surely has its value's shape (not False where g may
    be the 0.0 a loop or a branch starts an adjoint with: then the helpers, which accept
    it, sum back and multiply matrices; soak seed 1226 #1798)."""
    if isinstance(expr, Var):
        if expr.name in active:
            out.append((expr.name, _guarded(guards, _fit(g, expr, stretched, arrays, wide if exact else None))))
        return
    if isinstance(expr, Cond):  # (a rule above measured the arm taken: `zeros_like(h if c else u)` is h's in h's)
        push_into(expr.body, _arm(g, expr, expr.body), guards + (expr.test,), active, out, None, arrays, stretched,
                  scalar, wide=wide, exact=exact)
        push_into(expr.orelse, _arm(g, expr, expr.orelse), guards + (simplify.negate(expr.test),), active, out, None,
                  arrays, stretched, scalar, wide=wide, exact=exact)
        return
    if not isinstance(expr, Call):
        return
    prim = TABLE[expr.prim]
    if prim.kind != "smooth" or prim.vjp is None:
        return
    root = value is not None
    value = expr if value is None else value
    if id(expr) in getattr(arrays, "shrinking", ()):  # a loop may reduce its input to a number: axis 0 of one element
        expr = Call(expr.prim, (Call("atleast_1d", expr.args[:1], "numpy"),) + expr.args[1:], expr.ns, expr.loc,
                    expr.params)
    if _inline_sigmoid(expr) is not None:  # 1 / (1 + exp(-z)): differentiated as sigmoid, out * (1 - out)
        expr = Call("sigmoid", (_inline_sigmoid(expr),), expr.ns, expr.loc)
        prim = TABLE["sigmoid"]
    ranks = _matmul_ranks(expr, arrays) if exact else None
    if ranks is not None and stretched:  # summed back exactly, or left to the helper (never recomputing a @ b)
        fitted = _summed_back(g, sameshape.static_of(arrays, wide), sameshape.static_of(arrays, value))
        ranks = None if fitted is None else ranks
        g, stretched = (g, True) if fitted is None else (fitted, False)
    if stretched and not prim.elementwise and expr.prim not in _TAKES_STRETCHED:
        g, stretched = _fit(g, value, True, arrays, wide if exact else None), False
    if temporary is not None and not root and not guards and _worth_naming(g, expr, active):
        name = temporary(expr)
        out.append(Temporary(name, g))
        g = Var(name)
    for i, arg in enumerate(expr.args):
        if not any(v.name in active for v in variables(arg)):
            continue
        rule = prim.vjp[0](i) if prim.arity is None else prim.vjp[i]
        if expr.prim in ("T", "transpose") and not may_be_array(arg, arrays):
            rule = _unchanged  # a number's transpose: g, which may be the float 0.0 (no .T)
        if ranks is not None:
            rule = _MATMUL_BY_RANKS[ranks][i]
        piece = _concatenated_piece(expr, i, arrays) if exact else None
        if piece is not None:  # `g[len(a):]`, where the lengths are stated
            rule = piece
        if rule is None:
            continue
        gi = sameshape.tidy(_in_namespace(rule(g, value, *expr.args, **dict(expr.params)), expr.ns), arrays,
                            (value, g) + expr.args)
        if isinstance(gi, Const) and simplify.is_zero(gi):  # (x.astype(int)): nothing flows on, into a list either
            continue
        arg_scalar = scalar and prim.elementwise  # broadcasting never shrinks: its inputs are numbers too
        arg_stretched = not arg_scalar and (stretched or (prim.elementwise and _stretches(expr, i, arrays)))
        if expr.prim in _TAKES_STRETCHED:
            arg_stretched = False  # its helper sums back to each input's shape itself
        arg_wide = (wide if stretched else value) if arg_stretched else None
        if expr.prim == "einsum" and not arg_stretched and _einsum_stretches(expr, i, arrays):
            arg_stretched, arg_wide = True, None  # (the gradient's shape is no node's: unbroadcast)
        if expr.prim == "setitem" and i == 1:
            arg_stretched = True  # `x[1:] = s`: the value broadcast into the index
            gi = _every_write_survives(gi, arrays)
        arg_guards = guards
        while isinstance(gi, Cond) and simplify.is_zero(gi.orelse):  # a rule's own test (max, min)
            arg_guards, gi = arg_guards + (gi.test,), gi.body
        push_into(arg, gi, arg_guards, active, out, None, arrays, arg_stretched, arg_scalar, temporary, arg_wide, exact)


def _unchanged(g, *_, **__):
    return g


def _arm(g, cond, arm):
    """g with the conditional expression `cond` read as `arm`: where the arm runs, the value
    a rule measured (the scatter's zeros of `(h if c else u)[:-1]`) is that arm."""
    if g == cond:
        return arm
    if isinstance(g, Call):
        args = tuple(_arm(a, cond, arm) for a in g.args)
        return g if args == g.args else Call(g.prim, args, g.ns, g.loc, g.params)
    if isinstance(g, Cond):
        parts = (_arm(g.test, cond, arm), _arm(g.body, cond, arm), _arm(g.orelse, cond, arm))
        return g if parts == (g.test, g.body, g.orelse) else Cond(*parts)
    return g


def _every_write_survives(g, arrays):
    """`g[index]` for the value `x[index] = v` wrote, where the index cannot repeat an element
    (a slice, numbers, a mask, distinct constants): every element of v survives."""
    if isinstance(g, Call) and g.prim == "last_writes" and not may_repeat(dict(g.params)["index"], g.args[1:], arrays):
        return Call("getitem", g.args, "op", g.loc, g.params)
    return g


def _inline_sigmoid(expr):
    """z, where `expr` is the logistic function written out: `1 / (1 + exp(-z))`."""
    if not (isinstance(expr, Call) and expr.prim == "div" and simplify.is_one(expr.args[0])):
        return None
    total = expr.args[1]
    if not (isinstance(total, Call) and total.prim == "add"):
        return None
    one, exp = total.args if simplify.is_one(total.args[0]) else reversed(total.args)
    if not simplify.is_one(one) or not (isinstance(exp, Call) and exp.prim == "exp"):
        return None
    neg = exp.args[0]
    return neg.args[0] if isinstance(neg, Call) and neg.prim == "neg" else None


def _worth_naming(g, expr, active):
    """Name the gradient of a subexpression when it is a computation (not a name or a
    number) and more than one active variable inside the subexpression will use it."""
    if isinstance(g, (Var, Const)) or (isinstance(g, Call) and g.prim == "neg" and isinstance(g.args[0], Var)):
        return False
    if spread_ones(g):  # ones of a shape, scaled: folded into the products that use it instead
        return False
    return sum(1 for v in variables(expr) if v.name in active) >= 2


def spread_ones(g, floats=False):
    """`np.ones_like(x)` negated or scaled by numbers and counts (`-np.ones_like(s) / n`, the
    gradient of a mean): one number everywhere, of x's shape; `floats`: only float ones
    (`dtype=float`), which may stand for an adjoint (gradgen.transform.reverse.backward keeps those symbolic)."""
    if isinstance(g, Call) and g.prim == "ones_like":
        return not floats or dict(g.params).get("dtype") is not None
    if isinstance(g, Call) and g.prim == "neg":
        return spread_ones(g.args[0], floats)
    if isinstance(g, Call) and g.prim in ("mul", "div"):
        a, b = g.args
        scaled = spread_ones(a, floats) and (counts_only(b) or (g.prim == "mul" and spread_ones(b, floats)))
        return scaled or (g.prim == "mul" and counts_only(a) and spread_ones(b, floats))
    return False


# rules whose helpers accept a gradient of the broadcast shape and sum it back themselves
_TAKES_STRETCHED = {"matmul"}


def _stretches(expr, i, arrays):
    """Whether broadcasting in `expr` may make its result larger than input `i`."""
    if not may_be_array(expr, arrays):
        return False
    if not may_be_array(expr.args[i], arrays):
        return True
    same = getattr(arrays, "same", None)
    if same is not None and same.same(expr, expr.args[i]):
        return False  # the result has this input's shape: nothing stretched it
    return any(may_be_array(a, arrays) for j, a in enumerate(expr.args) if j != i)


def _einsum_stretches(expr, i, arrays):
    """Whether np.einsum may have stretched a letter of length 1 of operand i to another
    operand's length (autograd's MLP: `np.einsum("mnd,mdo->mno", inputs[None], W)`): a
    letter of the output that another operand has too, not shown one length by the shapes
    the source states. Its gradient, an einsum back to its letters, then has the other's
    length there, and is summed back. (A summed letter of two lengths is refused when the
    code runs: gradgen.codegen.spellings.EINSUM_MATMUL.)"""
    inputs, output = dict(expr.params)["subscripts"].split("->")
    parts = inputs.split(",")
    others = "".join(part for k, part in enumerate(parts) if k != i)
    shared = [c for c in parts[i] if c in output and c in others]
    if not shared:
        return False
    lengths = {}
    for part, arg in zip(parts, expr.args):
        shape = sameshape.static_of(arrays, arg)
        if shape is None or len(shape) != len(part):
            return True
        for c, n in zip(part, shape):
            lengths.setdefault(c, set()).add(n)
    return any(len(lengths[c]) > 1 or None in lengths[c] for c in shared)


def _fit(g, like, stretched, arrays, wide=None):
    """`g` summed back to the shape of `like` if broadcasting may have stretched it: over
    exactly the axes it stretched where the source states both shapes (`wide`'s and
    like's), else by the `unbroadcast` helper, which looks at run time."""
    if not stretched:
        return g
    if not may_be_array(like, arrays):
        return g if isinstance(g, Const) else Call("sum", (g,), "numpy")
    written = _summed_back(g, sameshape.static_of(arrays, wide), sameshape.static_of(arrays, like))
    return factoring.remember_wide(arrays, written if written is not None else Call("unbroadcast", (g, like), None), wide)


def _summed_back(g, shape, target):
    """g (of `shape`) summed to `target`: the leading axes broadcasting added, then the
    axes where target has length 1 (kept); None where a dimension leaves it open."""
    if not known(shape) or not known(target) or len(target) > len(shape):
        return None
    lead = len(shape) - len(target)
    kept = []
    for k, (have, want) in enumerate(zip(shape[lead:], target)):
        if have == want:
            continue
        if want != 1:
            return None  # (n against m: the shapes do not say which broadcast)
        kept.append(k)
    if lead:
        axes = tuple(range(lead))
        g = Call("sum", (g,), "numpy", params=(("axis", axes[0] if lead == 1 else axes),))
    if kept:
        g = Call("sum", (g,), "numpy", params=(("axis", kept[0] if len(kept) == 1 else tuple(kept)), ("keepdims", True)))
    return g


def _matmul_ranks(expr, arrays):
    """(rank of a, rank of b) of `a @ b` where the source states both as vectors or
    matrices: its gradients are then written as a person writes them (see _MATMUL_BY_RANKS)."""
    if not (isinstance(expr, Call) and expr.prim == "matmul"):
        return None
    a, b = (sameshape.static_of(arrays, x) for x in expr.args)
    if a is None or b is None or not 1 <= len(a) <= 2 or not 1 <= len(b) <= 2:
        return None
    return len(a), len(b)


def _concatenated_piece(expr, i, arrays):
    """The rule `g[start:stop]` (along the axis) for part i of np.concatenate, where the
    source states the parts' lengths along it; None where it does not (the helper then
    measures them at run time)."""
    static = getattr(arrays, "static", None)
    if static is None or not (isinstance(expr, Call) and expr.prim == "concatenate"):
        return None
    axis = dict(expr.params).get("axis", 0)
    shapes = [static.of(a) for a in expr.args]
    if not isinstance(axis, int) or any(not s for s in shapes) or len({len(s) for s in shapes}) != 1 or \
            not -len(shapes[0]) <= axis < len(shapes[0]):
        return None
    axis %= len(shapes[0])
    lengths = [static.witness(s[axis]) if s[axis] is not None else None for s in shapes[:i + 1]]
    if any(n is None for n in lengths):
        return None
    start = None
    for n in lengths[:i]:
        start = n if start is None else simplify.add(start, n)
    stop = None if i == len(expr.args) - 1 else (lengths[i] if start is None else simplify.add(start, lengths[i]))
    bounds = tuple(b for b in (start, stop) if b is not None)
    layout = ("s000",) * axis + ("s" + ("1" if start is not None else "0") + ("1" if stop is not None else "0") + "0",)
    return lambda g, out, *parts, **params: Call("getitem", (g,) + bounds, "op", params=(("index", layout),))


def _transposed(x):
    return Call("T", (x,), None)


def _mm(a, b):
    return Call("matmul", (a, b), "op")


# the gradients of a @ b for a and for b, by the ranks of a and b
_MATMUL_BY_RANKS = {
    (2, 2): (lambda g, out, a, b: _mm(g, _transposed(b)), lambda g, out, a, b: _mm(_transposed(a), g)),
    (2, 1): (lambda g, out, a, b: Call("outer", (g, b), "numpy"), lambda g, out, a, b: _mm(_transposed(a), g)),
    (1, 2): (lambda g, out, a, b: _mm(b, g), lambda g, out, a, b: Call("outer", (a, g), "numpy")),
    (1, 1): (lambda g, out, a, b: g * b, lambda g, out, a, b: g * a),
}


def _guarded(guards, g):
    if not guards:
        return g
    test = guards[0] if len(guards) == 1 else Call("and", tuple(guards), "op")
    return Cond(test, as_float(g), Const(0.0))


def bare(value, zeroed):
    """Whether an adjoint set to `value` may be a bare number where its value is an array:
    a constant (the 0.0 a loop or a branch starts it with), an adjoint that may be one
    (`zeroed`), a conditional expression with such an arm, or arithmetic or a copy of these
    alone."""
    if isinstance(value, Const):
        return True
    if isinstance(value, Var):
        return value.name in zeroed
    if isinstance(value, Cond):
        return bare(value.body, zeroed) or bare(value.orelse, zeroed)
    if isinstance(value, Call) and value.prim in ("add", "sub", "mul", "div", "neg", "pos", "copy"):
        return all(bare(arg, zeroed) for arg in value.args)  # (`np.copy(g if c else 0.0)`: seed 2004 #2217)
    return False


# rules that take a gradient of zeros smaller than their value (a bare 0.0) as well: they
# broadcast it (elementwise), sum it back in a helper (matmul), or add it into an array or a
# list at an index (which broadcasts it too)
_TAKE_A_NUMBER = {"matmul", "getitem", "list_get", "tree_get"}


def takes_a_number(expr, active):
    """Whether every rule between `expr` and its active variables takes a gradient that is a
    bare 0.0 where the value is an array (push_into with exact=False). Others (a write at an
    index, einsum, cumsum, solve, a sum along an axis) need an array of the value's shape."""
    if isinstance(expr, Cond):
        return takes_a_number(expr.body, active) and takes_a_number(expr.orelse, active)
    if not isinstance(expr, Call) or not any(v.name in active for v in variables(expr)):
        return True
    if not (TABLE[expr.prim].elementwise or expr.prim in _TAKE_A_NUMBER):
        return False
    return all(takes_a_number(arg, active) for arg in expr.args)


def as_float(expr):
    """A gradient that is a bare constant is written as a float (`1.0`, never `1`)."""
    if isinstance(expr, Const) and type(expr.value) is int:
        return Const(float(expr.value))
    if isinstance(expr, Cond):
        return Cond(expr.test, as_float(expr.body), as_float(expr.orelse))
    return expr


def _in_namespace(expr, ns):
    """Give the calls a rule created the namespace of the call they differentiate."""
    if ns not in ("math", "numpy"):
        return expr
    if isinstance(expr, Call):
        args = tuple(_in_namespace(a, ns) for a in expr.args)
        return Call(expr.prim, args, expr.ns or ns, expr.loc, expr.params)
    if isinstance(expr, Cond):
        return Cond(_in_namespace(expr.test, ns), _in_namespace(expr.body, ns), _in_namespace(expr.orelse, ns))
    return expr

