"""Analysis: may an in-place update change an array another name still reads?

`x += e` on a NumPy array changes the array itself, so a copy `y = x`, a view `y = x[1:]`,
the row of `for row in X` or a helper's argument changes with it. gradgen differentiates
`x += e` as a new value of x (as JAX does), which is the same program only where no other
name reads the old array afterwards. This pass finds the names each update may reach (a
points-to analysis over the lowered function) and refuses, with a located error, where one
of them is read again before it is bound anew (a liveness analysis: `h = s[t]` at the top
of each trip is not read after `s[t + 1] = e`), unless the write surely misses the rows it
views (gradgen.analysis.overlap); everywhere else the update compiles, in place as you
wrote it. A read with an array or boolean index (`y = X[idx]`) is a copy, which shares
nothing.
"""

from __future__ import annotations

import ast
import types

from gradgen.analysis import arrays as array_facts
from gradgen.analysis.overlap import Copies, Places, untouched
from gradgen.errors import error_at
from gradgen.ir import simplify
from gradgen.ir.nodes import (
    Assign, Break, Call, Cond, Const, Continue, For, If, Var, While, expressions, variables, walk
)
from gradgen.rules.table import TABLE

# Primitives whose result may be a view of (share memory with) their first argument.
_VIEWS = {"getitem", "list_get", "tree_get", "reshape", "T", "transpose", "ravel", "squeeze", "expand_dims", "broadcast_to", "flip",
          "float", "pos", "array", "stop_gradient", "custom_vjp", "custom_estimator"}


def refuse_shared_updates(fn, arrays, module, defaults_numbers=False):
    """`x += e` on an array mutates it in place in your code, so every name sharing x's
    memory changes too: a copy `y = x`, or a view `y = x[1:]`. gradgen's gradient treats
    `x += e` as a new value of x, so where another name that may share x's memory there is
    read again after the update (and `x[i] = e` may reach what it holds), it refuses rather
    than differentiate something else. A parameter
    updated in place is fine: the gradient is of the function of its inputs as they were
    at the call (the generated code updates your array in place exactly where yours does)."""
    sharing = _Sharing(fn, arrays, array_facts.arrays_on_entry(fn, module, defaults_numbers), module=module)
    sharers = sharing.at_updates()
    if not any(sharers.values()):  # no update any other name may see: nothing to place
        return
    live, places = live_after(fn), Places(fn)
    for s in walk(fn.body):
        if id(s) not in sharers:
            continue
        # read again before it is bound anew (`h = s[t]` on the next trip is not), and not
        # a row the write surely misses (`s[t + 1] = e`)
        changed = sharing.changed[id(s)]
        if any(not untouched(places, s, n, sharing.bound, changed) for n in sharers[id(s)] & live[id(s)]):
            op, name = _AUG_OPS.get(s.expr.prim, "+"), fn.display.get(s.target, s.target)  # as you wrote it
            where = types.SimpleNamespace(lineno=s.line, col_offset=s.col - 1)
            if s.expr.prim == "setitem":
                raise error_at(where, f"'{name}[...] = ...' would change an array that may share memory with "
                                      f"another name (a copy or a view) read later; write into a copy "
                                      f"('{name} = {name}.copy()' just before it)", module)
            raise error_at(where, f"'{name} {op}= ...' would change an array that may share memory "
                                  f"with another name (a copy or a view); write "
                                  f"'{name} = {name} {op} ...'", module)


