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

from dataclasses import dataclass, field

from gradgen import combine, custom_rules, sameshape, simplify
from gradgen.ir import (Assign, Break, Call, Comment, Cond, Const, Continue, For, If, IndexAdd, Restore, Spelled, Var,
                        While,
                        assigned, expressions, variables, walk)
from gradgen.primitives import TABLE
from gradgen.rules_lists import LIST_MAKERS
from gradgen.shapes import may_be_array
from gradgen.static_shapes import known

TRUE, FALSE = Const(True), Const(False)


@dataclass
class Backward:
    """The backward statements, the adjoint each variable ends with, and the assignments
    (by id) before which the forward pass must save the value they overwrite."""

    statements: list
    adjoints: dict
    saved: set = field(default_factory=set)
    stacks: dict = field(default_factory=dict)  # variable -> the list that keeps its values
    targets: dict = field(default_factory=dict)  # id(saved assignment) -> its variable

    def get(self, name):
        return self.adjoints.get(name)

    def stacks_var(self, assignment_id):
        return self.targets[assignment_id]


def backward(fn, activity, namer, of, arrays=frozenset(), seed=None) -> Backward:
    """Reverse `fn`'s body; decide which overwritten values the forward pass must save.

    `arrays`: the values that may be NumPy arrays (see gradgen.shapes); `seed`: the
    gradient of the result (1, or a vjp's cotangent)."""
    arrays = arrays if isinstance(arrays, sameshape.ArrayNames) else sameshape.with_shapes(fn, arrays)
    rev = _Reverser(activity.active, namer, of, arrays)
    rev.params = {p.name for p in fn.params}
    rev.lists = {s.target for s in walk(fn.body) if isinstance(s, Assign) and isinstance(s.expr, Call)
                 and s.expr.prim in LIST_MAKERS}
    rev.trees = {p.name for p in fn.params if p.structured}  # their gradients have their structure
    rev.lists |= rev.trees
    rev.written = {s.target for s in walk(fn.body) if isinstance(s, Assign) and isinstance(s.expr, Call)
                   and s.expr.prim == "setitem"}
    rev.stable = _stable_names(fn)
    loop_temporaries(fn.body, {p.name for p in fn.params}, simplify.names_read([]) | _reads_of(fn.result),
                     rev.locals)
    if isinstance(fn.result, Var) and fn.result.name in activity.active:
        rev.state[fn.result.name] = Const(1) if seed is None else seed
    statements = rev.block(fn.body)
    saved = set()
    _mark_saves(fn.body, rev.reads, set(), saved)
    statements = _prune(statements, saved)
    targets = {id(s): s.target for s in walk(fn.body) if id(s) in saved}
    stacks = {v: rev.stacks[v] for v in targets.values()}
    return Backward(statements, rev.state, saved, stacks, targets)


def _stable_names(fn):
    """Names that hold one value for the whole backward pass: assigned once, at the top level
    of the body (never in a loop or a branch), or parameters never assigned."""
    counts = {}
    for s in walk(fn.body):
        if isinstance(s, (Assign, For)):
            counts[s.target] = counts.get(s.target, 0) + 1
    top = {s.target for s in fn.body if isinstance(s, Assign) and not s.overwrites and not s.accumulate}
    return {n for n in top if counts.get(n) == 1} | {p.name for p in fn.params if p.name not in counts}


def _mark_saves(stmts, reads, seen, saved):
    """The overwriting assignments whose old value the backward pass reads ("to be recorded").

    The old value of `v` at an overwrite is read back only by the backward code of what ran
    before it: statements earlier in the function, and, inside a loop, the whole loop (the
    earlier iterations). `seen` gathers what that backward code reads, in forward order.
    """
    for s in stmts:
        if isinstance(s, Assign):
            own = reads.get(id(s), set()) if any(x.name == s.target for x in variables(s.expr)) else set()
            if s.overwrites and not s.counter and not _is_append(s) and s.target in seen | own:
                saved.add(id(s))
            seen |= reads.get(id(s), set())
        elif isinstance(s, If):
            seen |= reads.get(id(s), set())
            _mark_saves(s.body, reads, seen, saved)
            _mark_saves(s.orelse, reads, seen, saved)
        elif isinstance(s, (For, While)):
            for inner in walk([s]):
                seen |= reads.get(id(inner), set())
            _mark_saves(s.body, reads, seen, saved)


