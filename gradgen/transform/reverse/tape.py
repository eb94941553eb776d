"""Stage 4, reverse: the tape, which forward values the backward pass gets back, and how.

The backward code of a statement reads each forward name as it was at that statement.
Inside control flow a name keeps one variable and is overwritten, so a value the backward
pass reads after an overwrite destroyed it is saved: pushed on a list before the overwrite
(forward) and popped back after its adjoint (backward), only where backward code between
the value's definition and the overwrite reads it (Tapenade's "to be recorded").

A value a loop trip makes first (`innovation = y[t] - mean`, its name unread in the trip
before it and bound nowhere else in the loop) is saved after it is made instead, and popped
as the trip's backward sweep starts: no None is pushed for the trip before the first, no
name is bound to None before the loop, and nothing is saved where no backward code reads it.
"""

from __future__ import annotations

from gradgen.ir import simplify
from gradgen.ir.nodes import Assign, Break, Call, Continue, For, If, While, variables, walk


def trip_values(body, rebinds=frozenset()):
    """{id(assignment): name} of the assignments that may save the value they make in a loop
    trip (see the module docstring): a statement of the loop body itself (not of a branch),
    the only one of the loop that binds its name, which neither it nor any statement of the
    trip before it reads. `rebinds`: names whose old values the gradient reads back (never these)."""
    found = {}
    for loop in walk(body):
        if not isinstance(loop, (For, While)):
            continue
        bound = {}
        for s in walk(loop.body):
            if isinstance(s, (Assign, For)):
                bound[s.target] = bound.get(s.target, 0) + 1
        read = set()
        for s in loop.body:
            if isinstance(s, Assign) and _makes_a_value(s) and bound.get(s.target) == 1 and \
                    s.target not in read and s.target not in rebinds:
                found[id(s)] = s.target
            read |= simplify.names_read([s])
    return found


def _makes_a_value(s):
    """A plain overwrite that binds a new value (not `x += e`, a write into x, an append)."""
    return s.overwrites and not s.counter and not s.accumulate and not s.augmented and \
        not (isinstance(s.expr, Call) and s.expr.prim in ("setitem", "append")) and \
        s.target not in {v.name for v in variables(s.expr)}


def mark_saves(stmts, reads, rebinds=frozenset(), candidates=None, reads_made=None):
    """(saved, after): the ids of the overwrites that save the value they destroy, and of the
    trip values (`candidates`, from trip_values) saved after they are made. `reads`: id(forward
    statement) -> the forward names its backward code reads. A candidate whose name is still
    read, where it is made, as an earlier trip or the code before the loop left it, is an
    overwrite like any other: the analysis runs again without it. `reads_made`: id(`x = f(x)`) ->
    {x} where its backward code reads the value it made (zeros of its shape, before the restore)."""
    candidates = dict(candidates or {})
    while True:
        pending = _Pending(reads, rebinds, candidates, reads_made or {})
        pending.block(stmts, set())
        if not pending.failed:
            return pending.saved, pending.after
        for i in pending.failed:
            del candidates[i]


class _Pending:
    """The names backward code reads since their last definition, carried in forward order:
    an overwrite of one of them must save the value it destroys."""

    def __init__(self, reads, rebinds, candidates, reads_made):
        self.reads, self.rebinds, self.candidates, self.reads_made = reads, rebinds, candidates, reads_made
        self.saved, self.after, self.failed = set(), set(), set()
        self.exits = []  # per enclosing loop: what is pending where a `break`/`continue` leaves its trip

    def block(self, stmts, pending):
        for s in stmts:
            pending = self.statement(s, pending)
        return pending

    def statement(self, s, pending):
        own = self.reads.get(id(s), set())
        if isinstance(s, Assign):
            return self.assign(s, pending, own)
        if isinstance(s, If):
            pending = pending | own  # (its test is read where the backward pass reaches it)
            return self.block(s.body, set(pending)) | self.block(s.orelse, set(pending)) | own
        if isinstance(s, (For, While)):
            return self.loop(s, pending | own) | own
        if isinstance(s, (Break, Continue)) and self.exits:
            self.exits[-1].append(set(pending))
        return pending

    def assign(self, s, pending, own):
        v = s.target
        if id(s) in self.candidates:
            if v in pending:
                self.failed.add(id(s))
            return (pending - {v}) | own
        self_ref = s.accumulate or any(x.name == v for x in variables(s.expr))
        rebound = v in self.rebinds and not (isinstance(s.expr, Call) and s.expr.prim == "setitem")
        before = pending | own if self_ref else pending
        if s.overwrites and not s.counter and not _is_append(s) and (v in before or rebound):
            self.saved.add(id(s))
        # (its reads of other names are of their values here; of its own target, of the old value,
        # which its restore puts back first, where it reads that, else of the one it makes; and of
        # the one it makes where its backward code reads that before the restore: `np.zeros_like(r)`
        # for `r = r.T`, soak seed 32000 #1719, #123)
        if self_ref:
            return (pending | own) - ({v} - self.reads_made.get(id(s), set()))
        return (pending - {v}) | own

    def loop(self, s, entry):
        """A loop's trips to a fixed point: each starts with what the one before left pending.
        A trip value is popped as its trip's backward sweep starts: read in the trip, it is
        saved; pending or not, nothing before the trip reads it back."""
        made = {self.candidates[id(t)]: id(t) for t in s.body if id(t) in self.candidates}
        start = set(entry)
        while True:
            self.exits.append([])
            ends = [self.block(s.body, set(start))] + self.exits.pop()
            self.after |= {i for v, i in made.items() if any(v in end for end in ends)}
            end = set().union(*ends) - set(made)
            if end <= start:
                return start | end
            start |= end


def _is_append(stmt):
    """`hs.append(v)` changes the list in place: the name holds the same list before and
    after it, so there is nothing to save."""
    return isinstance(stmt.expr, Call) and stmt.expr.prim == "append"
