"""`gradgen check`: the generated gradient against two sources of truth that share nothing
with the derivative rules, point by point.

* sympy (gradgen/verify/symbolic.py): the IR evaluated with sympy symbols and differentiated by
  `sympy.diff`, following the branch the point takes;
* finite differences (gradgen/verify/finite.py) of the user's original function, the one place
  gradgen runs the user's file (gradgen/verify/usercode.py); at a kink or a branch boundary the
  table shows the one-sided slopes instead of a false mismatch.

Where a value or a gradient is not finite, gradgen/verify/nonfinite.py names the line where it
first became so. The records and the verdict of each row are in gradgen/verify/report.py.
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
import time
import dataclasses
from dataclasses import replace

import numpy as np

from gradgen.api import compile_source, load_module
from gradgen.ir.nodes import variables
from gradgen.ir.simplify import names_read
from gradgen.rules.records import runtime as record_runtime
from gradgen.verify import custom as custom_check
from gradgen.verify.finite import Difference, difference, finite_difference, is_kink, numbers_raise, remembered, \
    sample_points
from gradgen.verify.nonfinite import all_finite, locate_nonfinite
from gradgen.verify.report import FD_TOL, SYMPY_TOL, FunctionReport, PointReport, Row, judge, rel_error
from gradgen.verify.symbolic import _Symbolic, sympy_gradient
from gradgen.verify.symbolic_arrays import sympy_array_gradient
from gradgen.verify.usercode import call, describe, expect_number, fresh, run_original, same_global_draws

fields_of, is_data = record_runtime()  # a point's NamedTuples and dataclasses, read as the generated helpers read them

__all__ = ["check_source", "check_point", "difference", "Difference", "finite_difference", "is_kink",
           "sample_points", "locate_nonfinite",
           "sympy_gradient", "sympy_array_gradient", "FunctionReport", "PointReport", "Row",
           "SYMPY_TOL", "FD_TOL", "_Symbolic"]


def check_source(source, filename="<string>", functions=None, wrt=None, at=None, n_points=3, seed=0, shapes=None):
    """Compile `source` (for `shapes`, if given: see gradgen.analysis.stated), then compare
    its gradients with sympy and finite differences."""
    compiled = compile_source(source, filename, functions, wrt, shapes=shapes)
    generated = load_module(compiled.text, "gradgen_check_generated")
    original = run_original(compiled.module.source, filename)
    progress = _Progress()
    with same_global_draws(), remembered(), contextlib.redirect_stdout(io.StringIO()):  # the function's prints, run ~100 times
        try:
            return [_check_function(cf, compiled, getattr(original, cf.name),
                                    getattr(generated, cf.value_and_grad_name), at, n_points, seed, filename, progress)
                    for cf in compiled.functions]
        finally:
            progress.close()


PROGRESS_AFTER = 2.0  # seconds of processor time into a check, after which it says where it is


class _Progress:
    """A long check says on stderr which point of which function it is at; a short one says
    nothing (its output is the table alone). On a terminal, a bar redrawn in place on one
    line per function (`checking loss [######......] point 2/3  4.1 s`, as the fuzzer's
    soak draws its own); elsewhere (a log, a CI job) a plain line per point. Processor time,
    so that a loaded machine does not make a short check talk."""

    def __init__(self, clock=time.process_time, stream=None, width=20):
        self.clock, self.stream, self.width = clock, stream, width
        self.start = clock()
        self.open = 0  # the length of the bar line drawn and not ended yet (0: none)

    def point(self, name, k, n):
        """Point k of n of function `name` is about to be checked."""
        elapsed = self.clock() - self.start
        if elapsed <= PROGRESS_AFTER:
            return
        out = self.stream or sys.stderr
        if not _is_terminal(out):
            print(f"checking {name}: point {k}/{n} ...", file=out, flush=True)
            return
        self._draw(out, f"checking {name} {self._bar(k - 1, n)} point {k}/{n}  {elapsed:.1f} s")

    def finished(self, name, n):
        """The function's last point is checked: its bar, if drawn, full and ended."""
        if self.open:
            out = self.stream or sys.stderr
            self._draw(out, f"checked {name} {self._bar(n, n)} {n} point{'s' * (n != 1)} "
                            f"in {self.clock() - self.start:.1f} s")
            self.close()

    def close(self):
        """Ends a bar line left open (the check stopped with an error): what follows starts a line."""
        if self.open:
            out = self.stream or sys.stderr
            out.write("\n")
            out.flush()
            self.open = 0

    def _bar(self, done, total):
        filled = self.width * done // max(total, 1)
        return f"[{'#' * filled}{'.' * (self.width - filled)}]"

    def _draw(self, out, line):
        out.write("\r" + line.ljust(self.open))  # (spaces over the end of a longer line before)
        out.flush()
        self.open = max(len(line), self.open)


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # (no isatty, or a closed stream)
        return False


