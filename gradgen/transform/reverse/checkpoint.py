"""Stage 4, reverse: binomial checkpointing of long loops (`gradgen compile --checkpoint K`).

The taped reverse pass keeps, for every trip of a loop, the values the trip overwrites: a
loop of T trips keeps T of them. Checkpointed, the forward pass runs the loop without its
tape and keeps only the loop's state (the variables a trip reads before it writes them) at
the start of a few trips, at most K at once; the backward pass takes a state back, runs the
trips after it again without a tape (`advance`), and reverses each trip by running it once
more with its one-trip tape, then its adjoint. Where the states are kept is Griewank and
Walther's binomial schedule ("revolve"), written into the generated module
(gradgen/codegen/checkpointing.py): it keeps K states and runs each trip again at most r
times, for the least r with C(K + r, r) >= T.

A loop is checkpointed when its trip count is known on entry (a `for` over `range`, which
a loop over an array's rows is too) and it is not inside another loop (an inner loop is
taped within its outer loop's trip). A loop that can `break` or `continue`, or that draws random numbers,
changes a value in place through a call, or grows a list, keeps its tape; `notes` says so,
located. A `while` loop with a tape is refused. The hvp and the vjp keep their tapes.
"""

from __future__ import annotations

from dataclasses import replace

from gradgen.errors import CompileError
from gradgen.ir.nodes import (
    Assign, Call, Checkpointed, Continue, Effect, For, If, Init, Replayed, Restore, Save, Var, While, expressions,
    is_draw, variables, walk
)


def checkpoint(parts, snapshots, fnamer, module, params):
    """The gradient's statements with every loop that keeps a tape checkpointed: (forward
    pass of the gradient, of the value and gradient, backward pass, the value's expression,
    notes). `snapshots`: K, or ("auto", bytes), a budget the states' size divides; `params`:
    the function's parameters."""
    loops = []
    _find(parts.forward_grad, loops, module)
    grad, value, backward, result, notes = parts.forward_grad, parts.forward_value, parts.backward, parts.value, []
    unbound = []
    for loop in loops:
        twin_of = _twin(value, {s.stack for s in walk(loop.body) if isinstance(s, Save)})
        kept = _taped_because(loop, backward) or _read_then_rebound(parts.forward_grad, loop) or \
            (_read_then_rebound(value, twin_of) if twin_of is not None else "")
        if kept:
            notes.append((loop.line, f"line {loop.line}: the loop keeps its tape: {kept}"))
            continue
        stacks = {s.stack for s in walk(loop.body) if isinstance(s, Save)}
        back = _reversal(backward, stacks)
        twin = _twin(value, stacks)
        state, copied = _state(loop, back, backward, parts.grads, value)
        bound = _bound_before(parts.forward_grad, loop)
        unbound += [v for v in state if v not in bound and v not in unbound]
        names = {n: fnamer.define(n) for n in ("trip", "snapshots", "stored", "schedule", "action", "stop")}
        grad = _swap(grad, loop, Checkpointed(replace(loop, body=_without(loop.body, effects=False)), state,
                                              copied, snapshots, names))
        value = _swap(value, twin, Checkpointed(replace(twin, body=_without(twin.body, effects=False)), state,
                                                copied, snapshots, names))
        again, taped = _without(loop.body), _without(loop.body, tape=False)
        backward = _swap(backward, back, Replayed(loop, state, copied, again, taped, back.body, [], names))
        if any(v.name in set(_assigned(loop.body)) for v in variables(result)):
            kept_value = fnamer.define("value")  # (the backward pass runs the loop again: keep what it returns)
            value = value + [Assign(kept_value, result)]
            result = Var(kept_value)
    unbound = [v for v in unbound if v not in params]
    if unbound:  # (a state variable first bound inside the loop: None before it, as the tape's are)
        grad, value = [Init(v, "None") for v in unbound] + grad, [Init(v, "None") for v in unbound] + value
    return grad, value, backward, result, notes


def _read_then_rebound(stmts, loop):
    """Why the loop keeps its tape where a value it reads but does not write is bound again after
    it: the backward pass runs its trips again when that name holds the later value, which no
    tape kept for it (soak seed 33003 #1190, #1307, 33004 #1616: a loop over `data` run again
    after `data = xi`). "" when none is."""
    inside = {id(s) for s in walk([loop])}
    written = set(_assigned(loop.body)) | {loop.target}
    read = {v.name for s in walk(loop.body) for e in expressions(s) for v in variables(e)}
    read |= {v.name for v in variables(loop.iter)}
    after, seen = set(), False
    for s in walk(stmts):
        if id(s) in inside:
            seen = True
        elif seen and isinstance(s, (Assign, Init, For)):
            after.add(s.target if isinstance(s, (Assign, For)) else s.name)
    again = sorted((read - written) & after)
    return f"it reads {', '.join(again)}, bound again after it, which running its trips again would not see" \
        if again else ""


