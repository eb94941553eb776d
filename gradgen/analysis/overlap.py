"""Analysis: may a write into an array reach the numbers a view of it holds?

An LSTM that keeps its states in one array reads `h = s[t]` and writes `s[t + 1] = e`:
h is a view of s, but the write goes to row t + 1 on this trip and to later rows on later
trips, so h keeps its numbers. gradgen.analysis.aliasing asks this before it refuses an
in-place write that another name (a view) sees: the answer is "never" only where the view
and the write index one axis with integers, each a constant or `t + c` of one loop counter
t, and the numbers provably never meet (the counter only grows, or only shrinks, and no
index is negative). Anything else may meet.
"""

from __future__ import annotations

from gradgen.ir.nodes import Assign, Call, Const, For, If, Var, While, walk
from gradgen.rules.table import TABLE


class Places:
    """Where each statement of a function is: its place in source order, and the loops
    around it (outermost first)."""

    def __init__(self, fn):
        self.fn, self.order, self.loops, self.bindings, self.path, self.end = fn, {}, {}, {}, {}, {}
        self._visit(fn.body, (), ())
        self.params = {p.name for p in fn.params}

    def _visit(self, stmts, loops, path):
        for k, s in enumerate(stmts):
            self.order[id(s)], self.loops[id(s)] = len(self.order), loops
            self.path[id(s)] = path + ((id(stmts), k),)  # (each block on the way, and the place in it)
            if isinstance(s, Assign):
                self.bindings.setdefault(s.target, []).append(s)
            if isinstance(s, If):
                self._visit(s.body, loops, self.path[id(s)])
                self._visit(s.orelse, loops, self.path[id(s)])
            elif isinstance(s, (For, While)):
                self._visit(s.body, loops + (s,), self.path[id(s)])
                self.end[id(s)] = len(self.order) - 1  # (its last statement's place)

    def runs_before(self, s, t):
        """Whether `s` runs before `t` whenever `t` runs: in a block `t` is in (or one around
        it), before it."""
        ps, pt = self.path[id(s)], self.path[id(t)]
        k = len(ps) - 1
        return len(pt) > k and ps[:k] == pt[:k] and ps[k][0] == pt[k][0] and ps[k][1] < pt[k][1]


def untouched(places, write, name, bound, changed):
    """Whether the in-place write `write` (`x[index] = e`) surely leaves alone the numbers
    `name` holds of x's array: every statement that may bind `name` to that array
    (`bound`: id(statement) -> the arrays it bound; `changed`: the arrays the write changes)
    reads one row of x itself, `name = x[j]`, that no run of the write after it reaches."""
    if ("outside", name) in changed:  # the caller's array (or a module constant) under its own name
        return False
    if not (isinstance(write.expr, Call) and write.expr.prim == "setitem" and write.expr.args[0] == Var(write.target)):
        return _other_rows(places, write.target, name, bound, {_made_by(o) for o in changed})  # (`x += e`)
    changed = {_made_by(o) for o in changed}
    for b in places.bindings.get(name, ()):
        if {_made_by(o) for o in bound.get(id(b), ())} & changed and not _apart(places, b, write, bound):
            return False
    return True


def _other_rows(places, x, name, bound, changed):
    """`x += e` changes every element of the array x holds: where every binding that may give x
    a changed array is a row of one array, `x = base[i]`, and every one that may give `name`
    one is another row of it, `name = base[j]` (i and j constants of one sign, base bound once),
    the two are apart (`first, W0 = rows; first += ...`: soak 55004 #396, a false refusal)."""
    def held(b):
        return {_made_by(o) for o in bound.get(id(b), ())}

    shared = changed & {o for b in places.bindings.get(name, ()) for o in held(b)}  # (what both may hold)

    def rows(n):
        found = set()
        for b in places.bindings.get(n, ()):
            if not held(b) & shared:
                continue
            e = b.expr
            if not (isinstance(e, Call) and e.prim == "getitem" and dict(e.params).get("index") == ("i",)
                    and isinstance(e.args[0], Var) and isinstance(e.args[1], Const) and type(e.args[1].value) is int):
                return None
            found.add((e.args[0].name, e.args[1].value))
        return found

    mine, theirs = rows(x), rows(name)
    if not mine or not theirs:
        return False
    bases = {base for base, _ in mine | theirs}
    if len(bases) != 1 or len(places.bindings.get(next(iter(bases)), ())) > 1:
        return False
    signs = {k >= 0 for _, k in mine | theirs}
    return len(signs) == 1 and not {k for _, k in mine} & {k for _, k in theirs}