class _Reverser:
    def __init__(self, active, namer, of, arrays=frozenset()):
        self.active = active
        self.arrays = arrays
        self.namer = namer
        self.of = of
        self.state = {}  # variable -> its adjoint: Var (a named adjoint) or Const; absent: zero
        self.adj_names = {}
        self.adj_set = set()  # the adjoint names made so far
        self.stacks = {}
        self.cited = None
        self.reads = {}  # id(forward statement) -> forward names its backward code reads
        self.owned = set()  # adjoint arrays made fresh here, which may be written into
        self.mutable = set()  # adjoints of numbers that may hold a 0-d array (np.ones_like of a number)
        self.locals = {}  # id(loop) -> its temporaries (see loop_temporaries)
        self.lists = set()  # variables holding a Python list: their gradients are lists too
        self.trees = set()  # structured parameters: their gradients are made by zeros_like_tree
        self.written = set()  # arrays written into (`x[i] = e`): their gradients are indexed, so arrays
        self.stable = set()  # names holding one value for the whole backward pass (_stable_names)

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
                return tail + self.statement(stmt) + self.plain(stmts[:j])
        return self.plain(stmts)

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
        if code:
            self.note_reads(stmt, *expressions(stmt), *([Var(stmt.count)] if getattr(stmt, "count", None) else []))
        return code

    def note_reads(self, stmt, *exprs):
        """Record which forward values the backward code of `stmt` reads (for the saves)."""
        self.reads.setdefault(id(stmt), set()).update(v.name for e in exprs for v in variables(e))

    # ---- assignment ----------------------------------------------------------------------
    def assign(self, stmt):
        if isinstance(stmt.expr, Call) and stmt.expr.prim == "append":
            return self.append(stmt)
        if isinstance(stmt.expr, Call) and stmt.expr.prim in custom_rules.CALLS:  # the user's rule, written out
            return custom_rules.backward(self, stmt)
        v = stmt.target
        restore = [Restore(v, self.stack(v), id(stmt))] if stmt.overwrites and not stmt.counter else []
        self_ref = any(x.name == v for x in variables(stmt.expr))
        out = list(restore) if self_ref else []  # the old value is an input: restore it first
        g = self.state.get(v)
        if g is not None and v in self.active:
            contributions = []
            push_into(stmt.expr, g, (), self.active, contributions, None if self_ref else Var(v), self.arrays,
                      scalar=v not in self.arrays, temporary=lambda node: self.temporary(v, node))
            if stmt.overwrites or self_ref or _makes_list(stmt):
                del self.state[v]  # the value before this statement starts with no adjoint (a list: none)
            body = []
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
                    body += self.add(v, total)
            self.reads[id(stmt)] = simplify.names_read(body) - self.adj_set
            out += self.cite(stmt, body)
        return out + ([] if self_ref else restore)

    def merged(self, contributions, v):
        """The contributions one statement makes to one array, as one sum where the last of
        them was (`dL_dz = a + b`, not `dL_dz = a` then `dL_dz = dL_dz + b`); a scatter into
        it, a guarded one and a list's stay apart, and a number's keep the lesson's `=` then
        `+=`, one line per path."""
        def plain(item):
            return not isinstance(item, Temporary) and item[0] != v and item[0] in self.arrays \
                and item[0] not in self.lists \
                and not isinstance(item[1], Cond) and not _is_scatter(item[1]) \
                and not (isinstance(item[1], Call) and item[1].prim in ("zero_at", "list_add_at", "tree_add_at"))
        contributions = self._scatters_merged(contributions, v)
        last, totals = {}, {}
        for k, item in enumerate(contributions):
            if plain(item):
                last[item[0]] = k
                totals[item[0]] = combine.combined(totals[item[0]], item[1], self.arrays) if item[0] in totals \
                    else item[1]
        named = {c.name for c in contributions if isinstance(c, Temporary)}
        floats = lambda e: self.floats(e, named)  # noqa: E731
        return [(item[0], combine.factored(totals[item[0]], floats, self._same_shape, self._covers)) if plain(item) and last[item[0]] == k else item
                for k, item in enumerate(contributions) if not plain(item) or last[item[0]] == k]

    def _covers(self, total, ones):
        """Whether `total` surely has the shape of `ones` (np.ones_like(p) or np.ones(shape)):
        both broadcast the same arrays (SameShape.leaf_keys)."""
        same = getattr(self.arrays, "same", None)
        if same is None:
            return False
        want = same.leaf_keys(ones.args[0] if ones.prim == "ones_like" else ones.args[0].args[0])
        return bool(want) and same.leaf_keys(total) == want

    def _same_shape(self, a, b):
        same = getattr(self.arrays, "same", None)
        return same is not None and same.same(a, b) and same.key(a) != sameshape.NUMBER

    def floats(self, e, named=()):
        """Whether e surely holds floats: the code shows it (SameShape.floats), or it is a
        product with a gradient (every adjoint is a float or an array of floats; `named`:
        gradients of subexpressions named in this statement)."""
        same = getattr(self.arrays, "same", None)
        if same is not None and same.floats(e):
            return True
        gradients = self.adj_set | set(named)
        while isinstance(e, Call) and e.prim in ("mul", "div", "neg"):
            if any(isinstance(a, Var) and a.name in gradients for a in e.args):
                return True
            e = e.args[0]
        return isinstance(e, Var) and e.name in gradients

    def _scatters_merged(self, contributions, v):
        """Scatters into one index of one array, as one (`d[:-1] -= a + b`)."""
        out = []
        for item in contributions:
            if not isinstance(item, Temporary) and item[0] != v and item[0] not in self.lists and \
                    _is_scatter(item[1]):
                at = next((j for j in range(len(out) - 1, -1, -1) if not isinstance(out[j], Temporary)
                           and out[j][0] == item[0] and combine.same_scatter(out[j][1], item[1])), None)
                if at is not None and all(isinstance(o, Temporary) or o[0] != item[0] for o in out[at + 1:]):
                    # (where the later one was: a gradient named between them may be read by it)
                    named = {c.name for c in contributions if isinstance(c, Temporary)}
                    item = (item[0], combine.factored(combine.scattered(out.pop(at)[1], item[1]),
                                                      lambda e: self.floats(e, named), self._same_shape,
                                                      self._covers))
            out.append(item)
        return out

    def heirs(self, contributions, v):
        """A named gradient of a subexpression that some variable receives unchanged, as its
        first gradient (`(yhat - y) ** 2`: yhat's), is that variable's adjoint from the start:
        `dL_dyhat = 2 * (yhat - y)`, then `dL_dy = -dL_dyhat`, not a `dL_dL_inner` both read."""
        out, renamed = list(contributions), {}
        for k, item in enumerate(out):
            if not isinstance(item, Temporary):
                continue
            heir = next((j for j in range(k + 1, len(out)) if not isinstance(out[j], Temporary)
                         and out[j][1] == Var(item.name) and self._may_inherit(out[j][0], v, out)), None)
            if heir is None:
                continue
            name = out[heir][0]
            renamed[item.name] = self.adj_name(name)
            out[k] = Temporary(renamed[item.name], item.expr, heir=name)
            del out[heir]
            out[k + 1:] = [Temporary(t.name, _renamed(t.expr, renamed), t.heir) if isinstance(t, Temporary)
                           else (t[0], _renamed(t[1], renamed)) for t in out[k + 1:]]
        return out

    def _may_inherit(self, name, v, contributions):
        """Only a variable whose one gradient here is the named one, and none before (its
        adjoint then holds that value wherever the statement reads it)."""
        return name != v and name not in self.lists and self.state.get(name) is None and \
            sum(1 for c in contributions if isinstance(c, Temporary) and c.heir == name or
                not isinstance(c, Temporary) and c[0] == name) == 1

    # ---- Python lists: a gradient list mirrors the list (gradgen.rules_lists) -------------
    def append(self, stmt):
        """`hs.append(v)` backward: v's gradient is popped from the gradient list, which is
        then exactly as long as hs was before the append. The gradient list is made (zeros,
        as long as hs is now) where the backward pass first meets it, so an append whose
        value is never read still pops, and every later index means the same element."""
        v, (_, value) = stmt.target, stmt.expr.args
        if v not in self.active:
            return []
        out = self.list_gradient(v)
        popped = self.namer.adjoint(self.of, f"{v}_popped")
        self.adj_set.add(popped)
        body = [Assign(popped, Call("pop", (Var(self.adj_name(v)),)))]
        contributions = []
        push_into(value, Var(popped), (), self.active, contributions, None, self.arrays,
                  temporary=lambda node: self.temporary(v, node))
        for item in contributions:
            if isinstance(item, Temporary):
                self.adj_set.add(item.name)
                body.append(Assign(item.name, item.expr))
            else:
                body += self.add(*item)
        self.note_reads(stmt, value)
        self.reads[id(stmt)] = (simplify.names_read(body) - self.adj_set) | self.reads.get(id(stmt), set())
        restore = [Restore(v, self.stack(v), id(stmt))] if stmt.overwrites else []
        return restore + out + self.cite(stmt, body)

    def list_gradient(self, v):
        """The statements that make v's gradient list, if the backward pass has none yet."""
        if self.state.get(v) is not None:
            return []
        adj = self.adj_name(v)
        self.state[v] = Var(adj)
        return [Assign(adj, self.zero(v))]

    def add_to_list(self, name, contribution):
        """A gradient reaching list `name`: at one element (`dhs[i] = dhs[i] + g`), or at all
        of them (the rows of np.stack(hs)'s gradient); under the test of a conditional
        expression that read it (`np.stack(hs) if len(hs) > 0 else 0.0`), inside an `if`."""
        if isinstance(contribution, Cond) and simplify.is_zero(contribution.orelse):
            made = self.list_gradient(name)
            return made + [If(contribution.test, self.add_to_list(name, contribution.body), [])]
        adj = self.adj_name(name)
        if isinstance(contribution, Call) and contribution.prim == "tree_add_at":  # dparams[i][0] += g
            g, _, *path = contribution.args
            out = self.list_gradient(name)
            entry = Call("tree_get", (Var(adj), *path), "builtins")
            return out + [IndexAdd(adj, (), tuple(path), simplify.add(entry, as_float(g)), assign=True, chained=True)]
        if isinstance(contribution, Call) and contribution.prim == "list_add_at":
            g, _, index = contribution.args
            out = self.list_gradient(name)
            entry = Call("getitem", (Var(adj), index), "op", params=(("index", ("i",)),))
            return out + [IndexAdd(adj, ("i",), (index,), simplify.add(entry, as_float(g)), assign=True)]
        assert isinstance(contribution, Call) and contribution.prim in ("unstack", "unconcatenate", "unjoin"), contribution
        current = self.state.get(name)
        self.state[name] = Var(adj)
        if current is None:
            return [Assign(adj, contribution)]
        return [Assign(adj, Call("add_lists", (current, contribution), None))]

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
        if guard is None and current is None and _zeroes_own(contribution, self.adj_name(name), self.owned):
            # `x[idx] = v` forward: none of the gradient flows back to what v overwrote
            adj = self.adj_name(name)
            self.state[name] = Var(adj)
            return [IndexAdd(adj, dict(contribution.params)["index"], contribution.args[1:], Const(0.0),
                             assign=True)]
        if current is None and guard is None and _uniform(contribution) and name not in self.written and \
                {x.name for x in variables(contribution)} <= self.stable:
            # ones times a count (a mean's gradient) stays symbolic, as a constant does: the sums
            # it reaches take it in once (`(a - b) / n`, gradgen.combine), with no array of ones
            self.state[name] = contribution
            return []
        if isinstance(contribution, Const) and (current is None or isinstance(current, Const)):
            # a constant adjoint stays symbolic (`dL_da = 1` is never written; `1 *` folds away)
            self.state[name] = contribution if current is None else simplify.add(current, contribution)
            return []
        adj = self.adj_name(name)
        self.state[name] = Var(adj)
        if isinstance(current, Var) and (name in self.arrays.objects or adj in self.mutable):
            # never `+=` on an array: the adjoint may share memory with another one
            return self.define(adj, simplify.add(current, contribution))
        if isinstance(current, Var):
            return [Assign(adj, contribution, accumulate=True)]
        if current is not None:  # a constant so far: it becomes a variable now
            contribution = simplify.add(current, contribution)
        return self.define(adj, contribution)

    def define(self, adj, value):
        """`adj = value`, noting whether adj now owns a fresh array (safe to write into)."""
        if _allocates(value):
            self.owned.add(adj)
        else:
            self.owned.discard(adj)
        self.note_mutable(adj, value)
        return [Assign(adj, value)]

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
        if current is None:
            out = self.define(adj, Call("zeros_like", (like,), "numpy", params=(("dtype", Spelled("float")),)))
        elif isinstance(current, Const):
            out = self.define(adj, simplify.mul(current, Call("ones_like", (like,), "numpy",
                                                              params=(("dtype", Spelled("float")),))))
        elif adj not in self.owned:  # it may share memory (or be a plain 0.0): a fresh array first
            zeros = Call("zeros_like", (like,), "numpy", params=(("dtype", Spelled("float")),))
            out = self.define(adj, Call("add", (current, zeros), "op"))
        self.state[name] = Var(adj)
        repeats = any(may_be_array(i, self.arrays) for i in index)
        first = current is None and guard is None and not repeats  # into fresh zeros: `d[1:] = g`
        write = IndexAdd(adj, layout, tuple(index), g, repeats, assign=first)
        return out + ([If(guard, [write], [])] if guard is not None else [write])

    def zero(self, v):
        """An exact zero: an array of zeros for an array parameter (its gradient must have its
        shape) and for an array written into (its gradient is indexed), a list of zeros for a
        list; 0.0 elsewhere, which broadcasts, and never reads a value that may be unbound."""
        if v in self.trees:
            return Call("zeros_like_tree", (Var(v),))
        if v in self.lists:
            return Call("list_zeros", (Var(v),))
        return zero_like(v, self.arrays) if v in self.params or v in self.written else Const(0.0)

    def cite(self, stmt, body):
        if body and stmt.source and f"line {stmt.line}: {stmt.source}" != self.cited:
            self.cited = f"line {stmt.line}: {stmt.source}"
            return [Comment(self.cited)] + body
        return body

    # ---- control flow ----------------------------------------------------------------------
    def branches(self, test, body, orelse, stmt):
        """An `if` replayed: each branch reversed; adjoints made to agree where they join."""
        entry, owned = dict(self.state), set(self.owned)
        self.cited = None
        then_code = self.block(body)
        then_state, self.state = self.state, dict(entry)
        then_owned, self.owned = self.owned, owned
        self.cited = None
        else_code = self.block(orelse)
        self.owned &= then_owned
        for v in sorted(set(then_state) | set(self.state)):
            a, b = then_state.get(v), self.state.get(v)
            if a == b:
                continue
            name = Var(self.adj_name(v))
            for code, st in ((then_code, a), (else_code, b)):
                if st != name:
                    if isinstance(st, Var) and st.name in self.mutable:
                        self.mutable.add(name.name)
                    code.append(Assign(name.name, st if st is not None else self.zero(v)))
            self.state[v] = name
        self.cited = None
        if not then_code and not else_code:
            return []
        return [If(test, then_code, else_code, stmt.line if stmt else None, stmt.source if stmt else None)]

    def loop(self, stmt):
        """A loop replayed backwards; adjoints it touches are variables across iterations,
        except those of its own temporaries, which start afresh in every iteration. An
        adjoint array made fresh before the loop stays writable in it when the loop only
        scatters into it (`dWs[i] += dW` for `W = Ws[i]`)."""
        before = dict(self.state)
        pre = []
        local = self.locals.get(id(stmt), set())
        made = {s.target for s in walk(stmt.body) if _makes_list(s)}  # new in every iteration: never carried
        for v in _touched(stmt.body, self.active):
            if v in local or v in made or (isinstance(self.state.get(v), Const) and _accumulates(stmt.body, v)):
                continue  # (an accumulator's constant adjoint, `total += e`, is the same on every trip)
            name = Var(self.adj_name(v))
            if self.state.get(v) != name:
                current = self.state.get(v)
                if isinstance(current, Var) and current.name in self.mutable:
                    self.mutable.add(name.name)
                pre += self.define(name.name, as_float(current) if current is not None else self.zero(v))
                self.state[v] = name
        entry = dict(self.state)
        self.cited = None
        scattered = {self.adj_name(v) for v in _touched(stmt.body, self.active) if _only_indexed(stmt.body, v)}
        self.owned -= {self.adj_name(v) for v in _touched(stmt.body, self.active)} - scattered
        body = self.block(stmt.body)
        for v, st in entry.items():
            if isinstance(st, Var) and self.state.get(v) != st:
                current = self.state.get(v)
                body.append(Assign(st.name, as_float(current) if current is not None else self.zero(v)))
        if any(self.state.get(v) is not None for v in local):
            # a temporary was read before its assignment after all: carry every adjoint instead
            self.state = before
            self.locals[id(stmt)] = set()
            return self.loop(stmt)
        self.state = entry
        self.cited = None
        if not body:
            self.state = before
            return []
        if isinstance(stmt, While):
            loop = For(self.namer.underscore(), Var(stmt.count), body, stmt.line, stmt.source,
                       stmt.count, direction="times")
        else:
            loop = For(stmt.target, stmt.iter, body, stmt.line, stmt.source, stmt.count, direction="reversed")
        return pre + [loop]