def refuse_changes_the_gradient_reads(fn, arrays, module, needed, saved, defaults_numbers=False):
    """An update that stays in place (`x[i] = e`, `x += e` keeping x's name) changes the
    array every name that ever held it still holds: where the backward pass reads one of
    those names (`needed`: its reads and the values it pops back), it would read the new
    numbers, not the ones the forward pass computed with (seed 1210 #366: `inputs = z`, a
    loop from it, then `z[1, -2] = 0.5`). Refused, with what to write. `saved`: updates the
    forward pass no longer does in place (it keeps the old value instead)."""
    sharing = _Sharing(fn, arrays, array_facts.arrays_on_entry(fn, module, defaults_numbers), generated=True,
                       module=module)
    sharing.at_updates()
    places = Places(fn)
    result = {v.name for v in variables(fn.result)}
    forward_reads = simplify.names_read(simplify.dead_code(fn.body, set(result))) | result  # (what the value needs)
    for s in walk(fn.body):
        if id(s) not in sharing.held or (id(s) in saved and s.expr.prim != "setitem"):
            continue
        reached = sorted(n for n in sharing.held[id(s)] & needed
                         if not untouched(places, s, n, sharing.bound, sharing.changed[id(s)]))
        if reached and _rebinding_is_unseen(s, sharing, forward_reads):
            s.augmented = False  # written `x = x + e`: a new array, and the old one keeps its numbers
            continue
        if reached:
            op, name = _AUG_OPS.get(s.expr.prim, "+"), fn.display.get(s.target, s.target)
            what = f"'{name}[...] = ...'" if s.expr.prim == "setitem" else f"'{name} {op}= ...'"
            where = types.SimpleNamespace(lineno=s.line, col_offset=s.col - 1)
            view = _view_made(fn, places, reached, s.target) if s.expr.prim == "setitem" else None
            if view is not None:
                raise error_at(where, f"{what} would change the numbers of {view[0]} (a view of '{name}', line "
                                      f"{view[1]}), which the gradient reads as they were; make it a copy where it "
                                      f"is made ('{view[2]}')", module)
            fix = f"'{name} = {name}.copy()' just before it" if s.expr.prim == "setitem" else \
                f"'{name} = {name} {op} ...'"
            raise error_at(where, f"{what} would change an array another name held before (a copy or a view), "
                                  f"whose old numbers the gradient needs; write {fix}", module)


def _rebinding_is_unseen(s, sharing, forward_reads):
    """Whether `x += e` may be written `x = x + e` with no difference the function shows: an
    augmented assignment (not a write into x), changing no array the caller passed, which no
    other name that the forward code ever reads holds when it runs (`acc = ... else out`, acc
    never read; the names that held it before and need its old numbers are the tape's, and a new
    array leaves them as they were: soak 53002 #1074, `settle(out)` inlined kept out's array as h)."""
    if s.expr.prim == "setitem" or any(o[0] == "outside" for o in sharing.changed.get(id(s), ())):
        return False
    return not (sharing.found.get(id(s), set()) & forward_reads)


def _view_made(fn, places, names, array):
    """For the first of `names` bound once, to a row (or slice) of `array` that the source
    writes as `name = array[...]`: its name, line and the statement that makes it a copy."""
    for n in names:
        [*bindings] = places.bindings.get(n, ())
        if len(bindings) != 1 or n in places.params:
            continue
        b = bindings[0]
        if not (isinstance(b.expr, Call) and b.expr.prim == "getitem" and b.expr.args[0] == Var(array)):
            continue
        try:
            [stmt] = ast.parse(b.source or "").body
        except (SyntaxError, ValueError):
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Subscript):
            shown = fn.display.get(n, n)
            return f"'{shown}'", b.line, f"{stmt.targets[0].id} = {ast.get_source_segment(b.source, stmt.value)}.copy()"
    return None


# arguments the backward pass reads only for their shape (never their numbers)
_SHAPE_ONLY = {"zeros_like": (0,), "ones_like": (0,), "shape": (0,), "len": (0,), "ndim": (0,), "size": (0,),
               "unbroadcast": (1,), "scatter": (1,), "list_zeros": (0,), "zeros_like_tree": (0,),
               "concatenate_grad": (1,), "stack_part_grad": (1,), "unconcatenate": (1,), "unjoin": (1,),
               "broadcast": tuple(range(32))}


