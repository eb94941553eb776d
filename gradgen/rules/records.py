"""Structured parameters that are NamedTuples or dataclasses: the generated helpers that make
their gradients (gradgen.rules.trees's, for a file that declares such classes).

A part is read by its path as written (`p.layers[0].W`), and its gradient added at the same
path of the parameter's gradient while the backward pass runs (`dL_dp.layers[0].W =
dL_dp.layers[0].W + dL_dW`): there the gradient of a NamedTuple or dataclass is `Fields`, its
fields by name (and by position, as a NamedTuple is read: `dL_dp[0]`), which a frozen class
or a NamedTuple cannot be. It is handed back as an instance of the parameter's own class
(`x._replace(W=..., b=...)`, `dataclasses.replace(x, ...)`: the class is never imported,
and nothing of the user's runs but the class's own constructor), the convention of JAX's
pytrees. A field that is data (annotated `int`, `bool` or `str`, or holding no number or
array: a string, None, a function, a list of them) is carried into the gradient as the
parameter has it.

gradgen.codegen.emit writes these in place of gradgen.rules.trees's helpers of the same
names where the compiled file declares a NamedTuple or dataclass (and the generated module
then imports dataclasses); the lowering of field reads is gradgen.frontend.records.
"""

from __future__ import annotations

import dataclasses

import numpy as np

_FIELDS = '''class Fields:
    """The gradient of a NamedTuple or dataclass while the backward pass adds into it: its
    fields by name (g.W, g["W"]) and, as a NamedTuple is read, by position (g[0])."""

    def __init__(self, names, values):
        self.__dict__.update(zip(names, values))

    def __getitem__(self, key):
        return getattr(self, key if isinstance(key, str) else list(vars(self))[key])

    def __setitem__(self, key, value):
        setattr(self, key if isinstance(key, str) else list(vars(self))[key], value)

    def __len__(self):
        return len(vars(self))
'''

_FIELDS_OF = '''def fields_of(x):
    """The field names of a NamedTuple or dataclass x (or of its gradient, Fields), else None."""
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return x._fields
    if isinstance(x, Fields):
        return list(vars(x))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [f.name for f in dataclasses.fields(x)]
    return None
'''

_IS_DATA = '''def is_data(x, name):
    """Whether field `name` of x is data, carried into the gradient as it is: annotated int,
    bool or str, or holding no number or array (a string, None, a function, a list of them)."""
    annotation = getattr(type(x), "__annotations__", {}).get(name)
    annotation = getattr(annotation, "__forward_arg__", annotation)  # (a NamedTuple's, written as text)
    return annotation in (int, bool, str, "int", "bool", "str") or not holds_numbers(getattr(x, name))
'''

_HOLDS_NUMBERS = '''def holds_numbers(value):
    """Whether value is or holds a number or an array (a bool, a string, None are none)."""
    names = fields_of(value)
    if names is not None:
        return any(holds_numbers(getattr(value, name)) for name in names)
    if isinstance(value, dict):
        return any(holds_numbers(part) for part in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_numbers(part) for part in value)
    return isinstance(value, (int, float, complex, np.number, np.ndarray)) and not isinstance(value, bool)
'''

_ZEROS_LIKE_TREE = '''def zeros_like_tree(x):
    """A gradient to add into, shaped as the structured parameter x: Fields for each NamedTuple
    or dataclass, a list for each list or tuple, a dict for each dict, zeros for each array
    and 0.0 for each number."""
    names = fields_of(x)
    if names is not None:
        return Fields(names, [zeros_like_tree(getattr(x, name)) for name in names])
    if isinstance(x, dict):
        return {key: zeros_like_tree(value) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        return [zeros_like_tree(value) for value in x]
    return np.zeros_like(x, dtype=float) if np.ndim(x) else 0.0
'''

_SHAPED_LIKE = '''def shaped_like(x, g):
    """Gradient g with the containers of the parameter x: a tuple where x has a tuple, and
    where x is a NamedTuple or dataclass, one of its class (its data fields as x has them)."""
    names = fields_of(x)
    if names is not None:
        parts = {name: shaped_like(getattr(x, name), getattr(g, name)) for name in names if not is_data(x, name)}
        return x._replace(**parts) if isinstance(x, tuple) else dataclasses.replace(x, **parts)
    if isinstance(x, dict):
        return {key: shaped_like(value, g[key]) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        parts = [shaped_like(value, part) for value, part in zip(x, g)]
        return tuple(parts) if isinstance(x, tuple) else parts
    if np.ndim(x) == 0 and np.ndim(g) and np.size(g) == 1:  # NumPy reduces a number along axis 0 or -1:
        return np.reshape(g, ())  # its gradient came back with that axis (np.sum(b, axis=-1), b a number)
    return g
'''

_ZERO_GRADIENT = '''def zero_gradient(x):
    """The gradient of a parameter nothing differentiable reads: an exact zero of its kind,
    0.0 for a number, zeros for an array, and the same lists, tuples, dicts, NamedTuples and
    dataclasses of these."""
    if fields_of(x) is not None:
        return shaped_like(x, zeros_like_tree(x))
    if isinstance(x, dict):
        return {key: zero_gradient(value) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        parts = [zero_gradient(value) for value in x]
        return tuple(parts) if isinstance(x, tuple) else parts
    return np.zeros_like(x, dtype=float) if np.ndim(x) else 0.0
'''

# name -> (the helpers it calls, its source), as gradgen.rules.table.LIBRARY_HELPERS
RECORD_HELPERS = {
    "zeros_like_tree": (("Fields", "fields_of"), _ZEROS_LIKE_TREE),
    "shaped_like": (("Fields", "fields_of", "is_data", "holds_numbers"), _SHAPED_LIKE),
    "zero_gradient": (("Fields", "fields_of", "is_data", "holds_numbers", "zeros_like_tree", "shaped_like"),
                      _ZERO_GRADIENT),
    "Fields": ((), _FIELDS),
    "fields_of": (("Fields",), _FIELDS_OF),
    "is_data": (("holds_numbers", "fields_of"), _IS_DATA),
    "holds_numbers": (("fields_of",), _HOLDS_NUMBERS),
}
IMPORTS = ("dataclasses",)  # what the record helpers use beside NumPy


def runtime():
    """`fields_of` and `is_data` as the generated module defines them: gradgen check reads a
    point's NamedTuples and dataclasses (which fields are leaves, which data) as they do."""
    namespace = {"dataclasses": dataclasses, "np": np}
    exec(_FIELDS + _FIELDS_OF + _IS_DATA + _HOLDS_NUMBERS, namespace)  # noqa: S102 - gradgen's own helper source
    return namespace["fields_of"], namespace["is_data"]