def _makes_list(stmt):
    return isinstance(stmt, Assign) and isinstance(stmt.expr, Call) and stmt.expr.prim == "list"


def _is_append(stmt):
    """`hs.append(v)` changes the list in place: the name holds the same list before and
    after it, so there is nothing to save."""
    return isinstance(stmt.expr, Call) and stmt.expr.prim == "append"


def _unshared(contributions, g, v):
    """`x[i] = e` backward: e's gradient is g[i], and then g[i] is zeroed in place; where e's
    gradient would be a view of g (e a name: `out[i] = e`), it is a copy of that part."""
    def copied(c):
        return Call("copy", (c,), "numpy") if _view_of(c, g) else c

    return [Temporary(c.name, copied(c.expr), c.heir) if isinstance(c, Temporary)
            else c if c[0] == v else (c[0], copied(c[1])) for c in contributions]


def _view_of(c, g):
    """Whether c may be (a view of) part of g's array."""
    while isinstance(c, Call) and c.prim in ("unbroadcast", "pos", "reshape", "T", "transpose", "squeeze",
                                             "expand_dims", "ravel"):
        c = c.args[0]
    if isinstance(c, Cond):
        return _view_of(c.body, g) or _view_of(c.orelse, g)
    return isinstance(c, Call) and c.prim == "getitem" and c.args[0] == g


