"""Simplification: smart constructors that fold as they build, and passes over statements.

Rules in the primitive table are plain arithmetic on IR nodes; the constructors here make
that arithmetic read as a person would write it: no `* 1`, no `+ 0`, no `--x`, constants
folded (only where the folded number prints as short as it was written). Zero is symbolic:
a product with a zero factor is the zero, never `0.0 * ...`.

Forward statements lowered from the user's source are built directly, not through these,
so the user's code is emitted as written.
"""

from __future__ import annotations

from gradgen.ir import Assign, Call, Cond, Const, Var, variables


def _num(e):
    """The number a Const holds (bools excluded), else None."""
    if isinstance(e, Const) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return e.value
    return None


def is_zero(e) -> bool:
    return _num(e) == 0


def _is_one(e) -> bool:
    return _num(e) == 1


def _short(value):
    """Fold only to numbers that print short, so `1 / 3` stays readable."""
    return Const(value) if len(repr(value)) <= 10 else None


def _is_neg(e):
    return isinstance(e, Call) and e.prim == "neg"


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
    return Call("add", (x, y), "op")


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
    return Call("neg", (x,), "op")


def cond(test, body, orelse):
    """`body if test else orelse`, collapsing when both sides are the same."""
    if body == orelse:
        return body
    return Cond(test, body, orelse)


_NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}


def negate(test):
    """`not test`, written as the opposite comparison where there is one."""
    if isinstance(test, Call) and test.prim in _NEGATED:
        return Call(_NEGATED[test.prim], test.args, test.ns, test.loc)
    if isinstance(test, Call) and test.prim == "not":
        return test.args[0]
    return Call("not", (test,), "op")


# --- passes over statement lists -------------------------------------------------------

def dead_code(body, needed):
    """Keep the forward statements whose values `needed` (a set of names) depends on.

    One backward walk: linear in the size of the body.
    """
    needed = set(needed)
    kept = []
    for stmt in reversed(body):
        if isinstance(stmt, Assign) and stmt.target not in needed:
            continue
        kept.append(stmt)
        if isinstance(stmt, Assign):
            needed.update(v.name for v in variables(stmt.expr))
    kept.reverse()
    return kept


def names_read(stmts):
    """Every name read by the expressions of `stmts`."""
    return {v.name for s in stmts if isinstance(s, Assign) for v in variables(s.expr)}