def _apart(places, b, write, bound):
    """`b` (`name = x[j]`) and `write` (`x[i] = e`): no run of the write after b reaches row j."""
    x = write.target
    if not (isinstance(b.expr, Call) and b.expr.prim == "getitem" and b.expr.args[0] == Var(x)):
        return False
    if not places.loops[id(b)] and not places.loops[id(write)] and places.order[id(write)] < places.order[id(b)]:
        return True  # the write runs before the view is made
    if _rebound_between(places, b, write, bound):
        return False  # x rebound to another name's array (a view of it: row j of which?)
    view = _items(b.expr.params, b.expr.args[1:])
    into = _items(write.expr.params, write.expr.args[2:])
    return any(_never_meet(places, b, write, j, i, bound) for j, i in zip(view, into)
               if j is not None and i is not None)


def _made_by(o):
    """An array by where it comes from: this trip's and an earlier trip's of one statement alike."""
    return ("made", o[1]) if o[0] == "older" else o


def _rebound_between(places, b, write, bound):
    """Whether x (the write's array) may be bound again, to a view or another name's array,
    between b and a later run of the write: inside the loop the two share, else from b (or
    the loop around it) to the write (or the end of the loop around it)."""
    x, common = write.target, _common(places, b, write)
    lo, hi = places.order[id(b)], places.order[id(write)]
    if not common:
        around_b = [loop for loop in places.loops[id(b)]]
        around_write = [loop for loop in places.loops[id(write)]]
        lo = places.order[id(around_b[0])] if around_b else lo
        hi = places.end[id(around_write[0])] if around_write else hi
    for s in places.bindings.get(x, ()):
        if _rebinds_in_place(s, x) or _fresh(s, bound):
            continue
        if common and common[-1] in places.loops[id(s)] or not common and lo <= places.order[id(s)] <= hi:
            return True
    return False


def _fresh(s, bound):
    """Statement `s` binds its name to a new array it makes (or to a number)."""
    return bound.get(id(s), set()) <= {("made", id(s)), ("older", id(s))}


def _rebinds_in_place(s, name):
    return isinstance(s.expr, Call) and bool(s.expr.args) and s.expr.args[0] == Var(name)


def _items(params, index):
    """The integer index on each leading axis of `x[index]` (None for a slice), up to the
    first `np.newaxis` or `...` (after which the axes are counted differently)."""
    layout, index, out = dict(params).get("index", ()), list(index), []
    for kind in layout:
        if kind == "i":
            out.append(index.pop(0))
        elif kind.startswith("s"):
            del index[:kind.count("1")]
            out.append(None)
        else:
            break
    return out


def _common(places, a, b):
    """The loops around both statements, outermost first."""
    common = []
    for x, y in zip(places.loops[id(a)], places.loops[id(b)]):
        if x is not y:
            break
        common.append(x)
    return common


