"""Long loops in bounded memory: the gradient of a 1-D heat-equation fit, taped and with
`--checkpoint 32`, against jax.checkpoint over lax.scan and torch.utils.checkpoint.

    python benchmarks/checkpointing.py [--steps 1000,10000,100000] [--long] [--snapshots 32]

The state is 1,000 temperatures, written in place each step (`u[1:-1] = ...`); the loss is
the mean squared distance to a target after T steps. Each run is a fresh process (so one
run's memory is not another's): the peak of the memory Python's allocator traced
(tracemalloc: NumPy's arrays included) for gradgen, the growth of the process's peak
resident memory (PyTorch's buffers are not traced; for JAX, the buffers XLA plans for the
compiled gradient, its memory_analysis, since its first call already raised the peak), and the
time of one gradient. gradgen's gradient with checkpointing is checked equal to the taped
one (rtol 1e-12) where both run. `--long` adds T = 10^6 (checkpointed only: taped, it
keeps 8 GB). JAX and PyTorch are measured where they import (the bench extra); each checkpoints
blocks of sqrt(T) steps, the usual hand-written schedule (they offer no binomial one).
Target (issue 24): for T = 10^5 and K = 32, peak <= 50 MB and time <= 4x the taped gradient.
"""

import argparse
import json
import math
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCE = '''import numpy as np


def loss(kappa, u0, *, steps, target):
    u = np.copy(u0)
    for t in range(steps):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.mean((u - target) ** 2)
'''
N = 1000


def inputs():
    x = np.linspace(0.0, 1.0, N)
    return 0.1, np.sin(np.pi * x) + 0.5 * np.sin(7 * np.pi * x), 0.8 * np.sin(np.pi * x)


def _rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # (kB on Linux)


def run_gradgen(steps, snapshots):
    import gradgen

    text = gradgen.compile_source(SOURCE, "heat.py", checkpoint=snapshots, wrt="all").text
    grad = gradgen.load_module(text, "heat_grad").loss_grad
    kappa, u0, target = inputs()
    grad(kappa, u0, steps=10, target=target)  # (warm: imports, first calls)
    before = _rss()
    tracemalloc.start()
    start = time.perf_counter()
    dkappa, du0 = grad(kappa, u0, steps=steps, target=target)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"seconds": seconds, "traced": peak, "rss": _rss() - before, "dkappa": float(dkappa),
            "du0": du0.tolist()}


def run_jax(steps):
    import jax

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    block = max(1, math.isqrt(steps))
    blocks, rest = divmod(steps, block)

    def step(u, kappa):
        return u.at[1:-1].set(u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2]))

    def loss(kappa, u0, target):
        @jax.checkpoint
        def run_block(u, _):
            return jax.lax.scan(lambda v, __: (step(v, kappa), None), u, None, length=block)[0], None

        u = jax.lax.scan(run_block, u0, None, length=blocks)[0]
        u = jax.lax.scan(lambda v, __: (step(v, kappa), None), u, None, length=rest)[0]
        return jnp.mean((u - target) ** 2)

    kappa, u0, target = inputs()
    grad = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(kappa, u0, target).compile()  # (before the timing)
    planned = grad.memory_analysis()  # XLA's buffers, which no Python allocator sees
    planned = planned.temp_size_in_bytes + planned.output_size_in_bytes + planned.argument_size_in_bytes
    jax.block_until_ready(grad(kappa, u0, target))
    start = time.perf_counter()
    dkappa, du0 = jax.block_until_ready(grad(kappa, u0, target))
    return {"seconds": time.perf_counter() - start, "planned": planned, "dkappa": float(dkappa)}


def run_torch(steps):
    import torch
    from torch.utils.checkpoint import checkpoint

    block = max(1, math.isqrt(steps))

    def run_block(u, kappa, count):
        for _ in range(count):
            inner = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
            u = torch.cat([u[:1], inner, u[-1:]])
        return u

    kappa0, u00, target0 = inputs()
    kappa = torch.tensor(kappa0, dtype=torch.float64, requires_grad=True)
    u0 = torch.tensor(u00, dtype=torch.float64, requires_grad=True)
    target = torch.tensor(target0, dtype=torch.float64)
    before = _rss()
    start = time.perf_counter()
    u = u0
    for first in range(0, steps, block):
        u = checkpoint(run_block, u, kappa, min(block, steps - first), use_reentrant=False)
    torch.mean((u - target) ** 2).backward()
    return {"seconds": time.perf_counter() - start, "rss": _rss() - before, "dkappa": float(kappa.grad)}


def _measure(library, steps, snapshots):
    """One run in a fresh process: its record, or None where the library does not import."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import json, checkpointing as c; "
            f"print(json.dumps(c._one({library!r}, {steps}, {snapshots!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        if "ModuleNotFoundError" in done.stderr:
            return None
        raise RuntimeError(f"{library} T={steps}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _one(library, steps, snapshots):
    if library == "gradgen":
        return run_gradgen(steps, snapshots)
    return run_jax(steps) if library == "jax" else run_torch(steps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="1000,10000,100000", help="the trip counts T, comma-separated")
    parser.add_argument("--snapshots", type=int, default=32, help="K of --checkpoint K (default 32)")
    parser.add_argument("--long", action="store_true", help="also T = 10^6, checkpointed only")
    parser.add_argument("--no-others", action="store_true", help="gradgen only (no JAX, no PyTorch)")
    options = parser.parse_args(argv)
    steps = [int(s) for s in options.steps.split(",")] + ([10**6] if options.long else [])
    mb = 1e6
    print(f"1-D heat equation, {N} elements written in place per step; one gradient (d/dkappa, d/du0)")
    print(f"{'T':>9}  {'what':<28} {'time s':>8} {'traced MB':>10} {'peak RSS MB':>12} {'x taped':>8}")
    for t in steps:
        taped = _measure("gradgen", t, None) if t < 10**6 else None
        checked = _measure("gradgen", t, options.snapshots)
        if taped is not None:
            np.testing.assert_allclose(checked["du0"], taped["du0"], rtol=1e-12, atol=1e-300)
            np.testing.assert_allclose(checked["dkappa"], taped["dkappa"], rtol=1e-12)
        rows = [("gradgen, taped", taped), (f"gradgen, --checkpoint {options.snapshots}", checked)]
        if not options.no_others:
            rows += [("jax.checkpoint, lax.scan", _measure("jax", t, None)),
                     ("torch.utils.checkpoint", _measure("torch", t, None))]
        for what, r in rows:
            if r is None:
                continue
            ratio = f"{r['seconds'] / taped['seconds']:.2f}" if taped else ""
            traced = f"{r['traced'] / mb:.1f}" if "traced" in r else f"{r['planned'] / mb:.1f}*" if "planned" in r \
                else ""
            rss = f"{r['rss'] / mb:.1f}" if "rss" in r else ""
            print(f"{t:>9}  {what:<28} {r['seconds']:>8.2f} {traced:>10} {rss:>12} {ratio:>8}")
    print("* JAX: the buffers XLA plans for the compiled gradient (memory_analysis), not traced")


if __name__ == "__main__":
    main()
