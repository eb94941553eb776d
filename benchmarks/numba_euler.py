"""The 200-step Euler loop's gradient under numba: `gradgen compile --jit numba` against the
hand-written pure-Python gradient.

    python benchmarks/numba_euler.py [--rounds 31]

Compiles benchmarks/references/euler.py twice (the plain module, and with jit="numba"),
checks that both gradients equal benchmarks/hand_written.py's `euler_grad`, calls the
njit'd one once so that numba compiles it before any timing, then times three things in
interleaved rounds on the same inputs in this one process: the hand-written gradient, the
generated pure-Python gradient, and the njit'd generated gradient. Each round gives the
ratios to the hand-written gradient; the figures printed are their medians over the rounds
(the target: njit'd / hand-written <= 0.8).
"""

import argparse
import statistics
import sys
import time
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from hand_written import BENCHMARKS, source  # noqa: E402

from gradgen import compile_source, load_module  # noqa: E402

EULER = next(r for r in BENCHMARKS if r.name == "euler")


def gradients():
    """(hand-written, generated pure Python, generated njit'd, seconds numba took to compile)."""
    text = source(EULER)
    plain = load_module(compile_source(text, "euler.py", wrt="all").text, "euler_grad")
    jitted = load_module(compile_source(text, "euler.py", jit="numba", wrt="all").text, "euler_grad_numba")
    args = EULER.inputs()
    start = time.perf_counter()
    jitted.loss_grad(**args)  # numba compiles on the first call
    warm_up = time.perf_counter() - start
    return EULER.hand, plain.loss_grad, jitted.loss_grad, warm_up


def calls_per_round(run, target=0.02):
    once = timeit.timeit(run, number=1)
    return max(1, int(target / max(once, 1e-7)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=31)
    options = parser.parse_args(argv)
    hand, plain, jitted, warm_up = gradients()
    args = EULER.inputs()
    want = hand(**args)
    for name, f in (("generated", plain), ("njit'd", jitted)):
        if not np.allclose(f(**args), want, rtol=1e-9, atol=1e-12):
            raise SystemExit(f"the {name} gradient differs from the hand-written one")
    runs = {"hand": lambda: hand(**args), "plain": lambda: plain(**args), "numba": lambda: jitted(**args)}
    number = {name: calls_per_round(run) for name, run in runs.items()}
    times = {name: [] for name in runs}
    for _ in range(options.rounds):
        for name, run in runs.items():  # interleaved: all three see the same machine
            times[name].append(timeit.timeit(run, number=number[name]) / number[name])
    ratio = {name: statistics.median(t / h for t, h in zip(times[name], times["hand"])) for name in ("plain", "numba")}
    median = {name: statistics.median(t) for name, t in times.items()}
    print(f"{EULER.title}: median of {options.rounds} interleaved rounds, after numba's first-call compile "
          f"({warm_up:.2f} s)")
    print(f"  hand-written pure Python   {median['hand'] * 1e6:9.1f} us")
    print(f"  generated pure Python      {median['plain'] * 1e6:9.1f} us   {ratio['plain']:6.2f}x hand-written")
    print(f"  generated, --jit numba     {median['numba'] * 1e6:9.1f} us   {ratio['numba']:6.3f}x hand-written "
          f"(target <= 0.8)")


if __name__ == "__main__":
    main()
