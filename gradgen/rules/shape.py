"""Derivative rules for reshaping, repeating, stacking, statistics and sorting, registered
into the one rule table of gradgen.rules.table.

A module of its own because the table passed 600 lines. These rules move the gradient
back to where each element came from: summed over the copies `repeat`, `tile` and
`meshgrid` made, shifted back for `roll`, scattered back through the permutation `sort`
applied (its argsort), split among the arrays a stack joined. The longer ones are NumPy
helpers written into the generated module when used.
"""

from __future__ import annotations

from gradgen.ir.nodes import Const, Spelled
from gradgen.rules.linalg import component
from gradgen.rules.numpy import kept
from gradgen.rules.table import ARRAY_RULES, REQUIRED, F, helper, primitive


def _given(p, name):
    """A static parameter as a helper's last argument, when the call gave it (not None)."""
    return (Const(p[name]),) if p.get(name) is not None else ()


_reshaped = lambda g, out, x, *rest, **p: F.reshape(g, F.shape(x))  # noqa: E731 - the shape x had

# --- copy: `x.copy()`, `np.copy(x)`: a new array with x's values (the identity on the gradient)
primitive("copy", spellings=["numpy.copy"], method=True, elementwise=False, sympy=lambda x: x,
          vjp=lambda g, out, x: g, tangent="linear")

# --- atleast_1d/2d/3d: reshapes -----------------------------------------------------------------
for _n in (1, 2, 3):
    primitive(f"atleast_{_n}d", spellings=[f"numpy.atleast_{_n}d"], elementwise=False, vjp=_reshaped, tangent="linear")

# --- copies: repeat, tile, roll --------------------------------------------------------------------
helper("repeat_grad", '''def repeat_grad(g, x, repeats, axis=None):
    """Gradient of np.repeat(x, repeats, axis): each element gets the sum of its copies."""
    shape = np.shape(x)
    if axis is None:
        shape, axis = (np.size(x),), 0
    axis = axis % len(shape)
    owner = np.repeat(np.arange(shape[axis]), repeats)  # which element each copy came from
    out = np.zeros(shape[:axis] + (shape[axis],) + shape[axis + 1:])
    moved = np.moveaxis(out, axis, 0)
    np.add.at(moved, owner, np.moveaxis(g, axis, 0))
    return np.reshape(out, np.shape(x))
''', tangent="linear_in_first")
# repeats is a value (`np.repeat(h0, inputs.shape[1], axis=0)`, known when the code runs), never differentiated
primitive("repeat", 2, spellings=["numpy.repeat"], keywords=("axis",), method=True, elementwise=False, tangent="linear",
          positional=(("a", REQUIRED), ("repeats", REQUIRED)),
          vjp=(lambda g, out, x, repeats, **p: F.repeat_grad(g, x, repeats, *_given(p, "axis")), None))

helper("tile_grad", '''def tile_grad(g, x, reps):
    """Gradient of np.tile(x, reps): the sum of the tiles."""
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    d = max(len(reps), np.ndim(x))
    reps = (1,) * (d - len(reps)) + reps
    shape = (1,) * (d - np.ndim(x)) + np.shape(x)
    split = [n for pair in zip(reps, shape) for n in pair]  # (tile, element) along each axis
    return np.reshape(np.sum(np.reshape(g, split), axis=tuple(range(0, 2 * d, 2))), np.shape(x))
''', tangent="linear_in_first")
primitive("tile", spellings=["numpy.tile"], keywords=("reps",), elementwise=False, tangent="linear",
          vjp=lambda g, out, x, **p: F.tile_grad(g, x, Const(p["reps"])))


def _negated(shift):
    return tuple(-s for s in shift) if isinstance(shift, tuple) else -shift


primitive("roll", spellings=["numpy.roll"], keywords=("shift", "axis"), elementwise=False, tangent="linear",
          vjp=lambda g, out, x, **p: F.roll(g, **{**p, "shift": _negated(p["shift"])}))

# --- meshgrid: a tuple of grids; input i varies along one axis of grid i ------------------------------
helper("meshgrid_grad", '''def meshgrid_grad(g, x, i, indexing="xy"):
    """Gradient of input i of np.meshgrid(..., indexing), given g, the gradient of grid i:
    summed over every axis but the one input i varies along (axes 0 and 1 swap for "xy")."""
    axis = 1 - i if indexing == "xy" and np.ndim(g) >= 2 and i < 2 else i
    others = tuple(a for a in range(np.ndim(g)) if a != axis)
    return np.reshape(np.sum(g, axis=others), np.shape(x))
''', tangent="linear_in_first")


def _meshgrid(i):
    def rule(g, out, *xs, **p):
        gi = component(g, i)
        if gi == Const(0):
            return Const(0)
        return F.meshgrid_grad(gi, xs[i], Const(i), *_given(p, "indexing"))

    return rule


primitive("meshgrid", None, spellings=["numpy.meshgrid"], keywords=("indexing",), min_args=1, elementwise=False,
          result="tuple", vjp=_meshgrid, tangent="linear")

