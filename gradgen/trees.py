"""`gradgen.flatten` and `gradgen.flatten_func`: autograd's `autograd.misc.flatten`, as your
file runs them.

`flatten(params)` returns `(vector, unflatten)`: the leaves of any nesting of lists, tuples
(NamedTuples too) and dicts, raveled and joined in order (a dict's values by its sorted keys,
as autograd orders them; a number is one entry), and the function that builds the same
structure back from such a vector. `flatten_func(f, example)` returns `(flat_f, unflatten,
flat_example)`, `flat_f(vector, *args) = flatten(f(unflatten(vector), *args))[0]`, the
function scipy.optimize.minimize takes.

Inside a function gradgen compiles, `flatten(params)[0]` is differentiated (the gradient of
the vector lands in params' structure: gradgen/frontend/flattening.py). `gradgen.grad(flat_f)`
and the other derivatives of a function flatten_func made differentiate `f` and flatten the
result (gradgen/live/flat.py): gradgen never reads this module's source.

NumPy is imported when this module is (the first use of gradgen.flatten), not by `import gradgen`.
"""

from __future__ import annotations

import numpy as np


def flatten(value):
    """(vector, unflatten): the leaves of `value` (nested lists, tuples, NamedTuples and dicts
    of arrays and numbers) raveled into one 1-d array, and the function that turns such a
    vector back into `value`'s structure (a tuple stays a tuple, a dict keeps its keys)."""
    leaves = []
    skeleton = _skeleton(value, leaves)
    vector = np.concatenate([np.ravel(leaf) for leaf in leaves]) if leaves else np.array([])
    return vector, Unflatten(skeleton, sum(int(np.size(leaf)) for leaf in leaves))


def flatten_func(func, example):
    """(flat_func, unflatten, flat_example) as autograd's flatten_func: `flat_func(vector,
    *args)` is `flatten(func(unflatten(vector), *args))[0]`; gradgen.grad(flat_func) (and
    value_and_grad, hvp, hessian_vector_product) differentiate `func` and flatten the result."""
    flat_example, unflatten = flatten(example)

    def flat_func(vector, *args, **kwargs):
        return flatten(func(unflatten(vector), *args, **kwargs))[0]

    name = getattr(func, "__name__", "func")
    flat_func.__name__ = flat_func.__qualname__ = f"flat_{name}"
    flat_func.__doc__ = f"{name}(unflatten(vector), *args), flattened: made by gradgen.flatten_func."
    flat_func.gradgen_flattened = (func, unflatten)  # what gradgen.grad(flat_func) differentiates
    return flat_func, unflatten, flat_example


class Unflatten:
    """The structure `flatten` took apart: called on a vector of as many entries, the same
    lists, tuples and dicts with the vector's pieces as leaves, shaped as they were."""

    def __init__(self, skeleton, size):
        self.skeleton = skeleton
        self.size = size

    def __call__(self, vector):
        vector = np.asarray(vector)
        if vector.ndim != 1 or vector.size != self.size:
            raise ValueError(f"unflatten takes a vector of {self.size} entries, not an array of shape {vector.shape}")
        return _rebuilt(self.skeleton, vector, [0])

    def __repr__(self):
        return f"<unflatten: a vector of {self.size} entries into the structure flatten was given>"


def _skeleton(value, leaves):
    """`value`'s containers, each leaf replaced by (its shape, whether it was an array); the
    leaves appended to `leaves` in flattening order."""
    if isinstance(value, dict):
        keys = sorted(value)
        return (dict, list(value), {key: _skeleton(value[key], leaves) for key in keys})
    if isinstance(value, (list, tuple)):
        return (type(value), [_skeleton(part, leaves) for part in value])
    array = np.asarray(value)
    if array.dtype.kind not in "biufc":
        raise TypeError(f"flatten takes lists, tuples and dicts of arrays and numbers, not {type(value).__name__}")
    leaves.append(array)
    return ("leaf", array.shape, isinstance(value, np.ndarray))


def _rebuilt(skeleton, vector, at):
    kind = skeleton[0]
    if kind == "leaf":
        _, shape, is_array = skeleton
        size = int(np.prod(shape, dtype=int))
        piece = vector[at[0]:at[0] + size]
        at[0] += size
        return piece.reshape(shape) if is_array else piece[0]
    if kind is dict:
        _, order, parts = skeleton
        built = {key: _rebuilt(parts[key], vector, at) for key in sorted(parts)}
        return {key: built[key] for key in order}
    parts = [_rebuilt(part, vector, at) for part in skeleton[1]]
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return kind(*parts)  # a NamedTuple: its fields in order
    return tuple(parts) if issubclass(kind, tuple) else parts
