"""The checks of a grammar program (tests/grammar_programs.py), issue 20's contract.

Besides `check`'s rows (sympy on small instances, finite differences along directions; on
every CHECK_EVERY-th program):

* the gradient at the first point equals central differences of the original, element by
  element, and has the parameter's structure (dict keys, list/tuple nesting, shapes, float
  dtype), zeros included where a parameter is unused;
* a SECOND CALL at a point with other shapes (the batch dimension changed) gives the
  differences' gradient there: from the plain compile, from `gradgen.grad` (which recompiles
  for a new signature), and from a compile for the first point's `--shapes`, which may
  instead raise a ValueError naming the parameter (never a silent wrong answer);
* module constants stay live: `gradgen.grad(f)` follows `module.SCALE = ...` set after it
  was made, and the file module's `f_grad(..., SCALE=0.8)` takes the constant as a
  keyword-only argument;
* forward mode (jvp, every HVP_EVERY-th program hvp) agrees, as for the other kinds.

Each problem starts with its class in brackets (`[second call]`, `[constant: API]`, ...): the
shrinker keeps a program only while its first problem keeps its class, and a soak's
failures sort by it. Elements where differences at two steps disagree (a kink a shrinking
cut moved close) are undecided, never a mismatch.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import os
import re
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

import fuzz
import grammar_records as records
from gradgen import CompileError, compile_source, load_module
from gradgen.codegen.emit import unformatted
from gradgen.analysis.stated import shapes_of_point, symbolic_shapes
from gradgen.verify.check import check_source

CHECK_EVERY = 3  # `gradgen check` (its sympy reference: 3/4 of the time) on every 3rd program
STEPS = (1e-6, 1e-5)  # central differences at two steps: where they disagree, no verdict
RTOL, ATOL = 1e-5, 1e-6


def grammar_problems(case, undecided: list | None = None) -> list[str]:
    """Every problem of one grammar program (see the module docstring), first things first:
    the compile and check, the first call, the second call, the shapes compile, the Python
    API, the module constants, forward mode."""
    undecided = [] if undecided is None else undecided
    compiled = compile_source(case.source, filename="fuzz.py", wrt=fuzz.EVERY)  # every top-level function compiles
    [fn] = [fn for fn in compiled.functions if fn.name == "f"]
    wrt, problems = list(fn.wrt), []
    if not set(wrt) <= set(positional(case.source)):
        problems.append(f"[wrt] differentiated {wrt}, not only the positional parameters {positional(case.source)}")
    if case.index % CHECK_EVERY == 0:
        problems += check_problems(case, undecided)
    original = {}
    exec(case.source, original)  # noqa: S102 - generated test input
    problems += left_out_problems(case, original, wrt, undecided)
    generated, _ = fuzz._with_kinds(case, fuzz.EVERY)
    generated = named(generated, problems)
    inputs = fuzz.fresh(case.point)
    (value, grads), _ = fuzz._call(generated.f_value_and_grad, inputs, copy_point=False)
    if not fuzz._close(float(value), float(fuzz._call(original["f"], case.point)[0]), 1e-12, 1e-12):
        problems.append(f"[value] f_value_and_grad gives {value!r}")
    for name in case.point:
        if not all(np.array_equal(u, v) for u, v in zip(fuzz._leaves(inputs[name]), fuzz._leaves(case.point[name]))):
            problems.append(f"[input modified] the gradient modified its input {name}")
    grads = as_tuple(grads, wrt)
    want = numeric_gradient(original["f"], case.point, wrt, undecided)
    problems += compare("gradient", wrt, grads, want, case.point)
    problems += second_call_problems(case, generated, original, wrt, undecided)
    problems += shapes_problems(case, want, original, wrt, undecided)
    problems += api_problems(case, wrt, undecided)
    problems += file_constant_problems(case, generated, original, wrt, undecided)
    if not problems:
        problems += [f"[forward] {p}" for p in fuzz.kind_problems(case, fuzz.EVERY, wrt, generated.f_grad, undecided)]
    return problems


def named(module, problems: list):
    """The generated module; where its f_grad or f_value_and_grad took another name
    (`f_grad_1`: `from module_grad import f_grad` is the README's first line), a problem,
    and the functions under their own names, so the other checks go on."""
    missing = [name for name in ("f_grad", "f_value_and_grad") if not callable(getattr(module, name, None))]
    if not missing:
        return module
    made = sorted(n for n in vars(module) if n.startswith("f_"))
    if not any(p.startswith("[names]") for p in problems):
        problems.append(f"[names] the generated module has no {' or '.join(missing)}; it has {made}")
    return _Renamed(module, made)


class _Renamed:
    """A generated module whose f_grad / f_value_and_grad took another name (`f_grad_1`)."""

    def __init__(self, module, made):
        for role in ("f_grad", "f_value_and_grad"):
            name = role if hasattr(module, role) else next(n for n in made if re.fullmatch(rf"{role}_\d+", n))
            setattr(self, role, getattr(module, name))


def left_out_problems(case, original, wrt, undecided) -> list[str]:
    """A positional parameter gradgen did not differentiate (one used only as a count,
    `len(M)`) must be one f does not depend on: its differences are zeros."""
    left = [name for name in positional(case.source) if name not in wrt]
    problems = []
    for name, fd in zip(left, numeric_gradient(original["f"], case.point, left, undecided)):
        if any(np.nanmax(np.abs(leaf), initial=0) > ATOL for leaf in fuzz._leaves(fd)):
            problems.append(f"[wrt] f depends on {name} (differences {_short(fuzz._leaves(fd))}), "
                            f"which gradgen does not differentiate ({wrt})")
    return problems


def check_problems(case, undecided) -> list[str]:
    """`gradgen check` at the first point: its rows (sympy, differences along directions), or
    its refusal (`check` refuses what `compile` accepted: a problem, not the end)."""
    try:
        [report] = check_source(case.source, functions=["f"], wrt=fuzz.EVERY, at=case.point, n_points=1)
    except CompileError as exc:
        return [f"[check] refused: {exc.format().splitlines()[0]}"]
    [point] = report.points
    problems = []
    if not fuzz._close(point.value_generated, point.value_original, 1e-12, 1e-12):
        problems.append(f"[value] generated {point.value_generated!r} != original {point.value_original!r}")
    for row in point.rows:
        mismatches, unsure = fuzz._array_row(row)
        problems += [f"[check] {m}" for m in mismatches]
        undecided += unsure
    return problems


def positional(source: str) -> list[str]:
    """f's parameters before `*` (all floats, arrays or structures of them: all differentiated)."""
    fnode = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "f")
    return [a.arg for a in fnode.args.args]


