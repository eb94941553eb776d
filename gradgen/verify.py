"""Verification: the generated gradient against two sources of truth that share nothing
with the derivative rules.

* sympy: the IR is evaluated with sympy symbols (only the table's `sympy` equivalents of
  primitives, never its rules) and differentiated by `sympy.diff`. A conditional follows
  the branch the sample point takes.
* finite differences: the user's original function (this is the one place gradgen runs
  the user's file) under a five-point central difference, at two step sizes; when the two
  disagree the step crossed a kink or a branch boundary, and the table says so instead of
  reporting a false mismatch.
"""

from __future__ import annotations

import ast
import contextlib
import math
import random
import re
import sys
import types
from dataclasses import dataclass, field

import numpy as np

import sympy

from gradgen.api import compile_source, load_module
from gradgen.errors import CompileError
from gradgen.limits import time_limit
from gradgen.ir import Assign, Break, Call, Cond, Const, Continue, For, If, Var, While
from gradgen.emit import Emitter
from gradgen.primitives import TABLE

SYMPY_TOL = 1e-9
FD_TOL = 1e-6


@dataclass
class Row:
    param: str
    generated: float
    sympy: float | None
    fd: float | None
    rel_error: float
    ok: bool
    note: str = ""


@dataclass
class PointReport:
    point: dict
    value_generated: float
    value_original: float
    rows: list = field(default_factory=list)
    # where a value or an adjoint first became nan or inf (or the generated code raised):
    # `file:line: ...` messages, empty when everything is finite
    nonfinite: list = field(default_factory=list)

    @property
    def ok(self):
        return all(r.ok for r in self.rows) and not self.nonfinite and math.isfinite(self.value_generated) \
            and _close(self.value_generated, self.value_original, 1e-12)


@dataclass
class FunctionReport:
    name: str
    wrt: list
    points: list = field(default_factory=list)

    @property
    def ok(self):
        return bool(self.points) and all(p.ok for p in self.points)


def check_source(source, filename="<string>", functions=None, wrt=None, at=None, n_points=3, seed=0):
    """Compile `source`, then compare its gradients with sympy and finite differences."""
    compiled = compile_source(source, filename, functions, wrt)
    generated = load_module(compiled.text, "gradgen_check_generated")
    original = _run_original(compiled.module.source, filename)
    reports = []
    for cf in compiled.functions:
        f = getattr(original, cf.name)
        value_and_grad = getattr(generated, cf.value_and_grad_name)
        report = FunctionReport(cf.name, cf.wrt)
        for point in sample_points(cf, f, at, n_points, seed, filename):
            try:
                with np.errstate(all="ignore"):
                    f(**_fresh(point))
            except Exception as exc:  # noqa: BLE001 - the user's own function failed there
                raise CompileError(f"'{cf.name}' itself raised {type(exc).__name__} at the sample point ({exc}); "
                                   "give a point where it runs with --at or --inputs", filename) from None
            report.points.append(check_point(cf, compiled.module, f, value_and_grad, point, compiled.text))
        reports.append(report)
    return reports


def _fresh(point):
    """The point with every array copied: a function that updates a parameter in place
    (`a += e`) changes its argument, and each run must start from the same point."""
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in point.items()}