def numbers_read(stmts):
    """The names whose numbers `stmts` read (a name read only for its shape is left out:
    `np.zeros_like(x)`, `unbroadcast(g, x)`)."""
    found = set()

    def visit(e):
        if isinstance(e, Var):
            found.add(e.name)
        elif isinstance(e, Cond):
            visit(e.test), visit(e.body), visit(e.orelse)
        elif isinstance(e, Call):
            skip = _SHAPE_ONLY.get(e.prim, ())
            for i, arg in enumerate(e.args):
                if i not in skip:
                    visit(arg)

    for t in walk(stmts):
        for e in expressions(t):
            visit(e)
        for attr in ("name", "target"):  # a value popped back or added into
            if not hasattr(t, "expr") and isinstance(getattr(t, attr, None), str):
                found.add(getattr(t, attr))
    return found


class _Sharing:
    """Which names may hold the same array, statement by statement (a points-to analysis:
    an array is named by the statement that made it, or by the parameter it came in as).

    `y = x` and `y = x[1:]` make y point where x does; any other array value is a new
    object; `x += e` changes x's object in place. Branches join, loops run to a fixed point,
    and `break`/`continue` carry their state to the loop's exit and head."""

    def __init__(self, fn, arrays, on_entry, generated=False, module=None):
        self.fn, self.arrays, self.on_entry, self.found = fn, arrays, on_entry, {}
        self.copies = Copies(fn, module)  # reads that copy (`X[idx]`): no view
        self.generated = generated  # the generated code's arrays: `x_1 = x + e` under a new name is a new one
        self.ever = {}  # array -> every name that held it at some point (a saved old value may still)
        self.held = {}  # id(in-place update) -> every other name that ever held the array it changes
        self.vectors = set()  # id(statement) that makes a vector of numbers: `v[0]` of one is a number
        self.bound = {}  # id(statement) -> the arrays it may bind its name to
        self.changed = {}  # id(in-place update) -> the arrays it may change

    def at_updates(self):
        """id(`x += e` statement) -> the other names that may share the array it changes."""
        env = {name: frozenset([("outside", name)]) for name in self.on_entry}  # parameters, constants
        self.block(self.fn.body, env, [])
        return self.found

    def block(self, stmts, env, exits):
        for s in stmts:
            if isinstance(s, Assign):
                self.assign(s, env)
            elif isinstance(s, If):
                other = dict(env)
                self.block(s.body, env, exits)
                self.block(s.orelse, other, exits)
                _join(env, other)
            elif isinstance(s, (For, While)):
                self.loop(s, env, exits)
            elif isinstance(s, (Break, Continue)):
                exits.append(dict(env))

    def loop(self, s, env, exits):
        while True:
            before, inner = dict(env), []
            body = self.iteration(s, env, inner)
            for state in [body] + inner:
                _join(env, state)
            if env == before:
                break
        if _runs_at_least_once(s):  # `for i in range(2)`: what held before is not what holds after
            inner = []
            after = self.iteration(s, env, inner)
            for state in inner:
                _join(after, state)
            env.clear()
            env.update(after)

    def iteration(self, s, head, exits):
        """The state after one pass of the loop body, from the state at its head."""
        body = dict(head)
        if isinstance(s, For):  # a loop counter (`for row in X` reads `row = X[i]`, a view)
            body.pop(s.target, None)
        self.block(s.body, body, exits)
        return body

    def assign(self, s, env):
        e = s.expr
        if isinstance(e, Call) and e.prim in ("list", "append"):
            # a list holds its elements: reading one back (`x = hs[i]`) shares it, and an
            # append changes no element, so it is no update another name would see
            held = env.get(s.target, frozenset()) if e.prim == "append" else frozenset([("made", id(s))])
            for item in e.args[1:] if e.prim == "append" else e.args:
                held |= _points_to(item, env, self.vectors, self.copies) | (
                    {("made", id(s))} if _new_array(item, self.arrays, self.copies) else set())
            env[s.target] = frozenset(held)
            self.bound[id(s)] = self.bound.get(id(s), frozenset()) | held
            return
        if s.augmented and isinstance(e, Call) and e.args and isinstance(e.args[0], Var) \
                and e.args[0].name in env and (_in_place(s) or not self.generated):
            objects = env[e.args[0].name]
            self.changed[id(s)] = self.changed.get(id(s), frozenset()) | objects
            others = {n for n, o in env.items() if o & objects and n != s.target}
            if _in_place(s):  # every name that held the array before (`inputs = z`, then rebound)
                self.held[id(s)] = self.held.get(id(s), set()) | (
                    {n for o in objects for n in self.ever.get(o, ())} - {s.target})
            self.found[id(s)] = self.found.get(id(s), set()) | others
            env[s.target] = objects  # the same array, changed
            return
        if s.number:  # `u: float = ...`: a number, which nothing shares
            env.pop(s.target, None)
            return
        objects = _points_to(e, env, self.vectors, self.copies)
        if _new_array(e, self.arrays, self.copies):
            if _vector_of_numbers(e, self.arrays, env, self.vectors):
                self.vectors.add(id(s))
            # a new array, unlike any the statement made before (on an earlier iteration):
            # those are "older" (the recency abstraction), so `u_new = u.copy()` in a loop
            # that ends `u = u_new` never shares with last iteration's u
            made, older = ("made", id(s)), ("older", id(s))
            for name, held in env.items():
                if made in held:
                    env[name] = (held - {made}) | {older}
            self.ever.setdefault(older, set()).update(self.ever.pop(made, set()))
            objects = {older if o == made else o for o in objects} | {made}
        if objects:
            env[s.target] = frozenset(objects)
            self.bound[id(s)] = self.bound.get(id(s), frozenset()) | objects
            for o in objects:
                self.ever.setdefault(o, set()).add(s.target)
        else:
            env.pop(s.target, None)  # a number: nothing to share