def as_tuple(grads, names):
    return tuple(grads) if len(names) > 1 else (grads,)


# ---- finite differences ------------------------------------------------------------------

def numeric_gradient(f, point: dict, names, undecided: list) -> tuple:
    """Central differences of f in every element of every leaf of each parameter, in the
    parameter's structure; an element where the two steps disagree, or the one-sided slopes
    do (a kink), is NaN: no verdict."""
    base = float(fuzz._call(f, point)[0])
    return tuple(_leafwise(point[name], lambda path, k, h, n=name: _moved(f, point, n, path, k, h), base,
                           name, undecided) for name in names)


def _moved(f, point, name, path, k, h):
    """f with element k of the leaf at `path` of `name` moved by +h, and by -h."""
    values = []
    for step in (h, -h):
        moved = dict(point)
        moved[name] = _replaced(point[name], path, k, step)
        values.append(float(fuzz._call(f, moved)[0]))
    return values


def _leafwise(value, moved, base, name, undecided, path=()):
    if records.fields(value) is not None:  # its fields by name (its data fields as they are)
        return records.remade(value, {n: _leafwise(getattr(value, n), moved, base, name, undecided, path + (n,))
                                      for n in records.leaf_fields(value)})
    if isinstance(value, dict):
        return {key: _leafwise(v, moved, base, name, undecided, path + (key,)) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_leafwise(v, moved, base, name, undecided, path + (i,)) for i, v in enumerate(value))
    out = np.zeros(np.shape(value))
    for k in range(out.size):
        (up, down), (far_up, far_down) = (moved(path, k, h) for h in STEPS)
        near, far = (up - down) / (2 * STEPS[0]), (far_up - far_down) / (2 * STEPS[1])
        forward, backward = (far_up - base) / STEPS[1], (base - far_down) / STEPS[1]
        if abs(near - far) > 1e-4 * (1 + abs(near)) or abs(forward - backward) > 1e-2 * (1 + abs(near)):
            undecided.append(f"{name}{''.join(f'[{p!r}]' for p in path)}: element {k}: no derivative found "
                             f"(central {near!r}, {far!r}; one-sided {forward!r}, {backward!r})")
            near = np.nan
        out.flat[k] = near
    return out if np.ndim(value) else float(out)


