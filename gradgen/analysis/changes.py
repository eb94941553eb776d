"""Analysis: calls kept as written that change a variable in place.

A call outside the subset (gradgen.frontend.inactive) runs as the source wrote it, and some
calls change their arguments: `x.sort()`, `np.copyto(buf, X)`, a function of another library
given an array. The forward pass then computes with the old numbers and the backward pass
would read the new ones. This pass finds each such call and refuses it, located, where the
gradient reads the variable (or a view of it) as it was; elsewhere the call runs as written.
"""

from __future__ import annotations

import bisect
import types

from gradgen.errors import error_at
from gradgen.ir.nodes import Assign, Call, Effect, For, Var, While, expressions, subexpressions, variables, walk

# results that may share their first argument's memory
_VIEWS = {"getitem", "reshape", "T", "transpose", "ravel", "squeeze", "expand_dims", "broadcast_to", "flip", "pos"}


def refuse_calls_changing_what_the_gradient_reads(fn, active, needed, module):
    """A call kept as written (gradgen.frontend.inactive) that may change a variable in place
    (`x.sort()`, `np.copyto(buf, X)`, a function of another library given X): where the
    gradient reads that variable's numbers (or a view's) from a statement before it or in the
    same loop, or differentiates it, the backward pass (which reads `needed`) would read
    changed numbers. Refused,
    with the copy to work on; a call that changes data nobody differentiates runs as written."""
    order, loops = _positions(fn.body)
    reads = {}
    for t in walk(fn.body):
        if isinstance(t, Assign) and t.target in active:
            for name in {v.name for v in variables(t.expr)}:
                reads.setdefault(name, []).append(order[id(t)])
    views = _views_of_names(fn)
    for t in walk(fn.body):
        for changed, (line, col), what in _changes_in_place(t):
            at = order[id(t)]
            around = [span for span in loops if span[0] <= at < span[1]]
            for name in changed:
                sharers = views.get(name, {name})
                places = sorted(p for n in sharers for p in reads.get(n, []))
                if sharers & active or sharers & needed and _any_in(places, 0, at, around):
                    shown = fn.display.get(name, name)
                    where = types.SimpleNamespace(lineno=line, col_offset=(col or 1) - 1)
                    raise error_at(where, f"'{what}' may change '{shown}' in place, and the gradient reads "
                                          f"'{shown}' as it was: work on a copy ('{shown} = {shown}.copy()' first)",
                                   module)


def _changes_in_place(t):
    """(variables, (line, col), what) for each call in statement `t` that may change some."""
    if isinstance(t, Effect) and t.changes:
        yield t.changes, (t.line, t.col), " ".join(t.source.split()) if t.source else t.text
    for e in expressions(t) if not isinstance(t, Effect) else ():
        for c in subexpressions(e):
            if isinstance(c, Call) and c.prim == "verbatim" and dict(c.params)["mutated"]:
                params = dict(c.params)
                yield params["mutated"], c.loc or (t.line, 1), params["what"]


def _views_of_names(fn):
    """Name -> the names that may share its array (itself, and views made of it by
    getitem, reshape, .T, ...), followed through chains of views."""
    made = {}
    for t in walk(fn.body):
        if isinstance(t, Assign) and isinstance(t.expr, Call) and t.expr.prim in _VIEWS and t.expr.args \
                and isinstance(t.expr.args[0], Var):
            made.setdefault(t.expr.args[0].name, set()).add(t.target)
    out = {}
    for name in made:
        seen, todo = {name}, [name]
        while todo:
            for v in made.get(todo.pop(), ()):
                if v not in seen:
                    seen.add(v)
                    todo.append(v)
        out[name] = seen
    return out


def _positions(stmts):
    """Each statement's place in source order, and the (start, end) places of each loop."""
    order, loops = {}, []
    for s in walk(stmts):
        order[id(s)] = len(order)
    for s in walk(stmts):
        if isinstance(s, (For, While)):
            inside = [order[id(t)] for t in walk(s.body)]
            loops.append((order[id(s)], max(inside, default=order[id(s)]) + 1))
    return order, loops


def _any_in(places, lo, hi, spans):
    """Is one of the sorted `places` in [lo, hi], or inside one of the loop `spans` (there,
    every place comes again on the next iteration)?"""
    ranges = [(lo, hi)] + [(a, b - 1) for a, b in spans]
    return any(bisect.bisect_left(places, a) < len(places) and places[bisect.bisect_left(places, a)] <= b
               for a, b in ranges)
