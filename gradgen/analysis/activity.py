"""Stage 3, analyse: which parameters to differentiate, and which values are active.

As in Tapenade: a value is *varied* if it depends, through differentiable positions, on a
parameter being differentiated, and *useful* if the result depends on it the same way.
Only values that are both (active) get adjoints. Differentiable positions are the inputs
a primitive has a rule for, and both branches of a conditional expression; comparisons,
piecewise-constant functions (floor, round, ...), branch conditions and integer positions
(int(), range(), ...) carry no derivative.

Straight-line code is one walk each way. A loop is walked until its sets stop growing
(values flow from one iteration to the next); the sets only grow, so that ends after at
most as many rounds as the loop has variables, and in practice after two.

Forward mode asks the same question of other statements (`varied`): which names depend on
a seed, the parameters a jvp or hvp differentiates, over a function's statements or over a
gradient's own (forward and backward pass, where values also travel through Save/Restore
stacks and additions into arrays). A value gets a tangent there if any argument of a
primitive that has one carries it (gradgen.rules.tangents decides what it is).
"""

from __future__ import annotations

from dataclasses import dataclass

from gradgen.errors import CompileError, NoRule
from gradgen.ir.nodes import (
    Assign, Call, Cond, For, If, IndexAdd, Restore, Save, Var, While, expressions, is_draw, subexpressions, variables,
    walk
)
from gradgen.rules.table import TABLE
from gradgen.rules.tangents import no_tangent


@dataclass
class Activity:
    wrt: list  # parameter names, in parameter order
    active: set  # names (parameters and SSA values) that get adjoints


def diff_vars(expr, out=None):
    """Names in differentiable positions of `expr` (the ones a derivative flows to)."""
    out = set() if out is None else out
    out.update(e.name for e in subexpressions(expr, _differentiable) if isinstance(e, Var))
    return out


def _differentiable(e):
    """The arguments a derivative flows to: those a smooth rule has, a conditional's arms, and
    (when in doubt, active) every variable an expression kept as written reads."""
    if isinstance(e, Call):
        if e.prim == "verbatim":
            measured = dict(e.params)["measured"]
            return [a for a in e.args if a.name not in measured]
        prim = TABLE[e.prim]
        return [a for i, a in enumerate(e.args) if _has_rule(prim, i)] if prim.kind == "smooth" else ()
    return (e.body, e.orelse) if isinstance(e, Cond) else ()


def _has_rule(prim, i):
    if prim.vjp is None:
        return False
    return prim.vjp[0](i) is not None if prim.arity is None else prim.vjp[i] is not None


def choose_wrt(fn, wrt):
    """The parameters of `fn` to differentiate: those named in `wrt`, or the default.

    Default (DEFAULT_WRT): the first parameter, or all of them when every parameter has a
    number default, as jax.grad and scipy's `jac(x, *args)` expect (`f(x, X, y)`: x) and as
    the seed lesson means (`loss(w1=0.5, ..., b2=0.0)`: all five). Never a parameter that
    cannot be differentiated: one used only where no derivative exists, a count, a function,
    a random state, keyword-only data (after `*`: X, y). `wrt=("all",)`: every parameter but
    those; an unused parameter stays in (its gradient is an exact zero).
    """
    left_out = left_out_parameters(fn, wrt)
    return [p.name for p in fn.params if p.name not in left_out]


def left_out_parameters(fn, wrt):
    """{parameter: why it is not differentiated}, in parameter order: what `compile` prints,
    so that a surprising default is seen at once."""
    names = [p.name for p in fn.params]
    if wrt is not None and tuple(wrt) != ALL:  # each name belongs to a selected function (the caller checks)
        return {n: "not named in --wrt" for n in names if n not in set(wrt)}
    why = _not_differentiable(fn, names)
    if wrt is None:
        candidates = [p for p in fn.params if p.name not in why]
        if not all(_number_default(p) for p in candidates):
            why.update({p.name: NOT_FIRST for p in candidates[1:]})
    return {n: why[n] for n in names if n in why}


ALL = ("all",)  # `--wrt all`, `wrt="all"`: every parameter that can be differentiated
DEFAULT_WRT = "the first parameter, or all of them when every parameter has a number default"
NOT_FIRST = "the default is the first parameter: --wrt names others, --wrt all takes every one"
NO_DERIVATIVE = "used only where no derivative exists (comparisons, floor, ...)"


