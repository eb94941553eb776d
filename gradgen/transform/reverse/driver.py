"""The reverse pass of one function, from its lowered IR to the statements of its gradient:
record the decisions control flow takes, analyse what is active and what may be an array
(gradgen.analysis), write the backward pass statement by statement in reverse
(gradgen/transform/reverse/backward.py), refuse an in-place update that would change what
the gradient reads, put the saves the backward pass pops into the forward pass, and compute
each forward value once (gradgen/transform/cse.py). What it returns is IR (`Reversed`):
gradgen.api writes it out with the emitter, which no transform holds."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gradgen.analysis import activity, aliasing, changes
from gradgen.analysis import arrays as array_facts
from gradgen.analysis import sameshape
from gradgen.errors import CompileError
from gradgen.ir import simplify
from gradgen.ir.nodes import (
    Assign, Call, Const, For, If, IndexAdd, Init, Save, Spelled, Var, While, map_expressions, variables, walk
)
from gradgen.transform import cse
from gradgen.transform.reverse import backward as reverse


@dataclass
class Reversed:
    """A function's reverse pass, before it is written out: what the gradient, the vjp and
    the hvp (forward mode over these statements) are made of."""

    chosen: list
    left_out: dict
    forward_grad: list
    forward_value: list
    backward: list
    grads: list
    value: object  # the IR of the value the function returns
    shapes: dict = field(default_factory=dict)  # the array shapes it assumes (static_shapes), by parameter
    shapes_from: str = ""  # where they were stated
    arrays: frozenset = frozenset()  # the names that may hold arrays, with those the sharing made
    numbers_checked: dict = field(default_factory=dict)  # parameters the entry check says are numbers
    adjoint_of: dict = field(default_factory=dict)  # each adjoint's name -> the variable it is the gradient of


def _shared_updates_allowed(fn, module, seed):
    """The values that may be array objects, and whether the in-place updates (`c += e`)
    were refused only because a parameter with a number default (`c=1.4`) might be an array
    another name shares: then they are compiled for numbers, and the generated function
    checks on entry that those parameters are numbers, rather than refusing code that is
    right for what the defaults say."""
    objects = array_facts.array_values(fn, module, seed is not None, mutable=True)
    try:
        aliasing.refuse_shared_updates(fn, objects, module)
        return objects, False
    except CompileError:
        if not any(array_facts.number_default(p) for p in fn.params):
            raise
    objects = array_facts.array_values(fn, module, seed is not None, mutable=True, defaults_numbers=True)
    aliasing.refuse_shared_updates(fn, objects, module, True)
    return objects, True


def reverse_parts(module, fn, fnamer, wrt, seed=None):
    """Reverse `fn` (its body is rewritten in place): the statements of the gradient
    function and of the value-and-gradient function, and the gradient expressions. `seed`:
    the gradient of the result (1 for a gradient, the caller's cotangent for a vjp). The
    result is IR only: the caller (gradgen.api) writes it out."""
    fn.body = reverse.record_decisions(_pairs_passed_whole(fn.body), fnamer)
    left_out = activity.left_out_parameters(fn, wrt)
    chosen = [p.name for p in fn.params if p.name not in left_out]
    act = activity.analyse(fn, chosen, module)
    arrays = array_facts.array_values(fn, module, result_may_be_array=seed is not None)
    named = cse.name_loop_values(fn, fnamer, act.active, arrays)  # (what the backward sweep would compute again)
    activity.add_named(act, named)
    objects, numbers = _shared_updates_allowed(fn, module, seed)
    arrays = sameshape.with_shapes(fn, arrays, objects, module, getattr(module, "assumed_shapes", None))
    adjoints = reverse.backward(fn, act, fnamer, fn.result_name, arrays, seed)
    needed = aliasing.numbers_read(adjoints.statements) | set(adjoints.targets.values())
    aliasing.refuse_changes_the_gradient_reads(fn, objects, module, needed, adjoints.saved, numbers)
    changes.refuse_calls_changing_what_the_gradient_reads(fn, act.active, needed, module)
    # the number defaults the in-place updates rely on: checked on entry
    numbers_checked = {p.name: () for p in fn.params if array_facts.number_default(p)} if numbers else {}
    structured = {p.name for p in fn.params if p.structured}
    grads = [_gradient(adjoints.get(p), p, arrays, p in structured, adjoints.zeroed) for p in chosen]
    backward = sameshape.measured_elsewhere(fn.body, adjoints.statements, grads, arrays,
                                            set(adjoints.targets.values()))
    needed = simplify.names_read(backward) | {v.name for g in grads for v in variables(g)}
    needed |= set(adjoints.targets.values())  # what the backward pass pops, the forward pass must push
    params = [p.name for p in fn.params]
    forward_value = _with_saves(
        simplify.dead_code(fn.body, needed | {v.name for v in variables(fn.result)}), adjoints, params)
    value = fn.result
    restored = {adjoints.stacks_var(i) for i in adjoints.saved | adjoints.after}
    if any(v.name in restored for v in variables(fn.result)):
        # the backward pass pops earlier values back into the result's variables: keep it
        kept = fnamer.define("value")
        forward_value = forward_value + [Assign(kept, fn.result)]
        value = Var(kept)
    forward_value, backward = _shared(fn, forward_value, backward, fnamer, arrays)
    # the gradient alone: the same statements, less what only the value needs
    needed = simplify.names_read(backward) | {v.name for g in grads for v in variables(g)}
    forward_grad = simplify.dead_code(forward_value, needed | set(adjoints.targets.values()))
    stated = {name: shape for name, shape in arrays.static.stated.items() if shape != ()}
    where = "as --shapes gives them" if getattr(module, "assumed_shapes", None) else "as annotated"
    return Reversed(chosen, left_out, forward_grad, forward_value, backward, grads, value, stated, where,
                    frozenset(arrays), numbers_checked, adjoints.adjoint_of)


# primitives whose result is a tuple of this many items, passed whole to another (cho_solve)
_PAIRS = {"cho_factor": 2, "slogdet": 2}


def _pairs_passed_whole(stmts):
    """`c, low = cho_factor(A)` then `cho_solve((c, low), b)`: the tuple rebuilt from every
    item of the pair, in order, is the pair itself (`cho_solve(c_low, b)`), which carries
    the derivative (a tuple written out carries none: it is a shape or a flag)."""
    counts, defs = {}, {}
    for s in walk(stmts):
        if isinstance(s, (Assign, For)):
            counts[s.target] = counts.get(s.target, 0) + 1
            if isinstance(s, Assign):
                defs[s.target] = s.expr
    once = {n: e for n, e in defs.items() if counts[n] == 1}

    def item(e, k, size):
        """The name of the pair of `size` items `e` is item k of (through a name bound once)."""
        e = once.get(e.name, e) if isinstance(e, Var) else e
        if not (isinstance(e, Call) and e.prim == "getitem" and dict(e.params).get("index") == ("i",)
                and e.args[1] == Const(k) and isinstance(e.args[0], Var)):
            return None
        pair = once.get(e.args[0].name)
        return e.args[0].name if isinstance(pair, Call) and _PAIRS.get(pair.prim) == size else None

    def whole(e):
        if isinstance(e, Call) and e.prim == "tuple" and e.args:
            names = {item(a, k, len(e.args)) for k, a in enumerate(e.args)}
            if len(names) == 1 and None not in names:
                return Var(names.pop())
        return e

    return map_expressions(stmts, whole)


def _shared(fn, forward, backward, fnamer, arrays):
    """Every forward value computed once (gradgen.transform.cse), in the function the value and the
    gradient come from; a forward statement in place (`x[i] = e`, `x += e`) keeps every
    statement's own name from standing for its value later."""
    adjoint_names = frozenset(s.target for s in walk(backward) if isinstance(s, (Assign, IndexAdd)))
    in_place = any(isinstance(s, Assign) and (s.augmented or (isinstance(s.expr, Call) and s.expr.prim in
                                                              ("setitem", "append"))) for s in walk(fn.body))
    return cse.share(forward, backward, fnamer, arrays, adjoint_names, targets_stay=not in_place)


def _with_saves(stmts, adjoints, params):
    """The forward statements with each save the backward pass needs: `x_stack.append(x)`
    before an overwrite (or after a loop trip's value is made: gradgen.transform.reverse.tape),
    and the lists (and not-yet-bound names) set up before the outermost statement that holds them."""
    out, ready, bound, unbound = [], set(), set(params), []
    for stmt in stmts:
        if isinstance(stmt, (If, For, While)) or id(stmt) in adjoints.saved:  # (a write `x[i] = e` saves x)
            saved = [(s.target, id(s) in adjoints.saved) for s in walk([stmt])
                     if id(s) in adjoints.saved | adjoints.after]
            for v, before in saved:
                if v not in ready:
                    out.append(Init(adjoints.stacks[v], "[]"))
                    ready.add(v)
                if before and v not in bound and v not in unbound:
                    unbound.append(v)
            *saves, stmt = _insert_saves([stmt], adjoints)
            out += saves
        out.append(stmt)
        if isinstance(stmt, Assign):  # only a plain statement surely binds its name
            bound.add(stmt.target)
    # a name first bound inside a branch or a loop may be unbound when it is first saved:
    # it starts as None, at the top, where it cannot hide a value yet
    return [Init(v, "None") for v in unbound] + out


def _insert_saves(stmts, adjoints):
    out = []
    for s in stmts:
        if id(s) in adjoints.saved:
            if isinstance(s.expr, Call) and s.expr.prim == "setitem":
                out.append(Save(s.target, adjoints.stacks[s.target], copy=True))  # the write stays in place
            else:
                out.append(Save(s.target, adjoints.stacks[s.target]))
                s = replace(s, augmented=False)  # `x += e` on a 0-d array would change the saved value too
        if isinstance(s, If):
            s = replace(s, body=_insert_saves(s.body, adjoints), orelse=_insert_saves(s.orelse, adjoints))
        elif isinstance(s, (For, While)):
            s = replace(s, body=_insert_saves(s.body, adjoints))
        out.append(s)
        if id(s) in adjoints.after:  # the value this loop trip made (never in place: see tape.trip_values)
            out.append(Save(s.target, adjoints.stacks[s.target]))
    return out


def _gradient(adjoint, param, arrays, structured=False, zeroed=frozenset()):
    """The gradient returned for `param`: its adjoint (of its shape where it may be the 0.0 a
    branch or a loop started it with), or an exact zero of its kind; for a structured
    parameter, with the parameter's containers (a tuple stays a tuple)."""
    if structured:
        zero = Call("zeros_like_tree", (Var(param),))
        return Call("shaped_like", (Var(param), zero if adjoint is None else adjoint))
    if adjoint is None:  # (read nowhere differentiably: a zero of the kind the caller passes)
        return Call("zero_gradient", (Var(param),)) if param in arrays else Const(0.0)
    if isinstance(adjoint, Var) and adjoint.name in zeroed and param in arrays:
        return simplify.add(adjoint, reverse.zero_like(param, arrays))
    if isinstance(adjoint, Const) and param in arrays:
        return simplify.mul(Const(float(adjoint.value)), Call("ones_like", (Var(param),), "numpy",
                                                               params=(("dtype", Spelled("float")),)))
    if isinstance(adjoint, Const):
        return Const(float(adjoint.value))
    return adjoint
