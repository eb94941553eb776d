"""Structured parameters: their primitives, registered into the one rule table of
gradgen.rules.table.

A parameter that is a list, tuple or dict of arrays and numbers, nested as deep as the
author likes (`params = [(W1, b1), (W2, b2)]`, `params["layer1"]["W"]`), is never one value
to the compiler: each part is read by its path from the parameter (`params[i][0]`), and a
part's gradient is added into the same path of the parameter's gradient
(`dparams[i][0] = dparams[i][0] + dW`; `add_at_path` where a step may be an index array,
which picks from an array, not a part: `W[idx][0]`). The gradient is made at run time with the
parameter's own structure (`zeros_like_tree`), so the number of layers may be known only
when the code runs, and it is handed back with the parameter's kinds of containers
(`shaped_like`: a tuple stays a tuple), the convention of JAX and autograd.

The lowering of these reads (paths, loops, unpacking) is in gradgen.frontend.structured.
"""

from __future__ import annotations

from gradgen.ir.nodes import Call
from gradgen.rules.table import ARRAY_RULES, helper, primitive


def _add_at(i):
    """The gradient of `root[k1][k2]...` reaches the root, at the same path."""
    if i != 0:
        return None
    return lambda g, out, root, *path: Call("tree_add_at", (g, root, *path), None)


# `params[k1][k2]...`: one part of a structured parameter (or of a list of keys)
primitive("tree_get", None, min_args=1, elementwise=False, vjp=(_add_at,), tangent="linear")
# `p.n` of a NamedTuple or dataclass field annotated `n: int` (or bool, str): data, no derivative
primitive("tree_data", None, kind="piecewise", min_args=1, tangent="none", result="number")
# `len(params[k1]...)`, `list(params[k1]...)` (a dict's keys), `range(n)[lo:hi:step]`: no derivative
primitive("tree_len", None, kind="piecewise", min_args=1, tangent="none")
primitive("tree_keys", None, kind="piecewise", min_args=1, tangent="none")
primitive("range_slice", 4, kind="piecewise", tangent="none")
# backward only: a gradient added at a path of the parameter's gradient
primitive("tree_add_at", None, kind="piecewise", min_args=2)

helper("zeros_like_tree", '''def zeros_like_tree(x):
    """A gradient to add into, shaped as the structured parameter x: a list for each list
    or tuple, a dict for each dict, zeros for each array and 0.0 for each number."""
    if isinstance(x, dict):
        return {key: zeros_like_tree(value) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        return [zeros_like_tree(value) for value in x]
    return np.zeros_like(x, dtype=float) if np.ndim(x) else 0.0
''', tangent="zero")

helper("add_at_path", '''def add_at_path(tree, path, g):
    """Add g into tree[k1][k2]... in place, where a step may be an index array (W[idx][0]):
    through the lists and dicts of a structured gradient by their keys, then, once an array
    is reached, at every element the rest of the path picks (a repeated pick adds up)."""
    for k, step in enumerate(path):
        if isinstance(tree, np.ndarray):  # the rest of the path indexes this array
            picked = np.arange(tree.size).reshape(tree.shape)
            for index in path[k:]:
                picked = picked[index]
            np.add.at(tree, np.unravel_index(picked, tree.shape), g)
            return
        if k == len(path) - 1:
            tree[step] = tree[step] + g
            return
        tree = tree[step]
''')

helper("zero_gradient", '''def zero_gradient(x):
    """The gradient of a parameter nothing differentiable reads: an exact zero of its kind,
    0.0 for a number, zeros for an array, and the same lists, tuples and dicts of these."""
    if isinstance(x, dict):
        return {key: zero_gradient(value) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        parts = [zero_gradient(value) for value in x]
        return tuple(parts) if isinstance(x, tuple) else parts
    return np.zeros_like(x, dtype=float) if np.ndim(x) else 0.0
''', tangent="zero")

helper("shaped_like", '''def shaped_like(x, g):
    """Gradient g with the containers of the parameter x: a tuple where x has a tuple."""
    if isinstance(x, dict):
        return {key: shaped_like(value, g[key]) for key, value in x.items()}
    if isinstance(x, (list, tuple)):
        parts = [shaped_like(value, part) for value, part in zip(x, g)]
        return tuple(parts) if isinstance(x, tuple) else parts
    if np.ndim(x) == 0 and np.ndim(g) and np.size(g) == 1:  # NumPy reduces a number along axis 0 or -1:
        return np.reshape(g, ())  # its gradient came back with that axis (np.sum(b, axis=-1), b a number)
    return g
''', tangent="linear", value_slots=(1,))  # the gradient carries the tangent; x gives the containers


ARRAY_RULES.update({"tree_get"})
