"""Where a nan or an inf first appears: once a value or a gradient at a check point is not
finite (or the generated code raised), the user's function and the generated one are run
again under `sys.settrace`, and the first non-finite local names a line of the user's file.

Nothing here runs on the normal path: a finite point is never traced.
"""

from __future__ import annotations

import ast
import contextlib
import math
import re
import sys

import numpy as np

from gradgen.verify.usercode import fresh


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


def all_finite(values):
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
            f(**fresh(point))
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
            value_and_grad(**fresh(point))
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
        for call in ast.walk(node):  # index_add(dL_dx, index, g): an adjoint updated in place (np.add.at)
            if isinstance(call, ast.Call) and ast.unparse(call.func) in ("np.add.at", "index_add") \
                    and call.lineno > self.start \
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