def _never_meet(places, b, write, j, i, bound):
    """Row j of the view (bound at `b`) and row i of every later run of `write` differ."""
    common = _common(places, b, write)
    loop = common[-1] if common else None
    jt, jc = _affine(j, loop)
    it, ic = _affine(i, loop)
    if not (jt and it and jc is not None and ic is not None):  # one row fixed, or not of this loop's counter
        return _constant_apart(places, b, write, j, i)
    rising, first, last = _direction(loop)
    if rising is None or _assigned_in(loop, loop.target) or not _fresh_around(places, loop, write.target, bound):
        return False  # (an outer loop running the counter again over the same array would meet)
    after = 0 if places.order[id(write)] > places.order[id(b)] else 1  # the write's first trip after b
    lowest = first if rising else last
    if lowest is None or lowest + min(jc, ic) < 0:
        return False  # a negative index counts from the end
    return ic + after > jc if rising else ic - after < jc


def _constant_apart(places, b, write, j, i):
    """Rows that are a constant and `t + c` of one loop: apart where the moving one stays
    above the constant (both never negative); two constants: different, of one sign."""
    jt, jc = _affine(j, None)
    it, ic = _affine(i, None)
    if jc is not None and ic is not None:  # two constants (the write then runs after b: any run)
        return jc != ic and (jc >= 0) == (ic >= 0)
    for fixed, moving, at in ((j, i, write), (i, j, b)):
        k = _affine(fixed, None)[1]
        inner = places.loops[id(at)][-1] if places.loops[id(at)] else None
        t, c = _affine(moving, inner)
        if k is None or not t or c is None or _assigned_in(inner, inner.target):
            continue
        rising, first, last = _direction(inner)
        lowest = first if rising else last
        if rising is not None and lowest is not None and k >= 0 and lowest + c > k:
            return True
    return False


def _affine(e, loop):
    """(whether e moves with `loop`'s counter, its constant part) for `t`, `t + c`, `c + t`,
    `t - c` and constants `c` (ints); (False, None) for anything else."""
    t = loop.target if isinstance(loop, For) else None
    if isinstance(e, Const) and type(e.value) is int:
        return False, e.value
    if isinstance(e, Var) and e.name == t:
        return True, 0
    if isinstance(e, Call) and e.prim in ("add", "sub") and len(e.args) == 2:
        (at, ac), (bt, bc) = _affine(e.args[0], loop), _affine(e.args[1], loop)
        if ac is None or bc is None or at and bt or bt and e.prim == "sub":
            return False, None
        return at or bt, ac + bc if e.prim == "add" else ac - bc
    if isinstance(e, Call) and e.prim == "neg" and len(e.args) == 1:
        inner_t, inner_c = _affine(e.args[0], loop)
        return (False, -inner_c) if inner_c is not None and not inner_t else (False, None)
    return False, None


def _direction(loop):
    """(rising, the first counter value, the last's lower bound) of `for t in range(...)` with
    constant bounds where known: (True, start, None) or (False, None, stop + 1); (None, ...)
    when the step is not a constant."""
    if not (isinstance(loop, For) and isinstance(loop.iter, Call) and loop.iter.prim == "range"):
        return None, None, None
    args = loop.iter.args
    step = _affine(args[2], None)[1] if len(args) == 3 else 1
    start = _affine(args[0], None)[1] if len(args) >= 2 else 0
    stop = _affine(args[1], None)[1] if len(args) >= 2 else None
    if step is None or step == 0:
        return None, None, None
    return (True, start, None) if step > 0 else (False, None, None if stop is None else stop + 1)


def _assigned_in(loop, name):
    return any(isinstance(s, (Assign, For)) and s.target == name for s in walk(loop.body))


def _fresh_around(places, loop, array, bound):
    """Every loop around `loop` binds `array` to a new array inside it, before `loop` on
    every way there, so each run of `loop` writes into an array of its own."""
    for o in places.loops[id(loop)]:
        inside = [s for s in walk(o.body) if isinstance(s, Assign) and s.target == array]
        if not any(bound.get(id(s)) and _fresh(s, bound) and places.runs_before(s, loop) for s in inside):
            return False
    return True