def _run_original(source, filename):
    module = types.ModuleType("gradgen_check_original")
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def check_point(cf, module, f, value_and_grad, point, generated_text=None):
    """One row per differentiated parameter at `point`; where a value or gradient is not
    finite, also where (which line of the user's file) it first became nan or inf."""
    try:
        with np.errstate(all="ignore"):
            value, grads = value_and_grad(**_fresh(point))
    except Exception as exc:  # noqa: BLE001 - e.g. log of a negative base in d(x**n)/dn: reported, not hidden
        note = f"the generated code raised {type(exc).__name__}: {exc}"
        with np.errstate(all="ignore"):
            report = PointReport(dict(point), math.nan, float(f(**_fresh(point))))
        report.rows = [Row(name, math.nan, None, None, math.inf, False, note) for name in cf.wrt]
        report.nonfinite = locate_nonfinite(module, f, value_and_grad, point, generated_text, exc)
        return report
    grads = (grads,) if len(cf.wrt) == 1 else tuple(grads)
    if not _all_finite((value,) + grads):
        nonfinite = locate_nonfinite(module, f, value_and_grad, point, generated_text)
    else:
        nonfinite = []
    arrays = any(np.ndim(point[w]) for w in cf.wrt)
    symbolic = [None] * len(cf.wrt) if arrays else sympy_gradient(cf.ir, module, point, cf.wrt)
    by_element = sympy_array_gradient(cf.ir, module, point, cf.wrt) if arrays else {}
    with np.errstate(all="ignore"):
        report = PointReport(dict(point), float(value), float(f(**_fresh(point))), nonfinite=nonfinite)
    for name, gen, sym in zip(cf.wrt, grads, symbolic):
        if name in by_element and np.ndim(point[name]) == 0:
            sym = float(by_element[name])
        if np.ndim(point[name]) == 0:
            fd, kink = finite_difference(f, point, name)
            report.rows.append(_row(name, float(gen), sym, fd, kink))
        else:
            report.rows.extend(_array_rows(name, gen, f, point, by_element.get(name)))
    return report


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
        fd, kink = finite_difference(f, point, name, v)
        sym = None if symbolic is None else float(np.vdot(symbolic, v))
        rows.append(_row(f"{name}.v{k + 1}", float(np.vdot(gen, v)), sym, fd, kink))
    if x.size <= 100:
        worst = None
        for index in np.ndindex(x.shape):
            e = np.zeros(x.shape)
            e[index] = 1.0
            fd, kink = finite_difference(f, point, name, e)
            sym = None if symbolic is None else float(symbolic[index])
            row = _row(f"{name}[{', '.join(map(str, index))}]", float(gen[index]), sym, fd, kink)
            if worst is None or not row.ok or row.rel_error > worst.rel_error:
                worst = row if (worst is None or worst.ok) else worst
        worst.param = f"{name} (all {x.size}; worst {worst.param})"
        rows.append(worst)
    return rows


def _row(name, gen, sym, fd, kink):
    """Compare with sympy and finite differences; at a kink, with the one-sided slopes."""
    if not math.isfinite(gen):
        return Row(name, gen, sym, fd, math.inf, False, "non-finite gradient")
    if kink is not None:
        # a derivative does not exist here: any value between the one-sided slopes is a
        # valid (sub)gradient, and the convention chosen is documented in the README
        low, high = sorted(kink)
        inside = low - 1e-4 * max(1.0, abs(low)) <= gen <= high + 1e-4 * max(1.0, abs(high))
        note = f"at a kink or branch boundary: one-sided slopes {low:.6g} and {high:.6g}"
        return Row(name, gen, sym, fd, 0.0 if inside else math.inf, inside,
                   note if inside else note + "; MISMATCH")
    errors = []
    if sym is not None:
        errors.append(_rel(gen, sym))
    if fd is not None:
        errors.append(_rel(gen, fd))
    ok = bool(errors) and (sym is None or errors[0] <= SYMPY_TOL) and (fd is None or errors[-1] <= FD_TOL)
    note = "" if ok else ("MISMATCH" if errors else "no reference value")
    return Row(name, gen, sym, fd, max(errors) if errors else math.nan, ok, note)


def _rel(a, b):
    """Error relative to the larger magnitude, absolute below 1e-3 (gradients near zero)."""
    return abs(a - b) / max(abs(a), abs(b), 1e-3)