def _accumulates(body, v):
    """Whether the loop `body` reads v only to add to it (`v = v + e`, `v = v - e`, e free of
    v): the gradient of v then passes through every trip unchanged."""
    for stmt in walk(body):
        for expr in expressions(stmt):
            if v not in _reads_of(expr):
                continue
            if not (isinstance(stmt, Assign) and stmt.target == v and expr is stmt.expr and not stmt.accumulate):
                return False
            terms = _terms(expr)
            if [t for t in terms if v in _reads_of(t[1])] != [(1, Var(v))]:
                return False
        if isinstance(stmt, Assign) and stmt.target == v and v not in _reads_of(stmt.expr):
            return False  # (set afresh: the gradient of its old value is zero from here)
    return True


def _terms(expr, sign=1):
    """The (sign, term) pairs of a sum `a + b - c`."""
    if isinstance(expr, Call) and expr.prim in ("add", "sub"):
        return _terms(expr.args[0], sign) + _terms(expr.args[1], sign if expr.prim == "add" else -sign)
    return [(sign, expr)]


def _renamed(expr, names):
    """`expr` with the variables of `names` (old -> new name) renamed."""
    if not names:
        return expr
    if isinstance(expr, Var):
        return Var(names.get(expr.name, expr.name))
    if isinstance(expr, Call):
        args = tuple(_renamed(a, names) for a in expr.args)
        return Call(expr.prim, args, expr.ns, expr.loc, expr.params) if args != expr.args else expr
    if isinstance(expr, Cond):
        return Cond(_renamed(expr.test, names), _renamed(expr.body, names), _renamed(expr.orelse, names))
    return expr


