"""Analysis: which expressions surely have the same shape, with no shape known.

Broadcasting makes the backward pass sum gradients back (`unbroadcast`) and spread them
out (`np.ones_like(x)`), because in general `a * b` may be larger than `a`. Often the code
itself shows it is not: `x[1:] - x[:-1] ** 2` combines two slices of x that drop one
element each, `np.exp(z) * z` two values of z's shape, `100.0 * d` a number and d. This
analysis gives each expression a key, equal for two expressions only when their shapes
are surely equal, so the backward pass can leave out a sum that sums nothing, multiply by
a value of the right shape instead of by ones, and read a shape from a name instead of
from a whole expression (`np.ones_like(x[1:])`, not `np.ones_like(<the summand>)`).
"""

from __future__ import annotations

from gradgen.analysis.aliasing import numbers_read
from gradgen.analysis.arrays import _REDUCTIONS, may_be_array
from gradgen.analysis.stated import StaticShapes, known
from gradgen.ir import nodes as ir
from gradgen.ir import simplify
from gradgen.ir.nodes import Assign, Call, Cond, Const, For, Var, While, subexpressions, variables, walk
from gradgen.rules.numpy import counts_only
from gradgen.rules.table import TABLE

NUMBER = ("number",)  # the key of a number: it broadcasts against anything and changes no shape