def _close(a, b, tol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or _rel(a, b) <= tol


# ---- where a nan or an inf first appears ------------------------------------------------------

def locate_nonfinite(module, f, value_and_grad, point, generated_text=None, exc=None):
    """`file:line: ...` messages naming the first forward value and the first adjoint that
    became nan or inf at `point` (or the backward statement that raised `exc`).

    Only called once something was not finite, so the normal path stays fast. The user's
    function runs under `sys.settrace`, its locals (and return values) watched after every
    line: the first non-finite one names a line of the user's file directly. The generated
    function runs the same way with its adjoints watched (the names its backward pass
    assigns, `dL_dx`...); a generated line maps to the user's line through the
    `# line N: source` comment that heads each backward block.
    """
    messages = []
    name = getattr(module, "filename", "<string>")
    forward = _first_nonfinite_forward(f, point, name)
    if forward is not None:
        line, what, kind = forward
        messages.append(f"{name}:{_at(module, line)[0]}: {what} became {kind} in the forward pass: "
                        f"{_at(module, line)[1]}")
    if generated_text is None:
        return messages
    try:
        layout = _GeneratedLayout(generated_text, value_and_grad.__code__)
    except (StopIteration, SyntaxError):  # not the text of this function: say what is known
        return messages + [f"{name}: the gradient is not finite (the generated code could not be followed)"]
    if exc is not None:
        line = _raising_line(exc, value_and_grad.__code__)
        target = layout.target(line) if line is not None else None
        cited = layout.cited(line) if line is not None else None
        why = f"{type(exc).__name__} ({exc})" if str(exc) else type(exc).__name__
        if cited is not None and layout.in_backward(line):
            user_line, text = _at(module, cited)
            what = f"computing {target}" if target else "the generated code"
            messages.append(f"{name}:{user_line}: {what} raised {why} in the backward pass of: {text}")
        elif line is not None:
            messages.append(f"{name}: the generated code raised {why} at line {line} of the generated module")
        return messages
    backward = _first_nonfinite_backward(value_and_grad, point, layout)
    if backward is not None:
        line, adjoint, kind = backward
        cited = layout.cited(line)
        if cited is None:
            messages.append(f"{name}: {adjoint} became {kind} in the backward pass "
                            f"(line {line} of the generated module)")
        else:
            user_line, text = _at(module, cited)
            messages.append(f"{name}:{user_line}: {adjoint} became {kind} in the backward pass of: {text}")
    return messages


def _all_finite(values):
    for v in values:
        try:
            if _describe_nonfinite(np.asarray(v, dtype=float)) is not None:
                return False
        except (TypeError, ValueError):  # not a number or an array of numbers: the rows say so
            pass
    return True


def _describe_nonfinite(value):
    """None for a finite number or array (or anything that is not a float), else what is
    wrong with it: "nan", "inf", "-inf", or for an array "inf (1 of 3 elements)"."""
    if isinstance(value, (float, np.floating)):
        return None if math.isfinite(value) else _kinds(np.asarray(value))
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        bad = ~np.isfinite(value)
        if not bad.any():
            return None
        kinds = _kinds(value)
        return kinds if value.ndim == 0 else f"{kinds} ({int(bad.sum())} of {value.size} elements)"
    return None


def _kinds(value):
    kinds = [k for k, test in (("nan", np.isnan), ("inf", np.isposinf), ("-inf", np.isneginf)) if test(value).any()]
    return " and ".join(kinds)


def _first_in(names_values):
    for name, value in names_values:
        kind = _describe_nonfinite(value)
        if kind is not None:
            return name, kind
    return None


@contextlib.contextmanager
def _tracing(tracer):
    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)


def _first_nonfinite_forward(f, point, filename):
    """(line, what, kind) for the first value in the user's own file that became non-finite:
    a local variable after a line ran, a function's result, or a parameter."""
    found = []
    last = {}  # frame -> the line it last started

    def local(frame, event, arg):
        if found:
            return None
        if event in ("line", "return") and frame in last:
            hit = _first_in((k, v) for k, v in frame.f_locals.items() if not k.startswith("."))
            if hit is not None:
                found.append((last[frame], hit[0], hit[1]))
                return None
        if event == "return":
            kind = _describe_nonfinite(arg)
            if kind is not None:
                found.append((frame.f_lineno, f"the result of {frame.f_code.co_name}", kind))
            last.pop(frame, None)
            return None
        if event == "line":
            last[frame] = frame.f_lineno
        return local

    def call(frame, event, arg):
        if found or frame.f_code.co_filename != filename:
            return None
        hit = _first_in(frame.f_locals.items())
        if hit is not None:
            found.append((frame.f_code.co_firstlineno, f"parameter {hit[0]}", hit[1]))
            return None
        return local

    try:
        with _tracing(call), np.errstate(all="ignore"):
            f(**_fresh(point))
    except Exception:  # noqa: BLE001 - what was found before it raised still stands
        pass
    return found[0] if found else None


def _first_nonfinite_backward(value_and_grad, point, layout):
    """(generated line, adjoint, kind) for the first adjoint that became non-finite."""
    code = value_and_grad.__code__
    found = []
    last = {}

    def local(frame, event, arg):
        if found:
            return None
        line = last.get(frame)
        if event in ("line", "return") and line is not None and layout.in_backward(line):
            values = frame.f_locals
            hit = _first_in((k, values[k]) for k in layout.adjoints if k in values)
            if hit is not None:
                found.append((line, hit[0], hit[1]))
                return None
        last[frame] = frame.f_lineno
        return local

    def call(frame, event, arg):
        return local if frame.f_code is code and not found else None

    try:
        with _tracing(call), np.errstate(all="ignore"):
            value_and_grad(**_fresh(point))
    except Exception:  # noqa: BLE001
        pass
    return found[0] if found else None


