"""The check's records (a row per differentiated parameter, a point, a function) and how a
row's verdict is reached: the generated gradient against sympy and finite differences, or,
at a kink, against the interval between the one-sided slopes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

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
            and close(self.value_generated, self.value_original, 1e-12)


@dataclass
class FunctionReport:
    name: str
    wrt: list
    points: list = field(default_factory=list)

    @property
    def ok(self):
        return bool(self.points) and all(p.ok for p in self.points)


def judge(name, gen, sym, fd, kink):
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
        errors.append(rel_error(gen, sym))
    if fd is not None:
        errors.append(rel_error(gen, fd))
    ok = bool(errors) and (sym is None or errors[0] <= SYMPY_TOL) and (fd is None or errors[-1] <= FD_TOL)
    note = "" if ok else ("MISMATCH" if errors else "no reference value")
    return Row(name, gen, sym, fd, max(errors) if errors else math.nan, ok, note)


def rel_error(a, b):
    """Error relative to the larger magnitude, absolute below 1e-3 (gradients near zero)."""
    return abs(a - b) / max(abs(a), abs(b), 1e-3)


def close(a, b, tol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or rel_error(a, b) <= tol