# ---- reads that copy: NumPy's advanced indexing ------------------------------------------
_BOOLEANS = {"lt", "le", "gt", "ge", "eq", "ne", "ge_strict", "le_strict", "not", "logical_and"}
# calls whose value is surely an array of at least one axis (or a list: an index sequence too)
_SEQUENCES = {"list", "arange", "linspace", "argsort", "stack", "concatenate", "array_list", "stack_list"}


class Copies:
    """Which reads `x[index]` surely copy rather than view x: where one index is an array of
    integers, a list or a boolean (NumPy's advanced indexing, `X[idx]`, `X[[0, 2]]`,
    `X[X > 0]`), the result is a new array, even for a 0-d index array. A name bound once is
    followed to its value; a parameter stated to have an axis (`idx: Int[np.ndarray, "k"]`)
    is an array. An index that may be a number (an unannotated parameter) may view x."""

    def __init__(self, fn, module=None):
        counts, self.defs = {}, {}
        for s in walk(fn.body):
            if isinstance(s, (Assign, For)):
                counts[s.target] = counts.get(s.target, 0) + 1
                if isinstance(s, Assign):
                    self.defs[s.target] = s.expr
        # (bound by one statement, in a loop too: every trip binds it to a value of that kind)
        params = {p.name for p in fn.params}
        self.defs = {n: e for n, e in self.defs.items() if counts[n] == 1 and n not in params}
        assumed = getattr(module, "assumed_shapes", None) or {}
        shapes = {p.name: assumed.get(p.name, getattr(p, "shape", None)) for p in fn.params}
        self.axes = {n for n, shape in shapes.items() if shape and n not in counts}

    def __call__(self, e):
        """Whether `e` (a getitem, or a path into a structured parameter) surely makes a new array."""
        if isinstance(e, Call) and e.prim == "tree_get":  # `p['c'][idx]`: the path's last steps index
            return any(self._advanced(x, 0) for x in e.args[1:])
        if not (isinstance(e, Call) and e.prim == "getitem"):
            return False
        layout, index = dict(e.params).get("index", ()), list(e.args[1:])
        items = []
        for kind in layout:
            if kind == "i":
                items.append(index.pop(0))
            elif kind.startswith("s"):
                del index[:kind.count("1")]
        return any(self._advanced(x, 0) for x in items)

    def _advanced(self, e, depth):
        e = self._value(e, depth)
        if isinstance(e, Call) and e.prim in _BOOLEANS:
            return True
        if isinstance(e, Call) and e.prim == "invert":  # ~mask
            return self._advanced(e.args[0], depth + 1)
        if isinstance(e, Call) and e.prim == "getitem" and len(e.args) == 2 and depth < 8 and \
                self._advanced(e.args[0], depth + 1) and self._advanced(e.args[1], depth + 1):
            # an array picked by an array is an array (`acc[np.array([1, 0])]` of a slice of a
            # structured part: the path's step is `np.array(range(...))[idx]`; soak seed 38004 #1047)
            return True
        return self._axes(e, depth) or isinstance(e, Call) and e.prim in ("array", "zeros", "ones", "full", "eye")

    def _axes(self, e, depth):
        """Whether `e` is surely an array of at least one axis (or a list)."""
        e = self._value(e, depth)
        if isinstance(e, Var):
            return e.name in self.axes
        if not isinstance(e, Call) or depth > 20:
            return False
        if e.prim in _SEQUENCES:
            return True
        if e.prim == "getitem":  # idx[:b]: slices of one keep its axes
            layout = dict(e.params).get("index", ())
            return all(k != "i" for k in layout) and self._axes(e.args[0], depth + 1)
        if e.prim in TABLE and TABLE[e.prim].elementwise:  # idx + 1: broadcasting never drops an axis
            return any(self._axes(a, depth + 1) for a in e.args)
        return False

    def _value(self, e, depth):
        """A name bound once, followed to the value it was bound to."""
        while isinstance(e, Var) and e.name in self.defs and depth < 20:
            e, depth = self.defs[e.name], depth + 1
        return e
