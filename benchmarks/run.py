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
import ast  # noqa: E402
import inspect  # noqa: E402
import textwrap  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import timeit  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from hand_written import BENCHMARKS, REFERENCES, mlp_grad, source  # noqa: E402

from gradgen import compile_source, load_module  # noqa: E402
from gradgen.analysis.stated import shapes_of_point  # noqa: E402


def compiled(reference, shapes=None):
    """The source's own function (forward) and the generated gradient (for `shapes`, as
    `gradgen compile --shapes` writes it, if given)."""
    text = source(reference)
    forward = types.ModuleType(reference.name)
    exec(compile(text, str(REFERENCES / f"{reference.name}.py"), "exec"), forward.__dict__)
    generated = load_module(compile_source(text, f"{reference.name}.py", shapes=shapes, wrt="all").text, f"{reference.name}_grad")
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
    """Median times, and the medians of the per-round ratios generated / hand-written,
    generated / forward and (the same source compiled for the inputs' shapes) / hand-written."""
    args = reference.inputs()
    forward, generated = compiled(reference)
    _, shaped = compiled(reference, shapes_of_point(args))
    hand = reference.hand
    for made in (generated, shaped):
        if not agree(made(**args), hand(**args)):
            raise SystemExit(f"{reference.name}: the generated gradient differs from the hand-written one")
    runs = {"forward": lambda: forward(**args), "hand": lambda: hand(**args), "generated": lambda: generated(**args),
            "shaped": lambda: shaped(**args)}
    number = {name: calls_per_round(run) for name, run in runs.items()}
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():  # interleaved: all three see the same machine
            times[name].append(timeit.timeit(run, number=number[name]) / number[name])
    to_hand = statistics.median(g / h for g, h in zip(times["generated"], times["hand"]))
    to_forward = statistics.median(g / f for g, f in zip(times["generated"], times["forward"]))
    shaped_to_hand = statistics.median(g / h for g, h in zip(times["shaped"], times["hand"]))
    return {name: statistics.median(t) for name, t in times.items()}, to_hand, to_forward, shaped_to_hand


def annotated_mlp():
    """(lines of the generated loss_grad of examples/mlp_typed.py, lines of the hand-written
    mlp_grad, helper calls in the generated one, its matmul gradients)."""
    text = (ROOT / "generated" / "mlp_typed_grad.py").read_text()
    start = text.index("def loss_grad(")
    generated = text[start:text.index("\ndef ", start)]
    hand = inspect.getsource(mlp_grad)
    helpers = [name for name in ("unbroadcast(", "matmul_grad_a(", "matmul_grad_b(", "np.ones_like(") if name in generated]
    transposed = [line.strip() for line in generated.splitlines() if ".T" in line and "@" in line]
    return _statements(generated), _statements(hand), helpers, transposed


def _statements(function_text):
    """Statements of a function's body (its docstring aside): what a reader reads."""
    [fn] = ast.parse(textwrap.dedent(function_text)).body
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    return sum(1 for node in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(node, ast.stmt))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--only", default="", help="comma-separated reference names")
    options = parser.parse_args(argv)
    chosen = [r for r in BENCHMARKS if not options.only or r.name in options.only.split(",")]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"median of {options.rounds} interleaved rounds, single-threaded BLAS, load average {load:.2f}")
    print(f"{'reference':32s} {'forward':>10s} {'hand':>10s} {'generated':>10s} {'gen/hand':>9s} {'gen/fwd':>8s}"
          f" {'--shapes/hand':>14s}")
    for reference in chosen:
        seconds, to_hand, to_forward, shaped_to_hand = measure(reference, options.rounds)
        cells = " ".join(f"{_time(seconds[k]):>10s}" for k in ("forward", "hand", "generated"))
        print(f"{reference.title:32s} {cells} {to_hand:9.2f} {to_forward:8.2f} {shaped_to_hand:14.2f}", flush=True)
    generated, hand, helpers, transposed = annotated_mlp()
    print(f"\nexamples/mlp_typed.py (jaxtyping shapes): loss_grad has {generated} statements, the hand-written "
          f"mlp_grad {hand} ({generated / hand:.2f}x); helper calls: {', '.join(helpers) or 'none'}; "
          f"matmul gradients: {'; '.join(transposed)}")


def _time(seconds):
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


if __name__ == "__main__":
    main()
