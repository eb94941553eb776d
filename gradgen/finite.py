"""Finite differences of the user's original function: a five-point central stencil at
shrinking steps, the kink test on one-sided slopes, and the sample points (random points
where the original is finite and smooth along every parameter).
"""

from __future__ import annotations

import math
import random

import numpy as np

from gradgen.errors import CompileError
from gradgen.limits import time_limit
from gradgen.report import FD_TOL, rel_error
from gradgen.usercode import fresh


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
            return float(f(**fresh({**point, name: x + dx * step})))

    def stencil(h):
        return (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h)

    try:
        h = 1e-3 * scale
        estimates = [stencil(h), stencil(h / 2)]
        for _ in range(3):  # a large fifth derivative, or a kink: smaller steps
            if rel_error(*estimates) <= FD_TOL / 10:
                break
            h /= 2
            estimates = [estimates[1], stencil(h / 2)]  # (the error of a smooth one shrinks 16x)
        h = 1e-7 * scale
        centre = at(0.0)
        left, right = (centre - at(-h)) / h, (at(h) - centre) / h
    except Exception:  # noqa: BLE001 - a step left the function's domain (the user's code raised there)
        return None, None
    if not all(map(math.isfinite, estimates + [left, right])):
        return None, None
    smooth = rel_error(*estimates) <= FD_TOL / 10 and rel_error(left, right) <= 1e-3
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
            if not math.isfinite(float(f(**fresh(point)))):
                return False
            for name in cf.wrt:
                fd, kink = finite_difference(f, point, name)
                if fd is None or kink is not None:
                    return False
    except (Exception, _Timeout):  # noqa: BLE001 - the user's function raised at a point gradgen chose
        return False
    return True


class _Timeout(BaseException):
    """The user's function ran past its time at a point (the point is skipped); not an
    Exception, so that neither the user's code nor a step's handler can swallow it."""
