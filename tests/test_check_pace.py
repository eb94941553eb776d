"""`gradgen check` keeps pace with long loops: sympy differentiates each distinct statement
once (gradgen/verify/symbolic_plans.py) and evaluates its derivatives in floats at every execution,
with the verdicts and numbers of differentiating every execution at 30 digits.

The reference table below was recorded before that change, by the 30-digit trace, on the
Lotka-Volterra fit of benchmarks/lotka_volterra_500.py cut to 50 steps. (The speed itself is
measured by benchmarks/check_pace.py, not here.)
"""

from pathlib import Path

import pytest
import sympy

from gradgen.verify import finite, trace, check as verify
from gradgen.api import compile_source
from gradgen.verify.symbolic import sympy_gradient

FIT = (Path(__file__).resolve().parent.parent / "benchmarks" / "lotka_volterra_500.py").read_text()


def fit(steps):
    assert "N_STEPS = 500\n" in FIT
    return FIT.replace("N_STEPS = 500\n", f"N_STEPS = {steps}\n")


# (point, value, rows: param, generated, sympy, finite difference, relative error, ok, note, verdict)
BEFORE = [
    ({"alpha": 1.1, "beta": 0.4, "delta": 0.1, "gamma": 0.4, "prey0": 1.0, "predator0": 0.5}, 0.10795529841862862, [
        ("alpha", 0.12184194503442397, 0.12184194503442396, 0.12184194503441652, 6.116425710941209e-14),
        ("beta", -0.05771090530432921, -0.05771090530432921, -0.05771090530434554, 2.8303413650604573e-13),
        ("delta", -0.16519546589352965, -0.16519546589352951, -0.16519546589335624, 1.04976753150246e-12),
        ("gamma", 0.14035464154005034, 0.1403546415400502, 0.14035464153963154, 2.983897617270595e-12),
        ("prey0", 0.3541689020064953, 0.3541689020064952, 0.3541689020069803, 1.369405742737799e-12),
        ("predator0", -1.0371289808660056, -1.037128980866005, -1.0371289808587396, 7.0058456961589275e-12)]),
    ({"alpha": 1.254364, "beta": 0.344395, "delta": 0.151056, "gamma": 0.348114, "prey0": 1.131652,
      "predator0": 0.457774}, 0.23555531386208878, [
        ("alpha", 0.21451909645535214, 0.2145190964553524, 0.2145190964547638, 2.74257605055192e-12),
        ("beta", -0.09554560954651363, -0.0955456095465137, -0.09554560954556923, 9.884256771106044e-12),
        ("delta", -0.22280334028487264, -0.2228033402848727, -0.2228033402849744, 4.566894736710445e-13),
        ("gamma", 0.16218464405227281, 0.1621846440522729, 0.16218464405223787, 2.1545979216635401e-13),
        ("prey0", 0.6026137676386016, 0.6026137676386025, 0.602613767638895, 4.867477957817476e-13),
        ("predator0", -1.3812968278696445, -1.3812968278696456, -1.381296827858013, 8.420610476407746e-12)]),
    ({"alpha": 1.128225, "beta": 0.594896, "delta": 0.199046, "gamma": 0.400402, "prey0": 1.2761,
      "predator0": 0.411783}, 0.34692574308702523, [
        ("alpha", 0.23410082429777243, 0.23410082429777243, 0.23410082429778664, 6.070399264004797e-14),
        ("beta", -0.09443860415270627, -0.09443860415270627, -0.09443860415318343, 5.052594566329153e-12),
        ("delta", -0.31817826489045203, -0.3181782648904518, -0.31817826488972356, 2.2895116291447744e-12),
        ("gamma", 0.21382058256907577, 0.2138205825690757, 0.21382058256909828, 1.0527411137793897e-13),
        ("prey0", 0.6144205510105383, 0.6144205510105382, 0.6144205510102855, 4.114409622063769e-13),
        ("predator0", -2.0607907166687593, -2.0607907166687585, -2.0607907166467303, 1.0689608156922413e-11)]),
]