def _bound_before(stmts, loop):
    """The names surely bound before `loop` by the statements before the one holding it."""
    bound = set()
    for s in stmts:
        if s is loop or any(t is loop for t in walk([s])):
            return bound
        if isinstance(s, (Assign, Init)):
            bound.add(s.target if isinstance(s, Assign) else s.name)
    return bound


def _find(stmts, out, module):
    """The loops with a tape, outside any other loop (inside branches too), in order."""
    for s in stmts:
        if isinstance(s, If):
            _find(s.body, out, module)
            _find(s.orelse, out, module)
        elif isinstance(s, While) and _has_tape(s):
            raise _located(module, s.line, "--checkpoint: this while loop keeps a tape of every trip, and how many "
                                           "trips it makes is unknown on entry, so no schedule can be made for it; "
                                           "where the count is known, write it as a for loop over range(n) (with "
                                           "no break: a loop that can stop early keeps its tape), or compile "
                                           "without --checkpoint")
        elif isinstance(s, For) and _has_tape(s):
            out.append(s)


def _has_tape(loop):
    return any(isinstance(s, Save) for s in walk(loop.body))


def _taped_because(loop, backward):
    """Why `loop` cannot be checkpointed ("" if it can)."""
    if loop.count is not None:
        return "it can stop early (a break or a return in it), so its trip count is unknown on entry"
    if not (isinstance(loop.iter, Call) and loop.iter.prim == "range"):
        return "it runs over a sequence known when compiling, not a range"
    if _continues(loop.body):
        # (replayed inside the schedule's own loop, a `continue` would skip the trip's adjoint:
        # soak seed 30000 #252 and #1607, a wrong gradient)
        return "a continue in it ends a trip early, which the replay of one trip does not follow"
    for s in walk(loop.body):
        if isinstance(s, Assign) and is_draw(s.expr):
            return "it draws random numbers, which running it again would change"
        if isinstance(s, Effect) and s.changes:
            return f"'{s.text}' may change a value in place, which running it again would repeat"
        if isinstance(s, Assign) and isinstance(s.expr, Call) and s.expr.prim in ("append", "list"):
            return "it grows a list, which its states would have to copy"
    stacks = {s.stack for s in walk(loop.body) if isinstance(s, Save)}
    back = _reversal(backward, stacks)
    if back is None or any(isinstance(s, Restore) and s.stack in stacks for s in _outside(backward, back)):
        return "its tape is read outside its backward loop"
    return ""


def _continues(stmts):
    """Whether a `continue` of this loop (not of a loop inside it) is among `stmts`."""
    for s in stmts:
        if isinstance(s, Continue):
            return True
        if isinstance(s, If) and _continues(s.body + s.orelse):
            return True
    return False


def _reversal(stmts, stacks):
    """The backward loop that pops `stacks`, outside any other loop (None if there is none)."""
    for s in stmts:
        if isinstance(s, If):
            found = _reversal(s.body, stacks) or _reversal(s.orelse, stacks)
            if found is not None:
                return found
        elif isinstance(s, For) and s.direction == "reversed" and any(
                isinstance(r, Restore) and r.stack in stacks for r in walk(s.body)):
            return s
    return None


def _twin(stmts, stacks):
    """The value-and-gradient function's copy of the loop: the one that pushes on `stacks`."""
    for s in stmts:
        if isinstance(s, If):
            found = _twin(s.body, stacks) or _twin(s.orelse, stacks)
            if found is not None:
                return found
        elif isinstance(s, For) and any(isinstance(r, Save) and r.stack in stacks for r in walk(s.body)):
            return s
    return None


def _outside(stmts, loop):
    """Every statement of `stmts` (nested ones too) but those of `loop`'s body."""
    for s in stmts:
        if s is loop:
            continue
        yield s
        if isinstance(s, If):
            yield from _outside(s.body, loop)
            yield from _outside(s.orelse, loop)
        elif isinstance(s, (For, While)):
            yield from _outside(s.body, loop)


def _state(loop, back, backward, grads, value):
    """The loop's state: what a trip reads before it writes it, and what the tape gives back
    that the backward pass reads after the loop (the values before its first trip). Copied:
    those written into in place (`u[1:-1] = e`, `u += e`), which a kept state must not share."""
    assigned = set(_assigned(loop.body)) - {loop.target}
    read = _exposed(loop.body, {loop.target})
    saved = {s.name for s in walk(loop.body) if isinstance(s, Save)}
    after = {v.name for s in _outside(backward, back) for e in expressions(s) for v in variables(e)}
    after |= {v.name for g in grads for v in variables(g)}
    state = [v for v in _assigned(loop.body) if v in assigned and (v in read or (v in saved and v in after))]
    state = tuple(dict.fromkeys(state))
    copied = frozenset(s.target for s in walk(value) if isinstance(s, Assign) and s.target in state and (
        s.augmented or (isinstance(s.expr, Call) and s.expr.prim == "setitem")))
    return state, copied