def _zeroes_own(contribution, adj, owned):
    """Whether `contribution` is `adj` with zeros at an index (a write, `x[idx] = v`) and
    the backward pass owns adj's array: then it is zeroed in place."""
    return isinstance(contribution, Call) and contribution.prim == "zero_at" \
        and contribution.args[0] == Var(adj) and adj in owned


def _only_indexed(body, v):
    """Whether the loop `body` reads `v` only as `v[...]` and assigns it only by writing
    into it (`v[...] = e`): then every contribution to v's adjoint in the loop is a scatter
    into it or zeros written into it."""
    for stmt in walk(body):
        if isinstance(stmt, Assign) and stmt.target == v:
            e = stmt.expr
            if not (isinstance(e, Call) and e.prim == "setitem" and e.args[0] == Var(v)):
                return False
            stmt = Assign(v, Call("tuple", e.args[1:]))  # (what the write reads besides v itself)
        for expr in expressions(stmt):
            stack = [expr]
            while stack:
                e = stack.pop()
                if isinstance(e, Var) and e.name == v:
                    return False
                if isinstance(e, Call):
                    args = e.args[1:] if e.prim == "getitem" and e.args[0] == Var(v) else e.args
                    stack.extend(args)
                elif isinstance(e, Cond):
                    stack.extend((e.test, e.body, e.orelse))
    return True


def _reads_of(expr):
    return {v.name for v in variables(expr)}


def loop_temporaries(stmts, bound, after, out):
    """For each loop, the variables that live only inside one iteration: first assigned at
    the top of its body, unbound before the loop, and read nowhere after it (nor, for an
    inner loop, anywhere else in the enclosing loop). Their adjoints need no carrying.
    `bound`: names bound before `stmts`; `after`: names read after them.

    The sets of names read after each statement are built in one backward sweep, and kept
    only where a loop needs them, so straight-line code costs one pass."""
    needed = [i for i, s in enumerate(stmts) if isinstance(s, (For, While, If)) and _has_loop(s)]
    if not needed:
        return
    later_of, later = {}, set(after)
    for i in range(len(stmts) - 1, -1, -1):
        if i in needed:
            later_of[i] = set(later)
        later |= simplify.names_read([stmts[i]])
    bound = set(bound)
    for i, s in enumerate(stmts):
        if i in later_of:
            _temporaries_of(s, bound, later_of[i], out)
        bound |= assigned([s])


