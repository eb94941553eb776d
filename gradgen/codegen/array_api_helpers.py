"""The Array API versions of the helpers gradgen writes into a generated module.

The NumPy helpers (gradgen/codegen/emit.py HELPERS) ask NumPy for shapes (`np.shape(x)` works on
a number too), build arrays with `np.zeros(shape)` and call `np.multiply.outer`; none of
that is in the Array API standard. These take the namespace `xp` as their first argument
(the generated function's own, from `array_namespace`), read shapes from `.shape` (a
Python number has none: it is a 0-d value), and never look at an array's values, so a
Dask array stays lazy: `if` tests shapes, never data.

Each entry: name -> (the helpers it calls, its source). A NumPy helper missing here has no
Array API version, and the backend refuses the line that needs it (gradgen/codegen/array_api.py).
"""

from __future__ import annotations

from gradgen.codegen import guards

HELPERS = {
    "real_dtype": ((), '''def real_dtype(xp, x):
    """x's dtype where it is a real floating one (float32 stays float32), else float64: the
    gradient of an integer array, or of a Python number, is real."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None and xp.isdtype(dtype, "real floating"):
        return dtype
    return xp.float64
'''),
    "real_ones_like": (("real_dtype",), '''def real_ones_like(xp, x):
    """Ones shaped like x, in its real dtype (np.ones_like(x, dtype=float) of the NumPy backend)."""
    return xp.ones_like(x, dtype=real_dtype(xp, x))
'''),
    "real_zeros_like": (("real_dtype",), '''def real_zeros_like(xp, x):
    """Zeros shaped like x, in its real dtype (np.zeros_like(x, dtype=float) of the NumPy backend)."""
    return xp.zeros_like(x, dtype=real_dtype(xp, x))
'''),
    "zero_gradient": (("real_zeros_like",), '''def zero_gradient(xp, x):
    """The gradient of a parameter nothing differentiable reads: an exact zero of its kind,
    0.0 for a number, zeros for an array, and the same lists, tuples and dicts of these."""
    if isinstance(x, dict):
        return {key: zero_gradient(xp, value) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        parts = [zero_gradient(xp, value) for value in x]
        return tuple(parts) if isinstance(x, tuple) else parts
    return real_zeros_like(xp, x) if getattr(x, "ndim", 0) else 0.0
'''),
    "unbroadcast_to": (("real_dtype",), '''def unbroadcast_to(xp, g, shape, like):
    """Sum g over the axes broadcasting stretched, back to `shape` (from shapes alone); g
    may be a Python number (the seed 1 of a result), made an array of like's dtype and device."""
    shape = tuple(shape)
    if not hasattr(g, "shape"):
        return xp.full(shape, g, dtype=real_dtype(xp, like), device=getattr(like, "device", None))
    if tuple(g.shape) == shape:
        return g
    if g.ndim < len(shape):  # stretched as a new array, then summed
        g = g + xp.zeros(shape, dtype=g.dtype, device=getattr(g, "device", None))
    if g.ndim > len(shape):
        g = xp.sum(g, axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return xp.sum(g, axis=axes, keepdims=True) if axes else g
'''),
    "unbroadcast": (("unbroadcast_to", "real_zeros_like"), '''def unbroadcast(xp, g, like):
    """Sum g over the axes broadcasting stretched, back to the shape of `like` (either may
    be a Python number)."""
    if not hasattr(g, "shape"):  # 0.0: no gradient has reached this value yet
        return g if not hasattr(like, "shape") else g + real_zeros_like(xp, like)
    if not hasattr(like, "shape"):  # a number: every axis was stretched
        return xp.sum(g)
    return unbroadcast_to(xp, g, like.shape, like)
'''),
    "matmul_shape": ((), '''def matmul_shape(a, b):
    """The shape of a @ b, from the shapes alone (vectors, matrices, stacks)."""
    sa, sb = tuple(a.shape), tuple(b.shape)
    a2 = sa if len(sa) > 1 else (1,) + sa
    b2 = sb if len(sb) > 1 else sb + (1,)
    pa, pb = a2[:-2], b2[:-2]
    n = max(len(pa), len(pb))
    pa, pb = (1,) * (n - len(pa)) + pa, (1,) * (n - len(pb)) + pb
    shape = tuple(y if x == 1 else x for x, y in zip(pa, pb)) + (a2[-2], b2[-1])
    if len(sb) == 1:
        shape = shape[:-1]
    if len(sa) == 1:
        shape = shape[:-2] + shape[-1:] if len(sb) > 1 else shape[:-1]
    return shape
'''),
    "matmul_grad_a": (("unbroadcast", "unbroadcast_to", "matmul_shape"), '''def matmul_grad_a(xp, g, a, b):
    """Gradient of a @ b with respect to a, given g, the gradient of the product."""
    g = unbroadcast_to(xp, g, matmul_shape(a, b), a)
    if b.ndim == 1:
        return unbroadcast(xp, xp.expand_dims(g, axis=-1) * b, a)
    if a.ndim == 1:
        return unbroadcast(xp, (b @ xp.expand_dims(g, axis=-1))[..., 0], a)
    return unbroadcast(xp, g @ xp.matrix_transpose(b), a)
'''),
    "matmul_grad_b": (("unbroadcast", "unbroadcast_to", "matmul_shape"), '''def matmul_grad_b(xp, g, a, b):
    """Gradient of a @ b with respect to b, given g, the gradient of the product."""
    g = unbroadcast_to(xp, g, matmul_shape(a, b), a)
    if a.ndim == 1 and b.ndim == 1:
        return g * a
    if a.ndim == 1:
        return unbroadcast(xp, xp.expand_dims(a, axis=-1) * xp.expand_dims(g, axis=-2), b)
    if b.ndim == 1:
        return unbroadcast(xp, (xp.matrix_transpose(a) @ xp.expand_dims(g, axis=-1))[..., 0], b)
    return unbroadcast(xp, xp.matrix_transpose(a) @ g, b)
'''),
    "concatenate_grad": ((), '''def concatenate_grad(xp, g, parts, i, axis):
    """The piece of g that part i of xp.concat(parts, axis=axis) became."""
    sizes = [part.shape[axis] for part in parts]
    start = sum(sizes[:i])
    before = (slice(None),) * (axis % g.ndim)
    return g[before + (slice(start, start + sizes[i]),)]
'''),
}

# the entry check (gradgen.codegen.guards) reads shapes only: `.shape`, and a number has none
HELPERS["check_shapes"] = ((), guards.HELPER.replace("shape = np.shape(value)",
                                                     'shape = tuple(getattr(value, "shape", ()))'))

# the helpers whose first parameter is the namespace (matmul_shape reads shapes only)
TAKE_XP = frozenset(name for name, (_, source) in HELPERS.items() if source.startswith(f"def {name}(xp,"))


def sources(used):
    """The definitions of the helpers in `used` and those they call, in a fixed order."""
    needed, todo = set(), list(used)
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(HELPERS[name][0])
    return [HELPERS[name][1] for name in HELPERS if name in needed]