def _check_function(cf, compiled, f, value_and_grad, at, n_points, seed, filename, progress=None):
    report = FunctionReport(cf.name, cf.wrt)
    points = sample_points(cf, f, at, n_points, seed, filename)
    for k, point in enumerate(points, 1):
        if progress is not None:
            progress.point(cf.name, k, len(points))
        _expect_numbers_and_arrays(point, cf, compiled.module)
        where = f"{cf.name} at {describe(point)}"
        expect_number(call(f, point, filename, compiled.module.source, where), compiled.module, cf.name, where)
        report.points.append(check_point(cf, compiled.module, f, value_and_grad, point, compiled.text))
    if progress is not None:
        progress.finished(cf.name, len(points))
    if not points and at is None:
        report.no_point = _why_no_point(cf, f, seed)
    return report


# what a number raises where an array is meant: x @ w, X[0], len(x), x.shape, np.sum(x, axis=1), np.linalg.inv(x)
_WANTS_ARRAYS = (TypeError, AttributeError, IndexError, np.linalg.LinAlgError)  # (NumPy's AxisError is an IndexError)


def _why_no_point(cf, f, seed):
    """Why no random point was usable, where the function raised at numbers: the
    parameters it wants as arrays have to be given (random points are numbers)."""
    raised = numbers_raise(cf, f, seed)
    if raised is None:
        return ""
    point, exc = raised
    if not isinstance(exc, _WANTS_ARRAYS):  # (a ValueError is a domain error: math.log(-1.0))
        return ""
    unknown = [p.name for p in cf.ir.params if not (p.function or p.has_default or p.number or p.shape)]
    if not unknown:
        return ""
    said = (str(exc).strip().splitlines() or [""])[0]
    said = f": {said[:100]}{'...' if len(said) > 100 else ''}" if said else ""
    names = ", ".join(unknown)
    return (f"called with numbers ({describe({n: point[n] for n in unknown if n in point})}) it raised "
            f"{type(exc).__name__}{said}; check draws numbers only, so arrays need --inputs FILE:FUNC (a function "
            f"returning the keyword arguments) to give {names}")


def _expect_numbers_and_arrays(point, cf, module):
    """A differentiated parameter is a number or a NumPy array, or (where the function uses
    it as a container) a list, tuple or dict of them; anything else is said to be wrong, at
    the function's `def`."""
    structured, containers = {p.name for p in cf.ir.params if p.structured}, _containers(cf)
    for name in cf.wrt:
        value = point.get(name)
        node = module.functions[cf.name]
        if name in containers:
            bad = next((leaf for _, leaf in _leaves(value) if not _is_number_or_array(leaf)), None)
            if bad is not None or (name in structured and isinstance(value, (int, float, np.number))):
                what = type(bad if bad is not None else value).__name__
                raise module.error(node, f"'{name}' holds a {what} at the check point: a structured parameter "
                                         "is a list, tuple or dict of arrays and numbers")
        elif not _is_number_or_array(value):
            raise module.error(node, f"'{name}' is a {type(value).__name__} at the check point, but '{cf.name}' "
                                     f"uses it only as a number or an array: annotate it (`{name}: list`, "
                                     "tuple or dict) to compile it as a structured parameter")


def _containers(cf):
    """The parameters a point may give as a list, tuple or dict: the structured ones, and
    those the function never reads (their gradient is a zero of the kind given)."""
    read = names_read(cf.ir.body) | {v.name for v in variables(cf.ir.result)}
    return {p.name for p in cf.ir.params if p.structured or p.name not in read}


def _is_number_or_array(value):
    return isinstance(value, (int, float, np.ndarray, np.number)) and not isinstance(value, bool)


