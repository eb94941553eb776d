"""Which names are certainly bound where, in a generated function (its Python text).

numba types each variable once, so an adjoint that starts or restarts at a bare `0.0` and
later holds an array is respelled as zeros of a value of that type (gradgen/codegen/numba_spell.py).
That value must exist where the zero is made: `np.zeros_like(df_dr)` in a branch the adjoint
was never bound before (the first trip of a loop, the `else` of an `if` that binds it) reads a
name Python has not bound. This is the compiler's definite-assignment rule: a name is bound
after an `if` when both branches bind it (a branch that leaves, by `return`, `break`,
`continue` or `raise`, binds everything), after a loop only when it was bound before it (a
loop may run no trip), inside a loop body by what the body binds before the statement.
"""

from __future__ import annotations

import ast

_LEAVES = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def bound_before(fdef):
    """{id(statement): frozenset of the names certainly bound when it starts}."""
    at = {}
    params = fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs
    params += [a for a in (fdef.args.vararg, fdef.args.kwarg) if a is not None]
    _block(fdef.body, frozenset(a.arg for a in params), at)
    return at


def _block(stmts, bound, at):
    """The names bound after `stmts` (None: they never fall through)."""
    for s in stmts:
        at[id(s)] = bound
        bound = _statement(s, bound, at)
        if bound is None:
            return None
    return bound


def _statement(s, bound, at):
    if isinstance(s, _LEAVES):
        return None
    if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        return bound | _names(targets)
    if isinstance(s, ast.If):
        then, orelse = _block(s.body, bound, at), _block(s.orelse, bound, at)
        if then is None or orelse is None:
            return orelse if then is None else then
        return then & orelse
    if isinstance(s, (ast.For, ast.While)):
        inside = bound | _names([s.target]) if isinstance(s, ast.For) else bound
        _block(s.body, inside, at)
        _block(s.orelse, bound, at)
        return bound  # (a loop may run no trip, or leave before a binding)
    if isinstance(s, ast.With):
        return _block(s.body, bound | _names([i.optional_vars for i in s.items if i.optional_vars]), at)
    if isinstance(s, ast.Try):
        for part in [s.body, s.orelse, s.finalbody] + [h.body for h in s.handlers]:
            _block(part, bound, at)
        return bound
    if isinstance(s, (ast.FunctionDef, ast.ClassDef)):
        return bound | {s.name}
    return bound


def _names(targets):
    return frozenset(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
