"""GradBench's evals (ported to NumPy), a Kalman filter and the five reference programs:
gradgen's gradients side by side with jax.jit(grad), PyTorch eager and autograd.

    python benchmarks/gradbench/run.py [--only gmm,lse] [--size small|medium] [--rounds 5]

For each port it compiles the NumPy objective with gradgen four ways (the default module,
`--shapes` for the inputs' shapes, `--jit numba`, and both), checks each gradient against central
differences of the objective along random directions (and each other tool's against
gradgen's), then times, in interleaved rounds in this one process, the forward objective and
every gradient. What it prints are medians over the rounds of per-round ratios: gradient /
forward for each tool, and gradgen / jax.jit; "best" is gradgen's fastest target. A tool that is not installed prints "-"; a
target gradgen refuses prints "refused" and its message is listed below the table. BLAS (and
torch) run on one thread, as in benchmarks/run.py.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
             "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy is imported: its BLAS reads these once
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import tools  # noqa: E402
from ports import PORTS  # noqa: E402

from gradgen import compile_source, load_module  # noqa: E402
from gradgen.analysis.stated import shapes_of_point  # noqa: E402

TARGETS = ("gradgen", "shapes", "numba", "shapes+numba")  # gradgen's: default, --shapes, --jit numba, both
TOOLS = ("jax", "torch", "autograd")
TOO_SLOW = 5.0  # seconds: a gradient slower than this once is not timed


def gradgen_gradient(port, args, target):
    """The generated gradient for `target` as a zero-argument callable, or the refusal's
    first line (a string)."""
    options = {"shapes": {"shapes": shapes_of_point(args)}, "numba": {"jit": "numba"},
               "shapes+numba": {"shapes": shapes_of_point(args), "jit": "numba"}}.get(target, {})
    try:
        text = compile_source(port.source, port.filename, functions=[port.function], emit_kinds=port.emit, wrt=list(port.parameters),
                              **options).text
    except Exception as exc:  # a refusal (CompileError) or numba missing: a finding, not a crash
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
    module = load_module(text, f"{port.name}_{target}_grad")
    if port.gradgen_result:
        return lambda: _tuple(port.gradgen_result(module, args))
    grad = getattr(module, f"{port.function}_grad")
    return lambda: _tuple(grad(**args))


def tool_gradient(port, args, tool):
    builder = getattr(port, f"{tool}_gradient", None)
    if builder is None:
        return "-"
    try:
        run = builder(args)
        run()  # (a tool that cannot run the port fails here, not in the timing)
        return run
    except ImportError:
        return "-"
    except tools.Skipped as exc:
        return f"skipped: {exc}"
    except Exception as exc:  # the tool cannot run this port as written: say so
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def _tuple(value):
    return tuple(np.asarray(v, dtype=float) for v in (value if isinstance(value, tuple) else (value,)))


def central_check(port, args, gradient, directions=3, seed=0):
    """Largest relative error of gradient . v against central differences of the objective
    along random directions v (a step of 1e-6 times the parameters' scale)."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(directions):
        v = {k: rng.standard_normal(np.shape(args[k])) for k in port.parameters}
        h = 1e-6 * max(1.0, max(float(np.max(np.abs(args[k]))) for k in port.parameters))
        up = dict(args, **{k: args[k] + h * v[k] for k in port.parameters})
        down = dict(args, **{k: args[k] - h * v[k] for k in port.parameters})
        fd = (port.objective(**up) - port.objective(**down)) / (2 * h)
        exact = sum(float(np.sum(g * v[k])) for g, k in zip(gradient, port.parameters))
        scale = max(abs(fd), abs(exact), sum(float(np.linalg.norm(g)) * np.linalg.norm(v[k])
                                             for g, k in zip(gradient, port.parameters)) * 1e-3, 1e-12)
        worst = max(worst, abs(fd - exact) / scale)
    return worst


def _difference(got, want):
    return max(float(np.max(np.abs(g - w)) / max(np.max(np.abs(w)), 1e-12)) for g, w in zip(got, want))


def agree(got, want):
    return len(got) == len(want) and all(np.allclose(g, w, rtol=1e-6, atol=1e-9 * max(1.0, np.max(np.abs(w))))
                                         for g, w in zip(got, want))


def calls_per_round(run, target=0.05):
    once = timeit.timeit(run, number=1)
    return max(1, int(target / max(once, 1e-7))), once


def prepare(port, size):
    """(inputs, {name: callable or message}, {name: note}) for one port at one size."""
    args = port.inputs(size)
    runs, notes = {"forward": lambda: port.objective(**args)}, {}
    reference = None
    for target in TARGETS:
        run = gradgen_gradient(port, args, target)
        if callable(run):
            try:
                got = run()  # numba compiles on this first call
            except Exception as exc:  # noqa: BLE001 - numba's typing error: a row, not the end of the run
                notes[target] = f"fails at its first call: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
                runs[target] = "fails"
                continue
            error = central_check(port, args, got) if port.reference is None else _difference(got, port.reference(args))
            if error > 1e-4:
                notes[target] = f"differs from central differences (relative error {error:.1e})"
                run = "wrong"
            reference = reference or got
        runs[target] = run
    for tool in TOOLS:
        run = tool_gradient(port, args, tool)
        if callable(run):
            got = _tuple(run())
            want = reference or (port.reference(args) if port.reference else None)
            if want is not None and not agree(got, want):
                notes[tool] = "its gradient differs from gradgen's"
            elif want is None and central_check(port, args, got) > 1e-4:
                notes[tool] = "its gradient differs from central differences"
            if getattr(run, "compile_seconds", 0) > 1:
                notes.setdefault(tool, "")
                notes[tool] += f"compiling took {run.compile_seconds:.0f} s (not timed)"
        runs[tool] = run
    return runs, notes


def measure(runs, rounds):
    """{name: median over rounds of time(name) / time(forward)}, {name: median of gradgen / name},
    the forward's median seconds."""
    timed = {name: run for name, run in runs.items() if callable(run)}
    number, slow = {}, set()
    for name, run in timed.items():
        number[name], once = calls_per_round(run)
        if once > TOO_SLOW:
            slow.add(name)
    timed = {k: v for k, v in timed.items() if k not in slow}
    times = {name: [] for name in timed}
    for _ in range(rounds):
        for name, run in timed.items():  # interleaved: every tool sees the same machine
            times[name].append(timeit.timeit(run, number=number[name]) / number[name])
    to_forward = {name: statistics.median(t / f for t, f in zip(times[name], times["forward"])) for name in times}
    to_jax = {name: statistics.median(g / j for g, j in zip(times[name], times["jax"]))
              for name in TARGETS if name in times and "jax" in times}
    for name in slow:
        to_forward[name] = f"> {TOO_SLOW:.0f} s"
    return to_forward, to_jax, statistics.median(times["forward"])


COLUMNS = [*(f"{t}/fwd" for t in TARGETS), *(f"{t}/fwd" for t in TOOLS), *(f"{t}/jax" for t in TARGETS),
           "best/fwd", "best/jax"]  # best: gradgen's fastest target (issue 23 measures that one)


def row(name, size, runs, to_forward, to_jax, forward):
    cells = []
    for target in (*TARGETS, *TOOLS):
        value = to_forward.get(target, runs.get(target))
        cells.append(f"{value:.2f}" if isinstance(value, float) else _word(value, target))
    for target in TARGETS:
        cells.append(f"{to_jax[target]:.2f}" if target in to_jax else "-")
    fastest = [t for t in TARGETS if isinstance(to_forward.get(t), float)]
    best = min(fastest, key=lambda t: to_forward[t]) if fastest else None
    cells.append(f"**{to_forward[best]:.2f}**" if best else "-")
    cells.append(f"**{to_jax[best]:.2f}**" if best in to_jax else "-")
    return f"| {name} | {size} | {_time(forward)} | " + " | ".join(cells) + " |"


def _word(value, target):
    if value == "-" or value == "wrong" or (isinstance(value, str) and value.startswith(">")):
        return value
    if isinstance(value, str) and value.startswith("skipped"):
        return "skipped"
    return ("refused" if target in TARGETS else "fails") if isinstance(value, str) else "-"


def _time(seconds):
    if seconds < 1e-5:
        return f"{seconds * 1e9:.0f} ns"
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated port names")
    parser.add_argument("--size", default="small", choices=("small", "medium"))
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args(argv)
    try:
        import torch  # start-up: optional, only to pin its threads

        torch.set_num_threads(1)
    except ImportError:
        pass
    chosen = [p for p in PORTS if not options.only or p.name in options.only.split(",")]
    load = os.getloadavg()[0]
    print(f"median of {options.rounds} interleaved rounds, size {options.size}, one thread, load average {load:.2f}\n")
    print("| eval | size | forward | " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * (len(COLUMNS) + 3))
    findings = []
    for port in chosen:
        start = time.perf_counter()
        runs, notes = prepare(port, options.size)
        to_forward, to_jax, forward = measure(runs, options.rounds)
        print(row(port.name, options.size, runs, to_forward, to_jax, forward), flush=True)
        for name, value in runs.items():
            if isinstance(value, str) and value not in ("-", "wrong"):
                findings.append(f"- {port.name} ({name}): {value}")
        findings += [f"- {port.name} ({name}): {note}" for name, note in notes.items()]
        print(f"  ({port.name}: {time.perf_counter() - start:.0f} s)", file=sys.stderr)
    if findings:
        print("\n" + "\n".join(findings))


if __name__ == "__main__":
    main()