def _replaced(value, path, k, step):
    if path:
        head, rest = path[0], path[1:]
        if records.fields(value) is not None:
            return records.remade(value, {head: _replaced(getattr(value, head), rest, k, step)})
        if isinstance(value, dict):
            return {key: _replaced(v, rest, k, step) if key == head else v for key, v in value.items()}
        return type(value)(_replaced(v, rest, k, step) if i == head else v for i, v in enumerate(value))
    if np.ndim(value) == 0:
        return float(value) + step
    moved = np.array(value, dtype=float)
    moved.flat[k] += step
    return moved


def compare(label: str, names, got, want, point, reference: str = "finite differences") -> list[str]:
    """Problems of gradients `got` against `want` (differences): structure, dtype, values."""
    problems = []
    for name, g, w in zip(names, got, want):
        if fuzz._shapes(g) != fuzz._shapes(point[name]):
            problems.append(f"[structure] {label}: {name}'s gradient is {fuzz._shapes(g)}, the parameter "
                            f"{fuzz._shapes(point[name])}")
            continue
        dtypes = [np.asarray(leaf).dtype for leaf in fuzz._leaves(g)]
        if any(d != np.float64 for d in dtypes):
            problems.append(f"[structure] {label}: {name}'s gradient has dtypes {dtypes}")
        for k, (a, b) in enumerate(zip(fuzz._leaves(g), fuzz._leaves(w))):
            a, b = np.asarray(a, float), np.asarray(b, float)
            sure = ~np.isnan(b)
            if not np.allclose(a[sure], b[sure], rtol=RTOL, atol=ATOL * (1 + np.max(np.abs(b[sure]), initial=0))):
                problems.append(f"[{label}] {name} (leaf {k}): generated {_short(a)} != {reference} {_short(b)}")
    return problems


def _short(a) -> str:
    return np.array2string(np.asarray(a), precision=6, separator=", ", max_line_width=10_000).replace("\n", "")


# ---- the second call, the shapes compile, the API, the constants ---------------------------

def _runs(f, point) -> bool:
    try:
        with np.errstate(all="raise"):
            return bool(np.isfinite(fuzz._call(f, point)[0]))
    except Exception:  # noqa: BLE001 - a point a shrinking cut made invalid is no second call
        return False


def second_call_problems(case, generated, original, names, undecided) -> list[str]:
    """The plain compile called again with other shapes gives the gradient there."""
    if not case.second or not _runs(original["f"], case.second):
        return []
    want = numeric_gradient(original["f"], case.second, names, undecided)
    try:
        got = as_tuple(fuzz._call(generated.f_grad, case.second)[0], names)
    except Exception as exc:  # noqa: BLE001
        return [f"[second call] f_grad at other shapes raised {type(exc).__name__}: {exc}"]
    return compare("second call", names, got, want, case.second)


def shapes_problems(case, want_first, original, names, undecided) -> list[str]:
    """Compiled for the first point's shapes (numbers on even programs, symbols on odd):
    the same gradient there; at the second point the right gradient or a ValueError that
    names a parameter."""
    shapes = (shapes_of_point if case.index % 2 == 0 else symbolic_shapes)(case.point)
    with unformatted():
        text = compile_source(case.source, functions=["f"], shapes=shapes, wrt=fuzz.EVERY).text
    problems = []
    module = named(load_module(text, "fuzz_shapes"), problems)
    got = as_tuple(fuzz._call(module.f_grad, case.point)[0], names)
    problems += [p.replace("[shapes]", f"[shapes: first call] compiled for {shapes}:", 1)
                 for p in compare("shapes", names, got, want_first, case.point)]
    if not case.second or not _runs(original["f"], case.second):
        return problems
    try:
        again = as_tuple(fuzz._call(module.f_grad, case.second)[0], names)
    except ValueError as exc:
        if not any(name in str(exc) for name in case.second):
            problems.append(f"[shapes: second call] a ValueError that names no parameter: {exc}")
        return problems
    except Exception as exc:  # noqa: BLE001
        return problems + [f"[shapes: second call] compiled for {shapes}, raised {type(exc).__name__}: {exc}"]
    want = numeric_gradient(original["f"], case.second, names, undecided)
    return problems + [p.replace("[shapes]", f"[shapes: second call] compiled for {shapes}:", 1)
                       for p in compare("shapes", names, again, want, case.second)]