def _has_loop(stmt):
    return any(isinstance(s, (For, While)) for s in walk([stmt]))


def _temporaries_of(s, bound, later, out):
    if isinstance(s, If):
        loop_temporaries(s.body, bound, later, out)
        loop_temporaries(s.orelse, bound, later, out)
        return
    inside = simplify.names_read(s.body) | later
    firsts, seen = [], set()
    for t in s.body:
        for x in walk([t]):
            for n in ([x.target] if isinstance(x, (Assign, For)) else []):
                if n not in seen and t is x and isinstance(t, Assign):
                    firsts.append(n)
                seen.add(n)
    out[id(s)] = {n for n in firsts if n not in bound and n not in later}
    loop_temporaries(s.body, bound, inside, out)


def _touched(body, active):
    """Active variables a loop body reads differentiably or assigns, in order of appearance."""
    from gradgen.activity import diff_vars

    seen = []
    for stmt in walk(body):
        names = []
        if isinstance(stmt, Assign):
            names = [stmt.target] + sorted(diff_vars(stmt.expr))
        for n in names:
            if n in active and n not in seen:
                seen.append(n)
    return seen


def exits(stmt):
    """Whether an `if` can end its loop iteration (a `break`/`continue` in it)."""
    return any(isinstance(s, (Break, Continue)) for s in walk(stmt.body + stmt.orelse)
               if not _in_inner_loop(stmt, s))


def _in_inner_loop(stmt, target):
    for s in walk(stmt.body + stmt.orelse):
        if isinstance(s, (For, While)) and any(t is target for t in walk(s.body)):
            return True
    return False


def exit_condition(stmt):
    """An expression true exactly when `if` statement `stmt` ended its iteration."""
    return _or(_and(stmt.test, _exit_of(stmt.body)), _and(simplify.negate(stmt.test), _exit_of(stmt.orelse)))


def _exit_of(stmts):
    terms = []
    for s in stmts:
        if isinstance(s, (Break, Continue)):
            terms.append(TRUE)
            break
        if isinstance(s, If) and exits(s):
            terms.append(exit_condition(s))
    return _or(*terms) if terms else FALSE


def _and(a, b):
    if a == FALSE or b == FALSE:
        return FALSE
    if a == TRUE:
        return b
    if b == TRUE:
        return a
    return Call("and", (a, b), "op")


def _or(*terms):
    terms = [t for t in terms if t != FALSE]
    if any(t == TRUE for t in terms):
        return TRUE
    if not terms:
        return FALSE
    return terms[0] if len(terms) == 1 else Call("or", tuple(terms), "op")


def record_decisions(stmts, namer, later=frozenset(), in_loop=False):
    """Save an `if`'s decision in a variable when the backward pass could not recompute it:
    its branches overwrite what its condition reads, or (for an `if` that can leave a loop
    iteration) the rest of the iteration does. Returns the new statement list."""
    out = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, If):
            leaves = in_loop and exits(stmt)
            after = assigned(stmts[i + 1:]) | later if leaves or _has_if(stmt) else frozenset()
            reads = {v.name for v in variables(stmt.test)}
            stmt.body = record_decisions(stmt.body, namer, after, in_loop)
            stmt.orelse = record_decisions(stmt.orelse, namer, after, in_loop)
            own = assigned(stmt.body) | assigned(stmt.orelse)
            if reads & own or (leaves and reads & after):
                name = namer.define("branch")
                out.append(Assign(name, stmt.test, stmt.line, stmt.source, overwrites=in_loop))
                stmt.test, stmt.record = Var(name), name
        elif isinstance(stmt, (For, While)):
            stmt.body = record_decisions(stmt.body, namer, frozenset(), True)
        out.append(stmt)
    return out


def _has_if(stmt):
    return any(isinstance(s, If) for s in walk(stmt.body + stmt.orelse))


def _prune(stmts, saved):
    """Drop restores of values that are not saved, and blocks left empty."""
    out = []
    for s in stmts:
        if isinstance(s, Restore):
            if s.origin in saved:
                out.append(s)
        elif isinstance(s, If):
            body, orelse = _prune(s.body, saved), _prune(s.orelse, saved)
            if _has_code(body) or _has_code(orelse):
                s.body, s.orelse = body, orelse
                out.append(s)
        elif isinstance(s, For):
            s.body = _prune(s.body, saved)
            if _has_code(s.body):
                out.append(s)
        else:
            out.append(s)
    return out


def _has_code(stmts):
    return any(not isinstance(s, Comment) for s in stmts)


# ---- pushing a gradient down one expression -------------------------------------------------

def _is_scatter(expr):
    return isinstance(expr, Call) and expr.prim == "scatter"


# Primitives whose result is an array even of a number (a 0-d array), or may be a view.
_ARRAY_MAKERS = {"zeros_like", "ones_like", "array", "copy", "where", "reshape", "squeeze", "expand_dims", "broadcast_to",
                 "ravel", "transpose", "T", "flip", "getitem", "unbroadcast", "concatenate_grad"}


def _allocates(expr):
    """Whether `expr` always makes a new array (a ufunc's result), never a view or an input."""
    if not isinstance(expr, Call):
        return False
    prim = TABLE[expr.prim]
    return (prim.elementwise and expr.prim not in ("pos", "float")) or expr.prim in ("zeros_like", "ones_like", "array",
                                                                                       "zero_at")


