"""Stage 4, reverse: the backward pass, statement by statement in reverse.

For each forward statement `z = expr` whose adjoint is nonzero, the upstream gradient
`dL_dz` is pushed down `expr`'s tree: at each primitive the table's rule turns the
gradient of the output into the gradient of each input, and every active variable reached
receives a contribution. The first contribution to a variable defines its adjoint (`=`),
later ones accumulate (`+=`): the multivariable chain rule's sum over paths. The result's
own adjoint is the symbolic one, so `dL_dyhat = 2 * (yhat - y)` has no `1 *`.

Control flow is replayed in reverse: an `if` takes the branch the forward pass took (its
condition recomputed, or recorded when the branch overwrites what it reads); a loop runs
its iterations backwards; a `while` runs as often as the forward one did. Inside control
flow a variable keeps one name and is overwritten; the value an overwrite destroys is
pushed on a plain list before it (forward) and popped back after its adjoint (backward),
but only when the backward pass reads that variable (Tapenade's "to be recorded").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gradgen.analysis import sameshape
from gradgen.analysis.arrays import may_repeat
from gradgen.ir import simplify
from gradgen.ir.nodes import (
    Assign, Break, Call, Comment, Cond, Const, Continue, For, If, IndexAdd, Restore, Spelled, Var, While, expressions,
    variables, walk, writes_whole_of_any_rank
)
from gradgen.rules.lists import list_names
from gradgen.rules.table import TABLE
from gradgen.transform.reverse import custom, tape
from gradgen.transform.reverse.control_flow import (
    ControlFlow, _prune, _reads_of, exit_condition, exits, loop_temporaries, record_decisions
)
from gradgen.transform.reverse.expression import (
    _ARRAY_MAKERS, Temporary, _allocates, _is_scatter, as_float, bare, push_into, spread_ones, takes_a_number, zero_like
)
from gradgen.transform.reverse.lists import ListGradients
from gradgen.transform.reverse.merge import Merging, _renamed

__all__ = ["Backward", "backward", "record_decisions", "zero_like", "push_into"]



@dataclass
class Backward:
    """The backward statements, the adjoint each variable ends with, and the assignments
    (by id) before which the forward pass must save the value they overwrite."""

    statements: list
    adjoints: dict
    saved: set = field(default_factory=set)
    stacks: dict = field(default_factory=dict)  # variable -> the list that keeps its values
    targets: dict = field(default_factory=dict)  # id(saved assignment) -> its variable
    zeroed: set = field(default_factory=set)  # adjoints that may end as a bare 0.0 (see _Reverser.zeroed)
    after: set = field(default_factory=set)  # assignments after which the value a loop trip made is saved (tape.py)
    adjoint_of: dict = field(default_factory=dict)  # each adjoint's name -> the variable it is the gradient of

    def get(self, name):
        return self.adjoints.get(name)

    def stacks_var(self, assignment_id):
        return self.targets[assignment_id]


def backward(fn, activity, namer, of, arrays=frozenset(), seed=None) -> Backward:
    """Reverse `fn`'s body; decide which overwritten values the forward pass must save.

    `arrays`: the values that may be NumPy arrays (see gradgen.analysis.arrays); `seed`: the
    gradient of the result (1, or a vjp's cotangent)."""
    arrays = arrays if isinstance(arrays, sameshape.ArrayNames) else sameshape.with_shapes(fn, arrays)
    rev = _Reverser(activity.active, namer, of, arrays)
    rev.params = {p.name for p in fn.params}
    rev.param_order = [p.name for p in fn.params]
    rev.lists = list_names(fn.body)
    rev.trees = {p.name for p in fn.params if p.structured}  # their gradients have their structure
    rev.lists |= rev.trees
    rev.pairs = {s.target for s in walk(fn.body) if isinstance(s, Assign) and isinstance(s.expr, Call)
                 and TABLE[s.expr.prim].result == "tuple"}
    rev.written = {s.target for s in walk(fn.body) if isinstance(s, Assign) and isinstance(s.expr, Call)
                   and s.expr.prim == "setitem"}
    rev.stable = _stable_names(fn)
    loop_temporaries(fn.body, {p.name for p in fn.params}, simplify.names_read([]) | _reads_of(fn.result),
                     rev.locals)
    if isinstance(fn.result, Var) and fn.result.name in activity.active:
        rev.state[fn.result.name] = Const(1) if seed is None else seed
    # a differentiated parameter's gradient is made from its value (zeros of its shape, an adjoint
    # reset, a zero of its kind for one nothing differentiable reads): where the body rebinds it in
    # a loop or a branch, each old value is read back, so the backward pass ends holding what was
    # passed. A parameter without a gradient (data, `arm=None` then `arm = DEFAULT_ARM`) is read
    # back only where backward code reads it, as any other name (issue 23: the minimal tape)
    rebinds = set(activity.wrt) | (rev.written & activity.active)  # (and zeros of an array written into, where
    # it has a gradient: data written into, `df_dp2[0] = ...` of an inner gradient, is read back only where read)
    rev.trip_values = tape.trip_values(fn.body, rebinds)
    statements = rev.block(fn.body)
    saved, after = _saves(fn, rev, rebinds)
    statements = _prune(statements, saved, after)
    targets = {id(s): s.target for s in walk(fn.body) if id(s) in saved | after}
    # (a save in code after an unconditional `break` gets a stack too: the backward pass has
    # no code there (block), so none was made, but the forward pass still writes the push)
    stacks = {v: rev.stack(v) for v in targets.values()}
    return Backward(statements, rev.state, saved, stacks, targets, rev.zeroed, after,
                    {adj: v for v, adj in rev.adj_names.items()})


def _saves(fn, rev, rebinds):
    """tape.mark_saves, where a loop or an `if` whose backward code is only restores reads its
    iteration or test only if one of those restores is kept: otherwise its reads would make the
    saves they restore (fuzz --jit numba 63000 #24: a list made afresh in every trip of a loop
    no gradient flows through was pushed and popped again, for nothing)."""
    reads, added = dict(rev.reads), set()
    while True:
        saved, after = tape.mark_saves(fn.body, reads, rebinds, rev.trip_values, rev.reads_made)
        kept = [i for i, (restores, _) in rev.reads_if_restored.items() if i not in added
                and any(origin in (after if late else saved) for origin, late in restores)]
        if not kept:
            return saved, after
        for i in kept:
            reads[i] = reads.get(i, set()) | rev.reads_if_restored[i][1]
            added.add(i)


def _only_restores(stmts):
    """{(origin, after)} of the restores in `stmts`, when restores (in loops and branches) are
    all the code they hold; None when they hold other code."""
    found = set()
    for s in stmts:
        if isinstance(s, Restore):
            found.add((s.origin, s.after))
        elif isinstance(s, (If, For)):
            inner = [_only_restores(s.body)] + ([_only_restores(s.orelse)] if isinstance(s, If) else [])
            if None in inner:
                return None
            found = found.union(*inner)
        elif not isinstance(s, Comment):
            return None
    return found


def _stable_names(fn):
    """Names that hold one value for the whole backward pass: assigned once, at the top level
    of the body (never in a loop or a branch), or parameters never assigned."""
    counts = {}
    for s in walk(fn.body):
        if isinstance(s, (Assign, For)):
            counts[s.target] = counts.get(s.target, 0) + 1
    top = {s.target for s in fn.body if isinstance(s, Assign) and not s.overwrites and not s.accumulate}
    return {n for n in top if counts.get(n) == 1} | {p.name for p in fn.params if p.name not in counts}


class _Reverser(Merging, ListGradients, ControlFlow):
    def __init__(self, active, namer, of, arrays=frozenset()):
        self.active = active
        self.arrays = arrays
        if getattr(arrays, "same", None) is not None:
            arrays.same.float_adjoints.clear()  # (this pass's own, as it sets them: note_floats)
        self.namer = namer
        self.of = of
        self.state = {}  # variable -> its adjoint: Var (a named adjoint) or Const; absent: zero
        self.adj_names = {}
        self.adj_set = set()  # the adjoint names made so far
        self.stacks = {}
        self.cited = None
        self.reads = {}  # id(forward statement) -> forward names its backward code reads
        self.reads_if_restored = {}  # id(loop or if) -> (its restores, what it reads where one is kept): _saves
        self.reads_made = {}  # id(`x = f(x)`) -> {x} where its backward code reads the x it made (tape.py)
        self.owned = set()  # adjoint arrays made fresh here, which may be written into
        self.mutable = set()  # adjoints of numbers that may hold a 0-d array (np.ones_like of a number)
        self.locals = {}  # id(loop) -> its temporaries (see loop_temporaries)
        self.lists = set()  # variables holding a Python list: their gradients are lists too
        self.trees = set()  # structured parameters: their gradients are made by zeros_like_tree
        self.pairs = set()  # values a primitive makes as a tuple (cho_factor's (c, lower)): gradients are lists
        self.written = set()  # arrays written into (`x[i] = e`): their gradients are indexed, so arrays
        self.stable = set()  # names holding one value for the whole backward pass (_stable_names)
        self.param_order = []  # the parameters' names, in order
        self.zeroed = set()  # adjoints that may hold a bare 0.0 here, not an array of their value's shape
        self.loose = False  # while one statement's contributions are added: they may be bare (see assign)
        self.trip_values = {}  # id(assignment) -> its name: a value a loop trip makes, saved after it (tape.py)

    def adj_name(self, v):
        if v not in self.adj_names:
            self.adj_names[v] = self.namer.adjoint(self.of, v)
            self.adj_set.add(self.adj_names[v])
        return self.adj_names[v]

    def temporary(self, v, node):
        """The name of the gradient of subexpression `node` of v's statement: `dL_dh_inner`
        (of `np.tanh(X @ W1 + b1)` for h), or, where v is the result itself, after the
        subexpression (`dL_ddiff`, never `dL_dL_inner`)."""
        if v != self.of:
            return self.namer.adjoint(self.of, f"{v}_inner")
        return self.namer.adjoint(self.of, self.namer.value_base(node) if isinstance(node, Call) else "inner")

    def stack(self, v):
        if v not in self.stacks:
            self.stacks[v] = self.namer.stack(v)
        return self.stacks[v]

    # ---- statement lists ---------------------------------------------------------------
    def block(self, stmts):
        """Backward code of a statement list. The part after an `if` that can leave a loop
        iteration runs only when that `if` did not leave it."""
        for j, stmt in enumerate(stmts):
            if isinstance(stmt, (Break, Continue)):
                stmts = stmts[:j]  # what follows never runs
                break
        for j, stmt in enumerate(stmts):
            if isinstance(stmt, If) and exits(stmt):
                stayed = simplify.negate(exit_condition(stmt))
                tail = self.branches(stayed, stmts[j + 1:], [], None)
                if tail:
                    self.note_reads(stmt, stayed)
                return self.popped(stmts[:j]) + tail + self.statement(stmt) + self.plain(stmts[:j])
        return self.popped(stmts) + self.plain(stmts)

    def popped(self, stmts):
        """The values a loop trip made and saved (tape.trip_values), popped as its backward
        sweep starts, in the block the trip ran them in (a tail after a `continue` runs only
        where the trip did not leave)."""
        return [Restore(s.target, self.stack(s.target), id(s), after=True) for s in stmts
                if id(s) in self.trip_values]

    def plain(self, stmts):
        out = []
        for stmt in reversed(stmts):
            out += self.statement(stmt)
        return out

    def statement(self, stmt):
        if isinstance(stmt, Assign):
            return self.assign(stmt)
        code = []
        if isinstance(stmt, If):
            code = self.branches(stmt.test, stmt.body, stmt.orelse, stmt)
        elif isinstance(stmt, (For, While)):
            code = self.loop(stmt)
        if code:  # (a while loop runs backwards `for _ in range(count)`: its test is not read again)
            read = [] if isinstance(stmt, While) else list(expressions(stmt))
            read += [Var(stmt.count)] if getattr(stmt, "count", None) else []
            restores = _only_restores(code)
            if restores is None:
                self.note_reads(stmt, *read)
            else:  # (read only where one of its restores is kept: _saves)
                self.reads_if_restored[id(stmt)] = (restores, {v.name for e in read for v in variables(e)})
        return code

    def note_reads(self, stmt, *exprs):
        """Record which forward values the backward code of `stmt` reads (for the saves)."""
        self.reads.setdefault(id(stmt), set()).update(v.name for e in exprs for v in variables(e))

    # ---- assignment ----------------------------------------------------------------------
    def assign(self, stmt):
        if isinstance(stmt.expr, Call) and stmt.expr.prim == "append":
            return self.append(stmt)
        if isinstance(stmt.expr, Call) and stmt.expr.prim in custom.CALLS:  # the user's rule, written out
            return custom.backward(self, stmt)
        v = stmt.target
        restore = [Restore(v, self.stack(v), id(stmt))] if stmt.overwrites and not stmt.counter else []
        self_ref = any(x.name == v for x in variables(stmt.expr))
        out = list(restore) if self_ref else []  # the old value is an input: restore it first
        g = self.state.get(v)
        if g is not None and v in self.active:
            loose = isinstance(g, Var) and g.name in self.zeroed and v in self.arrays  # g may be a bare 0.0
            shaped = self.shaped(Var(v), g) if loose and not takes_a_number(stmt.expr, self.active) else []
            if isinstance(stmt.expr, Call) and stmt.expr.prim == "list" and isinstance(g, Var):
                shaped = self.shaped_elements(stmt, g)  # (its entries may be bare 0.0)
            self.loose = loose and not shaped  # (then what g sends on may be bare too)
            body = []
            contributions = []
            push_into(stmt.expr, g, (), self.active, contributions, None if self_ref else Var(v), self.arrays,
                      scalar=v not in self.arrays, temporary=lambda node: self.temporary(v, node),
                      exact=not self.loose)
            # the value before this statement starts with no adjoint: it is another value (a list:
            # none), or, where the statement binds v first, no value at all
            del self.state[v]
            if isinstance(stmt.expr, Call) and stmt.expr.prim == "setitem":
                contributions = _unshared(contributions, g, v)
            contributions = self.heirs(self.merged(contributions, v), v)
            for item in contributions:
                if isinstance(item, Temporary) and item.heir is not None:
                    body += self.add(item.heir, item.expr)
                    self.owned.discard(item.name)  # other adjoints may hold its array too
                elif isinstance(item, Temporary):
                    self.adj_set.add(item.name)
                    self.note_mutable(item.name, item.expr)
                    body.append(Assign(item.name, item.expr))
                elif item[0] != v:
                    body += self.add(*item)
            contributions = [c for c in contributions if not isinstance(c, Temporary)]
            mine = [c for name, c in contributions if name == v]
            if mine:
                total = mine[0]
                for c in mine[1:]:
                    total = simplify.add(total, c)
                if total == g:  # `dL_dx = dL_dx`: the adjoint passes through unchanged
                    self.state[v] = g
                else:
                    if self_ref and self._rebuilt_reading(v, total, g):
                        kept = self.namer.adjoint(self.of, f"{v}_new")
                        self.adj_set.add(kept)
                        body.append(Assign(kept, g))
                        total = _renamed(total, {g.name: kept})
                    body += self.add(v, total)
            self.loose = False
            # (a value measured here but not otherwise read is measured on a parameter of its shape: not saved)
            shaped, body = (sameshape.measured_by_stable(code, self.arrays, self.stable, self.param_order)
                            for code in (shaped, body))
            self.reads[id(stmt)] = simplify.names_read(shaped + body) - self.adj_set
            if self_ref and v in simplify.names_read(shaped):  # (before its restore: the value it made)
                self.reads_made[id(stmt)] = {v}
            out = self.cite(stmt, shaped + out + body) if shaped else out + self.cite(stmt, body)
        return out + ([] if self_ref else restore)

    def _rebuilt_reading(self, v, total, g):
        """Whether `x = e(x)` backward writes x's new adjoint in more than one statement (fresh
        zeros, then g scattered in: `x = x[::-1]`, `h = np.tanh(h) + h[-1]`) while reading g,
        the adjoint of the new x, under the very name it resets: g is then kept first."""
        if not (isinstance(g, Var) and g.name == self.adj_name(v) and g.name in {x.name for x in variables(total)}):
            return False
        guarded = isinstance(total, Cond) and simplify.is_zero(total.orelse)
        return _is_scatter(total) or (guarded and _is_scatter(total.body))

    def add(self, name, contribution):
        """Add `contribution` to `name`'s adjoint; the statements that takes."""
        if simplify.is_zero(contribution):
            return []
        if name in self.lists:
            return self.add_to_list(name, contribution)
        guard = None
        if isinstance(contribution, Cond) and _is_scatter(contribution.body) and simplify.is_zero(contribution.orelse):
            guard, contribution = contribution.test, contribution.body
        if _is_scatter(contribution):
            return self.scatter(name, contribution, guard)
        contribution = as_float(contribution)
        current = self.state.get(name)
        if name in self.pairs and isinstance(current, Var) and guard is None:  # (a tuple's: item by item)
            self.state[name] = Var(self.adj_name(name))
            return self.define(self.adj_name(name), Call("add_lists", (current, contribution)))
        if guard is None and current is None and _zeroes_own(contribution, self.adj_name(name), self.owned):
            # `x[idx] = v` forward: none of the gradient flows back to what v overwrote
            adj = self.adj_name(name)
            self.state[name] = Var(adj)
            return [IndexAdd(adj, dict(contribution.params)["index"], contribution.args[1:], Const(0.0),
                             assign=True)]
        if current is None and guard is None and spread_ones(contribution, floats=True) and name not in self.written and \
                {x.name for x in variables(contribution)} <= self.stable:
            # ones times a count (a mean's gradient) stays symbolic, as a constant does: the sums
            # it reaches take it in once (`(a - b) / n`, gradgen.transform.reverse.factoring), with no array of ones
            self.state[name] = contribution
            return []
        if isinstance(contribution, Const) and (current is None or isinstance(current, Const)):
            # a constant adjoint stays symbolic (`dL_da = 1` is never written; `1 *` folds away)
            self.state[name] = contribution if current is None else simplify.add(current, contribution)
            return []
        adj = self.adj_name(name)
        self.state[name] = Var(adj)
        if current is None and isinstance(contribution, Cond) and name in self.arrays:
            contribution = self.zeros_where_untaken(name, contribution)
        loose = self.loose or bare(contribution, self.zeroed)  # it may be a bare 0.0
        if isinstance(current, Var):
            # (the sum is an array of the value's shape unless both parts may be bare)
            still = loose and current.name in self.zeroed
            if name in self.arrays.objects or adj in self.mutable:
                # never `+=` on an array: the adjoint may share memory with another one
                out = self.define(adj, simplify.add(current, contribution))
            else:
                out = [Assign(adj, contribution, accumulate=True)]
            (self.zeroed.add if still else self.zeroed.discard)(adj)
            return out
        if current is not None:  # a constant so far: it becomes a variable now
            contribution = simplify.add(current, contribution)
        out = self.define(adj, contribution)
        if loose:
            self.zeroed.add(adj)
        return out

    def zeros_where_untaken(self, name, contribution):
        """`g if t else 0.0` reaching an array: zeros of its shape in the arm without a
        gradient, so that the adjoint has its value's shape whichever arm ran (a parameter's
        gradient is returned as it is; another's is read by rules)."""
        if isinstance(contribution, Cond):
            return Cond(contribution.test, self.zeros_where_untaken(name, contribution.body),
                        self.zeros_where_untaken(name, contribution.orelse))
        return zero_like(name, self.arrays) if simplify.is_zero(contribution) else contribution

    def define(self, adj, value):
        """`adj = value`, noting whether adj now owns a fresh array (safe to write into), and
        whether it may be a bare 0.0."""
        if _allocates(value):
            self.owned.add(adj)
        else:
            self.owned.discard(adj)
        self.note_mutable(adj, value)
        self.note_zeroed(adj, value)
        self.note_floats(adj, value)
        return [Assign(adj, value)]

    def note_floats(self, adj, value):
        """Whether adj now surely holds floats (a gradient multiplied by it then needs no ones
        to be one: gradgen.analysis.sameshape._without_ones)."""
        same = getattr(self.arrays, "same", None)
        if same is not None:
            (same.float_adjoints.add if same.floats(value) else same.float_adjoints.discard)(adj)

    def note_zeroed(self, adj, value):
        if bare(value, self.zeroed):
            self.zeroed.add(adj)
        else:
            self.zeroed.discard(adj)

    def note_mutable(self, adj, value):
        """Whether `adj = value` may hold a writable array even where the analysis says the
        value is a number (a 0-d array, as `np.ones_like(s)` or `np.where(...)` of numbers):
        then `+=` on it would write through to every adjoint sharing it."""
        makes = isinstance(value, Call) and value.prim in _ARRAY_MAKERS
        if makes or (isinstance(value, Var) and value.name in self.mutable):
            self.mutable.add(adj)
        else:
            self.mutable.discard(adj)

    def scatter(self, name, contribution, guard):
        """x[index] read forward: add g at `index` of an array of x's shape, in place."""
        g, like, *index = contribution.args
        layout = dict(contribution.params)["index"]
        current = self.state.get(name)
        adj = self.adj_name(name)
        out = []
        if isinstance(like, Var) and like.name in self.pairs and not isinstance(current, Const):
            # a tuple's item read (`c, low = cho_factor(K)`) beside a gradient of the whole tuple
            # (cho_solve's): the gradient is a list, item by item (new users' repro 6: the GP
            # likelihood's log-determinant read the factor too, and `tuple + np.zeros_like` raised)
            zeros = Call("zeros_like_tree", (like,))
            out = self.define(adj, zeros if current is None else Call("add_lists", (current, zeros)))
            self.state[name] = Var(adj)
            return out + [IndexAdd(adj, layout, tuple(index), g, False, assign=False)]
        if current is None:
            out = self.define(adj, Call("zeros_like", (like,), "numpy", params=(("dtype", Spelled("float")),)))
        elif isinstance(current, Const):
            out = self.define(adj, simplify.mul(current, Call("ones_like", (like,), "numpy",
                                                              params=(("dtype", Spelled("float")),))))
        elif adj not in self.owned or (isinstance(current, Var) and current.name in self.zeroed):  # or a 0.0
            zeros = Call("zeros_like", (like,), "numpy", params=(("dtype", Spelled("float")),))
            out = self.define(adj, Call("add", (current, zeros), "op"))
            self.zeroed.discard(adj)
        self.state[name] = Var(adj)
        repeats = may_repeat(layout, index, self.arrays)
        first = current is None and guard is None and not repeats  # into fresh zeros: `d[1:] = g`
        write = IndexAdd(adj, layout, tuple(index), g, repeats, assign=first)
        return out + ([If(guard, [write], [])] if guard is not None else [write])

    def shaped(self, value, g):
        """The gradient g of `value`, which may hold the 0.0 a loop or a branch started it
        with (`zeroed`), made an array of value's shape before a rule that needs one reads
        it (an index, einsum, cumsum, solve, a sum along an axis)."""
        zeros = Call("zeros_like", (value,), "numpy", params=(("dtype", Spelled("float")),))
        return self.define(g.name, Call("add", (g, zeros), "op"))

    def zero(self, v):
        """An exact zero: an array of zeros for an array parameter (its gradient must have its
        shape) and for an array written into (its gradient is indexed), a list of zeros for a
        list; 0.0 elsewhere, which broadcasts, and never reads a value that may be unbound."""
        if v in self.trees:
            return Call("zeros_like_tree", (Var(v),))
        if v in self.lists:  # zeros shaped as each item: a bare 0.0 item reached a parameter's gradient
            return Call("zeros_like_tree", (Var(v),))  # as 0.0 and np.array's rows as list(0.0) (soak 2019 #1062, 2018 #3483)
        if v in self.params or v in self.written:
            return zero_like(v, self.arrays)
        return Const(0.0)  # (a bare zero: every caller notes it in `zeroed`)

    def cite(self, stmt, body):
        if body and stmt.source and f"line {stmt.line}: {stmt.source}" != self.cited:
            self.cited = f"line {stmt.line}: {stmt.source}"
            return [Comment(self.cited)] + body
        return body


def _makes_list(stmt):
    return isinstance(stmt, Assign) and isinstance(stmt.expr, Call) and stmt.expr.prim == "list"


def _is_append(stmt):
    """`hs.append(v)` changes the list in place: the name holds the same list before and
    after it, so there is nothing to save."""
    return isinstance(stmt.expr, Call) and stmt.expr.prim == "append"


def _unshared(contributions, g, v):
    """`x[i] = e` backward: e's gradient is g[i], and then g[i] is zeroed in place; where e's
    gradient would be a view of g (e a name: `out[i] = e`), it is a copy of that part; a list's
    gradient (`out[i] = np.array(items)`: the rows of g[i]) is a list of rows of that copy
    (fuzz seed 502 #164: the rows were views, and zeroing g[i] zeroed them)."""
    def copied(c):
        if isinstance(c, Call) and c.prim in _ROWS_OF and _view_of(c.args[0], g):
            return replace(c, args=(Call("copy", (c.args[0],), "numpy"), *c.args[1:]))
        return Call("copy", (c,), "numpy") if _view_of(c, g) else c

    return [Temporary(c.name, copied(c.expr), c.heir) if isinstance(c, Temporary)
            else c if c[0] == v else (c[0], copied(c[1])) for c in contributions]


_ROWS_OF = ("unstack", "unconcatenate", "unjoin")  # a list of parts of their first argument (views)


def _view_of(c, g):
    """Whether c may be (a view of) part of g's array."""
    while isinstance(c, Call) and c.prim in ("unbroadcast", "pos", "reshape", "T", "transpose", "squeeze",
                                             "expand_dims", "ravel"):
        c = c.args[0]
    if isinstance(c, Cond):
        return _view_of(c.body, g) or _view_of(c.orelse, g)
    return isinstance(c, Call) and c.prim == "getitem" and c.args[0] == g


def _zeroes_own(contribution, adj, owned):
    """Whether `contribution` is `adj` with zeros at an index (a write, `x[idx] = v`) and
    the backward pass owns adj's array: then it is zeroed in place."""
    return isinstance(contribution, Call) and contribution.prim == "zero_at" \
        and contribution.args[0] == Var(adj) and adj in owned \
        and not writes_whole_of_any_rank(dict(contribution.params).get("index"))  # (a 0-d adjoint: a NumPy scalar)