class SameShape:
    """Keys of expressions of one function (`key`), and a cheap expression of an
    expression's shape (`proxy`). Expressions are compared within one statement, where
    every name means one value; a name bound once (and only from names bound once) is
    followed to the expression that made it."""

    def __init__(self, fn, arrays):
        self.arrays = arrays
        counts, self.defs = {}, {}
        for stmt in walk(fn.body):
            target = stmt.target if isinstance(stmt, (Assign, For)) else None
            if target is not None:
                counts[target] = counts.get(target, 0) + 1
                if isinstance(stmt, Assign) and not stmt.overwrites:
                    self.defs[target] = stmt.expr
        self.params = {p.name for p in fn.params}
        self.once = {p.name for p in fn.params if p.name not in counts}
        self.once |= {n for n, k in counts.items() if k == 1 and n in self.defs}
        self.memo = {}
        self.seen_leaves = set()
        self.float_adjoints = set()  # kept by gradgen.transform.reverse.backward as it sets adjoints
        self.once_defs = self.float_memo = None  # the definitions of the names bound once, and which hold floats

    def floats(self, e) -> bool:
        """Whether e surely holds floats (see _surely_float), following names bound once and
        the adjoints the backward pass last set to floats (`float_adjoints`)."""
        if self.once_defs is None:  # (made once: a dict a call made every adjoint's definition quadratic)
            self.once_defs, self.float_memo = {n: d for n, d in self.defs.items() if n in self.once}, {}
        return _surely_float(e, self.once_defs, floats=self.float_adjoints, memo=self.float_memo)

    def same(self, a, b) -> bool:
        if _static_same(self.arrays, a, b):
            return True
        ka, kb = self.key(a), self.key(b)
        return ka is not None and ka == kb

    def key(self, e):
        """A hashable key, equal for expressions of surely equal shapes, or None."""
        return self._key(e)[0]

    def _key(self, e):
        """(key, stable): stable when the key means the same shape anywhere in the function."""
        if not may_be_array(e, self.arrays):
            return NUMBER, True
        if isinstance(e, Var):
            return self._var(e.name)
        if isinstance(e, Cond):
            (kb, sb), (ko, so) = self._key(e.body), self._key(e.orelse)
            return (kb, sb and so) if kb == ko and kb is not None else (None, False)
        if not isinstance(e, Call):
            return None, False
        if e.prim == "getitem":
            return self._slice(e)
        if e.prim in TABLE and TABLE[e.prim].elementwise:
            keys = [self._key(a) for a in e.args if may_be_array(a, self.arrays)]
            if not keys:
                return NUMBER, True
            kept = {k for k, _ in keys if _kept_of(k) is not None}
            if kept and {_kept_of(k) for k in kept} <= {k for k, _ in keys}:
                keys = [(k, s) for k, s in keys if k not in kept]  # `x - np.max(x, axis=1, keepdims=True)`
            if all(k == keys[0][0] and k is not None for k, _ in keys):
                return keys[0][0], all(s for _, s in keys)
            return None, False
        if e.prim in ("sum", "mean", "amax", "amin", "prod") and dict(e.params).get("keepdims"):
            key, stable = self._key(e.args[0])  # as many axes, 1 long where it reduced: it broadcasts into x
            # (the axes belong to the key: np.mean(b, axis=1, keepdims=True) and np.sum(b, keepdims=True)
            # differ in shape, and u / y must sum back to y's; soak seed 1218 #17014)
            axis = repr(dict(e.params).get("axis"))
            return (("kept", key, axis), stable) if key is not None else (("expr", e), stable)
        return ("expr", e), all(v.name in self.once for v in variables(e))

    def _var(self, name):
        if name not in self.memo:
            self.memo[name] = (("var", name), name in self.once)  # (while its definition is read)
            if name in self.once and name in self.defs:
                key, stable = self._key(self.defs[name])
                if key is not None and stable:
                    self.memo[name] = (key, True)
        return self.memo[name]

    def _slice(self, e):
        """`x[a:b]` along the first axis with a >= 0 and b < 0 (or absent): as long as x less
        a - b elements (none if that is negative), so `x[1:]` and `x[:-1]` are alike."""
        layout = dict(e.params).get("index")
        base, *bounds = e.args
        if not layout or len(layout) != 1 or not layout[0].startswith("s") or layout[0][3:] == "1":
            return ("expr", e), False
        bits = layout[0][1:]
        values = iter(bounds)
        start = _int(next(values)) if bits[0] == "1" else 0
        stop = _int(next(values)) if bits[1] == "1" else 0
        if start is None or stop is None or start < 0 or stop > 0 or (bits[1] == "1" and stop == 0):
            return ("expr", e), False
        key, stable = self._key(base)
        return (("drop", key, start - stop), stable) if key is not None else (None, False)

    def proxy(self, e):
        """An expression of e's shape that costs nothing to evaluate (a name or a slice of
        one), or e itself: for an elementwise expression, the operand its shape comes from
        (the one array in it, or one of the arrays all of its shape); for a name bound once
        to such an expression, that operand's."""
        if not may_be_array(e, self.arrays):
            return e
        if isinstance(e, Var) and e.name in self.once and e.name in self.defs:
            inner = self.defs[e.name]
            if all(v.name in self.once for v in variables(inner)):
                found = self._operand(inner)
                return self.proxy(found) if found is not None else e
            return e
        found = self._operand(e)
        return self.proxy(found) if found is not None else e

    def shape_source(self, e):
        """An expression of e's shape that computes no numbers: proxy(e), or, for a value
        made elementwise from arrays of several shapes (`np.maximum(z, 0.0) - y * z`),
        np.broadcast of one array of each (`np.broadcast(z, y)`); or None."""
        found = self.proxy(e)
        if found is not e or not may_be_array(e, self.arrays):
            return found
        inner = e
        if isinstance(e, Var):
            if not (e.name in self.once and e.name in self.defs and all(v.name in self.once for v in variables(self.defs[e.name]))):
                return e
            inner = self.defs[e.name]
        if not (isinstance(inner, Call) and inner.prim != "getitem" and inner.prim in TABLE and
                TABLE[inner.prim].elementwise):
            return e
        reps = {}
        for leaf in _elementwise_leaves(inner, self.arrays):
            key, stable = self._key(leaf)
            if key is None or not stable:
                return e
            reps.setdefault(key, self.proxy(leaf))
        if len(reps) < 2 or any(k == NUMBER for k in reps) or len(reps) > 32:
            return e
        return Call("broadcast", tuple(reps.values()), "numpy")

    def leaf_keys(self, e):
        """The keys of the arrays an expression broadcasts together (a frozenset; empty for a
        number), or None where one is not known: two expressions with equal sets surely have
        one shape. Names bound once are followed; np.broadcast(...) and np.ones_like(x)
        broadcast their arguments."""
        if not may_be_array(e, self.arrays):
            return frozenset()
        if isinstance(e, Var) and e.name in self.once and e.name in self.defs:
            if e.name in self.seen_leaves:
                return None
            self.seen_leaves.add(e.name)
            try:
                return self.leaf_keys(self.defs[e.name])
            finally:
                self.seen_leaves.discard(e.name)
        if isinstance(e, Call) and (e.prim in _BROADCASTING or e.prim in ("broadcast", "ones_like", "zeros_like") or
                                    (e.prim != "getitem" and e.prim in TABLE and TABLE[e.prim].elementwise)):
            args = e.args[:1] if e.prim in ("ones_like", "zeros_like") else e.args
            out = frozenset()
            for a in args:
                keys = self.leaf_keys(a)
                if keys is None:
                    return None
                out |= keys
            return out
        if isinstance(e, Call) and e.prim in ("ones", "zeros") and len(e.args) == 1 and \
                isinstance(e.args[0], Call) and e.args[0].prim == "shape":
            return self.leaf_keys(e.args[0].args[0])
        key, stable = self._key(e)
        return frozenset([key]) if key is not None and stable and key != NUMBER else None

    def _operand(self, e):
        """The operand of an elementwise call `e` that has e's shape, or None."""
        if not (isinstance(e, Call) and e.prim != "getitem" and e.prim in TABLE and TABLE[e.prim].elementwise):
            return None
        arrays = [a for a in e.args if may_be_array(a, self.arrays)]
        if len(arrays) == 1:
            return arrays[0]
        key = self.key(e)
        if key is None or key == NUMBER:
            return None
        return next((a for a in arrays if self.key(a) == key), None)