def _in_place(s):
    """`x += e` or `x[i] = e` that keeps x's name: the generated code changes x's array."""
    return bool(s.expr.args) and s.expr.args[0] == Var(s.target)


def _runs_at_least_once(s):
    """A `for` over `range(...)` of numbers written in the source, not empty."""
    if not (isinstance(s, For) and isinstance(s.iter, Call) and s.iter.prim == "range"):
        return False
    bounds = [a.value for a in s.iter.args if isinstance(a, Const) and type(a.value) is int]
    return len(bounds) == len(s.iter.args) and len(range(*bounds)) > 0


def _points_to(e, env, vectors=frozenset(), copies=None):
    """The arrays `e` may be as a reference to (or a view of) a name's; one integer index of
    a vector of numbers (a statement of `vectors` made it) is a number, which shares nothing
    (`W0, c0 = np.array([a, b])`: soak seed 2004 #235), and a read with an array or boolean
    index (`copies`, gradgen.analysis.overlap.Copies: `X[idx]`, `X[X > 0]`) is a copy."""
    numbers_of = set()
    while isinstance(e, Call) and e.prim in _VIEWS and e.args:
        if copies is not None and copies(e):
            return set()
        if e.prim == "getitem" and dict(e.params).get("index") == ("i",) and not numbers_of:
            numbers_of = {("made", v) for v in vectors} | {("older", v) for v in vectors}
        e = e.args[0]
    if isinstance(e, Var):
        return set(env.get(e.name, ())) - numbers_of
    if isinstance(e, Cond):  # `x if c else y`: either
        return _points_to(e.body, env, vectors, copies) | _points_to(e.orelse, env, vectors, copies)
    return set()


