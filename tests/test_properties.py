"""Property-based tests: random programs, compiled and checked.

The programs come from `tests/programs.py` (straight-line scalar programs, and programs with
`if`/`elif`/`else`, early returns, `for` and `while` loops, `break` and `continue`) and
`tests/array_programs.py` (NumPy programs on arrays of random broadcast-compatible shapes):
every one stays inside each primitive's domain over the whole parameter box and keeps the
sample point away from kinks, ties and branch boundaries, so any failure here is a bug in
gradgen, not in the generator.
"""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, given, note, settings

from array_programs import array_programs
from gradgen import compile_source, load_module
from gradgen.verify import check_source
from programs import control_programs, programs, seeded_control_program, seeded_program

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def table(point_report) -> str:
    rows = [f"  {r.param}: generated={r.generated!r} sympy={r.sympy!r} fd={r.fd!r} {r.note}"
            for r in point_report.rows]
    return "\n".join(rows)


def fine_difference(f, point, name, h=1e-6):
    """Central difference with a step far smaller than the checker's (which reaches 2e-3
    away), for rows the checker flags as at a kink: the generator keeps kinks >= 0.05 away."""
    up, down = dict(point), dict(point)
    up[name] += h
    down[name] -= h
    return (f(**up) - f(**down)) / (2 * h)


def check_program(program):
    """Generated gradient == sympy (1e-8) == finite differences (1e-5); value == original."""
    note(repr(program))
    wrt = list(program.wrt) if program.wrt is not None else None
    [report] = check_source(program.source, functions=["f"], wrt=wrt, at=program.point, n_points=1)
    [point] = report.points
    note(table(point))
    assert math.isclose(point.value_generated, point.value_original, rel_tol=1e-12, abs_tol=1e-12)
    if wrt is not None:
        assert [r.param for r in point.rows] == wrt
    assert set(r.param for r in point.rows) <= set(program.point)
    # an int parameter (an exponent or a loop bound) is never differentiated by default
    assert all(isinstance(program.point[r.param], float) for r in point.rows)

    original = {}
    exec(program.source, original)
    generated = load_module(compile_source(program.source, wrt=wrt).text, "property_generated")
    grads = generated.f_grad(**program.point)
    grads = grads if isinstance(grads, tuple) else (grads,)
    assert len(grads) == len(point.rows)

    for row, grad in zip(point.rows, grads):
        assert math.isclose(float(grad), row.generated, rel_tol=1e-12, abs_tol=1e-15), row.param
        assert row.sympy is not None, f"no sympy value for {row.param}"
        assert math.isclose(row.generated, row.sympy, rel_tol=1e-8, abs_tol=1e-10), row.param
        if row.fd is not None and not row.note:
            fd = row.fd
        else:  # the checker's step crossed something; a much smaller step will not
            fd = fine_difference(original["f"], program.point, row.param)
        assert math.isclose(row.generated, fd, rel_tol=1e-5, abs_tol=1e-5), row.param
    assert report.ok


@settings(max_examples=300, **SETTINGS)
@given(programs())
def test_gradient_matches_sympy_and_finite_differences(program):
    check_program(program)


@settings(max_examples=50, **SETTINGS)
@given(programs(integer_param=True))
def test_gradient_with_respect_to_some_parameters(program):
    """`wrt` a subset; the others (and an int exponent `n`) are constants."""
    check_program(program)


@settings(max_examples=100, **SETTINGS)
@given(programs() | control_programs())
def test_compiling_twice_gives_the_same_bytes(program):
    first = compile_source(program.source, filename="prog.py").text
    second = compile_source(program.source, filename="prog.py").text
    assert first == second


@settings(max_examples=200, report_multiple_bugs=False, **SETTINGS)
@given(control_programs())
def test_control_flow_gradient_matches_sympy_and_finite_differences(program):
    """`if`/`elif`/`else` on active comparisons, early returns, bounded `for` and `while`
    loops (nested, with `break`/`continue` on the index), accumulators and overwrites."""
    check_program(program)


# Re-checking one array example takes up to seconds (sympy differentiates small instances
# element by element), so shrinking a failure took minutes: it is off unless GRADGEN_SHRINK
# is set. The failing program is printed in full either way (`note`).
ARRAY_PHASES = tuple(Phase) if os.environ.get("GRADGEN_SHRINK") else tuple(p for p in Phase if p != Phase.shrink)


@settings(max_examples=100, report_multiple_bugs=False, phases=ARRAY_PHASES, **SETTINGS)
@given(array_programs())
def test_array_gradient_matches_finite_differences(program):
    """Every row ok: sympy on small instances (1e-8) and central finite differences (1e-5)
    along random directions and along every element; the gradient has each parameter's
    shape and dtype float64; the value is the original's; the inputs are left unchanged."""
    note(repr(program))
    [report] = check_source(program.source, functions=["f"], at=program.point, n_points=1)
    [point] = report.points
    note(table(point))
    assert report.wrt == ["a", "b"]  # X, after `*`, is data
    assert math.isclose(point.value_generated, point.value_original, rel_tol=1e-12, abs_tol=1e-12)
    assert {r.param.split(".")[0].split(" ")[0] for r in point.rows} == {"a", "b"}
    for row in point.rows:
        assert row.fd is not None and "kink" not in row.note, f"{row.param}: {row.note}"
        assert abs(row.generated - row.fd) <= 1e-5 * max(abs(row.generated), abs(row.fd), 1e-3), row.param
        if row.sympy is not None:
            assert math.isclose(row.generated, row.sympy, rel_tol=1e-8, abs_tol=1e-10), row.param
        assert row.ok, f"{row.param}: {row.note}"

    inputs = {name: np.copy(x) for name, x in program.point.items()}
    generated = load_module(compile_source(program.source).text, "property_array_generated")
    _, grads = generated.f_value_and_grad(**inputs)
    for name, grad, again in zip(["a", "b"], grads, generated.f_grad(**inputs)):
        assert np.shape(grad) == np.shape(program.point[name]), name
        assert np.asarray(grad).dtype == np.float64, name
        np.testing.assert_array_equal(grad, again)
    for name, x in program.point.items():
        np.testing.assert_array_equal(inputs[name], x, err_msg=f"the gradient modified its input {name}")


COMPILE_IN_CHILD = """
import sys
sys.path.insert(0, {tests!r})
from gradgen import compile_source
from programs import seeded_control_program, seeded_program
for seed in range({n}):
    sys.stdout.write(compile_source(seeded_program(seed).source, filename="prog.py").text)
    sys.stdout.write(compile_source(seeded_control_program(seed).source, filename="prog.py").text)
"""


def test_output_does_not_depend_on_the_hash_seed():
    """Set and dict orders vary with PYTHONHASHSEED; the generated bytes must not."""
    n = 40
    script = COMPILE_IN_CHILD.format(tests=str(ROOT / "tests"), n=n)
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=True)
        outputs.append(done.stdout)
    expected = "".join(compile_source(seeded_program(s).source, filename="prog.py").text
                       + compile_source(seeded_control_program(s).source, filename="prog.py").text
                       for s in range(n))
    assert outputs[0] == outputs[1] == expected
