"""`return` inside loops, rewritten before a body is lowered (a pass over its AST).

A loop that returns keeps the value in a variable, sets a flag and breaks out of every
loop it is in; after the loop, `if returned: return <value>`, the code that followed
running only when it did not return:

    for i in range(n):                 returned = False
        x = step(x)                    for i in range(n):
        if converged(x):       -->         x = step(x)
            return x * x                   if converged(x):
    return x                                   f = x * x; returned = True; break
                                       if returned:
                                           return f
                                       return x

What is left, `break` and `return` inside `if`, gradgen lowers already
(gradgen.frontend.lower's `_close_returns` moves the code after such an `if` into its
other branch). A `while True:` that leaves only by returning needs no flag: after it,
`return f`. The new names are names the function never mentions.
"""

from __future__ import annotations

import ast

from gradgen.frontend.closures import own_nodes


RETURNS_A_LIST = "returning a list from inside a loop is not supported: return it after the loop ('break' out of it first)"


class _Lifting:
    """The names one loop's returns write, and where the function's own names are."""

    def __init__(self, value, flag, error):
        self.value, self.flag, self.error = value, flag, error

    def returns(self, stmts):
        """`stmts` of a loop body with each `return v` as `value = v; flag = True; break`, and
        each inner loop that returns followed by `if flag: break`."""
        out = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                if i + 1 < len(stmts):
                    raise self.error(stmts[i + 1], "code after 'return' is never run")
                return out + self.leave(stmt)
            if isinstance(stmt, ast.If) and _returns_in(stmt):
                stmt = ast.copy_location(ast.If(stmt.test, self.returns(stmt.body), self.returns(stmt.orelse)), stmt)
            elif isinstance(stmt, (ast.For, ast.While)) and _returns_in(stmt):
                stmt = _with_body(stmt, self.returns(stmt.body))
                out.append(stmt)
                stmt = _like(ast.If(_name(self.flag, stmt), [_leave(stmt)], []), stmt)
            out.append(stmt)
        return out

    def leave(self, stmt):
        if stmt.value is None:
            raise self.error(stmt, "'return' needs a value to differentiate")
        if isinstance(stmt.value, (ast.List, ast.ListComp)):
            raise self.error(stmt.value, RETURNS_A_LIST)
        if isinstance(stmt.value, ast.Tuple):
            raise self.error(stmt.value, "returning a tuple from inside a loop is not supported: return it "
                                         "after the loop ('break' out of it first)")
        keep = ast.copy_location(ast.Assign([_name(self.value, stmt, ast.Store())], stmt.value), stmt)  # (cites it)
        keep.return_value = True  # (a list it returns is said to be one: gradgen.frontend.lower)
        out = [keep]
        if self.flag is not None:
            out.append(_like(ast.Assign([_name(self.flag, stmt, ast.Store())], _like(ast.Constant(True), stmt)),
                             stmt))
        return out + [_leave(stmt)]


def lift(stmts, fnode, error):
    """`stmts` (a body of `fnode`) with no `return` inside a loop: see the module docstring.
    `error(node, message)` makes the located CompileError."""
    taken = {n.id for n in ast.walk(fnode) if isinstance(n, ast.Name)}
    taken |= {a.arg for a in ast.walk(fnode.args) if isinstance(a, ast.arg)} | {fnode.name}
    names = (fresh(fnode.name, taken - {fnode.name}), fresh("returned", taken))
    return _lift(stmts, names, error)


def _lift(stmts, names, error):
    out = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.While) and not stmt.orelse and _always_leaves(stmt.body) and not _continues(stmt.body) \
                and not _breaks(stmt.body):
            # every trip returns: the loop runs its body once at most, and is the `if` it is (a
            # value the body makes is no loop-carried value then: soak 53002 #13, a false refusal)
            once = stmt.body if _forever(stmt) else [ast.copy_location(ast.If(stmt.test, stmt.body, []), stmt)]
            return out + _lift(once + stmts[i + 1:], names, error)
        if isinstance(stmt, (ast.For, ast.While)) and _returns_in(stmt):
            lifted, after = _loop(stmt, names, error)
            rest = _lift(stmts[i + 1:], names, error)
            if isinstance(after, ast.Return) and rest:
                raise error(rest[0], "code after a 'while True:' loop that leaves only by 'return' is never run")
            return out + lifted + [after] + rest
        if isinstance(stmt, ast.If) and _returns_in(stmt):
            stmt = ast.copy_location(ast.If(stmt.test, _lift(stmt.body, names, error), _lift(stmt.orelse, names, error)),
                                     stmt)
        out.append(stmt)
    return out


def _loop(stmt, names, error):
    """([the flag set False, the loop with its returns as breaks], what follows the loop)."""
    value, flag = names
    if stmt.orelse:
        raise error(stmt, "'else' on a loop is not supported")
    only_returns = _forever(stmt) and not _breaks(stmt.body) and not _inner_returns(stmt.body)
    lifting = _Lifting(value, None if only_returns else flag, error)
    loop = _with_body(stmt, lifting.returns(stmt.body))
    first = next(n for n in own_nodes(stmt.body) if isinstance(n, ast.Return))
    result = ast.copy_location(ast.Return(_name(value, first)), first)  # (cites the first return)
    if only_returns:  # `while True:` left only by returning: after it, it has returned
        return [loop], result
    start = _like(ast.Assign([_name(flag, stmt, ast.Store())], _like(ast.Constant(False), stmt)), stmt)
    return [start, loop], _like(ast.If(_name(flag, stmt), [result], []), stmt)


def _returns_in(stmt):
    return any(isinstance(n, ast.Return) for n in own_nodes([stmt]))


def _forever(stmt):
    """`while True:` (or `while 1:`): a loop that ends only by leaving it."""
    return isinstance(stmt, ast.While) and isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)


def _always_leaves(stmts):
    """Whether every way through `stmts` ends in `return` or `raise` (a loop body that does
    runs once at most)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _always_leaves(last.body) and _always_leaves(last.orelse)


def _continues(stmts):
    """Whether a loop body has a `continue` of its own (not one of an inner loop's)."""
    for stmt in stmts:
        if isinstance(stmt, ast.Continue):
            return True
        if not isinstance(stmt, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                any(_continues(getattr(stmt, part, None) or []) for part in ("body", "orelse", "finalbody")):
            return True
    return False


def _breaks(stmts):
    """Whether a loop body has a `break` of its own (not one of an inner loop's)."""
    for stmt in stmts:
        if isinstance(stmt, ast.Break):
            return True
        if isinstance(stmt, ast.If) and (_breaks(stmt.body) or _breaks(stmt.orelse)):
            return True
    return False


def _inner_returns(stmts):
    """Whether a `return` of a loop body is inside an inner loop."""
    return any(isinstance(n, (ast.For, ast.While)) and _returns_in(n) for n in own_nodes(stmts))


def fresh(base, taken):
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def _leave(at):
    """The `break` a return became (marked: a loop gradgen unrolls says 'return' of it)."""
    node = _like(ast.Break(), at)
    node.returns = True
    return node


def _with_body(loop, body):
    """`loop` with another body (and where it was, all of it)."""
    if isinstance(loop, ast.For):
        return ast.copy_location(ast.For(loop.target, loop.iter, body, [], None), loop)
    return ast.copy_location(ast.While(loop.test, body, []), loop)


def _name(name, at, ctx=None):
    return _like(ast.Name(name, ctx or ast.Load()), at)


def _like(node, at):
    """A node made here, at the place of `at`; it cites itself (`returned = False`), not the
    user's text there (no end)."""
    node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = at.lineno, at.col_offset, None, None
    return node
