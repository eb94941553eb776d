"""Compile-time scaling: every gradgen pass must be linear in the program's length.

Real loss functions unrolled by hand (or generated) run to thousands of statements, so a
pass that is quadratic in the statement count (a list scanned per statement, a name
search that restarts from the top) turns a one-second compile into minutes. This script
compiles straight-line programs of 100, 1,000 and 10,000 statements and prints the time
per statement; it should stay flat (ratio about 1) as the program grows. It also times
each pipeline stage it can find, so a stage that grows faster than the rest stands out.

`emit._black` is the time black takes (inside emit.function_text and emit.module_text).
Statements already in black's layout skip it (gradgen/codegen/layout.py); `--all-through-black`
sends every statement through black, as before that fast path, for comparison. Measured on
2 shared cores (black 26.10, Python 3.11), 10,000 statements: 20.0 s of CPU with every
statement through black (63% of it black's); 6.8 s with the fast path (black: 0.01 s),
selection's single walk per function and check_generated's parse without the collector.

Run on demand, not in CI:  python benchmarks/compile_scaling.py [--all-through-black]
"""

import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gradgen.api as api  # noqa: E402
from gradgen.codegen import layout  # noqa: E402

SIZES = (100, 1_000, 10_000)
PARAMS = ("w1", "w2", "w3", "b1", "b2")
# Stage entry points as `api` calls them (module.function); any that are missing are skipped.
STAGES = ("parse.parse_module", "lower.lower_function", "activity.choose_wrt",
          "activity.analyse", "reverse.backward", "simplify.dead_code",
          "emit.function_text", "emit.module_text", "emit._black")


def program(n: int, seed: int = 0) -> str:
    """`def loss(...)` with n statements, each reading one or two recent variables.

    Names come from a pool of 40 and are reassigned as the chain moves on, so the
    compiler also sees the same name rebound many times.
    """
    rng = random.Random(seed)
    live = list(PARAMS)
    lines = ["import math", "", "", f"def loss({', '.join(PARAMS)}):"]
    for i in range(n):
        x, y = rng.choice(live[-6:]), rng.choice(live)
        rhs = rng.choice([f"{x} + {y}", f"{x} * {y}", f"0.5 * {x} + {y}", f"math.sin({x})",
                          f"math.exp(-{x} * {x})", f"math.tanh({x}) * {y}", f"{x} * {x} - 0.1 * {y}"])
        target = f"v{i % 40}"
        lines.append(f"    {target} = {rhs}")
        live.append(target)
    lines.append(f"    return {live[-1]}")
    return "\n".join(lines) + "\n"


def instrument():
    """Wrap each stage function found in STAGES so its time is added to `spent[stage]`.

    Stage times are inclusive: a stage that calls another through its module counts both.
    """
    spent = defaultdict(float)
    for stage in STAGES:
        module_name, fn_name = stage.split(".")
        module = getattr(api, module_name, None)
        fn = getattr(module, fn_name, None)
        if fn is None:
            continue

        def timed(*args, _fn=fn, _stage=stage, **kwargs):
            start = time.perf_counter()
            try:
                return _fn(*args, **kwargs)
            finally:
                spent[_stage] += time.perf_counter() - start

        setattr(module, fn_name, timed)
    return spent


def main():
    if "--all-through-black" in sys.argv[1:]:
        layout.independent = lambda units: False
    spent = instrument()
    print(f"{'statements':>10} | {'total s':>8} | {'cpu s':>8} | {'us/statement':>12} | {'ratio to 100':>12} | "
          f"{'in black':>8}")
    print(f"{'-' * 10}-+-{'-' * 8}-+-{'-' * 8}-+-{'-' * 12}-+-{'-' * 12}-+-{'-' * 8}")
    results = []
    for n in SIZES:
        source = program(n)
        spent.clear()
        start, cpu = time.perf_counter(), time.process_time()
        api.compile_source(source, filename=f"chain_{n}.py", wrt="all")
        total, cpu = time.perf_counter() - start, time.process_time() - cpu
        results.append((n, dict(spent)))
        per = total / n
        if n == SIZES[0]:
            base = per
        black_share = spent.get("emit._black", 0) / total
        print(f"{n:>10,} | {total:>8.3f} | {cpu:>8.3f} | {per * 1e6:>12.1f} | {per / base:>12.2f} | "
              f"{black_share:>8.0%}", flush=True)

    stages = [s for s in STAGES if any(s in timings for _, timings in results)]
    if stages:
        print("\nmicroseconds per statement, by stage:")
        print(f"{'stage':>22} | " + " | ".join(f"{n:>8,}" for n, _ in results))
        for s in stages:
            print(f"{s:>22} | " + " | ".join(f"{t.get(s, 0) / n * 1e6:>8.1f}" for n, t in results))


if __name__ == "__main__":
    main()
