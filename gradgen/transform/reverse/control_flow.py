"""Stage 4, reverse: control flow replayed backwards.

An `if` takes the branch the forward pass took (its condition recomputed, or recorded
when the branch overwrites what it reads: record_decisions); a loop runs its iterations
backwards, carrying the adjoints it touches across iterations and starting its own
temporaries afresh in each; a `while` runs as often as the forward one did. The part of a
loop body after an `if` that can leave the iteration runs only when it did not leave.
"""

from __future__ import annotations

from gradgen.analysis.activity import diff_vars
from gradgen.ir import simplify
from gradgen.ir.nodes import (
    Assign, Break, Call, Comment, Const, Continue, For, If, Restore, Var, While, assigned, children, expressions,
    subexpressions, variables, walk
)
from gradgen.transform.reverse import factoring
from gradgen.transform.reverse.expression import _allocates, as_float, bare

TRUE, FALSE = Const(True), Const(False)


class ControlFlow:
    # ---- control flow ----------------------------------------------------------------------
    def branches(self, test, body, orelse, stmt):
        """An `if` replayed: each branch reversed; adjoints made to agree where they join."""
        entry, owned, zeroed, mutable = dict(self.state), set(self.owned), set(self.zeroed), set(self.mutable)
        self.cited = None
        then_code = self.block(body)
        then_state, self.state = self.state, dict(entry)
        then_owned, self.owned = self.owned, owned
        then_zeroed, self.zeroed = self.zeroed, zeroed
        # (each branch starts from what may be a 0-d array at the `if`: the then branch's
        # `df_da = df_da + 0.5` made the else branch's `df_da += 1.0` write into the np.where
        # df_dc shares, soak 54006 #788); after it, what may be one in either
        then_mutable, self.mutable = self.mutable, mutable
        self.cited = None
        else_code = self.block(orelse)
        self.owned &= then_owned
        self.mutable |= then_mutable
        else_zeroed = self.zeroed
        joined = []  # what the adjoints are set to where the branches join: read at the `if`'s entry
        for v in sorted(set(then_state) | set(self.state)):
            a, b = then_state.get(v), self.state.get(v)
            if a == b:
                continue
            name = Var(self.adj_name(v))
            for code, st, zeroed in ((then_code, a, then_zeroed), (else_code, b, else_zeroed)):
                if st != name:
                    if isinstance(st, Var) and st.name in self.mutable:
                        self.mutable.add(name.name)
                    value = st if st is not None else self.zero(v)
                    code.append(Assign(name.name, value))
                    joined.append(value)
                    if bare(value, zeroed):  # (a 0.0 there: a rule that reads it first makes it an array)
                        zeroed.add(name.name)
                    else:
                        zeroed.discard(name.name)
                    if not _allocates(value):  # (a 0.0, or another adjoint's array: never written into)
                        self.owned.discard(name.name)
            self.state[v] = name
        self.zeroed = then_zeroed | else_zeroed
        self.cited = None
        if stmt is not None and joined:  # (`np.zeros_like(data)` for a branch's `data = e`: data as it was
            # before the branch, which a branch that overwrites it must save: soak seed 40001 #1021)
            self.note_reads(stmt, *joined)
        if not then_code and not else_code:
            return []
        return [If(test, then_code, else_code, stmt.line if stmt else None, stmt.source if stmt else None)]

    def loop(self, stmt, restarted=frozenset()):
        """A loop replayed backwards; adjoints it touches are variables across iterations,
        except those of its own temporaries, which start afresh in every iteration. An
        adjoint array made fresh before the loop stays writable in it when the loop only
        scatters into it (`dWs[i] += dW` for `W = Ws[i]`). `restarted`: the adjoints an
        iteration may end with at 0.0, which the next one (backward) then starts with."""
        before = dict(self.state)
        kept = set(self.owned), set(self.mutable), set(self.zeroed)
        pre = []
        local = self.locals.get(id(stmt), set())
        made = {s.target for s in walk(stmt.body) if _makes_list(s)}  # new in every iteration: never carried
        inner = set().union(*(self.locals.get(id(s), set()) for s in walk(stmt.body) if isinstance(s, (For, While))))
        for v in _touched(stmt.body, self.active):  # (an inner loop's temporary: that loop's to start)
            if v in local or v in made or v in inner or (isinstance(self.state.get(v), Const) and _accumulates(stmt.body, v)):
                continue  # (an accumulator's constant adjoint, `total += e`, is the same on every trip)
            name = Var(self.adj_name(v))
            if self.state.get(v) != name:
                current = self.state.get(v)
                if isinstance(current, Var) and current.name in self.mutable:
                    self.mutable.add(name.name)
                pre += self.define(name.name, as_float(current) if current is not None else self.zero(v))
                self.state[v] = name
        entry = dict(self.state)
        self.zeroed |= restarted
        at_start = set(self.zeroed)
        self.cited = None
        scattered = {self.adj_name(v) for v in _touched(stmt.body, self.active) if _only_indexed(stmt.body, v)}
        self.owned -= {self.adj_name(v) for v in _touched(stmt.body, self.active)} - scattered
        for v in _touched(stmt.body, self.active):  # written into in place: an array before the loop, once
            adj = self.adj_name(v)
            if adj in scattered and adj in self.zeroed and self.state.get(v) == Var(adj) and v in self.arrays:
                pre += self.shaped(Var(v), Var(adj))
                self.zeroed.discard(adj)
        body = self.block(stmt.body)
        restarts = []  # what each adjoint starts the trip before from: read as a forward trip starts
        for v, st in entry.items():
            if isinstance(st, Var) and self.state.get(v) != st:
                current = self.state.get(v)
                body.append(Assign(st.name, as_float(current) if current is not None else self.zero(v)))
                self.note_zeroed(st.name, body[-1].expr)
                restarts.append(body[-1].expr)
        ends = {st.name for st in entry.values() if isinstance(st, Var) and st.name in self.zeroed}
        carried = any(self.state.get(v) is not None for v in local)
        if carried or not ends <= at_start:
            # a temporary was read before its assignment after all: carry every adjoint instead;
            # or an iteration ends with an adjoint at 0.0 the one before it reads: again, knowing it
            if carried:
                self.locals[id(stmt)] = set()
            self.state = before
            self.owned, self.mutable, self.zeroed = kept
            return self.loop(stmt, restarted | ends)
        self.zeroed |= at_start  # (a loop that ran no trip leaves them as they were)
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
        # what the code before the loop reads (`np.zeros_like(S)`) is S as the loop left it: a
        # later statement that rebinds S saves it for here (soak seed 2006 #7721); what a trip's
        # restart reads (`np.zeros_like(X)` once `X = e` is undone) is X as the forward trip found it,
        # so a trip that makes X first saves the old value too (soak seed 42000 #31: X of the
        # branch before the loop, (3, 1), met zeros of a trip's (2, 2))
        self.reads.setdefault(id(stmt), set()).update(simplify.names_read(pre + [Assign("_", e) for e in restarts])
                                                      - self.adj_set)
        return pre + [loop]