def _raising_line(exc, code):
    """The line of the generated function where `exc` was raised (or the call that raised it)."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code is code:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


class _GeneratedLayout:
    """The generated function's text, as the locator needs it: where its backward pass
    starts, which names are adjoints, and which user line each backward block cites."""

    CITE = re.compile(r"^\s*# line (\d+): ")

    def __init__(self, text, code):
        lines = text.splitlines()
        node = next(n for n in ast.walk(ast.parse(text))
                    if isinstance(n, ast.FunctionDef) and n.lineno <= code.co_firstlineno <= n.end_lineno
                    and n.name == code.co_name)
        first, end = node.lineno, node.end_lineno
        self.start = next((i for i in range(first, end + 1) if lines[i - 1].strip().startswith("# backward pass")),
                          end + 1)
        self.citations = [(i, int(m.group(1))) for i in range(self.start, end + 1)
                          if (m := self.CITE.match(lines[i - 1]))]
        self.targets = {}
        self.adjoints = []
        for stmt in ast.walk(node):
            if not isinstance(stmt, (ast.Assign, ast.AugAssign)) or stmt.lineno <= self.start:
                continue
            if _is_restore(stmt):
                continue
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                base = t.value if isinstance(t, ast.Subscript) else t
                if isinstance(base, ast.Name):
                    for line in range(stmt.lineno, stmt.end_lineno + 1):
                        self.targets.setdefault(line, base.id)
                    if base.id not in self.adjoints:
                        self.adjoints.append(base.id)
        for call in ast.walk(node):  # np.add.at(dL_dx, index, g): an adjoint updated in place
            if isinstance(call, ast.Call) and ast.unparse(call.func) == "np.add.at" and call.lineno > self.start \
                    and call.args and isinstance(call.args[0], ast.Name):
                for line in range(call.lineno, call.end_lineno + 1):
                    self.targets.setdefault(line, call.args[0].id)

    def in_backward(self, line):
        return line > self.start

    def cited(self, line):
        """The user's line cited by the nearest `# line N:` comment above generated `line`."""
        user = None
        for at, n in self.citations:
            if at >= line:
                break
            user = n
        return user

    def target(self, line):
        return self.targets.get(line)


def _is_restore(stmt):
    """`x = x_stack.pop()`: a forward value coming back, not an adjoint."""
    value = getattr(stmt, "value", None)
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "pop"


def _at(module, line):
    """(first line, text) of the user's statement at `line`: a simple statement whole (on one
    line), a compound one by its header."""
    tree = getattr(module, "tree", None)
    best = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    source_lines = module.source.splitlines() if isinstance(module.source, str) else \
        module.source.decode("utf-8", "replace").splitlines()
    if best is None:
        return line, source_lines[line - 1].strip() if 0 < line <= len(source_lines) else ""
    if isinstance(best, (ast.If, ast.For, ast.While, ast.With, ast.FunctionDef, ast.Try)):
        return best.lineno, source_lines[best.lineno - 1].strip()
    end = best.end_lineno or best.lineno
    return best.lineno, " ".join(s.strip() for s in source_lines[best.lineno - 1:end])


# ---- sympy --------------------------------------------------------------------------------

class _Unsupported(Exception):
    """The sympy side cannot follow this program (the table then shows '-')."""


def sympy_gradient(fn, module, point, wrt):
    """d(result)/d(param) for each `wrt` param, following the path `point` takes.

    Forward mode over the executed trace: sympy differentiates each statement's expression
    (nothing from the rule table is used), and the chain rule between statements is applied
    numerically, at 30 digits. A loop of any length stays linear in cost.
    """
    try:
        trace = _Trace(module, point, wrt, fn.params)
        trace.run(fn.body)
        _, tangent = trace.evaluate(fn.result)
    except (_Unsupported, TypeError, ValueError, ZeroDivisionError, OverflowError, ArithmeticError):
        return [None] * len(wrt)
    return [_real(t) for t in tangent]


def _real(value):
    value = complex(value)
    return value.real if abs(value.imag) <= 1e-12 * max(1.0, abs(value.real)) else math.nan


