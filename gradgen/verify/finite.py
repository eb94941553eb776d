"""Finite differences of the user's original function: a five-point central stencil at
shrinking steps, the kink test on one-sided slopes, and the sample points (random points
where the original is finite and smooth along every parameter).
"""

from __future__ import annotations

import contextlib
import math
import random
from dataclasses import dataclass

import numpy as np

from gradgen.errors import CompileError
from gradgen.frontend import effects
from gradgen.limits import time_limit
from gradgen.verify.report import FD_TOL, rel_error
from gradgen.verify.usercode import fresh

KINK_MARGIN = 10  # a kink: the slopes differ by this many times what curvature and rounding explain,
KINK_REL = 1e-3  # and by this much relative to their size (absolute below 1e-3, as rel_error)
ROUNDING = 32  # a value of the user's function is taken to be off by up to this many ulps of itself


@dataclass(frozen=True)
class Difference:
    """What finite differences say about one direction at a point.

    `verdict` is "smooth" (the stencils agree: `estimate` is the derivative), "kink" (the
    one-sided slopes `left` and `right` differ far beyond what a smooth function's
    curvature gives: no derivative there), "undecided" (no kink, but the stencils do not
    agree to FD_TOL / 10 at any step tried: rounding or steepness) or "none" (a step left the
    function's domain: no estimate at all).
    """

    estimate: float | None
    left: float | None = None
    right: float | None = None
    verdict: str = "none"
    estimates: tuple = ()


_KNOWN = None  # inside remembered(): {(id(f), id(point), name): (f, point, Difference)}


@contextlib.contextmanager
def remembered():
    """Inside, difference(f, point, name) is worked out once for a function, a point (the
    same dict) and a parameter: sample_points judges a random point by the very
    differences its rows then show, and the user's function may take a while."""
    global _KNOWN
    saved, _KNOWN = _KNOWN, {}
    try:
        yield
    finally:
        _KNOWN = saved


def difference(f, point, name, direction=None) -> Difference:
    """Finite differences of `f` in `name` at `point` (along `direction` for an array);
    see _difference."""
    if direction is not None or _KNOWN is None:
        return _difference(f, point, name, direction)
    key = (id(f), id(point), name)
    known = _KNOWN.get(key)
    if known is None or known[0] is not f or known[1] is not point:
        known = _KNOWN[key] = (f, point, _difference(f, point, name, direction))  # (f, point: kept, so their ids are theirs)
    return known[2]


def _difference(f, point, name, direction=None) -> Difference:
    """Finite differences of `f` in `name` at `point` (along `direction` for an array).

    Five-point central stencils at a step H, halved while two successive ones disagree; the
    one-sided slopes at a much smaller step h tell a kink at the point itself (where the
    central stencils are blind to it, being symmetric) from curvature: on a smooth
    function they differ by h·f'' (f'' from the stencil at H), at a kink by the jump.
    """
    line = _Line(f, point, name, direction)
    try:
        estimates, wide = _central(line)
        h = 1e-7 * line.scale
        left, right = (line(0.0) - line(-h)) / h, (line(h) - line(0.0)) / h
        curvature = (-line(2 * wide) + 16 * line(wide) - 30 * line(0.0) + 16 * line(-wide)
                     - line(-2 * wide)) / (12 * wide * wide)
    except Exception:  # noqa: BLE001 - a step left the function's domain (the user's code raised there)
        return Difference(None)
    if not all(map(math.isfinite, [*estimates, left, right, curvature])):
        return Difference(None)
    noise = 4 * ROUNDING * np.finfo(float).eps * max(abs(line(v)) for v in (-h, 0.0, h)) / h
    if is_kink(left, right, h, curvature, noise):
        verdict = "kink"
    else:
        verdict = "smooth" if _agree(*estimates) else "undecided"
    return Difference(estimates[1], left, right, verdict, tuple(estimates))


def is_kink(left, right, h, curvature, noise=0.0):
    """Whether one-sided slopes at step `h` show a kink rather than curvature.

    On a smooth function (f(h) - f(0))/h - (f(0) - f(-h))/h = h·f'' + O(h³), so slopes
    that differ by 0.1% can be perfectly smooth where f'' is large next to f' (a fuzz
    soak's arctan(prod(arctan(a))) had f' = -0.0016 and f'' = -12.5). A kink is a gap that
    does not shrink with the step: far beyond h·|f''| plus the rounding `noise`, and large
    next to the slopes themselves.
    """
    gap = abs(right - left)
    return gap > KINK_MARGIN * (h * abs(curvature) + noise) and rel_error(left, right) > KINK_REL


def finite_difference(f, point, name, direction=None):
    """(estimate, kink) or (None, None): `kink` is the pair of one-sided slopes (left,
    right) where finite differences did not settle on a derivative (a kink, or undecided),
    None where they did."""
    d = difference(f, point, name, direction)
    if d.verdict == "none":
        return None, None
    return d.estimate, (None if d.verdict == "smooth" else (d.left, d.right))


class _Line:
    """`f` along the line through the point in the parameter's direction, `dx` from it;
    each value computed once (the stencils at successive steps share points)."""

    def __init__(self, f, point, name, direction):
        self.f, self.point, self.name = f, point, name
        self.x = point[name]
        self.scale = max(1.0, float(np.max(np.abs(self.x))) if np.ndim(self.x) else abs(self.x))
        self.step = 1.0 if direction is None else direction
        self.values = {}

    def __call__(self, dx):
        if dx not in self.values:
            with np.errstate(all="ignore"):  # a step outside the domain shows up as nan
                self.values[dx] = float(self.f(**fresh({**self.point, self.name: self.x + dx * self.step})))
        return self.values[dx]


