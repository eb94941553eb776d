"""`raise` in a branch: the checks people write around a loss, run as written.

`if loss not in ("l1", "l2"): raise ValueError(...)`, or an `else: raise` closing an
`if`/`elif` chain on a string option, decides nothing about the derivative: the branch that
raises never reaches the result. Before lowering, a branch that ends in `raise` becomes an
`if` of its own, and the other branch's statements follow it (`if t: ...; raise E` / `else:
B` is `if t: ...; raise E` then B, as Python runs it), so the names the surviving branch
binds are bound after it. The `raise` itself is kept in the forward pass as written, as an
`assert` is (gradgen.frontend.lower's effects). A `raise` anywhere else is kept the same way.
"""

from __future__ import annotations

import ast


def hoist(stmts):
    """`stmts` with each branch that ends in `raise` made an `if` of its own (at any depth
    of branches and loops), the other branch's statements after it."""
    out = []
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            body, orelse = hoist(stmt.body), hoist(stmt.orelse)
            if raises(body) and orelse:
                out.append(ast.copy_location(ast.If(stmt.test, body, []), stmt))
                out.extend(orelse)
                continue
            if raises(orelse) and body and not raises(body):
                test = ast.copy_location(negated(stmt.test), stmt.test)
                out.append(ast.copy_location(ast.If(test, orelse, []), stmt.orelse[0]))
                out.extend(body)
                continue
            stmt = ast.copy_location(ast.If(stmt.test, body, orelse), stmt)
        elif isinstance(stmt, (ast.For, ast.While)):
            copy = type(stmt)(**{f: getattr(stmt, f) for f in stmt._fields})
            copy.body = hoist(stmt.body)
            stmt = ast.copy_location(copy, stmt)
        out.append(stmt)
    return out


def raises(block):
    """Whether `block` surely ends by raising."""
    return bool(block) and isinstance(block[-1], ast.Raise)


# comparisons whose negation is another comparison, NaN or not (`not a < b` is not `a >= b`)
_OPPOSITE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
             ast.IsNot: ast.Is}


def negated(test):
    """`not test`, as a person writes it: `kind != "l1"` for `kind == "l1"`."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPPOSITE:
        return ast.Compare(test.left, [_OPPOSITE[type(test.ops[0])]()], test.comparators)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.UnaryOp(ast.Not(), test)