def zero_like(v, arrays):
    if v in arrays:
        return Call("zeros_like", (Var(v),), "numpy", params=(("dtype", Spelled("float")),))
    return Const(0.0)


class Temporary:
    """A gradient pushed into a subexpression that feeds several variables: named once
    (`dL_dh_inner = dL_dh * (1 - h ** 2)`) instead of being written out for each of them."""

    def __init__(self, name, expr, heir=None):
        self.name, self.expr, self.heir = name, expr, heir  # heir: the variable whose adjoint it is


def push_into(expr, g, guards, active, out, value=None, arrays=frozenset(), stretched=False, scalar=False,
              temporary=None, wide=None):
    """Send gradient `g` of `expr` (whose value is `value`, else recomputed) to the active
    variables inside it; append (variable, contribution) pairs to `out`.

    Broadcasting is undone where it matters. Through elementwise operations a gradient may
    travel with the larger, broadcast shape (`stretched`): their local derivatives are
    constant along the stretched axes, so summing at the end is the same as summing at
    every step. It is summed back to each variable's shape where it arrives, and to a
    node's shape before a rule that needs its exact shape (a reduction, a reshape).
    `scalar`: `expr` is known to be a number (it is assigned to one); `wide`: an expression
    of the shape a stretched g has (where the source states shapes, the sum back is
    written out: see _fit)."""
    if isinstance(expr, Var):
        if expr.name in active:
            out.append((expr.name, _guarded(guards, _fit(g, expr, stretched, arrays, wide))))
        return
    if isinstance(expr, Cond):
        push_into(expr.body, g, guards + (expr.test,), active, out, None, arrays, stretched, scalar, wide=wide)
        push_into(expr.orelse, g, guards + (simplify.negate(expr.test),), active, out, None, arrays, stretched, scalar,
                  wide=wide)
        return
    if not isinstance(expr, Call):
        return
    prim = TABLE[expr.prim]
    if prim.kind != "smooth" or prim.vjp is None:
        return
    root = value is not None
    value = expr if value is None else value
    if _inline_sigmoid(expr) is not None:  # 1 / (1 + exp(-z)): differentiated as sigmoid, out * (1 - out)
        expr = Call("sigmoid", (_inline_sigmoid(expr),), expr.ns, expr.loc)
        prim = TABLE["sigmoid"]
    ranks = _matmul_ranks(expr, arrays)
    if stretched and not prim.elementwise and (expr.prim not in _TAKES_STRETCHED or ranks is not None):
        g, stretched = _fit(g, value, True, arrays, wide), False
    if temporary is not None and not root and not guards and _worth_naming(g, expr, active):
        name = temporary(expr)
        out.append(Temporary(name, g))
        g = Var(name)
    for i, arg in enumerate(expr.args):
        if not any(v.name in active for v in variables(arg)):
            continue
        rule = prim.vjp[0](i) if prim.arity is None else prim.vjp[i]
        if ranks is not None:
            rule = _MATMUL_BY_RANKS[ranks][i]
        if rule is None:
            continue
        gi = sameshape.tidy(_in_namespace(rule(g, value, *expr.args, **dict(expr.params)), expr.ns), arrays,
                            (value, g) + expr.args)
        arg_scalar = scalar and prim.elementwise  # broadcasting never shrinks: its inputs are numbers too
        arg_stretched = not arg_scalar and (stretched or (prim.elementwise and _stretches(expr, i, arrays)))
        if expr.prim in _TAKES_STRETCHED:
            arg_stretched = False  # its helper sums back to each input's shape itself
        arg_wide = (wide if stretched else value) if arg_stretched else None
        if expr.prim == "setitem" and i == 1:
            arg_stretched = True  # `x[1:] = s`: the value broadcast into the index
        arg_guards = guards
        while isinstance(gi, Cond) and simplify.is_zero(gi.orelse):  # a rule's own test (max, min)
            arg_guards, gi = arg_guards + (gi.test,), gi.body
        push_into(arg, gi, arg_guards, active, out, None, arrays, arg_stretched, arg_scalar, temporary, arg_wide)


def _inline_sigmoid(expr):
    """z, where `expr` is the logistic function written out: `1 / (1 + exp(-z))`."""
    if not (isinstance(expr, Call) and expr.prim == "div" and simplify.is_one(expr.args[0])):
        return None
    total = expr.args[1]
    if not (isinstance(total, Call) and total.prim == "add"):
        return None
    one, exp = total.args if simplify.is_one(total.args[0]) else reversed(total.args)
    if not simplify.is_one(one) or not (isinstance(exp, Call) and exp.prim == "exp"):
        return None
    neg = exp.args[0]
    return neg.args[0] if isinstance(neg, Call) and neg.prim == "neg" else None


def _worth_naming(g, expr, active):
    """Name the gradient of a subexpression when it is a computation (not a name or a
    number) and more than one active variable inside the subexpression will use it."""
    if isinstance(g, (Var, Const)) or (isinstance(g, Call) and g.prim == "neg" and isinstance(g.args[0], Var)):
        return False
    if _spread_ones(g) or _uniform(g):  # ones of a shape, scaled: folded into the products that use it instead
        return False
    return sum(1 for v in variables(expr) if v.name in active) >= 2