# elementwise, though no gradient flows through them (so the table does not mark them)
_BROADCASTING = {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "sign", "logical_and", "logical_or",
                 "logical_not", "floor", "ceil", "isfinite", "isnan"}


def _elementwise_leaves(e, arrays):
    """The array operands at the leaves of a tree of elementwise calls."""
    if isinstance(e, Call) and e.prim != "getitem" and e.prim in TABLE and TABLE[e.prim].elementwise:
        return [leaf for a in e.args if may_be_array(a, arrays) for leaf in _elementwise_leaves(a, arrays)]
    return [e]


def _kept_of(key):
    """The key of x, for the key of a reduction of x that keeps its axes."""
    return key[1] if isinstance(key, tuple) and key[:1] == ("kept",) else None


def _int(e):
    if isinstance(e, Call) and e.prim == "neg" and len(e.args) == 1:
        inner = _int(e.args[0])
        return None if inner is None else -inner
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


class ArrayNames(set):
    """The names that may hold arrays (gradgen.analysis.arrays), carrying the function's SameShape,
    so every rule that asks "may this be an array?" can also ask "of which shape?", and
    `objects`: the names that may hold an array object (a number the code shows may still
    be a 0-d array, which `+=` would change in place)."""

    same: SameShape | None = None
    objects: set = frozenset()
    static: object = None  # the shapes the source states (gradgen.analysis.stated), or None
    sequences: set = frozenset()  # names of lists (and arrays made of lists): an index of one may repeat


def with_shapes(fn, arrays, objects=None, module=None, assumed=None):
    static = StaticShapes(fn, module, assumed)
    # a value of shape () wherever it is bound (an element of a vector, a reduction to one
    # number, arithmetic on these) is a number: its gradient is written as one (no
    # unbroadcast, no zeros of its shape); `objects` still says whether it may be a 0-d array
    names = ArrayNames(n for n in arrays if static.env.get(n, None) != ())
    names.static = static
    names.same = SameShape(fn, names)
    names.objects = set(arrays) | set(objects or ())
    names.wides = {}  # id(a sum back) -> (it, the expression of the shape it sums from): gradgen.transform.reverse.factoring
    names.sequences = {s.target for s in walk(fn.body) if isinstance(s, Assign) and isinstance(s.expr, Call)
                       and s.expr.prim in ("list", "append", "array_list", "stack_list")}
    names.shrinking = shrinking(fn)
    return names