@contextlib.contextmanager
def imported(case):
    """The program as a real module (gradgen.grad reads a function's file), the disk cache off."""
    saved = os.environ.get("GRADGEN_CACHE_DIR")
    os.environ["GRADGEN_CACHE_DIR"] = ""
    with tempfile.TemporaryDirectory() as folder:
        name = f"grammar_{case.seed}_{case.index}_{abs(hash(case.source))}"
        path = Path(folder) / f"{name}.py"
        path.write_text(case.source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
            yield module
        finally:
            sys.modules.pop(name, None)
            if saved is None:
                os.environ.pop("GRADGEN_CACHE_DIR", None)
            else:
                os.environ["GRADGEN_CACHE_DIR"] = saved


def api_problems(case, names, undecided) -> list[str]:
    """`gradgen.grad(module.f)`: right at the first point, at the second (other shapes), and
    after the test sets each module constant to another value; with respect to the default
    parameters (fuzz.default_wrt of all of them, `names`)."""
    import gradgen

    problems = []
    names = fuzz.default_wrt(case.source, names)
    with imported(case) as module:
        grad = gradgen.grad(module.f)
        for label, at in (("API", case.point), ("API: second call", case.second)):
            if at and _runs(module.f, at):
                problems += _called(label, grad, module.f, at, names, undecided)
        if case.constants:
            for name, value in case.constants.items():
                setattr(module, name, value)
            problems += _called(f"constant: API, after {_assigned(case.constants)}", grad, module.f, case.point,
                                names, undecided)
    return problems


def _called(label, grad, f, at, names, undecided) -> list[str]:
    want = numeric_gradient(f, at, names, undecided)
    try:
        got = as_tuple(fuzz._call(grad, at)[0], names)
    except Exception as exc:  # noqa: BLE001
        return [f"[{label}] raised {type(exc).__name__}: {exc}"]
    return compare(label, names, got, want, at)


def _assigned(constants: dict) -> str:
    return ", ".join(f"module.{k} = {v!r}" for k, v in constants.items())


def file_constant_problems(case, generated, original, names, undecided) -> list[str]:
    """The file module takes each constant f reads as a keyword-only argument, and gives f's
    gradient with them changed; one only dead code reads (`if 2.0 > 2.7: H = SCALE`, folded
    when compiling) it may not take, and then f must not depend on it (soak seed 33000 #1586)."""
    read = {n.id for n in ast.walk(ast.parse(case.source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    constants = {k: v for k, v in case.constants.items() if k in read}
    if not constants:
        return []
    changed = dict(original)
    changed.update(constants)
    f = types.FunctionType(original["f"].__code__, changed, "f", original["f"].__defaults__)
    f.__kwdefaults__ = original["f"].__kwdefaults__  # (f reading the changed constants)
    want = numeric_gradient(f, case.point, names, undecided)
    label = f"constant: file module, f_grad(..., {', '.join(f'{k}={v!r}' for k, v in constants.items())})"
    taken = {k: v for k, v in constants.items() if k in inspect.signature(generated.f_grad).parameters}
    try:
        got = as_tuple(fuzz._call(lambda **kw: generated.f_grad(**kw, **taken), case.point)[0], names)
        value, _ = fuzz._call(lambda **kw: generated.f_value_and_grad(**kw, **taken), case.point)[0]
    except Exception as exc:  # noqa: BLE001
        return [f"[{label}] raised {type(exc).__name__}: {exc}"]
    problems = compare(label, names, got, want, case.point)
    if not fuzz._close(float(value), float(fuzz._call(f, case.point)[0]), 1e-12, 1e-12):
        problems.append(f"[{label}] f_value_and_grad's value {float(value)!r} is not f's")
    return problems