def _number_default(p):
    return p.has_default and isinstance(p.default, (int, float)) and not isinstance(p.default, bool)


def _not_differentiable(fn, names):
    """{parameter: why no derivative can be taken with respect to it}."""
    used, used_diff, drawn_from, sizes, seeds = set(), set(), set(), set(), set()
    for expr, differentiable in _all_expressions(fn):
        used |= {v.name for v in variables(expr)}
        if is_draw(expr):
            drawn_from |= {v.name for v in variables(expr)}
        seeds |= {v.name for e in subexpressions(expr) if _seeds(e) for v in variables(e)}
        sizes |= _sizes(expr)
        if differentiable:
            used_diff.update(e.name for e in subexpressions(expr, _differentiable_unless_seeded) if isinstance(e, Var))
    data = {p.name for p in fn.params if p.keyword_only}
    data_defaults = {p.name: p.default for p in fn.params
                     if p.has_default and not p.function and not isinstance(p.default, (int, float))}
    functions = {p.name: p.function for p in fn.params if p.function}
    counts = _integer_parameters(fn, names)
    why = {}
    for n in names:
        if n in functions:
            why[n] = "a function: the gradient is compiled for its default"
        elif n in data:
            why[n] = "keyword-only data"
        elif n in data_defaults:
            why[n] = f"its default is {data_defaults[n]!r}, not a number: data"
        elif n in counts:
            why[n] = "a count or an index: it reaches range(), int() or an index"
        elif n in used and n not in used_diff and n in seeds and n not in drawn_from:
            why[n] = "a seed: it makes a random generator, and a draw has no derivative"
        elif n not in used_diff and (n in used and n in drawn_from | seeds or n in fn.drawn_from):
            why[n] = "used only in a random draw, which has no derivative"  # (drawn_from: a folded branch too)
        elif n in used and n not in used_diff and n in sizes:
            why[n] = "a size: it gives the shape of an array the function makes (np.zeros, np.eye, ...)"
        elif n in used and n not in used_diff:
            why[n] = NO_DERIVATIVE
    return why


# a random generator made as written from a seed: no derivative reaches the seed, whatever draws
_SEEDED = ("np.random.default_rng(", "np.random.RandomState(", "np.random.Generator(", "np.random.SeedSequence(",
           "np.random.PCG64(")


def _seeds(e):
    """Whether `e` makes a random generator from a seed, kept as written."""
    return isinstance(e, Call) and e.prim == "verbatim" and str(dict(e.params)["text"]).startswith(_SEEDED)


def _differentiable_unless_seeded(e):
    return () if _seeds(e) else _differentiable(e)


_MADE = {"zeros", "ones", "eye", "full"}  # arrays made of a shape, their first argument


def _sizes(expr):
    """The names an expression makes an array's shape of (`np.eye(n)`, `np.zeros((n, d))`)."""
    found = set()
    for e in subexpressions(expr):
        if isinstance(e, Call) and e.prim in _MADE and e.args:
            shape = e.args[0]
            parts = shape.args if isinstance(shape, Call) and shape.prim == "tuple" else (shape,)
            found |= {a.name for a in parts if isinstance(a, Var)}
    return found


def _integer_parameters(fn, names):
    """Parameters whose values flow into an integer position (a range bound, int(), ...):
    counts and indices, which the default leaves out rather than refuse."""
    origins = {n: {n} for n in names}

    def flow(stmts):
        for stmt in stmts:
            if isinstance(stmt, Assign):
                found = set()
                for v in diff_vars(stmt.expr):
                    found |= origins.get(v, set())
                if found - origins.get(stmt.target, set()):
                    origins[stmt.target] = origins.get(stmt.target, set()) | found
            elif isinstance(stmt, If):
                flow(stmt.body)
                flow(stmt.orelse)
            elif isinstance(stmt, (For, While)):
                before = None
                while before != sum(map(len, origins.values())):
                    before = sum(map(len, origins.values()))
                    flow(stmt.body)

    flow(fn.body)
    counts = set()
    for stmt in walk(fn.body):
        for expr in expressions(stmt):
            for positions in _integer_positions(expr):
                for arg in positions:
                    for v in diff_vars(arg):
                        counts |= origins.get(v, set())
    return counts