def _uniform(g):
    """`np.ones_like(x, dtype=float)` scaled by numbers and counts (`-np.ones_like(s) / n`):
    one number everywhere, whose shape is x's."""
    from gradgen.primitives import _counts_only

    if isinstance(g, Call) and g.prim == "ones_like" and dict(g.params).get("dtype") is not None:
        return True
    if isinstance(g, Call) and g.prim == "neg":
        return _uniform(g.args[0])
    if isinstance(g, Call) and g.prim in ("mul", "div"):
        a, b = g.args
        return (_uniform(a) and _counts_only(b)) or (g.prim == "mul" and _counts_only(a) and _uniform(b))
    return False


def _spread_ones(g):
    """`np.ones_like(x)`, negated or scaled by constants."""
    if isinstance(g, Call) and g.prim == "ones_like":
        return True
    if isinstance(g, Call) and g.prim in ("neg", "mul", "div"):
        return any(_spread_ones(a) for a in g.args) and all(_spread_ones(a) or isinstance(a, Const) for a in g.args)
    return False


# rules whose helpers accept a gradient of the broadcast shape and sum it back themselves
_TAKES_STRETCHED = {"matmul"}


def _stretches(expr, i, arrays):
    """Whether broadcasting in `expr` may make its result larger than input `i`."""
    if not may_be_array(expr, arrays):
        return False
    if not may_be_array(expr.args[i], arrays):
        return True
    same = getattr(arrays, "same", None)
    if same is not None and same.same(expr, expr.args[i]):
        return False  # the result has this input's shape: nothing stretched it
    return any(may_be_array(a, arrays) for j, a in enumerate(expr.args) if j != i)


def _fit(g, like, stretched, arrays, wide=None):
    """`g` summed back to the shape of `like` if broadcasting may have stretched it: over
    exactly the axes it stretched where the source states both shapes (`wide`'s and
    like's), else by the `unbroadcast` helper, which looks at run time."""
    if not stretched:
        return g
    if not may_be_array(like, arrays):
        return g if isinstance(g, Const) else Call("sum", (g,), "numpy")
    written = _summed_back(g, sameshape.static_of(arrays, wide), sameshape.static_of(arrays, like))
    return combine.remember_wide(arrays, written if written is not None else Call("unbroadcast", (g, like), None), wide)


def _summed_back(g, shape, target):
    """g (of `shape`) summed to `target`: the leading axes broadcasting added, then the
    axes where target has length 1 (kept); None where a dimension leaves it open."""
    if not known(shape) or not known(target) or len(target) > len(shape):
        return None
    lead = len(shape) - len(target)
    kept = []
    for k, (have, want) in enumerate(zip(shape[lead:], target)):
        if have == want:
            continue
        if want != 1:
            return None  # (n against m: the shapes do not say which broadcast)
        kept.append(k)
    if lead:
        axes = tuple(range(lead))
        g = Call("sum", (g,), "numpy", params=(("axis", axes[0] if lead == 1 else axes),))
    if kept:
        g = Call("sum", (g,), "numpy", params=(("axis", kept[0] if len(kept) == 1 else tuple(kept)), ("keepdims", True)))
    return g


def _matmul_ranks(expr, arrays):
    """(rank of a, rank of b) of `a @ b` where the source states both as vectors or
    matrices: its gradients are then written as a person writes them (see _MATMUL_BY_RANKS)."""
    if not (isinstance(expr, Call) and expr.prim == "matmul"):
        return None
    a, b = (sameshape.static_of(arrays, x) for x in expr.args)
    if a is None or b is None or not 1 <= len(a) <= 2 or not 1 <= len(b) <= 2:
        return None
    return len(a), len(b)


def _transposed(x):
    return Call("T", (x,), None)


def _mm(a, b):
    return Call("matmul", (a, b), "op")


# the gradients of a @ b for a and for b, by the ranks of a and b
_MATMUL_BY_RANKS = {
    (2, 2): (lambda g, out, a, b: _mm(g, _transposed(b)), lambda g, out, a, b: _mm(_transposed(a), g)),
    (2, 1): (lambda g, out, a, b: Call("outer", (g, b), "numpy"), lambda g, out, a, b: _mm(_transposed(a), g)),
    (1, 2): (lambda g, out, a, b: _mm(b, g), lambda g, out, a, b: Call("outer", (a, g), "numpy")),
    (1, 1): (lambda g, out, a, b: g * b, lambda g, out, a, b: g * a),
}


def _guarded(guards, g):
    if not guards:
        return g
    test = guards[0] if len(guards) == 1 else Call("and", tuple(guards), "op")
    return Cond(test, as_float(g), Const(0.0))


def as_float(expr):
    """A gradient that is a bare constant is written as a float (`1.0`, never `1`)."""
    if isinstance(expr, Const) and type(expr.value) is int:
        return Const(float(expr.value))
    if isinstance(expr, Cond):
        return Cond(expr.test, as_float(expr.body), as_float(expr.orelse))
    return expr


def _in_namespace(expr, ns):
    """Give the calls a rule created the namespace of the call they differentiate."""
    if ns not in ("math", "numpy"):
        return expr
    if isinstance(expr, Call):
        args = tuple(_in_namespace(a, ns) for a in expr.args)
        return Call(expr.prim, args, expr.ns or ns, expr.loc, expr.params)
    if isinstance(expr, Cond):
        return Cond(_in_namespace(expr.test, ns), _in_namespace(expr.body, ns), _in_namespace(expr.orelse, ns))
    return expr