def shrinking(fn):
    """The reductions (by id: the function's own nodes) along an axis that a loop feeds their own result back into
    (`z = np.tanh(np.sum(np.exp(z), axis=-1))`, through any names the loop body assigns): on
    a later trip their input may have no axis left, a number NumPy still reduces along axis 0
    or -1, where putting the axis back would give the gradient one it lacks (soak seed 2004
    #6216)."""
    found = set()
    for loop in walk(fn.body):
        if isinstance(loop, (For, While)):
            assigns = [s for s in walk(loop.body) if isinstance(s, Assign)]
            feeds = {}  # name -> the names the loop body computes from it
            for s in assigns:
                for v in variables(s.expr):
                    feeds.setdefault(v.name, set()).add(s.target)
            for s in assigns:
                reach = _reached_from(s.target, feeds)
                found |= {id(e) for e in subexpressions(s.expr) if reduces_an_axis(e)
                          and any(v.name in reach for v in variables(e.args[0]))}
    return found


def _reached_from(name, feeds):
    """`name` and every name computed from it, through `feeds`."""
    reach, todo = {name}, [name]
    while todo:
        for nxt in feeds.get(todo.pop(), ()):
            if nxt not in reach:
                reach.add(nxt)
                todo.append(nxt)
    return reach


def reduces_an_axis(e):
    """Whether `e` is a reduction along an axis that it drops (`np.sum(x, axis=-1)`)."""
    if not (isinstance(e, Call) and e.prim in _REDUCTIONS):
        return False
    params = dict(e.params)
    return params.get("axis") is not None and not params.get("keepdims")


def static_of(arrays, e):
    """e's static shape (gradgen.analysis.stated), or None."""
    static = getattr(arrays, "static", None)
    return static.of(e) if static is not None else None


# ---- gradients written with the shapes the code shows ----------------------------------
_SHAPE_OF_ARG = {"shape", "ndim", "size"}  # read only their argument's shape
_FLOAT_RESULTS = {"exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "tanh", "sinh",
                  "cosh", "sigmoid", "div", "erf", "erfc", "float"}


def tidy(g, arrays, forward=()):
    """A gradient expression that reads shapes from names (`np.ones_like(x[1:])`, not from
    the expression they came from), and multiplies by no ones where a factor has their
    shape already (`200.0 * d`, not `np.ones_like(d) * 100.0 * 2 * d`). `forward`: the
    forward expressions the rule read (its value and arguments), left exactly as the
    forward pass computes them, so that the value computed there is the one reused."""
    same = getattr(arrays, "same", None)
    if same is None or not isinstance(g, (Call, Cond)) or any(g is f or g == f for f in forward):
        return g
    if isinstance(g, Cond):
        return Cond(g.test, tidy(g.body, arrays, forward), tidy(g.orelse, arrays, forward))
    args = tuple(tidy(a, arrays, forward) for a in g.args)
    if g.prim == "scatter" and _reshaped_pick(args, g.params):
        return Call("reshape", (args[0], Call("shape", (args[1],), "numpy")), "numpy", g.loc)
    measured = _measured(Call(g.prim, args, g.ns, g.loc, g.params), arrays)
    if measured is not None:
        return measured
    if g.prim in _SHAPE_OF_ARG or (g.prim in ("ones_like", "zeros_like") and dict(g.params).get("dtype")):
        args = (same.proxy(args[0]),) + args[1:]
    g = Call(g.prim, args, g.ns, g.loc, g.params) if args != g.args else g
    return _without_ones(_folded(g, same), same) if g.prim in ("mul", "div", "neg") else g