# the arguments of a read or write that are its index (`x[i]`, `x[i] = v`, `params[i][j]`)
_INDEXES = {"getitem": 1, "list_get": 1, "tree_get": 1, "setitem": 2}


def _integer_positions(expr):
    """The arguments in integer positions: of int(), range(), len(), ...; and indices."""
    for e in subexpressions(expr):
        if isinstance(e, Call):
            if TABLE[e.prim].kind == "integer":
                yield e.args
            elif e.prim in _INDEXES:
                yield e.args[_INDEXES[e.prim]:]


def _all_expressions(fn):
    """(expression, whether a derivative can flow through it): conditions and ranges cannot."""
    for stmt in walk(fn.body):
        for expr in expressions(stmt):
            yield expr, isinstance(stmt, Assign)
    yield fn.result, True


def analyse(fn, wrt, module) -> Activity:
    """Varied forward, useful backward, active = both; refuse integer uses of varied values."""
    origin = {w: w for w in wrt}  # varied name -> the parameter it depends on
    _varied(fn.body, origin)
    useful = diff_vars(fn.result)
    _useful(fn.body, useful)
    _refuse_kept_in_order(fn.body, {w: w for w in wrt}, useful, fn, module)
    for stmt in walk(fn.body):
        if isinstance(stmt, Assign) and stmt.target in useful:
            _refuse_integer_uses(stmt.expr, origin, module)
        elif isinstance(stmt, (For, While, If)):
            _refuse_integer_uses(expressions(stmt)[0], origin, module)
    return Activity(list(wrt), {n for n in useful if n in origin})


def add_named(act, named):
    """The activity after gradgen.transform.cse named parts of loop statements (`(name, value,
    target)` each; `h = np.tanh(z)` split out of `hs.append(np.tanh(z))`), without analysing
    the function again: a part is active where its statement's target is and it reads an
    active name where a derivative flows."""
    for name, value, target in named:
        if target in act.active and not act.active.isdisjoint(diff_vars(value)):
            act.active.add(name)


def _varied(stmts, origin):
    """Forward: a target is varied if a varied name flows into it (to a fixed point in loops)."""
    for stmt in stmts:
        if isinstance(stmt, Assign):
            for name in sorted(diff_vars(stmt.expr)):
                if name in origin:
                    origin.setdefault(stmt.target, origin[name])
                    break
        elif isinstance(stmt, If):
            _varied(stmt.body, origin)
            _varied(stmt.orelse, origin)
        elif isinstance(stmt, (For, While)):
            size = -1
            while size != len(origin):
                size = len(origin)
                _varied(stmt.body, origin)


def _useful(stmts, useful):
    """Backward: what a useful target reads differentiably is useful (fixed point in loops)."""
    for stmt in reversed(stmts):
        if isinstance(stmt, Assign):
            if stmt.target in useful:
                diff_vars(stmt.expr, useful)
        elif isinstance(stmt, If):
            _useful(stmt.body, useful)
            _useful(stmt.orelse, useful)
        elif isinstance(stmt, (For, While)):
            size = -1
            while size != len(useful):
                size = len(useful)
                _useful(stmt.body, useful)


def _refuse_integer_uses(expr, origin, module):
    for e in subexpressions(expr):
        if isinstance(e, Call):
            if TABLE[e.prim].kind == "integer":
                _refuse(e, origin, module)
            elif e.prim == "getitem":
                _refuse(Call("index", e.args[1:], loc=e.loc), origin, module)
            elif e.prim == "setitem":
                _refuse(Call("index", e.args[2:], loc=e.loc), origin, module)


def _refuse_kept_in_order(stmts, origin, useful, fn, module):
    """_refuse_kept_as_written at each statement, with what is varied there: a name a later
    loop overwrites with a varied value is not varied before it (`y = f(X)`, then `for ...:
    X = h`: f reads the data X; fuzz seed 2015 #1428). A loop's body sees its fixed point."""
    for stmt in stmts:
        if isinstance(stmt, Assign):
            if stmt.target in useful:
                _refuse_kept_as_written(stmt.expr, origin, fn, module)
            _varied([stmt], origin)
        elif isinstance(stmt, If):
            _refuse_kept_in_order(stmt.body, origin, useful, fn, module)
            _refuse_kept_in_order(stmt.orelse, origin, useful, fn, module)
        elif isinstance(stmt, (For, While)):
            _varied([stmt], origin)
            _refuse_kept_in_order(stmt.body, origin, useful, fn, module)


