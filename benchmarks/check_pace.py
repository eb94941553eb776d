"""`gradgen check` against `gradgen compile` on a Lotka-Volterra fit of 500 RK4 steps.

    python benchmarks/check_pace.py            # the commands as a user runs them, and in-process
    python benchmarks/check_pace.py --exact    # also in-process with sympy at 30 digits everywhere

The source is benchmarks/lotka_volterra_500.py (scalar: sympy follows all 10,000 statement
executions of each point). The figure that matters is check / compile, which should stay
within 5: a check that takes minutes is a check nobody runs. Each figure is the median of
3 runs, one at a time (a fresh process per command; in-process, black's cache and the
sympy plans are emptied before each run, so nothing is reused from the run before).
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "benchmarks" / "lotka_volterra_500.py"
sys.path.insert(0, str(ROOT))

from gradgen.codegen import emit
from gradgen.verify import symbolic_plans, check as verify  # noqa: E402
from gradgen.api import compile_source  # noqa: E402

RUNS = 3


def median_seconds(run):
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def command(*args):
    """A gradgen command in a fresh process, as a user runs it."""
    def run():
        subprocess.run([sys.executable, "-m", "gradgen", *args], cwd=ROOT, check=True, capture_output=True)
    return run


def in_process(check, exact=False):
    source = SOURCE.read_bytes()

    def run():
        emit._black.cache_clear()
        symbolic_plans._RECENT.clear()
        if not check:
            compile_source(source, "lotka_volterra_500.py")
            return
        original = verify.sympy_gradient
        if exact:
            verify.sympy_gradient = lambda *a, **k: original(*a, **{**k, "exact": True})
        try:
            [report] = verify.check_source(source, "lotka_volterra_500.py")
        finally:
            verify.sympy_gradient = original
        assert report.ok, "the check failed: a fast wrong answer is no answer"
    return run


def line(label, compile_s, check_s):
    print(f"{label:<28} compile {compile_s:6.2f} s   check {check_s:6.2f} s   check/compile {check_s / compile_s:5.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exact", action="store_true", help="also time sympy at 30 digits everywhere (slow)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        line("commands (fresh processes)", median_seconds(command("compile", str(SOURCE), "--out-dir", out)),
             median_seconds(command("check", str(SOURCE))))
    compile_s = median_seconds(in_process(check=False))
    line("in-process", compile_s, median_seconds(in_process(check=True)))
    if args.exact:
        line("in-process, 30 digits", compile_s, median_seconds(in_process(check=True, exact=True)))


if __name__ == "__main__":
    main()
