"""Stage 3, analyse: which parameters to differentiate, and which values are active.

As in Tapenade: a value is *varied* if it depends, through differentiable positions, on a
parameter being differentiated, and *useful* if the result depends on it the same way.
Only values that are both (active) get adjoints. Differentiable positions are the inputs
a primitive has a rule for, and both branches of a conditional expression; comparisons,
piecewise-constant functions (floor, round, ...) and integer positions (int(), ...) carry
no derivative. Each analysis is one walk over the body: linear in program size.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradgen.errors import CompileError
from gradgen.ir import Call, Cond, Var
from gradgen.primitives import TABLE


@dataclass
class Activity:
    wrt: list  # parameter names, in parameter order
    active: set  # names (parameters and SSA values) that get adjoints


def diff_vars(expr, out=None):
    """Names in differentiable positions of `expr` (the ones a derivative flows to)."""
    out = set() if out is None else out
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            out.add(e.name)
        elif isinstance(e, Call):
            prim = TABLE[e.prim]
            if prim.kind == "smooth":
                stack.extend(a for i, a in enumerate(e.args) if _has_rule(prim, i))
        elif isinstance(e, Cond):
            stack.extend((e.body, e.orelse))
    return out


def _has_rule(prim, i):
    return prim.vjp is not None and (prim.arity is None or prim.vjp[i] is not None)


def _all_vars(expr):
    from gradgen.ir import variables

    return {v.name for v in variables(expr)}


def choose_wrt(fn, wrt):
    """The parameters of `fn` to differentiate: those named in `wrt`, or the default.

    Default: every parameter except those used only where no derivative exists; an unused
    parameter stays in (its gradient is an exact zero).
    """
    names = [p.name for p in fn.params]
    if wrt is not None:  # each name belongs to some selected function (checked by the caller)
        return [n for n in names if n in set(wrt)]
    used, used_diff = set(), set()
    for stmt in fn.body:
        used |= _all_vars(stmt.expr)
        used_diff |= diff_vars(stmt.expr)
    used |= _all_vars(fn.result)
    used_diff |= diff_vars(fn.result)
    return [n for n in names if n in used_diff or n not in used]


def analyse(fn, wrt, module) -> Activity:
    """Varied forward, useful backward, active = both; refuse integer uses of varied values."""
    origin = {w: w for w in wrt}  # varied name -> the parameter it depends on
    for stmt in fn.body:
        for name in diff_vars(stmt.expr):
            if name in origin:
                origin[stmt.target] = origin[name]
                break
    useful = diff_vars(fn.result)
    for stmt in reversed(fn.body):
        if stmt.target in useful:
            diff_vars(stmt.expr, useful)
            _refuse_integer_uses(stmt.expr, origin, module)
    return Activity(list(wrt), {n for n in useful if n in origin})


def _refuse_integer_uses(expr, origin, module):
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Call):
            if TABLE[e.prim].kind == "integer":
                reached = set()
                for arg in e.args:
                    diff_vars(arg, reached)
                for v in sorted(reached):
                    if v in origin:
                        line, col = e.loc or (None, None)
                        raise CompileError(
                            f"'{origin[v]}' is differentiated, but reaches {e.prim}(), which has no "
                            f"derivative; leave it out with --wrt", module.filename, line, col,
                            module.line_text(line))
            stack.extend(e.args)
        elif isinstance(e, Cond):
            stack.extend((e.test, e.body, e.orelse))