def _leaves(value, path=""):
    """(path, leaf) of each array or number in a list, tuple, dict, NamedTuple or dataclass
    (not its data fields), nested, in order."""
    names = fields_of(value)
    if names is not None:
        for name in names:
            if not is_data(value, name):
                yield from _leaves(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, dict):
        for key, part in value.items():
            yield from _leaves(part, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, part in enumerate(value):
            yield from _leaves(part, f"{path}[{i}]")
    else:
        yield path, value


def _with_leaves(value, leaves):
    """`value` with its leaves replaced, in order, by those of the iterator `leaves`."""
    names = fields_of(value)
    if names is not None:
        parts = {name: _with_leaves(getattr(value, name), leaves) for name in names if not is_data(value, name)}
        return value._replace(**parts) if isinstance(value, tuple) else dataclasses.replace(value, **parts)
    if isinstance(value, dict):
        return {key: _with_leaves(part, leaves) for key, part in value.items()}
    if isinstance(value, (list, tuple)):
        parts = [_with_leaves(part, leaves) for part in value]
        return tuple(parts) if isinstance(value, tuple) else parts
    return next(leaves)


def _same_structure(a, b):
    """Whether gradient b has the containers of parameter a (same kinds, lengths and keys; a
    NamedTuple's or dataclass's class, and its data fields as a has them)."""
    names = fields_of(a)
    if names is not None:
        return type(b) is type(a) and all(getattr(b, n) is getattr(a, n) if is_data(a, n)
                                          else _same_structure(getattr(a, n), getattr(b, n)) for n in names)
    if isinstance(a, (dict, list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(_same_structure(a[k], b[k]) for k in a)
        return all(_same_structure(x, y) for x, y in zip(a, b))
    return not isinstance(b, (dict, list, tuple))


def _check_structured(cf, module, f, value_and_grad, point, generated_text, structured):
    """A point with structured parameters, checked leaf by leaf: each array or number inside
    one is a parameter of its own (`params[0][1]`), the function called with the structure
    rebuilt around it; the gradient must have the parameter's structure."""
    flat, names, parts = {}, [], {}
    for name in cf.wrt:
        if name in structured:
            for path, leaf in _leaves(point[name]):
                flat[name + path] = leaf
                names.append(name + path)
                parts.setdefault(name, []).append(name + path)
        else:
            flat[name] = point[name]
            names.append(name)

    def rebuild(kw):
        whole = {k: v for k, v in point.items() if k not in structured}
        whole.update({k: v for k, v in kw.items() if k in point and k not in structured})
        for name in structured:
            whole[name] = _with_leaves(point[name], iter([kw[n] for n in parts.get(name, [])]))
        return whole

    def f_flat(**kw):
        return f(**rebuild(kw))

    f_flat.__wrapped__ = f  # (the module f reads its functions from: gradgen/verify/custom.py)

    def value_and_grad_flat(**kw):
        whole = rebuild(kw)
        value, grads = value_and_grad(**whole)
        grads = (grads,) if len(cf.wrt) == 1 else tuple(grads)
        out = []
        for name, g in zip(cf.wrt, grads):
            if name not in structured:
                out.append(g)
            elif not _same_structure(whole[name], g):
                raise TypeError(f"the gradient of '{name}' has not its structure: {type(g).__name__}")
            else:
                out += [leaf for _, leaf in _leaves(g)]
        return value, tuple(out) if len(out) != 1 else out[0]

    base = {k: v for k, v in point.items() if k not in structured}
    flat_point = {**base, **flat}
    flat_cf = replace(cf, wrt=names)
    return check_point(flat_cf, module, f_flat, value_and_grad_flat, flat_point, generated_text, flattened=True)


def check_point(cf, module, f, value_and_grad, point, generated_text=None, flattened=False):
    """One row per differentiated parameter at `point`; where a value or gradient is not
    finite, also where (which line of the user's file) it first became nan or inf."""
    structured = {name for name in _containers(cf)
                  if isinstance(point.get(name), (list, tuple, dict)) or fields_of(point.get(name)) is not None}
    structured &= set(cf.wrt)  # (one given an array is checked as an array, by sympy too)
    if structured and not flattened:
        return _check_structured(cf, module, f, value_and_grad, point, generated_text, structured)
    try:
        with np.errstate(all="ignore"):
            value, grads = value_and_grad(**fresh(point))
    except Exception as exc:  # noqa: BLE001 - e.g. log of a negative base in d(x**n)/dn: reported, not hidden
        note = f"the generated code raised {type(exc).__name__}: {exc}"
        with np.errstate(all="ignore"):
            report = PointReport(dict(point), math.nan, float(f(**fresh(point))))
        report.rows = [Row(name, math.nan, None, None, math.inf, False, note) for name in cf.wrt]
        report.nonfinite = locate_nonfinite(module, f, value_and_grad, point, generated_text, exc)
        return report
    grads = (grads,) if len(cf.wrt) == 1 else tuple(grads)
    if not all_finite((value,) + grads):
        nonfinite = locate_nonfinite(module, f, value_and_grad, point, generated_text)
    else:
        nonfinite = []
    arrays = any(np.ndim(point[w]) for w in cf.wrt) or flattened  # (no sympy for a structured parameter)
    symbolic = [None] * len(cf.wrt) if arrays else _sympy_scalars(cf, module, point, grads)
    by_element = sympy_array_gradient(cf.ir, module, point, cf.wrt) if arrays and not flattened else {}
    with np.errstate(all="ignore"):
        report = PointReport(dict(point), float(value), float(f(**fresh(point))), nonfinite=nonfinite)
    custom = custom_check.prepare(cf, f, point)  # custom rules, stop_gradient: gradgen/verify/custom.py
    differenced = custom.oracle if custom is not None and custom.needs_oracle else f
    for name, gen, sym in zip(cf.wrt, grads, symbolic):
        if name in by_element and np.ndim(point[name]) == 0:
            sym = float(by_element[name])
        if np.ndim(point[name]) == 0 and np.ndim(gen):  # (a custom rule's contribution of the wrong shape)
            note = f"gradient has shape {np.shape(gen)}; the parameter is a number"
            report.rows.append(Row(name, math.nan, None, None, math.inf, False, note))
        elif np.ndim(point[name]) == 0:
            report.rows.append(judge(name, float(gen), sym, difference(differenced, point, name)))
        else:
            report.rows.extend(_array_rows(name, gen, differenced, point, by_element.get(name)))
    if custom is not None:
        report.rows.extend(custom.rule_rows())
    return report


def _sympy_scalars(cf, module, point, grads):
    """sympy's gradient, its statements' derivatives evaluated in floats; where that and the
    generated gradient are not plainly equal (or it is not finite), sympy's again at 30
    digits, so that no verdict rests on the rounding of the floats."""
    symbolic = sympy_gradient(cf.ir, module, point, cf.wrt)
    if any(_doubtful(gen, sym) for gen, sym in zip(grads, symbolic)):
        symbolic = sympy_gradient(cf.ir, module, point, cf.wrt, exact=True)
    return symbolic


def _doubtful(gen, sym):
    try:
        gen = float(gen)
    except (TypeError, ValueError):
        return False  # (its row says what is wrong with it)
    return sym is not None and math.isfinite(gen) and not rel_error(gen, sym) <= SYMPY_TOL / 10


def _array_rows(name, gen, f, point, symbolic=None, directions=3):
    """An array parameter: its gradient's shape and dtype, finite differences along random
    directions, and (up to 100 elements) along every element, summarised in one row; with
    sympy's gradient of a small instance, element by element, in the sympy column."""
    x = np.asarray(point[name])
    gen = np.asarray(gen)
    if gen.shape != x.shape or gen.dtype != np.float64:
        note = f"gradient has shape {gen.shape} and dtype {gen.dtype}; the parameter has shape {x.shape}"
        return [Row(name, math.nan, None, None, math.inf, False, note)]
    rng = np.random.default_rng(sum(map(ord, name)))
    rows = []
    for k in range(directions):
        v = rng.standard_normal(x.shape)
        v /= np.linalg.norm(v) or 1.0
        sym = None if symbolic is None else float(np.vdot(symbolic, v))
        rows.append(judge(f"{name}.v{k + 1}", float(np.vdot(gen, v)), sym, difference(f, point, name, v)))
    if x.size <= 100:
        worst = None
        for index in np.ndindex(x.shape):
            e = np.zeros(x.shape)
            e[index] = 1.0
            sym = None if symbolic is None else float(symbolic[index])
            diff = difference(f, point, name, e)
            row = judge(f"{name}[{', '.join(map(str, index))}]", float(gen[index]), sym, diff)
            if worst is None or not row.ok or row.rel_error > worst.rel_error:
                worst = row if (worst is None or worst.ok) else worst
        worst.param = f"{name} (all {x.size}; worst {worst.param})"
        rows.append(worst)
    return rows

