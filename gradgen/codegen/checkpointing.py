"""A checkpointed loop written out (gradgen/transform/reverse/checkpoint.py): the forward
pass's loop that keeps the states the schedule names, the backward pass's walk of the
schedule, and the schedule itself, a helper written into the generated module."""

from __future__ import annotations

from gradgen.ir.nodes import Checkpointed
from gradgen.transform.reverse.checkpoint import memory_text


def text(emitter, s):
    """The source of a `Checkpointed` (forward) or `Replayed` (backward) loop."""
    emitter.used_helpers.add("checkpoint_schedule")
    return _forward(emitter, s) if isinstance(s, Checkpointed) else _backward(emitter, s)


def _forward(emitter, s):
    n, loop = s.names, s.loop
    trips = f"len({emitter.iteration(loop)})"
    if not s.state:
        count, kept = str(s.snapshots) if isinstance(s.snapshots, int) else "1", "no trip reads what another wrote"
    elif isinstance(s.snapshots, int):
        count, kept = str(s.snapshots), f"at most {s.snapshots} states of {_listed(s.state)}"
    else:
        emitter.used_helpers.add("snapshots_within")
        count = f"snapshots_within({s.snapshots[1]}, {', '.join(s.state)})"
        kept = f"states of {_listed(s.state)}, as many as {memory_text(s.snapshots[1])} holds"
    lines = [f"# line {loop.line}: {loop.source}  (checkpointed: {kept})",
             f"{n['snapshots']} = {{}}",
             f"{n['stored']}, {n['schedule']} = checkpoint_schedule({trips}, {count})",
             f"for {n['trip']}, {loop.target} in enumerate({emitter.iteration(loop)}):",
             f"    if {n['trip']} in {n['stored']}:",
             f"        {_store(emitter, s)}",
             emitter.block(loop.body)]
    return "\n".join(lines)


def _backward(emitter, s):
    n, loop = s.names, s.loop
    it = emitter.iteration(loop)
    advance = [f"# line {loop.line}: trips {n['trip']}..{n['stop']}-1 again, without a tape",
               f"for {loop.target} in {it}[{n['trip']}:{n['stop']}]:", emitter.block(s.again)]
    reverse = [f"# line {loop.line}: this trip again, with its tape, then its adjoint",
               f"{loop.target} = {it}[{n['trip']}]"] + [emitter.statement(t) for t in s.taped + s.adjoint]
    restore = [f"{_tuple(s.state)} = {n['snapshots']}[{n['trip']}]"]
    restore += [f"{v} = {_copy(emitter, v)}" for v in s.state if v in s.copied]
    lines = [f"for {n['action']}, {n['trip']}, {n['stop']} in {n['schedule']}:",
             f'    if {n["action"]} == "advance":', _indent(_indent("\n".join(advance))),
             f'    elif {n["action"]} == "store":', f"        {_store(emitter, s)}",
             f'    elif {n["action"]} == "restore":', _indent(_indent("\n".join(restore))),
             f'    elif {n["action"]} == "forget":', f"        del {n['snapshots']}[{n['trip']}]",
             '    else:  # "reverse"', _indent(_indent("\n".join(reverse)))]
    return "\n".join(lines)


def _store(emitter, s):
    kept = [_copy(emitter, v) if v in s.copied else v for v in s.state]
    return f"{s.names['snapshots']}[{s.names['trip']}] = {kept[0] if len(kept) == 1 else '(' + _joined(kept) + ')'}"


def _copy(emitter, name):
    """A copy of the state `name` kept (an array written in place keeps its numbers): `[()]`
    makes a number's copy a number again, not a 0-d array that `z += 0.5` would write into with
    the number's dtype (soak 43005 #1126: an int state that its loop makes a float)."""
    emitter.imports.add("numpy")
    return f"np.copy({name})[()]"


def _tuple(names):
    return names[0] if len(names) == 1 else ", ".join(names) if names else "_"


def _joined(items):
    return ", ".join(items) + ("," if len(items) == 1 else "")


