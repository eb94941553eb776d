"""The backward pass of a call of a `@gradgen.custom_vjp` function: the user's rule, written
out statement by statement (gradgen/frontend/custom_calls.py read it from the source and
lowered it), with `g` the adjoint of the call's value and `out` the value itself, then each
contribution pushed into its input's adjoint as any expression's gradient is."""

from __future__ import annotations

import os

from dataclasses import replace

from gradgen.ir import simplify
from gradgen.ir.nodes import Assign, Call, Comment, Cond, Effect, For, If, Restore, Var, While, assigned
from gradgen.rules.table import CUSTOM_CALLS
from gradgen.transform.reverse.expression import push_into

CALLS = CUSTOM_CALLS


def backward(rev, stmt):
    """Backward code of `v = custom_vjp(value, *inputs)` (rev: gradgen.transform.reverse.backward's reverser):
    the rule's statements with `g` the adjoint of v and `out` v itself, then each
    contribution added to its input's adjoint."""
    v, call = stmt.target, stmt.expr
    rule = dict(call.params)["rule"]
    restore = [Restore(v, rev.stack(v), id(stmt))] if stmt.overwrites and not stmt.counter else []
    g = rev.state.get(v)
    if g is None or v not in rev.active:
        return restore
    del rev.state[v]  # used up: the value before this statement (in a loop, a branch) starts with none
    names = {rule.g: g, rule.out: Var(v)}
    pairs = []
    for arg, contribution in zip(call.args[1:], rule.contributions):
        if not simplify.is_zero(contribution):
            push_into(arg, substitute(contribution, names), (), rev.active, pairs, None, rev.arrays)
    body = []
    for name, contribution in pairs:
        body += rev.add(name, contribution)
    if not body:
        return restore
    # your rule reads g as an array of out's shape, never the 0.0 a loop or a branch may start it with
    shaped = rev.shaped(Var(v), g) if isinstance(g, Var) and g.name in rev.zeroed and v in rev.arrays else []
    statements = simplify.dead_code(substitute_all(rule.statements, names), simplify.names_read(body))
    custom = rule.custom
    where = f"{os.path.basename(custom.imported_from)}, " if custom.imported_from else ""  # (no machine's path)
    code = shaped + [Comment(f"custom rule {custom.rule_name} ({where}line {custom.rule.lineno})")] + statements + body
    rev.reads[id(stmt)] = simplify.names_read(code) - rev.adj_set - assigned(statements)
    return rev.cite(stmt, code) + restore


_FOLD = {"add": simplify.add, "sub": simplify.sub, "mul": simplify.mul, "div": simplify.div,
         "pow": simplify.power, "neg": simplify.neg}


def substitute(expr, names):
    """`expr` with each Var named in `names` replaced by its expression; arithmetic touched
    by a replacement is rebuilt by the folding constructors (`1 * x` is `x`)."""
    if isinstance(expr, Var):
        return names.get(expr.name, expr)
    if isinstance(expr, Cond):
        return Cond(substitute(expr.test, names), substitute(expr.body, names), substitute(expr.orelse, names))
    if not isinstance(expr, Call):
        return expr
    args = tuple(substitute(a, names) for a in expr.args)
    if all(new is old for new, old in zip(args, expr.args)):
        return expr
    if expr.prim in _FOLD and expr.ns == "op":
        return _FOLD[expr.prim](*args)
    return replace(expr, args=args)


def substitute_all(stmts, names):
    """The rule's statements with the placeholders replaced; a statement kept as text (a
    print) that reads one gets it assigned first."""
    out, kept_as_text = [], set()
    for s in stmts:
        if isinstance(s, Assign):
            s = replace(s, expr=substitute(s.expr, names))
        elif isinstance(s, If):
            s = replace(s, test=substitute(s.test, names), body=substitute_all(s.body, names),
                        orelse=substitute_all(s.orelse, names))
        elif isinstance(s, For):
            s = replace(s, iter=substitute(s.iter, names), body=substitute_all(s.body, names))
        elif isinstance(s, While):
            s = replace(s, test=substitute(s.test, names), body=substitute_all(s.body, names))
        elif isinstance(s, Effect):
            kept_as_text |= {v.name for v in s.reads if isinstance(v, Var)} & set(names)
        out.append(s)
    return [Assign(name, names[name]) for name in sorted(kept_as_text)] + out