def covers(e, part, same=None) -> bool:
    """Whether e's shape surely holds part's (broadcasting part against e changes nothing):
    part itself (or, by `same`, of its shape), or an elementwise operation of such an operand
    (it broadcasts its operands together: `np.expand_dims(s, axis=1) * centroids` holds
    centroids' shape)."""
    if e == part or (same is not None and same.same(e, part)):
        return True
    return isinstance(e, Call) and e.prim != "getitem" and e.prim in TABLE and TABLE[e.prim].elementwise and \
        any(covers(a, part, same) for a in e.args)


def _reshaped_pick(args, params):
    """Whether scatter(g, x, *index) is g reshaped to x's shape: the index only whole axes and
    new ones (`x[:, None]`: every element of x once, in order) and g summed back to that
    pick's shape already (`unbroadcast(g, x[:, None])`), so that it holds those elements in
    that order; no zeros made, nothing added at an index."""
    layout = dict(params).get("index") or ()
    g, like, index = args[0], args[1], args[2:]
    if index or not all(part in ("s000", "n", "e") for part in layout) or layout.count("e") > 1:
        return False
    return isinstance(g, Call) and g.prim == "unbroadcast" and g.args[1] == Call("getitem", (like,), "op", None, params)


def _static_same(arrays, a, b):
    sa = static_of(arrays, a)
    return known(sa) and sa != () and sa == static_of(arrays, b)


def _measured(g, arrays):
    """A count the source's shapes give (`np.size(sum_prod)` is `len(X)` when X is "n d"),
    which reads no value the forward pass would compute only to be measured; or None."""
    static = getattr(arrays, "static", None)
    if static is None or not isinstance(g, Call):
        return None
    if isinstance(g.args[0] if g.args else None, Var) and g.args[0].name in static.stated:
        return None  # (np.size(x) of a parameter reads nothing: it stays as written)
    if g.prim == "size" and len(g.args) == 1:
        return static.size(g.args[0])
    shape, axis = None, None
    if g.prim == "len":
        shape, axis = static.of(g.args[0]), 0
    elif g.prim == "getitem" and isinstance(g.args[0], Call) and g.args[0].prim == "shape" and \
            dict(g.params).get("index") == ("i",) and isinstance(g.args[1], Const):
        shape, axis = static.of(g.args[0].args[0]), g.args[1].value
    if not shape or not isinstance(axis, int) or not -len(shape) <= axis < len(shape) or shape[axis] is None:
        return None
    found = static.witness(shape[axis])
    if found is None or found == g:
        return None
    return found


def _without_ones(g, same):
    """`np.ones_like(p) * f * ...` is `f * ...` where f has p's shape and the product stays a
    fresh float array (two factors or more, one of them surely a float): `200.0 * d`, not
    `np.ones_like(d) * 100.0 * 2 * d`; `2 * diff / n`, not `np.ones_like(diff) / n * 2 * diff`."""
    sign, factors, divisors = _factors(g)
    ones = next((f for f in factors if _is_ones(f)), None)
    if ones is None or any(_is_ones(d) or not _counts(d) for d in divisors):
        return g
    like, key = ones.args[0], same.key(ones.args[0])
    rest = [f for f in factors if f is not ones]
    if not any(f == like or (key not in (None, NUMBER) and same.key(f) == key) or _static_same(same.arrays, f, like)
               for f in rest):
        return g
    if len(rest) == 1 and not divisors and isinstance(rest[0], Var) and rest[0].name not in same.params \
            and same.floats(rest[0]):
        return -rest[0] if sign < 0 else rest[0]  # a value the function made (never the caller's array)
    if len(rest) + len(divisors) < 2 or not (divisors or any(same.floats(f) for f in rest)):  # (x / n: a float)
        return g
    product = rest[0]
    for f in rest[1:]:
        product = simplify.mul(product, f)
    for d in divisors:
        product = simplify.div(product, d)
    return simplify.neg(product) if sign < 0 else product