def _listed(names):
    return ", ".join(names) if names else "no state"


def _indent(text):
    return "\n".join("    " + line if line else line for line in text.split("\n"))


SCHEDULE = '''def checkpoint_schedule(trips, snapshots):
    """Binomial checkpointing (Griewank and Walther's revolve) of a loop of `trips` trips
    that keeps at most `snapshots` states at once. Returns the trips whose starting state
    the forward pass keeps, and the backward pass's actions (action, trip, stop), made one
    at a time: "advance" runs trips trip..stop-1 again without a tape; "store", "restore"
    and "forget" keep, take back and drop the state at the start of `trip`; "reverse" runs
    `trip` with its tape, then its adjoint. Each trip is reversed once, the last first.
    """
    snapshots = max(int(snapshots), 1)
    kept, free = [0], snapshots
    # the first sweep's splits, which the forward pass keeps
    while trips - kept[-1] > 1 and free > 1:
        kept.append(kept[-1] + checkpoint_split(trips - kept[-1], free))
        free -= 1
    stored = set(kept) if trips > 0 else set()
    return stored, checkpoint_actions(trips, snapshots, kept)
'''

SPLIT = '''def checkpoint_split(trips, snapshots):
    """How many trips to advance before storing the next state, when `trips` trips (2 or
    more) are left to reverse with `snapshots` states (2 or more, the one at their start
    included): with r recomputations of each trip, s states reverse C(s + r, r) trips.
    """
    r, reach = 0, 1  # reach: C(snapshots + r, r)
    while reach < trips:
        r += 1
        reach = reach * (snapshots + r) // r
    # C(s + r - 1, r - 1) trips: the same states, one recomputation less; and
    # C(s + r - 2, r - 1): one state less
    fewer = reach * r // (snapshots + r)
    return min(fewer, trips - fewer * snapshots // (snapshots + r - 1))
'''

ACTIONS = '''def checkpoint_actions(trips, snapshots, kept):
    """The backward pass's actions, after a forward pass that ran every trip and kept the
    states at the start of the trips `kept`."""
    # what is left to do, the next on top: an action, or ("segment", start, stop, states)
    todo = []
    for i, (start, stop) in enumerate(zip(kept, kept[1:] + [trips])):
        todo += [("segment", start, stop, snapshots - i), ("restore", start, start)]
        if stop < trips:
            todo.append(("forget", stop, stop))
    while trips > 0 and todo:
        task = todo.pop()
        if task[0] != "segment":
            yield task
            continue
        _, start, stop, states = task  # the state is the one at `start`, and kept
        if stop - start == 1:
            yield ("reverse", start, stop)
        elif states == 1:
            # from the state at `start` to each trip in turn, the last first
            for trip in range(start, stop):
                todo.append(("reverse", trip, trip + 1))
                if trip > start:
                    todo.append(("advance", start, trip))
                if trip < stop - 1:
                    todo.append(("restore", start, start))
        else:
            split = start + checkpoint_split(stop - start, states)
            todo += [("segment", start, split, states), ("restore", start, start)]
            if stop - split > 1:  # (a state reversed at once is never taken back)
                todo.append(("forget", split, split))
                todo.append(("segment", split, stop, states - 1))
                todo.append(("store", split, split))
            else:
                todo.append(("segment", split, stop, states - 1))
            todo.append(("advance", start, split))
'''

WITHIN = '''def snapshots_within(budget, *state):
    """How many states of a checkpointed loop (its variables now) fit in `budget` bytes."""
    size = sum(np.asarray(value).nbytes if value is not None else 8 for value in state)
    return max(int(budget // max(size, 1)), 1)
'''

HELPERS = {
    "checkpoint_schedule": (("checkpoint_split", "checkpoint_actions"), SCHEDULE),
    "checkpoint_split": ((), SPLIT),
    "checkpoint_actions": (("checkpoint_split",), ACTIONS),
    "snapshots_within": ((), WITHIN),
}