def _number(value):
    """A constant for sympy; a whole float is an Integer, as sympy differentiates x**2.0 to
    2.0*x**2.0/x, which is nan at x = 0 (x**2 gives 2*x)."""
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return sympy.Integer(int(value))
    if float(value).is_integer() and abs(value) < 2**53:
        return sympy.Integer(int(value))
    return sympy.Float(float(value), 30)


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Trace:
    """Runs the IR on numbers, carrying d(value)/d(param) for every value.

    Values and every decision (branches, loop exits, which argument `max` picks) use
    ordinary floating point, exactly as the program does; only the derivatives come from
    sympy, statement by statement.
    """

    MAX_ITERATIONS = 1_000_000

    def __init__(self, module, point, wrt, params):
        self.wrt = list(wrt)
        self.zero = (0,) * len(self.wrt)
        self.values = dict(module.constants)
        self.tangents = {c: self.zero for c in module.constants}
        for p in params:
            self.values[p.name] = point[p.name]
            self.tangents[p.name] = tuple(int(p.name == w) for w in self.wrt)
        self.derivatives = {}
        self.compiled = {}
        self.emitter = Emitter("math", {"sigmoid": "sigmoid"})
        self.env = {"math": math, "np": np, "sigmoid": lambda x: 1 / (1 + np.exp(-x))}

    def run(self, stmts):
        for stmt in stmts:
            if isinstance(stmt, Assign):
                self.values[stmt.target], self.tangents[stmt.target] = self.evaluate(stmt.expr)
            elif isinstance(stmt, If):
                self.run(stmt.body if self.value(stmt.test) else stmt.orelse)
            elif isinstance(stmt, For):
                self._for(stmt)
            elif isinstance(stmt, While):
                for _ in range(self.MAX_ITERATIONS):
                    if not self.value(stmt.test) or not self._iteration(stmt.body):
                        break
                else:
                    raise _Unsupported("too many iterations")
            elif isinstance(stmt, Break):
                raise _Break
            elif isinstance(stmt, Continue):
                raise _Continue

    def _for(self, stmt):
        it = stmt.iter
        if isinstance(it, Call) and it.prim == "range":
            items = range(*[self.value(a) for a in it.args])
        elif isinstance(it, Var) and isinstance(self.values.get(it.name), tuple):
            items = self.values[it.name]
        else:
            raise _Unsupported("loop over an array")
        for item in items:
            self.values[stmt.target], self.tangents[stmt.target] = item, self.loop_tangent(item)
            if not self._iteration(stmt.body):
                break

    def loop_tangent(self, item):
        return self.zero

    def _iteration(self, body):
        """Run one iteration; False when it ended in `break`."""
        try:
            self.run(body)
        except _Continue:
            pass
        except _Break:
            return False
        return True

    def value(self, expr):
        """`expr` evaluated as the program evaluates it (Python and NumPy floats)."""
        code = self.compiled.get(id(expr))
        if code is None:
            text = ast.unparse(self.emitter.expr(expr))
            code = self.compiled[id(expr)] = (compile(text, "<trace>", "eval"), expr)
        with np.errstate(all="ignore"):
            return eval(code[0], self.env, self.values)  # noqa: S307 - gradgen's own IR

    def evaluate(self, expr):
        """(value, tangent): sympy differentiates `expr` in each input that has a tangent."""
        value = self.value(expr)
        symbols = {}
        tree = self._symbolic(expr, symbols)
        tangent = [0] * len(self.wrt)
        if symbols:
            numbers = {sym: sympy.Float(self.values[name], 30) for name, sym in symbols.items()}
            for name, sym in symbols.items():
                partial = self._partial(tree, sym).evalf(30, subs=numbers)
                tangent = [t + partial * d for t, d in zip(tangent, self.tangents[name])]
        return value, tuple(tangent)

    def _partial(self, tree, sym):
        key = (tree, sym)
        if key not in self.derivatives:
            self.derivatives[key] = sympy.diff(tree, sym)
        return self.derivatives[key]

    def _symbolic(self, e, symbols):
        """`e` in sympy: symbols for inputs that carry a tangent, numbers for the rest."""
        if isinstance(e, Var):
            if all(t == 0 for t in self.tangents.get(e.name, self.zero)):
                return _number(self.values[e.name])
            if e.name not in symbols:
                symbols[e.name] = sympy.Symbol(f"v{len(symbols)}", real=True)
            return symbols[e.name]
        if isinstance(e, Const):
            return _number(e.value)
        if isinstance(e, Cond):
            return self._symbolic(e.body if self.value(e.test) else e.orelse, symbols)
        prim = TABLE[e.prim]
        if prim.kind in ("piecewise", "integer"):
            return _number(self.value(e))
        if e.prim in ("max", "min"):  # the argument the program picks (the first extreme one)
            values = [self.value(a) for a in e.args]
            extreme = max(values) if e.prim == "max" else min(values)
            return self._symbolic(e.args[values.index(extreme)], symbols)
        return prim.sympy(*[self._symbolic(a, symbols) for a in e.args])