def _folded(g, same):
    """A product with its constant factors multiplied out: `g * 0.5 * 2 * x` is `g * x`,
    `ones * 100.0 * 2 * d` is `ones * 200.0 * d` (where the number prints as short)."""
    sign, factors, divisors = _factors(g)
    numbers = [f for f in factors if simplify.number(f) is not None]
    over = [d for d in divisors if simplify.number(d) not in (None, 0)]
    if len(numbers) + len(over) < (1 if sign < 0 else 2) or len(numbers) == len(factors):
        return g  # (`-g * 2 * x` is `-2 * g * x`, one operation less; a number alone, `-1`, stays as written)
    value = 1
    for f in numbers:
        value *= simplify.number(f)
    for d in over:
        value /= simplify.number(d)
    value = -value if sign < 0 else value
    if len(repr(value)) > 10:
        return g
    rest = [f for f in factors if simplify.number(f) is None]
    divisors = [d for d in divisors if d not in over]
    if value in (1, -1) and isinstance(value, float) and not divisors and not any(same.floats(f) for f in rest):
        rest = [Call("mul", (Const(value), rest[0]), "op")] + rest[1:] if rest else [Const(value)]
        value = 1  # (`1.0 * k` keeps an integer k's gradient a float)
    product = Const(value)
    for f in rest:
        product = simplify.mul(product, f)
    for d in divisors:
        product = simplify.div(product, d)
    return product


def _factors(g):
    """(sign, factors, divisors) of a product `-a * b / c * d`."""
    if isinstance(g, Call) and g.prim == "neg":
        sign, factors, divisors = _factors(g.args[0])
        return -sign, factors, divisors
    if isinstance(g, Call) and g.prim in ("mul", "div"):
        sa, fa, da = _factors(g.args[0])
        if g.prim == "div":
            return sa, fa, da + [g.args[1]]
        sb, fb, db = _factors(g.args[1])
        return sa * sb, fa + fb, da + db
    return 1, [g], []


def _counts(e):
    """A divisor that is a number: a constant or a count of elements."""
    return counts_only(e)


def _is_ones(e):
    return isinstance(e, Call) and e.prim == "ones_like" and dict(e.params).get("dtype") is not None


def _surely_float(e, defs=None, seen=(), floats=frozenset(), memo=None):
    """Whether `e` is a float (or an array of floats) whatever the parameters hold: a float
    constant, a transcendental function, a division, arithmetic with one of these, a name
    bound once to one (`defs`), or one known to hold floats (`floats`: adjoints). `memo`:
    the answer for each name of `defs` found so far (a long program's chains of names,
    followed again for every adjoint, were quadratic)."""
    if isinstance(e, Const):
        return isinstance(e.value, float)
    if isinstance(e, Var):
        if e.name in floats and (defs is None or e.name not in defs):
            return True
        if defs is None or e.name not in defs or e.name in seen:
            return False
        if memo is not None and e.name in memo:
            return memo[e.name]
        found = _surely_float(defs[e.name], defs, seen + (e.name,), floats, memo)
        if memo is not None:
            memo[e.name] = found
        return found
    if isinstance(e, Call):
        if e.prim in _FLOAT_RESULTS or _is_ones(e):
            return True
        if e.prim in ("add", "sub", "mul", "neg", "pow", "maximum", "minimum", "matmul"):
            return any(_surely_float(a, defs, seen, floats, memo) for a in e.args)
        if e.prim == "where":
            return any(_surely_float(a, defs, seen, floats, memo) for a in e.args[1:])
        if e.prim in _KEEPS_DTYPE and dict(e.params).get("dtype") is None:  # (its first argument's numbers,
            # moved, picked or summed; `np.sum(x, dtype=int)` is not)
            return bool(e.args) and _surely_float(e.args[0], defs, seen, floats, memo)
    return False


# what keeps its first argument's dtype: floats in, floats out (a sum of floats stays one)
_KEEPS_DTYPE = {"unbroadcast", "reshape", "expand_dims", "getitem", "T", "transpose", "squeeze", "ravel", "sum",
                "broadcast_to", "swapaxes", "flip", "copy"}


