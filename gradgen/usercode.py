"""Running the user's own code, the one thing `gradgen check` does that `compile` never
does: the original module, its function at sample points, and the `--inputs` builder.

Each run starts from a fresh copy of the point's arrays, so a function that updates a
parameter in place cannot move the point under the next run.
"""

from __future__ import annotations

import types

import numpy as np


def fresh(point):
    """The point with every array copied: a function that updates a parameter in place
    (`a += e`) changes its argument, and each run must start from the same point."""
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in point.items()}


def run_original(source, filename):
    """The user's module, executed from its source (its top level runs here)."""
    module = types.ModuleType("gradgen_check_original")
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    return module