SMALL_INSTANCE = 12  # array elements: up to this many, sympy differentiates the whole function


def sympy_array_gradient(fn, module, point, wrt):
    """For array programs on a small instance: every element of every array parameter is a
    sympy symbol, the IR runs on object arrays of sympy expressions (decisions such as which
    element is the maximum follow the numbers), and sympy.diff gives the gradient of each
    element. Returns {parameter: array of floats}, or {} where the instance is too large or
    the program does something this interpreter does not follow."""
    if sum(int(np.size(point[w])) for w in wrt) > SMALL_INSTANCE:
        return {}
    symbols = {}
    for w in wrt:
        shape = np.shape(point[w])
        flat = [sympy.Symbol(f"{w}_{k}", real=True) for k in range(int(np.prod(shape)))]
        symbols[w] = np.array(flat, dtype=object).reshape(shape) if shape else flat[0]
    numbers = {}
    for w in wrt:
        for sym, value in zip(np.ravel(np.asarray(symbols[w], dtype=object)), np.ravel(point[w])):
            numbers[sym] = sympy.Float(float(value), 30)
    try:
        with time_limit(5.0, _Timeout):
            return _sympy_array_gradient(fn, module, point, wrt, symbols, numbers)
    except _Timeout:
        return {}


def _sympy_array_gradient(fn, module, point, wrt, symbols, numbers):
    try:
        trace = _ArrayTrace(module, point, wrt, fn.params, symbols)
        with np.errstate(all="ignore"):
            trace.run(fn.body)
            result = trace.symbolic(fn.result)
        result = sympy.sympify(result.item() if hasattr(result, "item") else result)
        out = {}
        for w in wrt:
            flat = np.ravel(np.asarray(symbols[w], dtype=object))
            values = [_real(sympy.diff(result, sym).evalf(20, subs=numbers)) for sym in flat]
            out[w] = np.array(values).reshape(np.shape(point[w]))
        return out
    except (_Unsupported, TypeError, ValueError, ZeroDivisionError, AttributeError, IndexError, KeyError):
        return {}


class _ArrayTrace(_Trace):
    """The trace with sympy expressions (object arrays for arrays) in place of tangents."""

    def __init__(self, module, point, wrt, params, symbols):
        super().__init__(module, point, [], params)
        for name, value in self.values.items():
            self.tangents[name] = symbols.get(name, _as_object(value))

    def loop_tangent(self, item):
        return _as_object(item)

    def evaluate(self, expr):
        return self.value(expr), self.symbolic(expr)

    def symbolic(self, e):
        if isinstance(e, Var):
            return self.tangents[e.name]
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Cond):
            return self.symbolic(e.body if self.value(e.test) else e.orelse)
        prim = TABLE[e.prim]
        if prim.kind in ("piecewise", "integer", "attribute"):
            return _as_object(self.value(e))
        args = [self.symbolic(a) for a in e.args]
        params = dict(e.params)
        if e.prim in _ARRAY_OPS:
            return _ARRAY_OPS[e.prim](self, e, args, params)
        if e.prim in _CHOICES:
            numbers = [self.value(a) for a in e.args]
            return _CHOICES[e.prim](args, numbers)
        if prim.sympy is None or params:
            raise _Unsupported(e.prim)
        return np.vectorize(prim.sympy, otypes=[object])(*args) if any(np.ndim(a) for a in args) \
            else prim.sympy(*args)


def _as_object(value):
    if isinstance(value, np.ndarray):
        return value.astype(object)
    return value


def _select(mask, a, b):
    return np.where(mask, a, b) if np.ndim(mask) or np.ndim(a) or np.ndim(b) else (a if mask else b)


def _extreme(args, numbers, params, pick):
    x, values = np.asarray(args[0], dtype=object), np.asarray(numbers[0])
    axis, keepdims = params.get("axis"), params.get("keepdims", False)
    if axis is None:
        return np.ravel(x)[int(pick(values))]
    if isinstance(axis, tuple):
        raise _Unsupported("extreme over several axes")
    chosen = np.take_along_axis(x, np.expand_dims(pick(values, axis=axis), axis), axis)
    return chosen if keepdims else np.squeeze(chosen, axis=axis)