def _vector_of_numbers(e, arrays, env=None, vectors=frozenset()):
    """Whether `e` surely makes an array of one axis whose elements are numbers:
    `np.array([a, b])` of numbers (a stack of them), `np.arange(n)`, `np.linspace(a, b, n)`,
    `np.zeros(n)` of one length, and elementwise arithmetic of these with numbers (`u * u`)."""
    if isinstance(e, Var):  # a name that holds only vectors some statement made
        held = (env or {}).get(e.name, ())
        return bool(held) and all(o[0] in ("made", "older") and o[1] in vectors for o in held)
    if not isinstance(e, Call):
        return False
    if TABLE[e.prim].elementwise and e.args:
        vectors_in = [a for a in e.args if array_facts.may_be_array(a, arrays)]
        return bool(vectors_in) and all(_vector_of_numbers(a, arrays, env, vectors) for a in vectors_in)
    if e.prim == "stack":
        return bool(e.args) and not dict(e.params).get("axis") and \
            not any(array_facts.may_be_array(a, arrays) for a in e.args)
    if e.prim in ("arange", "linspace"):  # (linspace of arrays makes one axis more)
        return not any(array_facts.may_be_array(a, arrays) for a in e.args)
    length = e.args[0] if e.args else None  # a length written as one (a tuple named `shape` is not)
    return e.prim in ("zeros", "ones", "full") and (
        isinstance(length, Const) and type(length.value) is int or isinstance(length, Call) and length.prim == "len")


def _new_array(e, arrays, copies=None):
    """Whether `e` may make a new array: arithmetic on arrays, a read that copies
    (`X[idx]`), or a 0-d array `_ZERO_D` makes of numbers (not a reference to a name's, not
    a number)."""
    if isinstance(e, Cond):
        return _new_array(e.body, arrays, copies) or _new_array(e.orelse, arrays, copies)
    if not isinstance(e, Call):
        return False
    if e.prim in _ZERO_D or copies is not None and copies(e):
        return True
    if e.prim in _VIEWS and e.prim not in ("float", "pos") and e.args:
        return _new_array(e.args[0], arrays, copies)
    return array_facts.may_be_array(e, arrays)


def _join(env, other):
    """Into `env`, the state where control may come from `env` or from `other`."""
    for name, objects in other.items():
        env[name] = env.get(name, frozenset()) | objects


# NumPy functions that make a 0-d array of a number: a mutable object, unlike the number
# `np.sin(x)` gives (np.where(c, 1.0, 2.0) += 1 changes it in place)
_ZERO_D = {"where", "ones_like", "zeros_like", "array", "squeeze", "transpose", "ravel"}


def live_after(fn):
    """id(statement) -> the names some path reads after it before binding them anew (a
    backward liveness analysis: branches join, loops run to a fixed point, `break` goes to
    the loop's exit and `continue` to its head). The result is read at the end."""
    after = {}
    end = {v.name for v in variables(fn.result)}
    _live_block(fn.body, end, after, end, end)
    return after


def _live_block(stmts, live, after, at_break, at_continue):
    """The names live before `stmts`, given those live after them."""
    live = set(live)
    for s in reversed(stmts):
        after[id(s)] = after.get(id(s), set()) | live  # (a loop's fixed point only adds)
        live = _live_before(s, live, after, at_break, at_continue)
    return live


def _live_before(s, live, after, at_break, at_continue):
    reads = {v.name for e in expressions(s) for v in variables(e)}
    if isinstance(s, Assign):
        return (live - {s.target}) | reads | ({s.target} if s.accumulate else set())
    if isinstance(s, If):
        return reads | _live_block(s.body, live, after, at_break, at_continue) | \
            _live_block(s.orelse, live, after, at_break, at_continue)
    if isinstance(s, Break):
        return set(at_break)
    if isinstance(s, Continue):
        return set(at_continue)
    if isinstance(s, (For, While)):  # at the head: the exit, or another trip (a `for` binds its target)
        head, bound = set(live), {s.target} if isinstance(s, For) else set()
        while True:
            more = live | (_live_block(s.body, head, after, live, head) - bound)
            more |= reads if isinstance(s, While) else set()
            if more <= head:
                return head | reads
            head |= more
    return (live | reads)


_AUG_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "matmul": "@"}
