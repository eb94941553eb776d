"""Simplification: smart constructors that fold as they build, and passes over statements.

Rules in the primitive table are plain arithmetic on IR nodes; the constructors here make
that arithmetic read as a person would write it: no `* 1`, no `+ 0`, no `--x`, constants
folded (only where the folded number prints as short as it was written). Zero is symbolic:
a product with a zero factor is the zero, never `0.0 * ...`.

Forward statements lowered from the user's source are built directly, not through these,
so the user's code is emitted as written.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from gradgen.ir import nodes
from gradgen.ir.nodes import (
    Assign, Break, Call, Cond, Const, Continue, For, If, IndexAdd, Restore, Var, While, assigned, expressions,
    has_effect, is_draw, variables, walk
)


def _num(e):
    """The number a Const holds (bools excluded), else None."""
    if isinstance(e, Const) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return e.value
    return None


def is_zero(e) -> bool:
    return _num(e) == 0


def _is_one(e) -> bool:
    return _num(e) == 1


is_one = _is_one
number = _num


def _short(value):
    """Fold only to numbers that print short, so `1 / 3` stays readable."""
    return Const(value) if len(repr(value)) <= 10 else None


def _is_neg(e):
    return isinstance(e, Call) and e.prim == "neg"


# Primitives whose value is a bool (or an array of bools): a mask in a rule (`g * (lo <= x)`).
_BOOLEAN = {"lt", "le", "gt", "ge", "eq", "ne", "ge_strict", "le_strict", "and", "or", "not", "logical_and",
            "invert"}


def _is_bool(e):
    return isinstance(e, Call) and e.prim in _BOOLEAN


def _scaled_mask(sign, mask):
    """`1.0 * mask` / `-1.0 * mask`: a mask alone would be a bool gradient, and `-mask` is an
    error on NumPy bools."""
    return Call("mul", (Const(float(sign)), mask), "op")


def add(x, y):
    a, b = _num(x), _num(y)
    if a is not None and b is not None:
        return _short(a + b) or Call("add", (x, y), "op")
    if a == 0:
        return y
    if b == 0:
        return x
    if _is_neg(y):
        return sub(x, y.args[0])
    if negative_part(y) is not None:  # x + -3 * y is x - 3 * y
        return sub(x, negative_part(y))
    return Call("add", (x, y), "op")


def negative_part(e):
    """p where e is `-p` or a product led by a negative number (`-3 * y * z`: p is
    `3 * y * z`), else None: so `x + e` reads `x - p` and `d += e` reads `d -= p`."""
    if _is_neg(e):
        return e.args[0]
    if isinstance(e, Call) and e.prim in ("mul", "div"):
        first = _num(e.args[0])
        if first is not None and first < 0 and e.prim == "mul":
            return e.args[1] if first == -1 and type(first) is int else Call("mul", (Const(-first), e.args[1]), "op")
        inner = negative_part(e.args[0]) if isinstance(e.args[0], Call) and e.args[0].prim in ("mul", "div") else None
        return None if inner is None else Call(e.prim, (inner, e.args[1]), "op")
    return None


def sub(x, y):
    a, b = _num(x), _num(y)
    if a is not None and b is not None:
        return _short(a - b) or Call("sub", (x, y), "op")
    if b == 0:
        return x
    if a == 0:
        return neg(y)
    if _is_neg(y):
        return add(x, y.args[0])
    return Call("sub", (x, y), "op")


def mul(x, y):
    a, b = _num(x), _num(y)
    if a is not None and b is not None:
        return _short(a * b) or Call("mul", (x, y), "op")
    if a == 0 or b == 0:
        return Const(0)
    if a in (1, -1) and _is_bool(y):
        return _scaled_mask(a, y)
    if b in (1, -1) and _is_bool(x):
        return _scaled_mask(b, x)
    if a == 1:
        return y
    if b == 1:
        return x
    if a == -1:
        return neg(y)
    if b == -1:
        return neg(x)
    if _is_neg(x) and _is_neg(y):
        return mul(x.args[0], y.args[0])
    if _is_neg(x):  # signs move to the front, where they cancel or turn `+` into `-`
        return neg(mul(x.args[0], y))
    if _is_neg(y):
        return neg(mul(x, y.args[0]))
    return Call("mul", (x, y), "op")


def div(x, y):
    a, b = _num(x), _num(y)
    if a is not None and b not in (None, 0):
        return _short(a / b) or Call("div", (x, y), "op")
    if a == 0:
        return Const(0)
    if b == 1:
        return x
    if _is_neg(y):
        return neg(div(x, y.args[0]))
    if _is_neg(x):
        return neg(div(x.args[0], y))
    return Call("div", (x, y), "op")


def power(x, y):
    a, b = _num(x), _num(y)
    if a is not None and b is not None and not (a == 0 and b < 0):
        return _short(a**b) or Call("pow", (x, y), "op")
    if b == 1:
        return x
    if b == 0:
        return Const(1)
    return Call("pow", (x, y), "op")


def neg(x):
    a = _num(x)
    if a is not None:
        return Const(-a)
    if _is_neg(x):
        return x.args[0]
    if _is_bool(x):
        return _scaled_mask(-1, x)
    return Call("neg", (x,), "op")


def cond(test, body, orelse):
    """`body if test else orelse`, collapsing when both sides are the same."""
    if body == orelse:
        return body
    return Cond(test, body, orelse)


_NEGATED = {"eq": "ne", "ne": "eq"}  # not `x > y` is no `x <= y` when either is nan


def negate(test):
    """`not test`, written as the opposite comparison where that is the same (== and !=)."""
    if isinstance(test, Call) and test.prim in _NEGATED:
        return Call(_NEGATED[test.prim], test.args, test.ns, test.loc)
    if isinstance(test, Call) and test.prim == "not":
        return test.args[0]
    return Call("not", (test,), "op")


# --- passes over statement lists -------------------------------------------------------

def dead_code(stmts, live):
    """The statements of `stmts` that compute something in `live` (names needed after them).

    `live` grows to what is needed before `stmts` (conservatively: a definition inside control
    flow does not end a name's liveness). A loop is revisited until its live set is stable.
    """
    kept = []
    for stmt in reversed(stmts):
        if isinstance(stmt, Assign):
            # a draw runs even if its numbers are unused; `g = gs.pop()` shortens gs for a later pop
            if stmt.target in live or is_draw(stmt.expr) or _pops(stmt.expr, live):
                kept.append(stmt)
                live.update(v.name for v in variables(stmt.expr))
        elif isinstance(stmt, If):
            if _writes(stmt.body + stmt.orelse) & live or _leaves_iteration(stmt) or has_effect(stmt):
                body, orelse = dead_code(stmt.body, live), dead_code(stmt.orelse, live)
                if body or orelse:
                    kept.append(replace(stmt, body=body, orelse=orelse))
                    live.update(v.name for v in variables(stmt.test))
        elif isinstance(stmt, (For, While)):
            if _writes(stmt.body) & live or has_effect(stmt):
                live.update(v.name for e in expressions(stmt) for v in variables(e))
                size = -1
                while size != len(live):
                    size = len(live)
                    body = dead_code(stmt.body, live)
                kept.append(replace(stmt, body=body))
        else:
            kept.append(stmt)
            live.update(v.name for e in expressions(stmt) for v in variables(e))
    kept.reverse()
    return kept


def _pops(expr, live):
    """Whether `expr` pops from a list still needed (hvp over a gradient drops `df_dparts.pop()`
    whose value it does not need, and a later pop then took the wrong entry: soak seed 2003 #512)."""
    return isinstance(expr, Call) and expr.prim == "pop" and isinstance(expr.args[0], Var) and \
        expr.args[0].name in live


def _writes(stmts):
    """Names `stmts` assign, pop back or write into (`dx[i] += g`, `x = x_stack.pop()` in a
    backward loop keep the loop), and the lists they pop from (`g = df_dhs.pop()` under a
    test shortens df_dhs for the pop after it: an hvp dropped the branch, and its gradient
    then took the wrong entry: soak seed 53000 #488)."""
    return assigned(stmts) | {s.target for s in walk(stmts) if isinstance(s, IndexAdd)} | \
        {s.name for s in walk(stmts) if isinstance(s, Restore)} | \
        {s.expr.args[0].name for s in walk(stmts) if isinstance(s, Assign) and _pops(s.expr, {_popped(s.expr)})}


def _popped(expr):
    return expr.args[0].name if isinstance(expr, Call) and expr.prim == "pop" and expr.args and \
        isinstance(expr.args[0], Var) else None


def _leaves_iteration(stmt):
    return any(isinstance(s, (Break, Continue)) for s in walk(stmt.body + stmt.orelse))


def names_read(stmts):
    """Every name read by the expressions of `stmts`, nested statements included."""
    return {v.name for s in walk(stmts) for e in expressions(s) for v in variables(e)} | \
        {s.count for s in walk(stmts) if isinstance(s, For) and s.direction and s.count}


nodes.FOLD = sys.modules[__name__]  # `x + y` on IR nodes folds as `add(x, y)` does