_CHOICES = {  # which argument or element the numbers select
    "maximum": lambda a, n: _select(np.asarray(n[0]) >= np.asarray(n[1]), a[0], a[1]),
    "minimum": lambda a, n: _select(np.asarray(n[0]) <= np.asarray(n[1]), a[0], a[1]),
    "abs": lambda a, n: _select(np.asarray(n[0]) >= 0, a[0], -np.asarray(a[0], dtype=object)),
    "where": lambda a, n: _select(np.asarray(n[0], dtype=bool), a[1], a[2]),
    "clip": lambda a, n: _select(np.asarray(n[0]) < np.asarray(n[1]), a[1],
                                 _select(np.asarray(n[0]) > np.asarray(n[2]), a[2], a[0])),
    "max": lambda a, n: a[n.index(max(n))],
    "min": lambda a, n: a[n.index(min(n))],
}

_ARRAY_OPS = {  # NumPy on object arrays of sympy expressions
    "add": lambda t, e, a, p: a[0] + a[1],
    "sub": lambda t, e, a, p: a[0] - a[1],
    "mul": lambda t, e, a, p: a[0] * a[1],
    "div": lambda t, e, a, p: a[0] / a[1],
    "pow": lambda t, e, a, p: a[0] ** a[1],
    "neg": lambda t, e, a, p: -a[0],
    "pos": lambda t, e, a, p: a[0],
    "matmul": lambda t, e, a, p: np.dot(a[0], a[1]),
    "outer": lambda t, e, a, p: np.outer(a[0], a[1]),
    "inner": lambda t, e, a, p: np.inner(a[0], a[1]),
    "sum": lambda t, e, a, p: np.sum(np.asarray(a[0], dtype=object), **p),
    "mean": lambda t, e, a, p: np.mean(np.asarray(a[0], dtype=object), **p),
    "prod": lambda t, e, a, p: np.prod(np.asarray(a[0], dtype=object), **p),
    "cumsum": lambda t, e, a, p: np.cumsum(np.asarray(a[0], dtype=object), **p),
    "amax": lambda t, e, a, p: _extreme(a, [t.value(e.args[0])], p, np.argmax),
    "amin": lambda t, e, a, p: _extreme(a, [t.value(e.args[0])], p, np.argmin),
    "norm": lambda t, e, a, p: sympy.sqrt(np.sum(np.asarray(a[0], dtype=object) ** 2)),
    "sum_list": lambda t, e, a, p: np.sum(np.array(a, dtype=object)),
    "T": lambda t, e, a, p: np.asarray(a[0], dtype=object).T,
    "transpose": lambda t, e, a, p: np.transpose(a[0], p.get("axes")),
    "reshape": lambda t, e, a, p: np.reshape(a[0], t.value(e.args[1])),
    "broadcast_to": lambda t, e, a, p: np.broadcast_to(_as_object(a[0]), t.value(e.args[1])),
    "expand_dims": lambda t, e, a, p: np.expand_dims(a[0], **p),
    "squeeze": lambda t, e, a, p: np.squeeze(a[0], **p),
    "ravel": lambda t, e, a, p: np.ravel(a[0]),
    "flip": lambda t, e, a, p: np.flip(a[0], **p),
    "concatenate": lambda t, e, a, p: np.concatenate([np.asarray(x, dtype=object) for x in a], **p),
    "stack": lambda t, e, a, p: np.stack([np.asarray(x, dtype=object) for x in a], **p),
    "array": lambda t, e, a, p: np.asarray(a[0], dtype=object),
    "getitem": lambda t, e, a, p: _index_objects(t, e, a[0]),
}


def _index_objects(trace, e, x):
    """x[index] on the object array, the index evaluated as the program evaluates it."""
    index = eval(compile(ast.unparse(trace.emitter.index(dict(e.params)["index"], e.args[1:], as_value=True)),
                         "<index>", "eval"), trace.env, trace.values)  # noqa: S307 - gradgen's own IR
    return np.asarray(x, dtype=object)[index]


class _Symbolic:
    """IR -> sympy with named symbols (used to check the rule table against sympy.diff)."""

    def __init__(self, env, numbers):
        self.env = env
        self.numbers = numbers

    def expr(self, e):
        if isinstance(e, Var):
            return self.env[e.name]
        if isinstance(e, Const):
            return _number(e.value)
        if isinstance(e, Cond):
            return self.expr(e.body) if self.truth(e.test) else self.expr(e.orelse)
        prim = TABLE[e.prim]
        args = [self.expr(a) for a in e.args]
        if prim.kind in ("piecewise", "integer"):
            return _number_of(prim.sympy(*[self.numeric(a) for a in args]))
        return prim.sympy(*args)

    def numeric(self, value):
        if isinstance(value, bool):
            return value
        return float(sympy.sympify(value).subs(self.numbers).evalf(30))

    def truth(self, test):
        return bool(self.expr(test))