def _refuse_kept_as_written(expr, origin, fn, module):
    """An expression kept as the source wrote it (gradgen.frontend.inactive) that the result
    depends on and a differentiated parameter reaches: it has no rule, so refuse it there."""
    for e in subexpressions(expr, _differentiable):
        if isinstance(e, Call) and e.prim == "verbatim":
            reached = next((v.name for v in _differentiable(e) if v.name in origin), None)
            if reached is not None:
                raise no_rule_error(e, fn.display.get(reached, reached), origin[reached], module)


def no_rule_error(call, name, param, module):
    """The error at an expression kept as written that a derivative would have to go through:
    the lowering's own where it was used wrongly (two values for one argument, an operator
    gradgen lacks), else "no derivative rule for ..."."""
    refusal = dict(call.params)["refusal"]
    if not isinstance(refusal, NoRule):
        return refusal
    line, col = call.loc or (None, None)
    if refusal.filename != module.filename:  # kept inside a helper imported from another file: located there
        return CompileError(no_rule_message(call, name, param), refusal.filename, line, col, refusal.source_line)
    return CompileError(no_rule_message(call, name, param), module.filename, line, col, module.line_text(line))


def no_rule_message(call, name, param):
    """'no derivative rule for np.cumprod on the value of 'c' (which depends on 'w')', with why
    the lowering did not know the expression when there is more to say."""
    params = dict(call.params)
    message = f"no derivative rule for '{params['what']}' on the value of '{name}'"
    if param is None:
        message += " (which a derivative reaches)"
    else:
        message += f" (which depends on '{param}')" if param != name else " (a differentiated parameter)"
    why = str(params["refusal"].args[0]) if params["refusal"].args else ""
    if why and not why.startswith(("unknown function", "gradgen has no derivative rule", "unknown name")):
        message += f"; {why}"
    return message


def varied(stmts, seeds):
    """Names whose value depends on a seed (a differentiated parameter) in `stmts`, for forward
    mode: the ones that get a tangent. One fixed point over every statement at once, loops and
    both sweeps of a gradient alike: a stack holds what was saved into it, a restore takes it."""
    out = set(seeds)
    changed = True
    while changed:
        changed = False
        for s in walk(stmts):
            new = varied_target(s, out)
            if new is not None and new not in out:
                out.add(new)
                changed = True
    return out


def varied_target(s, out):
    """The name statement `s` makes varied, given the varied names `out` (None: none)."""
    if isinstance(s, Assign) and carries(s.expr, out):
        return s.target
    if isinstance(s, For) and carries(s.iter, out):
        return s.target
    if isinstance(s, Save) and s.name in out:
        return s.stack
    if isinstance(s, Restore) and s.stack in out:
        return s.name
    if isinstance(s, IndexAdd) and carries(s.value, out):
        return s.target
    return None


def carries(expr, active):
    """Whether `expr` can carry a derivative from an active name (not through a comparison,
    floor, len, np.zeros_like: their results have none; nor a draw)."""
    if isinstance(expr, Var):
        return expr.name in active
    if isinstance(expr, Cond):
        return carries(expr.body, active) or carries(expr.orelse, active)
    if isinstance(expr, Call) and not is_draw(expr) and not no_tangent(expr.prim):
        return any(carries(a, active) for a in (_differentiable(expr) if expr.prim == "verbatim" else expr.args))
    return False


def _refuse(call, origin, module):

    reached = set()
    for arg in call.args:
        diff_vars(arg, reached)
    for v in sorted(reached):
        if v in origin:
            line, col = call.loc or (None, None)
            where = {"index": "an index"}.get(call.prim, f"{call.prim}()")
            raise CompileError(
                f"'{origin[v]}' is differentiated, but reaches {where}, which has no "
                f"derivative; leave it out with --wrt", module.filename, line, col, module.line_text(line))