def _central(line):
    """Five-point stencils at H and H/2, halved up to three more times while they disagree
    (a large fifth derivative: the error of a smooth function shrinks 16x per halving).
    Returns the last two estimates and the step of the last."""
    h = 1e-3 * line.scale
    estimates = [_stencil(line, h), _stencil(line, h / 2)]
    for _ in range(3):
        if _agree(*estimates):
            break
        h /= 2
        estimates = [estimates[1], _stencil(line, h / 2)]
    return estimates, h / 2


def _stencil(line, h):
    return (line(-2 * h) - 8 * line(-h) + 8 * line(h) - line(2 * h)) / (12 * h)


def _agree(a, b):
    return rel_error(a, b) <= FD_TOL / 10


# ---- sample points --------------------------------------------------------------------------

def point_at(params, at, missing):
    """Each parameter's value: from `at` (--at, --inputs), else its default; `missing(p)`:
    the error for a parameter with neither (`gradgen check` and `gradgen graph` word theirs)."""
    point = {}
    for p in params:
        if p.name in at:
            point[p.name] = at[p.name]
        elif p.has_default:
            point[p.name] = p.default
        else:
            raise missing(p)
    return point


def sample_points(cf, f, at, n_points, seed, filename="<string>"):
    """`at` if given; else the defaults (if every parameter has one) and seeded random points.

    Random points are drawn until the original function is finite there and smooth along
    every parameter (inside every primitive's domain, away from kinks and boundaries).
    """
    params = [p for p in cf.ir.params if not p.kept_default]  # a function parameter keeps its default
    if at is not None:
        missing = lambda p: CompileError(f"no value for parameter '{p.name}' of '{cf.name}': give it with --at",
                                         filename)
        return [point_at(params, at, missing)]
    for p in params:
        if p.structured and p.name in cf.wrt and not p.has_default:
            what = f"a {p.record} (a NamedTuple or dataclass)" if p.record else "a structured parameter (a list, " \
                                                                                "tuple or dict)"
            raise CompileError(f"'{p.name}' of '{cf.name}' is {what}: give its value with --inputs FILE:FUNC (a "
                               "function returning the keyword arguments)", filename)
    points = []
    if all(p.has_default for p in params):
        points.append({p.name: p.default for p in params})
    rng = random.Random(seed)
    for _ in range(200 * n_points):
        if len(points) >= n_points:
            break
        candidate = _candidate(params, cf.wrt, rng, effects.random_states(cf.ir))
        if _usable(candidate, cf, f):
            points.append(candidate)
    return points


def numbers_raise(cf, f, seed=0):
    """(the point, the exception) when `f` raises at a point of numbers gradgen draws (what
    happens when its parameters are arrays); None when it runs there."""
    params = [p for p in cf.ir.params if not p.kept_default]
    point = _candidate(params, cf.wrt, random.Random(seed), effects.random_states(cf.ir))
    try:
        with time_limit(2.0, _Timeout, clock="cpu"), np.errstate(all="ignore"):
            f(**fresh(point))
    except _Timeout:
        return None
    except Exception as exc:  # noqa: BLE001 - the user's function raised: what it raised is reported
        return point, exc
    return None


def _candidate(params, wrt, rng, random_states=()):
    """Near the defaults where there are some (the user's own scale), else in small ranges;
    a random state (`rs` of `rs.randn()`) is a fresh one, seeded from `rng`."""
    spread = rng.choice([(0.1, 0.9), (0.1, 0.9), (-0.9, 0.9), (-2.0, 2.0), (0.5, 3.0)])
    point = {}
    for p in params:
        if p.name in wrt and p.has_default and isinstance(p.default, (int, float)):
            point[p.name] = round(p.default * rng.uniform(0.7, 1.3) + rng.uniform(-0.1, 0.1), 6)
        elif p.name in wrt:
            point[p.name] = round(rng.uniform(*spread), 6)
        elif p.has_default:
            point[p.name] = p.default
        elif p.name in random_states:
            point[p.name] = np.random.RandomState(rng.randrange(2**32))
        else:
            point[p.name] = rng.randint(1, 3)
    return point


def _usable(point, cf, f):
    """Inside the function's domain and away from kinks, judged by the original alone.

    The generated gradient plays no part, so a point where it is wrong or not finite is
    never skipped: it is reported. A point that takes 2 s of processor time is skipped (a
    hang); processor time, so that a loaded machine does not change which points are drawn.
    """
    try:
        with time_limit(2.0, _Timeout, clock="cpu"), np.errstate(all="ignore"):
            if not math.isfinite(float(f(**fresh(point)))):
                return False
            if any(difference(f, point, name).verdict != "smooth" for name in cf.wrt):
                return False  # (another random point is drawn)
    except (Exception, _Timeout):  # noqa: BLE001 - the user's function raised at a point gradgen chose
        return False
    return True


class _Timeout(BaseException):
    """The user's function ran past its time at a point (the point is skipped); not an
    Exception, so that neither the user's code nor a step's handler can swallow it."""