def _number_of(value):
    if isinstance(value, bool) or value in (sympy.true, sympy.false):
        return sympy.Integer(int(bool(value)))  # a comparison in arithmetic counts 0 or 1, as in NumPy
    return sympy.sympify(value)


# ---- finite differences ---------------------------------------------------------------------

def finite_difference(f, point, name, direction=None):
    """Central difference of `f` in `name` at `point` (along `direction` for an array):
    (estimate, kink) or (None, None).

    The estimate is a five-point stencil at two step sizes; when those disagree, or the
    one-sided slopes on either side differ, the point sits on (or a step crosses) a kink or
    a branch boundary, and `kink` is the pair of one-sided slopes (left, right).
    """
    x = point[name]
    scale = max(1.0, float(np.max(np.abs(x))) if np.ndim(x) else abs(x))
    step = 1.0 if direction is None else direction

    def at(dx):
        with np.errstate(all="ignore"):  # a step outside the domain shows up as nan below
            return float(f(**_fresh({**point, name: x + dx * step})))

    def stencil(h):
        return (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h)

    try:
        h = 1e-3 * scale
        estimates = [stencil(h), stencil(h / 2)]
        for _ in range(3):  # a large fifth derivative, or a kink: smaller steps
            if _rel(*estimates) <= FD_TOL / 10:
                break
            h /= 2
            estimates = [estimates[1], stencil(h / 2)]  # (the error of a smooth one shrinks 16x)
        h = 1e-7 * scale
        centre = at(0.0)
        left, right = (centre - at(-h)) / h, (at(h) - centre) / h
    except (ArithmeticError, ValueError):
        return None, None
    if not all(map(math.isfinite, estimates + [left, right])):
        return None, None
    smooth = _rel(*estimates) <= FD_TOL / 10 and _rel(left, right) <= 1e-3
    return estimates[1], (None if smooth else (left, right))


# ---- sample points --------------------------------------------------------------------------

def sample_points(cf, f, at, n_points, seed, filename="<string>"):
    """`at` if given; else the defaults (if every parameter has one) and seeded random points.

    Random points are drawn until the original function is finite there and smooth along
    every parameter (inside every primitive's domain, away from kinks and boundaries).
    """
    params = cf.ir.params
    if at is not None:
        point = {}
        for p in params:
            if p.name in at:
                point[p.name] = at[p.name]
            elif p.has_default:
                point[p.name] = p.default
            else:
                raise CompileError(f"no value for parameter '{p.name}' of '{cf.name}': give it with --at",
                                   filename)
        return [point]
    points = []
    if all(p.has_default for p in params):
        points.append({p.name: p.default for p in params})
    rng = random.Random(seed)
    for _ in range(200 * n_points):
        if len(points) >= n_points:
            break
        candidate = _candidate(params, cf.wrt, rng)
        if _usable(candidate, cf, f):
            points.append(candidate)
    return points


def _candidate(params, wrt, rng):
    """Near the defaults where there are some (the user's own scale), else in small ranges."""
    spread = rng.choice([(0.1, 0.9), (0.1, 0.9), (-0.9, 0.9), (-2.0, 2.0), (0.5, 3.0)])
    point = {}
    for p in params:
        if p.name in wrt and p.has_default:
            point[p.name] = round(p.default * rng.uniform(0.7, 1.3) + rng.uniform(-0.1, 0.1), 6)
        elif p.name in wrt:
            point[p.name] = round(rng.uniform(*spread), 6)
        elif p.has_default:
            point[p.name] = p.default
        else:
            point[p.name] = rng.randint(1, 3)
    return point


def _usable(point, cf, f):
    """Inside the function's domain and away from kinks, judged by the original alone.

    The generated gradient plays no part, so a point where it is wrong or not finite is
    never skipped: it is reported.
    """
    try:
        with time_limit(2.0, _Timeout), np.errstate(all="ignore"):
            if not math.isfinite(float(f(**_fresh(point)))):
                return False
            for name in cf.wrt:
                fd, kink = finite_difference(f, point, name)
                if fd is None or kink is not None:
                    return False
    except (ArithmeticError, ValueError, TypeError, RecursionError, _Timeout):
        return False
    return True


class _Timeout(Exception):
    """The user's function ran past its time at a point (the point is skipped)."""