# ---- values computed only to be measured ------------------------------------------------------
_MEASURES = {"ones_like", "zeros_like", "size", "shape", "ndim", "unbroadcast"}


def measured_elsewhere(body, backward, grads, arrays, keep=()):
    """The backward statements with each value that the gradient reads only for its shape
    (`np.ones_like(per_sample)`, `np.size(per_sample)`, the gradient of a mean) measured
    through np.broadcast of the arrays it is made from instead, where that leaves the value
    uncomputed in the gradient function (`per_sample = np.maximum(z, 0.0) - y * z +
    np.log1p(...)` costs more than the whole backward pass it feeds). `keep`: names the
    gradient function needs anyway (what the backward pass pops)."""
    same = getattr(arrays, "same", None)
    if same is None:
        return backward
    top = [s for s in body if isinstance(s, Assign) and not s.overwrites and not s.accumulate]
    grad_reads = {x.name for g in grads for x in ir.variables(g)} | set(keep)
    needed, numbers = simplify.names_read(backward) | grad_reads, numbers_read(backward) | grad_reads
    for stmt in top:
        v = stmt.target
        if v not in needed or v in numbers:
            continue
        source = same.shape_source(Var(v))
        if not (isinstance(source, Call) and source.prim == "broadcast"):
            continue
        rewritten = ir.map_expressions(backward, lambda e: _measure_by(e, v, source))
        after = simplify.names_read(rewritten) | grad_reads
        if v not in {s.target for s in simplify.dead_code(body, after) if isinstance(s, Assign)}:
            backward, needed = rewritten, after  # (numbers read are unchanged: only measures were rewritten)
    return backward


def _measure_by(e, v, source):
    """e with v's shape read from `source` (np.broadcast(...)) wherever e measures v."""
    if not (isinstance(e, Call) and e.prim in _MEASURES):
        return e
    at = 1 if e.prim == "unbroadcast" else 0
    if len(e.args) <= at or e.args[at] != Var(v):
        return e
    if e.prim in ("ones_like", "zeros_like"):  # np.ones(np.shape(np.broadcast(z, y))): floats, like dtype=float
        return Call(e.prim[:-5], (Call("shape", (source,), "numpy"),), e.ns or "numpy", e.loc)
    return Call(e.prim, e.args[:at] + (source,) + e.args[at + 1:], e.ns, e.loc, e.params)


# ---- values the tape would save only to be measured ------------------------------------------
def measured_by_stable(code, arrays, stable, params):
    """Backward code with each measure of a value (`np.zeros_like(y_3, dtype=float)`,
    `unbroadcast(g, k1)`, `np.shape(h)`) read from a parameter the body never assigns whose
    shape the source states equal (`x` of `--shapes x (10000,)`): the tape then need not
    save a whole array trip after trip only for its shape (issue 23: ode's RK4 kept 12 arrays
    a step, 8 of them only measured). `stable`: names holding one value for the whole
    backward pass, which are measured as they are; `params`: the parameters, in order (the
    first of the shape is the one measured)."""
    static = getattr(arrays, "static", None)
    if static is None:
        return code
    witnesses = {}
    for p in params:
        shape = static.stated.get(p)
        if p in stable and known(shape) and shape != () and shape not in witnesses:
            witnesses[shape] = p

    def measure(e):
        if not (isinstance(e, Call) and e.prim in _MEASURES):
            return e
        at = 1 if e.prim == "unbroadcast" else 0
        if e.prim in ("ones_like", "zeros_like") and dict(e.params).get("dtype") is None:
            return e  # (its dtype is the value's own)
        if len(e.args) <= at or not isinstance(e.args[at], Var) or e.args[at].name in stable:
            return e
        found = witnesses.get(static.of(e.args[at]))
        if found is None:
            return e
        return Call(e.prim, e.args[:at] + (Var(found),) + e.args[at + 1:], e.ns, e.loc, e.params)

    return ir.map_changed(code, measure) if witnesses else code

