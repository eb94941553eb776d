"""Values of the running program compared between calls (gradgen.live): a module constant or
a closure's value the generated code folded, checked on every call against what it was when
compiled, and the shapes of those passed. A record or container (`SETTINGS = Pair(np.array(
[...]), 1.0)`) is compared part by part: NumPy would take it for a ragged array.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np


def snapshot(value):
    """The value as it is now, its arrays copied (a record or container of them, part by part)."""
    parts = _parts(value)
    if parts is None:
        return value.copy() if isinstance(value, np.ndarray) else value
    return _ValueSnapshot(type(value), {key: snapshot(part) for key, part in parts.items()})


@dataclass(frozen=True)
class _ValueSnapshot:
    """A container or record (`SETTINGS = Pair(np.array([...]), 1.0)`) as it was: its class and parts."""

    cls: type
    parts: dict


def _parts(value):
    """{key: part} of a NamedTuple, dataclass, tuple, list or dict; None for anything else."""
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return {name: getattr(value, name) for name in value._fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return dict(enumerate(value))
    if isinstance(value, dict):
        return dict(value)
    return None


def same_value(now, then):
    if isinstance(then, _ValueSnapshot):
        parts = _parts(now)
        return type(now) is then.cls and parts is not None and parts.keys() == then.parts.keys() and all(
            same_value(parts[key], then.parts[key]) for key in parts)
    try:
        return type(now) is type(then) and np.shape(now) == np.shape(then) and bool(np.array_equal(now, then))
    except (TypeError, ValueError):
        return False


def shape_of(value):
    parts = _parts(value)
    if parts is not None:  # (a record or container: its parts' shapes)
        return (type(value).__name__, tuple((key, shape_of(part)) for key, part in parts.items()))
    return (type(value).__name__, np.shape(value), str(getattr(value, "dtype", "")))


def same(seen, name, current, compiled):
    """Whether a module constant's value now is the one it was compiled with (remembered per
    object in `seen`: a notebook reads the same array on every call)."""
    if seen.get(name, (None,))[0] is current:
        return seen[name][1]
    try:
        same = bool(np.array_equal(current, compiled)) and np.shape(current) == np.shape(compiled)
    except (TypeError, ValueError):
        same = current == compiled
    seen[name] = (current, same)
    return same
