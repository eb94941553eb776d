"""The finite-difference oracle's kink test: one-sided slopes differ by h·f'' on a smooth
function, so slopes 0.1% apart are a kink only where curvature cannot explain the gap."""

import math

import numpy as np
import pytest

from gradgen.verify.finite import Difference, difference, is_kink
from gradgen.verify.report import judge, rel_error

H = 1e-7  # the one-sided step at a point of scale 1


def test_is_kink_compares_the_gap_with_the_step_times_the_curvature():
    # the fuzz soak's case: f' = -0.00155, f'' = -12.5, one-sided slopes 0.11% apart
    left, right = -0.0015512341044584168, -0.001552992345130333
    assert not is_kink(left, right, 1.4156878867424128e-07, -12.524066154660403)
    assert is_kink(left, right, 1.4156878867424128e-07, 0.0)  # the same gap with no curvature
    assert is_kink(0.0, 2.0, H, 2.0 / 1e-3)  # abs at 0: f'' from a wide stencil is about 2/H
    assert not is_kink(1.0, 1.0 + 5e-4, H, 0.0)  # 0.05% apart: too close to call
    assert not is_kink(0.0, 1e-6, H, 0.0, noise=1e-6)  # within rounding


@pytest.mark.parametrize("f, x, derivative", [
    (lambda x: 50 * (x - 0.3) ** 2, 0.30001, 1e-3),  # f'' = 100, f' = 0.001
    (lambda x: math.cosh(40 * (x - 0.3)), 0.3 + 1e-6, 40 * math.sinh(40e-6)),  # f'' = 1600
    (lambda x: math.sin(5 * x), math.pi / 10 + 3e-5, 5 * math.cos(math.pi / 2 + 1.5e-4)),  # near its maximum
])
def test_smooth_functions_with_a_large_second_derivative_are_no_kink(f, x, derivative):
    d = difference(f, {"x": x}, "x")
    assert d.verdict == "smooth", d
    assert d.estimate == pytest.approx(derivative, rel=1e-7)
    assert rel_error(d.left, d.right) > 1e-3  # the slopes differ by more than 0.1%: the old test's kink


def test_rounding_in_large_values_is_no_kink():
    d = difference(lambda x: 1e3 * math.log(x), {"x": 0.5}, "x")
    assert d.verdict == "smooth" and d.estimate == pytest.approx(2e3, rel=1e-9)


@pytest.mark.parametrize("f, slopes", [
    (lambda x: abs(x - 0.3) + x, (0.0, 2.0)),
    (lambda x: max(x, 0.3), (0.0, 1.0)),
    (lambda x: float(np.maximum(x, 0.3) + 50 * (x - 0.3) ** 2), (0.0, 1.0)),  # a kink with curvature
    (lambda x: 1e-2 * abs(x - 0.3) + x, (0.99, 1.01)),  # a jump of 2% of the slopes
])
def test_true_kinks_are_kinks(f, slopes):
    d = difference(f, {"x": 0.3}, "x")
    assert d.verdict == "kink"
    assert (d.left, d.right) == pytest.approx(slopes, abs=1e-5)


def test_a_step_outside_the_domain_gives_no_estimate():
    assert difference(math.log, {"x": 1e-4}, "x") == Difference(None)
    assert difference(lambda x: [1.0, 2.0][int(x * 1e4)], {"x": 1e-4}, "x") == Difference(None)


def test_undecided_rows_are_judged_by_sympy_or_by_the_evidence():
    unsure = Difference(1.0, 0.999, 1.001, "undecided", (1.0, 1.0002))
    assert judge("x", 1.0005, 1.0005, unsure).ok  # sympy has it
    by_sympy = judge("x", 1.2, 1.0, unsure)
    assert (by_sympy.ok, by_sympy.note) == (
        False, "finite differences undecided: stencils give 1 and 1.0002; MISMATCH")
    inside = judge("x", 1.0005, None, unsure)
    assert (inside.ok, inside.fd, inside.fd_verdict) == (True, 1.0, "undecided")
    outside = judge("x", 1.01, None, unsure)
    assert (outside.ok, outside.rel_error) == (False, math.inf)
