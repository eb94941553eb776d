"""What a generated function assumes of its arguments, and how it says so.

A compiler that specialises must guard its specialisation: a gradient written for the
shapes an annotation or `--shapes` states sums exactly the axes those shapes stretch, so a
call with other shapes would get a wrong gradient without any error. Each generated
function therefore checks, on entry and in one line, the shapes it was written for
(`check_shapes("loss_grad", "X (n, d), Y (n, k)", X, Y)`): the rank, every fixed length,
and that each named length (`n`) is one length across the arguments. A length 1 of
`--shapes` stays 1 (broadcasting depends on it); other lengths become letters, so the last,
partial batch of an epoch is right rather than refused.

Module constants are copied into the generated module (it never imports your file), so
each generated function takes the constants it reads as keyword-only arguments that
default to the copied values (`loss_grad(w, *, X, y, WEIGHT_DECAY=WEIGHT_DECAY)`): nothing
is silently frozen. A copied number must stay a number and a copied array keep its shape;
that is checked with the rest.
"""

from __future__ import annotations

import ast

from gradgen.analysis import arrays as array_facts
from gradgen.analysis import stated as static_shapes
from gradgen.ir.nodes import Param

CHECK = "check_shapes"  # the helper's name, reserved like every helper (gradgen.codegen.emit.HELPERS)

HELPER = '''def check_shapes(function, stated, *arguments):
    """Raise ValueError unless the arguments have the shapes `function` was written for
    ("X (n, d), w (d,)": each letter one length across the arguments, numbers exact)."""
    lengths = {}
    for spec, value in zip(stated.split("), "), arguments):
        name, dims = spec.split(" (")
        dims = [d.strip() for d in dims.rstrip(")").split(",") if d.strip()]
        shape = np.shape(value)
        ok = len(shape) == len(dims)
        for dim, length in zip(dims, shape) if ok else ():
            if dim.isdigit():
                ok = ok and int(dim) == length
            elif dim != "?":
                ok = ok and lengths.setdefault(dim, (length, name))[0] == length
        if not ok:
            known = [
                f"; {d} is {lengths[d][0]} from {lengths[d][1]}"
                for d in dims
                if d in lengths
            ]
            raise ValueError(
                f"{function}: {name} has shape {shape}, but it was written for {spec.rstrip(')')})"
                f"{''.join(known)}: compile it again for these shapes"
            )
'''


def constant_params(constants, given=frozenset()):
    """The keyword-only parameters a generated function takes for the module constants it
    reads, each defaulting to the copied value (`WEIGHT_DECAY=WEIGHT_DECAY`); one the running
    program `given` it (gradgen.live.outside) has no copy and no default."""
    return [Param(name, has_default=name not in given, keyword_only=True, function=name if name not in given else None)
            for name in constants]


def stated_shapes(fn, static, constants, module, proven=frozenset()):
    """{name: shape} of what the generated function checks: the parameters whose shapes
    the source or --shapes states (a default states nothing), then the constants it reads,
    except the numbers `proven` (the code shows them numbers: an array there would make the
    function's result an array, which it is not)."""
    shape_of_value = static_shapes.shape_of_value

    out = {}
    for p in fn.params:
        shape = static.stated.get(p.name) if static is not None else (() if p.number else None)
        if shape is not None and not p.function:
            out[p.name] = shape
    for name in constants:
        shape = shape_of_value(module.constants[name])
        if shape is not None and not (shape == () and name in proven):
            out[name] = shape
    return out


def spelled(stated):
    """"X (n, d), w (d,), c ()": the shapes as the check's message (and a reader) spells them."""
    def one(shape):
        dims = ["?" if d is None else str(d).replace(" ", "") for d in shape]
        return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"

    return ", ".join(f"{name} {one(shape)}" for name, shape in stated.items())


def check_line(function, stated):
    """The entry check's statement, or None where nothing is stated."""
    if not stated:
        return None
    return f'{CHECK}("{function}", "{spelled(stated)}", {", ".join(stated)})'


def entry(module, fn, read, uses_numpy):
    """What every function written for `fn` adds: the module constants it reads (`read`) as
    keyword-only parameters, and the shapes it checks on entry (none in a file without
    numpy, where nothing is an array)."""
    constants = [c for c in module.constants if c in read]
    if not uses_numpy:
        return constant_params(constants, module.runtime), {}
    static = static_shapes.StaticShapes(fn, module, module.assumed_shapes)
    proven = array_facts.evident_numbers(fn, constants=constants)  # (an array there would make the result one)
    return constant_params(constants, module.runtime), stated_shapes(fn, static, constants, module, proven)


def constants_line(carried, shown):
    """The header line naming the constants copied from the source (None if none are)."""
    if not carried:
        return None
    names = ", ".join(name for name, _ in carried)
    return (f"Constants copied from {shown}: {names}; each function that reads one takes it as a keyword "
            f"argument defaulting to the copy ({carried[0][0]}=...).")


def given_line(given):
    """The header line naming the values the running program passes on every call (None if none)."""
    if not given:
        return None
    return (f"Given on every call by gradgen.grad, read from the running program: {', '.join(given)} "
            "(a closure's or a module's values, never copied here).")


def folded_line(module, carried, selected):
    """The header line naming the constants the compiled functions read that were folded
    into the code (a loop bound unrolled, a list of sizes), which no argument can change."""
    copied = {name for name, _ in carried}
    read = {name for f in selected for name in _globals_read(module.functions[f])}
    for f in selected:  # and what the helpers they call read
        read |= {name for g in module.functions if g in read for name in _globals_read(module.functions[g])}
    folded = [c for c in module.constants if c in read and c not in copied]
    if not folded:
        return None
    listed = ", ".join(f"{c} = {_shown(module.constants[c])}" for c in folded)
    return f"Folded into the code when compiling (compile again after changing one): {listed}."


def _shown(value):
    shape = getattr(value, "shape", None)
    return f"<array of shape {shape}>" if shape is not None and getattr(value, "size", 0) > 20 else repr(value)


def _globals_read(fdef):
    """The names function `fdef` reads from its module: not its parameters, nor names it
    assigns (which are its own throughout, as Python scopes them)."""
    args = fdef.args
    own = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    own |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    own |= {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own
