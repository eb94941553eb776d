"""Generated gradients against hand-written ones and against the forward pass.

    python benchmarks/run.py [--rounds 31] [--only mlp,euler]

For each reference program of benchmarks/references/ (the sources as a person writes them,
unannotated) it compiles the gradient, checks it equals the hand-written one of
benchmarks/hand_written.py, then times three things in interleaved rounds, on the same
inputs, in this one process: the source's own function (forward), the hand-written
gradient, and the generated `_grad`. Each round gives the ratios generated / hand-written
and generated / forward; the figure printed is their median over the rounds, which a busy
machine moves much less than any single time. BLAS runs on one thread, so a matmul's speed
does not depend on what else the machine is doing.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
             "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy is imported: its BLAS reads these once

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import timeit  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from hand_written import BENCHMARKS, REFERENCES, source  # noqa: E402

from gradgen import compile_source, load_module  # noqa: E402


def compiled(reference):
    """The source's own module (forward) and the generated gradient module."""
    text = source(reference)
    forward = types.ModuleType(reference.name)
    exec(compile(text, str(REFERENCES / f"{reference.name}.py"), "exec"), forward.__dict__)
    generated = load_module(compile_source(text, f"{reference.name}.py").text, f"{reference.name}_grad")
    return getattr(forward, reference.function), getattr(generated, f"{reference.function}_grad")


def agree(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    return len(got) == len(want) and all(np.allclose(g, w, rtol=1e-9, atol=1e-12) for g, w in zip(got, want))


def calls_per_round(run, target=0.02):
    """How many calls make a round of about `target` seconds (at least one)."""
    once = timeit.timeit(run, number=1)
    return max(1, int(target / max(once, 1e-7)))


def measure(reference, rounds):
    forward, generated = compiled(reference)
    args = reference.inputs()
    hand = reference.hand
    if not agree(generated(**args), hand(**args)):
        raise SystemExit(f"{reference.name}: the generated gradient differs from the hand-written one")
    runs = {"forward": lambda: forward(**args), "hand": lambda: hand(**args), "generated": lambda: generated(**args)}
    number = {name: calls_per_round(run) for name, run in runs.items()}
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():  # interleaved: all three see the same machine
            times[name].append(timeit.timeit(run, number=number[name]) / number[name])
    to_hand = statistics.median(g / h for g, h in zip(times["generated"], times["hand"]))
    to_forward = statistics.median(g / f for g, f in zip(times["generated"], times["forward"]))
    return {name: statistics.median(t) for name, t in times.items()}, to_hand, to_forward


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--only", default="", help="comma-separated reference names")
    options = parser.parse_args(argv)
    chosen = [r for r in BENCHMARKS if not options.only or r.name in options.only.split(",")]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"median of {options.rounds} interleaved rounds, single-threaded BLAS, load average {load:.2f}")
    print(f"{'reference':32s} {'forward':>10s} {'hand':>10s} {'generated':>10s} {'gen/hand':>9s} {'gen/fwd':>8s}")
    for reference in chosen:
        seconds, to_hand, to_forward = measure(reference, options.rounds)
        cells = " ".join(f"{_time(seconds[k]):>10s}" for k in ("forward", "hand", "generated"))
        print(f"{reference.title:32s} {cells} {to_hand:9.2f} {to_forward:8.2f}", flush=True)


def _time(seconds):
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


if __name__ == "__main__":
    main()