def _assigned(stmts):
    """The names `stmts` assign, in order (with repeats)."""
    return [s.target for s in walk(stmts) if isinstance(s, (Assign, For))]


def _exposed(stmts, defined):
    """The names `stmts` may read before they assign them; `defined` (names surely assigned
    already) grows with what they surely assign."""
    out = set()
    for s in stmts:
        reads = {v.name for e in expressions(s) for v in variables(e)}
        if isinstance(s, If):
            out |= reads - defined
            then, other = set(defined), set(defined)
            out |= _exposed(s.body, then) | _exposed(s.orelse, other)
            defined |= then & other
        elif isinstance(s, (For, While)):
            out |= reads - defined
            out |= _exposed(s.body, set(defined) | ({s.target} if isinstance(s, For) else set()))
        elif isinstance(s, Assign):
            out |= reads - defined
            if s.accumulate:  # (`x += e` reads x; a user's `x *= y` is `x = x * y` here, read in its expression)
                out |= {s.target} - defined
            defined.add(s.target)
        elif isinstance(s, Init):
            defined.add(s.name)
        elif isinstance(s, Save):  # the tape keeps the value the trip found: a reversed trip needs it
            out |= {s.name} - defined  # (only its shape, maybe: soak seed 36000 #1085, `x = row` in a loop)
        else:
            out |= reads - defined
    return out


def _without(stmts, tape=True, effects=True):
    """`stmts` without their `tape` (the saves, and the lists an inner loop's saves fill)
    and without their `effects` (what they print ran once, in the forward pass)."""
    stacks = {s.stack for s in walk(stmts) if isinstance(s, Save)} if tape else set()
    out = []
    for s in stmts:
        if (tape and isinstance(s, Save)) or (effects and isinstance(s, Effect)) or \
                (isinstance(s, Init) and s.name in stacks):
            continue
        if isinstance(s, If):
            s = replace(s, body=_without(s.body, tape, effects), orelse=_without(s.orelse, tape, effects))
        elif isinstance(s, (For, While)):
            s = replace(s, body=_without(s.body, tape, effects))
        out.append(s)
    return out


def _swap(stmts, old, new):
    """`stmts` with the statement `old` (at any depth of branches) replaced by `new`."""
    out = []
    for s in stmts:
        if s is old:
            s = new
        elif isinstance(s, If):
            s = replace(s, body=_swap(s.body, old, new), orelse=_swap(s.orelse, old, new))
        out.append(s)
    return out


def _located(module, line, message):
    if line is None:
        return CompileError(message, module.filename)
    text = module.line_text(line) or ""
    return CompileError(message, module.filename, line, len(text) - len(text.lstrip()) + 1, text)


DEFAULT_MEMORY = 256 * 10**6  # bytes the states of `--checkpoint auto` may take, unless --memory says
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def snapshots_option(checkpoint, memory=None, filename="<string>"):
    """`--checkpoint K` (a whole number, 1 or more), or `--checkpoint auto` with `--memory`
    (256MB unless given), as the compiler takes it: K, or ("auto", bytes); None: no
    checkpointing (`--checkpoint none`, or not given)."""
    if checkpoint is None or checkpoint == "none":
        if memory is not None:
            raise CompileError("--memory is the budget of --checkpoint auto: give --checkpoint auto too", filename)
        return None
    if checkpoint == "auto":
        return ("auto", DEFAULT_MEMORY if memory is None else memory_bytes(memory, filename))
    if memory is not None:
        raise CompileError(f"--memory is the budget of --checkpoint auto, not of --checkpoint {checkpoint}", filename)
    try:
        count = int(checkpoint)
    except (TypeError, ValueError):
        count = 0
    if isinstance(checkpoint, bool) or count < 1 or str(count) != str(checkpoint).strip():
        raise CompileError(f"--checkpoint takes the number of states to keep (1 or more), 'auto' or 'none', "
                           f"not {checkpoint!r}", filename)
    return count


def memory_bytes(text, filename="<string>"):
    """'256MB', '1.5GB', '64MiB' or a number of bytes, as a number of bytes."""
    spelled = str(text).strip().lower().replace(" ", "")
    number = spelled.rstrip("kmgib")
    unit = spelled[len(number):]
    try:
        value = float(number) * _UNITS[unit]
    except (KeyError, ValueError):
        value = 0
    if value < 1:
        raise CompileError(f"--memory takes a size such as 256MB, 2GB or a number of bytes, not {text!r}", filename)
    return int(value)


def memory_text(size):
    """A number of bytes as --memory spells it: 256MB, 2GB, 64kB, else the number."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)
