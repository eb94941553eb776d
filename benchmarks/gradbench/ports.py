"""Every program benchmarks/gradbench/run.py measures, as one record each: the GradBench ports
of this folder, the Kalman filter, and the five reference programs of benchmarks/references/
(their sizes from benchmarks/hand_written.py: its quick `small` inputs, its default ones as
"medium")."""

import importlib
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import tools  # noqa: E402

EVALS = ("gmm", "ba", "ht", "lstm", "kmeans", "llsq", "lse", "ode", "particle", "saddle", "det", "kalman")
# the same eval written another way (where gradgen refuses the first: its message says how), or
# computing all GradBench asks for (kmeans' Newton direction, not the gradient alone)
VARIANTS = ("det_permutations", "kmeans_dir")


@dataclass
class Port:
    name: str
    source: str  # the text gradgen compiles
    filename: str
    function: str  # the function of `source` that is differentiated
    parameters: tuple  # its differentiated parameters, in order
    objective: Callable  # that function, run as written
    inputs: Callable  # inputs(size) -> keyword arguments of `objective`
    jax_gradient: Optional[Callable] = None
    torch_gradient: Optional[Callable] = None
    autograd_gradient: Optional[Callable] = None
    emit: tuple = ("grad",)  # what gradgen compiles (--emit)
    gradgen_result: Optional[Callable] = None  # (generated module, inputs) -> the result, where not the gradient
    reference: Optional[Callable] = None  # inputs -> the right result, where not checked by central differences


def gradbench_port(name):
    module = importlib.import_module(name)
    path = HERE / getattr(module, "SOURCE", f"{name}.py")
    return Port(name, path.read_text(), str(path), "objective", module.PARAMETERS, module.objective, module.inputs,
                getattr(module, "jax_gradient", None), getattr(module, "torch_gradient", None),
                getattr(module, "autograd_gradient", None), getattr(module, "EMIT", ("grad",)),
                getattr(module, "gradgen_result", None), getattr(module, "reference", None))


def reference_port(reference):
    """A program of benchmarks/references/, with jax and autograd running its own text."""
    import hand_written  # start-up: benchmarks/hand_written.py, only when the references are listed

    path = hand_written.REFERENCES / f"{reference.name}.py"
    text = path.read_text()
    module = types.ModuleType(reference.name)
    exec(compile(text, str(path), "exec"), module.__dict__)
    objective = getattr(module, reference.function)
    parameters = tuple(hand_written.source(reference) and _parameters(objective))

    def inputs(size):
        return reference.inputs(**(reference.small if size == "small" else {}))

    return Port(f"ref_{reference.name}", text, str(path), reference.function, parameters, objective, inputs,
                lambda args: tools.jax_gradient(objective, args, parameters),
                None,
                lambda args: tools.autograd_gradient(objective, args, parameters))


def _parameters(function):
    code = function.__code__
    return code.co_varnames[:code.co_argcount]


def _all():
    import hand_written  # start-up: as above

    return [gradbench_port(name) for name in EVALS + VARIANTS] + \
        [reference_port(r) for r in hand_written.BENCHMARKS]


PORTS = _all()
