"""Reads and writes at an index of integer arrays under `--jit numba` (issue 23, item 3).

numba indexes by one integer array at most (`A[rows, permutations]`, det by permutations'
gather, fails at numba's first call), has no `np.add.at` (the gradient of a read through
repeated indices) and checks no bounds: an index out of range would read or write elsewhere
in memory, silently. So the module defines, where its functions need them:

* `gather_at(a, index)`: `a[index]` (its plain body), which numba_arrays.Respell writes for
  a subscript of two index arrays or more; its overload picks element by element over the
  broadcast index where the index is integers and integer arrays, one for each of the first
  axes, and leaves any other index to numba's own indexing;
* `add_at(a, index, v)`: `np.add.at` (its plain body), each v added at its index, a repeated
  index adding up: a loop over one integer array, or over integers and integer arrays one an
  axis (broadcast against each other, as NumPy does), else `a[index] += v` (an index with no
  array in it picks each element once);
* `index_within(i, n)`: every index those loops read checked against its axis, a negative
  one counted from the end, IndexError outside (as NumPy raises).

The loops over two or three index parts are written from one template (`_parts`): numba
compiles one function per count of parts.
"""

from __future__ import annotations

import ast

NAMES = ("gather_at", "add_at", "index_within")
PARTS = (2, 3)  # the counts of index parts written out (a fourth is left to numba's own indexing)


def gathers_by_arrays(node, arrays):
    """Whether `node` reads a subscript `a[i, j]` (or of three parts) where two parts or more
    may hold arrays (a name in `arrays`, or an expression of one) and none is a slice, None
    or `...`: numba takes one index array, gather_at takes these."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Tuple)):
        return False
    parts = node.slice.elts
    if len(parts) not in PARTS or any(isinstance(p, (ast.Slice, ast.Starred)) or (
            isinstance(p, ast.Constant) and (p.value is None or p.value is Ellipsis)) for p in parts):
        return False
    return sum(any(isinstance(n, ast.Name) and n.id in arrays for n in ast.walk(p)) for p in parts) >= 2


def gathered(node):
    """`a[i, j]` as `gather_at(a, (i, j))`."""
    return ast.Call(ast.Name("gather_at"), [node.value, ast.Tuple(node.slice.elts, ast.Load())], [])


def helpers(used):
    """The text of the helpers named in `used`, in a fixed order (index_within with either)."""
    if not {"gather_at", "add_at"} & set(used):
        return []
    texts = [_WITHIN]
    texts += [_GATHER + "".join(_parts(k, "gathered") for k in PARTS)] if "gather_at" in used else []
    texts += [_ADD_AT + "".join(_parts(k, "added") for k in PARTS)] if "add_at" in used else []
    return texts


def _parts(k, kind):
    """The loop of `kind` ("gathered" or "added") over an index of k parts, broadcast."""
    names = [f"i{j}" for j in range(k)]
    at = ", ".join(f"index_within({n}[k], a.shape[{j}])" for j, n in enumerate(names))
    lines = [f"\n\ndef {kind}_{k}(a, index{', v' if kind == 'added' else ''}):",
             f"    {', '.join(names)} = {', '.join(f'np.asarray(index[{j}])' for j in range(k))}",
             f"    shape = np.broadcast_shapes({', '.join(f'{n}.shape' for n in names)})",
             f"    {', '.join(names)} = {', '.join(f'np.broadcast_to({n}, shape)' for n in names)}"]
    if kind == "gathered":
        lines += [f"    out = np.empty(shape + a.shape[{k}:], a.dtype)",
                  "    for k in np.ndindex(shape):",
                  f"        out[k] = a[{at}]",
                  "    return out"]
    else:
        lines += [f"    values = np.broadcast_to(np.asarray(v), shape + a.shape[{k}:])",
                  "    for k in np.ndindex(shape):",
                  f"        a[{at}] += values[k]"]
    return "\n".join(lines) + "\n"


_WITHIN = '''@numba.njit(cache=False)
def index_within(i, n):
    """The index i of an axis of length n, a negative one counted from the end; IndexError
    outside the axis (numba checks no bounds: it would read or write elsewhere)."""
    if i < -n or i >= n:
        raise IndexError("index out of bounds")
    return i + n if i < 0 else i
'''

_GATHER = '''def gather_at(a, index):
    """a[index], which numba compiles through the overload below."""
    return a[index]


@numba.extending.overload(gather_at)
def gather_at_typed(a, index):
    """gather_at under numba: where the index is integers and integer arrays, one for each of
    the first axes, two of them arrays or more, element by element over the broadcast index;
    numba's own indexing elsewhere."""
    if isinstance(index, numba.types.BaseTuple) and len(index) in (2, 3) and len(index) <= a.ndim and all(
            isinstance(t, numba.types.Integer) or (isinstance(t, numba.types.Array) and isinstance(
                t.dtype, numba.types.Integer)) for t in index) and sum(
            isinstance(t, numba.types.Array) for t in index) >= 2:
        return gathered_2 if len(index) == 2 else gathered_3
    return lambda a, index: a[index]
'''

_ADD_AT = '''def add_at(a, index, v):
    """np.add.at(a, index, v), which numba compiles through the overload below."""
    np.add.at(a, index, v)


@numba.extending.overload(add_at)
def add_at_typed(a, index, v):
    """add_at under numba: each v added at its index, a repeated index adding up."""
    value = numba.njit(lambda v, k: v[k]) if isinstance(v, numba.types.Array) else numba.njit(lambda v, k: v)
    if isinstance(index, numba.types.Array) and index.ndim == 1 and isinstance(index.dtype, numba.types.Integer):
        def along_rows(a, index, v):
            for k in range(index.shape[0]):
                a[index_within(index[k], a.shape[0])] += value(v, k)
        return along_rows
    if isinstance(index, numba.types.BaseTuple) and len(index) in (2, 3) and len(index) <= a.ndim and all(
            isinstance(t, numba.types.Integer) or (isinstance(t, numba.types.Array) and isinstance(
                t.dtype, numba.types.Integer)) for t in index) and any(
            isinstance(t, numba.types.Array) for t in index):
        return added_2 if len(index) == 2 else added_3
    if isinstance(index, numba.types.Array) or (isinstance(index, numba.types.BaseTuple) and any(
            isinstance(t, numba.types.Array) for t in index)):
        return None  # (an index of another form: numba says so at the call)

    def in_place(a, index, v):
        a[index] += v
    return in_place
'''
