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
from gradgen.rules.table import ARRAY_RULES, HELPER_NAMES, SMOOTH_HELPER_SOURCES, helper, primitive


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


# `flatten(params)[0]` (gradgen.flatten, autograd.misc.flatten) of a structured parameter or a
# part: its leaves raveled and joined, a dict's by its sorted keys (gradgen/frontend/flattening.py).
# Written as a call of the helper flatten_tree(params, *path); the vector's gradient is cut back
# into the leaves' shapes and added at the same path of the parameter's gradient (add_flat_at).
def _add_flat(i):
    if i != 0:
        return None
    return lambda g, out, root, *path: Call("tree_add_flat", (g, root, *path), None)


SMOOTH_HELPER_SOURCES["flatten_tree"] = ((), '''def flatten_tree(x, *path):
    """The leaves of x[k1][k2]... (nested lists, tuples and dicts of arrays and numbers)
    raveled into one vector, a dict's values by its sorted keys: gradgen.flatten(...)[0]."""
    for step in path:
        x = x[step]
    if isinstance(x, dict):
        parts = [flatten_tree(x[key]) for key in sorted(x)]
    elif isinstance(x, (list, tuple)):
        parts = [flatten_tree(part) for part in x]
    else:
        flat = np.ravel(x)
        if flat.dtype == object:
            raise TypeError(f"flatten takes lists, tuples and dicts of arrays and numbers, not {type(x).__name__}")
        return flat
    return np.concatenate(parts) if parts else np.zeros(0)
''')
primitive("tree_flatten", None, min_args=1, elementwise=False, vjp=(_add_flat,), tangent="linear", value_slots=(0,))
# a structured parameter or a part of it passed whole to a call that takes it whole, as
# odeint's args (gradgen.rules.integrate): its gradient comes back as flatten_tree's vector
# (linear: forward mode passes it by, to refuse odeint itself by name)
primitive("tree_whole", None, min_args=1, elementwise=False, vjp=(_add_flat,), tangent="linear")
HELPER_NAMES["tree_flatten"] = "flatten_tree"
# backward only: a flattened gradient added, leaf by leaf, at a path of the parameter's gradient
primitive("tree_add_flat", None, kind="piecewise", min_args=2)
helper("add_flat_at", '''def add_flat_at(tree, g, *path):
    """tree (a structured gradient) with g, the gradient of flatten_tree(x, *path), added
    into tree[k1][k2]... piece by piece, each piece shaped as its leaf; in place where the
    path reaches a container (then tree itself is returned), else the sum returned."""
    def leaf(value):
        return isinstance(value, (np.ndarray, int, float, complex, np.number))

    def add(part, at):  # the gradient's container, and where in g its leaves start
        for key in sorted(part) if isinstance(part, dict) else range(len(part)):
            if leaf(part[key]):
                size = np.size(part[key])
                part[key] = part[key] + np.reshape(g[at:at + size], np.shape(part[key]))
                at += size
            else:
                at = add(part[key], at)
        return at

    root, parent, key = tree, None, None
    for step in path:
        parent, key, tree = tree, step, tree[step]
    if not leaf(tree):
        add(tree, 0)
        return root
    added = tree + np.reshape(g, np.shape(tree))
    if parent is None:
        return added
    parent[key] = added
    return root
''', tangent="linear", value_slots=(0, 1))


ARRAY_RULES.update({"tree_get", "tree_flatten"})