def near(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def test_fifty_steps_give_the_verdict_and_numbers_recorded_before():
    [report] = verify.check_source(fit(50), "lotka_volterra_50.py")
    assert report.ok and report.wrt == ["alpha", "beta", "delta", "gamma", "prey0", "predator0"]
    assert len(report.points) == len(BEFORE)
    for got, (point, value, rows) in zip(report.points, BEFORE):
        assert got.point == point and got.value_generated == value == got.value_original
        assert [r.param for r in got.rows] == [r[0] for r in rows]
        for row, (_, generated, sym, fd, error) in zip(got.rows, rows):
            assert (row.ok, row.note, row.fd_verdict) == (True, "", "smooth")
            assert near(row.generated, generated, 1e-12) and near(row.fd, fd, 1e-12)
            assert near(row.sympy, sym, 1e-12), (row.param, row.sympy, sym)  # (recorded at 30 digits)
            assert abs(row.rel_error - error) <= 1e-13


def test_the_sympy_work_does_not_grow_with_the_loop(monkeypatch):
    """Each distinct statement is differentiated by sympy once per shape, whatever the number
    of iterations; and the Lotka-Volterra fit never needs the 30-digit path."""
    counts = {}

    def counting(name, original):
        def call(*args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            return original(*args, **kwargs)
        return call

    monkeypatch.setattr(sympy, "diff", counting("diff", sympy.diff))
    monkeypatch.setattr(sympy, "lambdify", counting("lambdify", sympy.lambdify))
    monkeypatch.setattr(trace._Trace, "_exact_partials", counting("30 digits", trace._Trace._exact_partials))
    seen = []
    for steps in (5, 40):
        counts.clear()
        compiled = compile_source(fit(steps), f"lotka_volterra_{steps}.py")
        [cf] = compiled.functions
        for point in BEFORE:
            gradient = sympy_gradient(cf.ir, compiled.module, point[0], cf.wrt)
            assert all(isinstance(g, float) for g in gradient)
        seen.append(dict(counts))
    assert seen[0] == seen[1]
    # 22 statement shapes (the loop's 16 statements, total before and after it has a
    # tangent, 2 before the loop, loss and the result) but 8 formulas: k1x = ... and k2x = ...
    # are both x0*x1 - x1*x2*x3 in fresh symbols
    assert seen[0]["lambdify"] == 8 and "30 digits" not in seen[0]


PROGRAMS = {
    # a branch the point decides, max, a whole and a fractional exponent held in names, floor
    "branches": ("import math\n\n\ndef f(x, y, n=2, p=1.5):\n    total = 0.0\n    for k in range(6):\n"
                 "        if x * k > y:\n            total = total + x ** n * y\n"
                 "        else:\n            total = total + max(x, y) ** p - math.floor(x * k)\n"
                 "        x = x * 0.9 + 0.05 * math.sin(y)\n    return total\n",
                 [{"x": 0.7, "y": 1.3}, {"x": 0.0, "y": 0.0}, {"x": -0.4, "y": 0.2}]),
    # a whole exponent held in a name at 0 (n*x**n/x would be 0/0: x**3 is differentiated),
    # np.maximum (its statement left to the 30-digit path), a derivative the floats cannot
    # take ((x + 1)**p at x = -1: 0**-0.5, whatever 30 digits make of it)
    "edges": ("import numpy as np\n\n\ndef f(x, p=0.5, n=3):\n    total = 0.0\n    for k in range(4):\n"
              "        total = total + x ** n + np.maximum(x, 0.1) * np.exp(x)\n"
              "        total = total + (x + 1.0) ** p\n    return total\n",
              [{"x": 0.0}, {"x": -0.5}, {"x": -1.0}]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_floats_agree_with_30_digits(name):
    source, points = PROGRAMS[name]
    compiled = compile_source(source, f"{name}.py", wrt=sorted(points[0]))
    [cf] = compiled.functions
    defaults = {p.name: p.default for p in cf.ir.params if p.has_default}
    for point in points:
        point = {**defaults, **point}
        fast = sympy_gradient(cf.ir, compiled.module, point, cf.wrt)
        exact = sympy_gradient(cf.ir, compiled.module, point, cf.wrt, exact=True)
        assert len(fast) == len(exact) == len(cf.wrt)
        assert None not in exact
        assert all(abs(a - b) <= 1e-12 * max(1.0, abs(b)) for a, b in zip(fast, exact)), (name, point, fast, exact)


def test_a_disagreement_is_judged_at_30_digits(monkeypatch):
    """Where the generated gradient and sympy's in floats are not plainly equal, sympy is
    asked again at 30 digits: the table shows those numbers, never the floats' rounding."""
    compiled = compile_source(fit(20), "lotka_volterra_20.py")
    [cf] = compiled.functions
    asked = []
    original = verify.sympy_gradient

    def spy(*args, exact=False):
        asked.append(exact)
        return original(*args, exact=exact)

    monkeypatch.setattr(verify, "sympy_gradient", spy)
    point = BEFORE[0][0]
    right = original(cf.ir, compiled.module, point, cf.wrt, exact=True)
    wrong = [g * (1 + 1e-6) for g in right]

    def value_and_grad(**kw):
        return 0.0, tuple(wrong)

    report = verify.check_point(cf, compiled.module, lambda **kw: 0.0, value_and_grad, point)
    assert asked == [False, True]
    assert [r.sympy for r in report.rows] == right
    assert not any(r.ok for r in report.rows)
    asked.clear()
    report = verify.check_point(cf, compiled.module, lambda **kw: 0.0, lambda **kw: (0.0, tuple(right)), point)
    assert asked == [False]  # (agreement: the floats suffice)


def test_a_sample_point_is_differenced_once(monkeypatch):
    """The differences that chose a random point are the ones its rows show (not worked out
    again: the user's function may be slow)."""
    calls = []
    original = finite._difference

    def spy(f, point, name, direction=None):
        calls.append((tuple(sorted(point.items())), name, direction))
        return original(f, point, name, direction)

    monkeypatch.setattr(finite, "_difference", spy)
    [report] = verify.check_source(fit(5), "lotka_volterra_5.py")
    assert report.ok and len(report.points) == 3
    assert len(calls) == len(set(calls))
    assert {(tuple(sorted(p.point.items())), r.param, None) for p in report.points for r in p.rows} <= set(calls)


def test_a_long_check_says_where_it_is(monkeypatch, capsys):
    monkeypatch.setattr(verify, "PROGRESS_AFTER", -1.0)
    [report] = verify.check_source(fit(5), "lotka_volterra_5.py")
    assert report.ok
    assert capsys.readouterr().err == ("checking loss: point 1/3 ...\n"
                                       "checking loss: point 2/3 ...\n"
                                       "checking loss: point 3/3 ...\n")