# --- stacking a list: np.hstack([a, b]), vstack, column_stack ----------------------------------------
helper("stack_part_grad", '''def stack_part_grad(g, parts, i, how):
    """The piece of g that part i became in np.hstack / vstack / column_stack (how) of parts."""
    if how == "vstack":
        shapes = [np.shape(np.atleast_2d(p)) for p in parts]
        axis = 0
    elif how == "column_stack":
        shapes = [np.shape(p) + (1,) if np.ndim(p) < 2 else np.shape(p) for p in parts]
        axis = 1
    else:
        shapes = [np.shape(np.atleast_1d(p)) for p in parts]
        axis = 0 if len(shapes[0]) == 1 else 1
    start = sum(s[axis] for s in shapes[:i])
    piece = np.take(g, range(start, start + shapes[i][axis]), axis=axis)
    return np.reshape(piece, np.shape(parts[i]))
''', tangent="linear_in_first")
for _how in ("hstack", "vstack", "column_stack"):
    primitive(_how, None, spellings=[f"numpy.{_how}"], min_args=1, elementwise=False, sequence=True, tangent="linear",
              vjp=(lambda how: lambda i: lambda g, out, *xs: F.stack_part_grad(g, F.tuple(*xs), Const(i),
                                                                                Const(how)))(_how))

# --- np.convolve(a, v, mode): bilinear, each input's gradient g correlated with the other ----------
helper("convolve_grad", '''def convolve_grad(g, v, a, mode="full"):
    """Gradient of np.convolve(a, v, mode) with respect to a, given g: g put back where its
    entries sit in the full convolution, correlated with v."""
    n, m = len(a), len(v)
    full = np.zeros(n + m - 1)
    start = {"full": 0, "same": (min(n, m) - 1) // 2, "valid": min(n, m) - 1}[mode]
    full[start:start + len(g)] = g
    return np.correlate(full, v, "valid")
''', tangent="bilinear", value_slots=(0, 1))
# (mode= "full", "same" or "valid": a string the lowering reads as a static parameter)
primitive("convolve", 2, spellings=["numpy.convolve"], keywords=("mode",), elementwise=False, tangent="multilinear",
          vjp=(lambda g, out, a, v, **p: F.convolve_grad(g, v, a, *_given(p, "mode")),
               lambda g, out, a, v, **p: F.convolve_grad(g, a, v, *_given(p, "mode"))))

# --- statistics: var, std (axis=, ddof=, keepdims=) --------------------------------------------------
_STATS = ("axis", "dtype", "out", "ddof", "keepdims")  # NumPy's positional order


def _centred(x, p):
    """x - mean(x) along the reduced axes, kept, and the count each mean divides by, less ddof."""
    mean = F.mean(x, **({"axis": p["axis"]} if p.get("axis") is not None else {}), keepdims=True)
    count = F.size(x) / F.size(mean) - (p.get("ddof") or 0)
    return x - mean, count


def _var(g, out, x, **p):
    centred, count = _centred(x, p)
    return kept(g, p) * 2 * centred / count


def _std(g, out, x, **p):
    centred, count = _centred(x, p)
    return kept(g, p) * centred / (count * kept(out, p))


primitive("var", spellings=["numpy.var"], keywords=_STATS, method=True, elementwise=False, result="reduction",
          vjp=_var, tangent="reduction")
primitive("std", spellings=["numpy.std"], keywords=_STATS, method=True, elementwise=False, result="reduction",
          vjp=_std, tangent="reduction")

# --- x.astype(float): a float dtype changes nothing to a derivative -----------------------------------
# to a float: the same numbers; to an int (indices computed from data): piecewise constant, as floor is
primitive("astype", 1, keywords=("dtype",), method=True, elementwise=False, tangent="linear",
          vjp=lambda g, out, x, **p: Const(0.0) if p.get("dtype") == Spelled("int") else g)

# --- sorting and gathering along an axis --------------------------------------------------------------
helper("take_along_axis_grad", '''def take_along_axis_grad(g, x, indices, axis=None):
    """Gradient of np.take_along_axis(x, indices, axis): g added back where each element was
    taken from (an index taken twice gets both)."""
    out = np.zeros(np.shape(x))
    if axis is None:
        np.add.at(out.reshape(-1), indices, g)
        return out
    index = list(np.indices(np.shape(indices), sparse=True))
    index[axis] = indices
    np.add.at(out, tuple(index), g)
    return out
''', tangent="linear_in_first")
primitive("take_along_axis", 2, spellings=["numpy.take_along_axis"], keywords=("axis",), elementwise=False,
          tangent="linear",
          vjp=(lambda g, out, x, idx, **p: F.take_along_axis_grad(g, x, idx, *_given(p, "axis")), None))
# np.sort(x, axis) is x taken along the permutation argsort gives: the gradient goes back through it
primitive("sort", spellings=["numpy.sort"], keywords=("axis",), elementwise=False, tangent="explicit",
          vjp=lambda g, out, x, **p: F.take_along_axis_grad(
              g, x, F.argsort(x, **({"axis": p["axis"]} if "axis" in p else {})), *_given({"axis": -1, **p}, "axis")))
for _name in ("argsort", "argmax", "argmin"):
    primitive(_name, spellings=[f"numpy.{_name}"], keywords=("axis",), method=True, sympy=lambda x, **p: 0,
              kind="piecewise", tangent="none")


ARRAY_RULES.update({"atleast_1d", "atleast_2d", "atleast_3d", "repeat", "tile", "roll", "meshgrid", "hstack",
                    "vstack", "column_stack", "var", "std", "astype", "take_along_axis", "sort", "copy", "convolve"})