def _makes_list(stmt):
    return isinstance(stmt, Assign) and isinstance(stmt.expr, Call) and stmt.expr.prim == "list"


def _accumulates(body, v):
    """Whether the loop `body` reads v only to add to it (`v = v + e`, `v = v - e`, e free of
    v): the gradient of v then passes through every trip unchanged."""
    for stmt in walk(body):
        for expr in expressions(stmt):
            if v not in _reads_of(expr):
                continue
            if not (isinstance(stmt, Assign) and stmt.target == v and expr is stmt.expr and not stmt.accumulate):
                return False
            terms = factoring.terms(expr)
            if [t for t in terms if v in _reads_of(t[1])] != [(1, Var(v))]:
                return False
        if isinstance(stmt, Assign) and stmt.target == v and v not in _reads_of(stmt.expr):
            return False  # (set afresh: the gradient of its old value is zero from here)
    return True


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
        into = lambda e: e.args[1:] if isinstance(e, Call) and e.prim == "getitem" and e.args[0] == Var(v) \
            else children(e)  # (v[i] reads v's elements, not v whole)
        if any(e == Var(v) for expr in expressions(stmt) for e in subexpressions(expr, into)):
            return False
    return True


def _reads_of(expr):
    return {v.name for v in variables(expr)}


def loop_temporaries(stmts, bound, after, out, in_loop=False):
    """For each loop, the variables that live only inside one iteration: first assigned at
    the top of its body, unbound before the loop, and read nowhere after it (nor, for an
    inner loop, anywhere else in the enclosing loop: `in_loop`, the statements before it run
    again after it, in the next trip). Their adjoints need no carrying. `bound`: names bound
    before `stmts`; `after`: names read after them. (What an inner loop reads itself is not
    "elsewhere": lstm's gates and weights, read only in its trip over layers, were carried
    across trips and reset, as every adjoint of that loop was.)

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
    if in_loop:
        before = set()
        for i, s in enumerate(stmts):
            if i in later_of:
                later_of[i] |= before
            before |= simplify.names_read([s])
    bound = set(bound)
    for i, s in enumerate(stmts):
        if i in later_of:
            _temporaries_of(s, bound, later_of[i], out, in_loop)
        bound |= assigned([s])


def _has_loop(stmt):
    return any(isinstance(s, (For, While)) for s in walk([stmt]))


def _temporaries_of(s, bound, later, out, in_loop):
    if isinstance(s, If):
        loop_temporaries(s.body, bound, later, out, in_loop)
        loop_temporaries(s.orelse, bound, later, out, in_loop)
        return
    firsts, seen = [], set()
    for t in s.body:
        for x in walk([t]):
            for n in ([x.target] if isinstance(x, (Assign, For)) else []):
                if n not in seen and t is x and isinstance(t, Assign):
                    firsts.append(n)
                seen.add(n)
    out[id(s)] = {n for n in firsts if n not in bound and n not in later}
    loop_temporaries(s.body, bound, later, out, in_loop=True)


def _touched(body, active):
    """Active variables a loop body reads differentiably or assigns, in order of appearance."""
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


def _prune(stmts, saved, after=frozenset()):
    """Drop restores of values that are not saved (`after`: saved after the assignment, see
    tape.py; `saved`: before it), and blocks left empty."""
    out = []
    for s in stmts:
        if isinstance(s, Restore):
            if s.origin in (after if s.after else saved):
                out.append(s)
        elif isinstance(s, If):
            body, orelse = _prune(s.body, saved, after), _prune(s.orelse, saved, after)
            if _has_code(body) or _has_code(orelse):
                s.body, s.orelse = body, orelse
                out.append(s)
        elif isinstance(s, For):
            s.body = _prune(s.body, saved, after)
            if _has_code(s.body):
                out.append(s)
        else:
            out.append(s)
    return out


def _has_code(stmts):
    return any(not isinstance(s, Comment) for s in stmts)
