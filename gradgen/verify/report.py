"""The check's records (a row per differentiated parameter, a point, a function) and how a
row's verdict is reached: the generated gradient against sympy and finite differences, or,
where finite differences found no derivative (a kink, or undecided), against the interval
of what they did find.
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
    # what finite differences found (finite.Difference.verdict): "smooth", "kink",
    # "undecided", "none"; None where they were not asked (the generated code raised...)
    fd_verdict: str | None = None


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
    no_point: str = ""  # why no sample point was found, where gradgen can tell (numbers where arrays are meant)

    @property
    def ok(self):
        return bool(self.points) and all(p.ok for p in self.points)


def judge(name, gen, sym, diff):
    """The row of one parameter: `gen` against sympy's `sym` and finite differences' `diff`
    (a finite.Difference, or None). Where finite differences found no derivative, what
    they did find bounds the gradient: at a kink, the one-sided slopes; undecided, the
    stencils and slopes (unless sympy has the value)."""
    row = _judge(name, gen, sym, diff)
    row.fd_verdict = None if diff is None else diff.verdict
    return row


def _judge(name, gen, sym, diff):
    fd = None if diff is None else diff.estimate
    if not math.isfinite(gen):
        return Row(name, gen, sym, fd, math.inf, False, "non-finite gradient")
    if diff is not None and diff.verdict == "kink":
        # a derivative does not exist here: any value between the one-sided slopes is a
        # valid (sub)gradient, and the convention chosen is documented in the README
        low, high = sorted((diff.left, diff.right))
        note = f"at a kink or branch boundary: one-sided slopes {low:.6g} and {high:.6g}"
        return _within(Row(name, gen, sym, fd, 0.0, True, note), low, high)
    if diff is not None and diff.verdict == "undecided":
        note = "finite differences undecided: stencils give {:.6g} and {:.6g}".format(*diff.estimates)
        if sym is None:
            evidence = (*diff.estimates, diff.left, diff.right)
            return _within(Row(name, gen, sym, fd, 0.0, True, note), min(evidence), max(evidence))
        error = rel_error(gen, sym)
        ok = error <= SYMPY_TOL
        return Row(name, gen, sym, fd, error, ok, note if ok else note + "; MISMATCH")
    errors = []
    if sym is not None:
        errors.append(rel_error(gen, sym))
    if fd is not None:
        errors.append(rel_error(gen, fd))
    ok = bool(errors) and (sym is None or errors[0] <= SYMPY_TOL) and (fd is None or errors[-1] <= FD_TOL)
    note = "" if ok else ("MISMATCH" if errors else "no reference value")
    return Row(name, gen, sym, fd, max(errors) if errors else math.nan, ok, note)


def _within(row, low, high):
    """`row` is ok when its generated value lies in [low, high], give or take 1e-4."""
    inside = low - 1e-4 * max(1.0, abs(low)) <= row.generated <= high + 1e-4 * max(1.0, abs(high))
    if inside:
        return row
    return Row(row.param, row.generated, row.sympy, row.fd, math.inf, False, row.note + "; MISMATCH")


def rel_error(a, b):
    """Error relative to the larger magnitude, absolute below 1e-3 (gradients near zero)."""
    return abs(a - b) / max(abs(a), abs(b), 1e-3)


def close(a, b, tol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or rel_error(a, b) <= tol

