"""Reductions along one axis under `--jit numba` (issue 23, item 3): numba's np.min, np.max and
np.prod take a whole array only, and its np.cumsum and np.cumprod no axis, so
`np.min(distances, axis=0)` (and the gradient code that compares against it) is written
`min_along(distances, 0)`, a helper the module defines: its plain body is NumPy's own call
(for Python callers), and a `numba.extending.overload` gives numba the code for the rank of
each call, as a loop over the other axes of the array seen as (before, along, after).
`keepdims=True` becomes np.expand_dims of that, as numba_arrays.Respell writes np.sum's.
Ranks 1 to 3 are written; a higher one has no implementation (numba says so at the call).
np.stack and np.concatenate of a list (numba's take tuples) are `stack_rows` and
`concatenate_rows`; reads and
writes at an index of arrays (np.add.at among them) are gradgen/codegen/numba_index.py's.
"""

from __future__ import annotations

import ast

REDUCING = {"min": "np.min", "amin": "np.min", "max": "np.max", "amax": "np.max", "prod": "np.prod"}
CUMULATIVE = {"cumsum": "np.cumsum", "cumprod": "np.cumprod"}
ALONG = {**REDUCING, **CUMULATIVE}  # np.<name>(a, axis=k) -> the NumPy call the helper makes
# the names of the helpers written into a --jit numba module (each reserved: no generated name is one)
NAMES = ("stack_rows", "concatenate_rows", "matmul_stacked", "repeat_along",
         *sorted({f"{call[3:]}_along" for call in ALONG.values()}))


def helper_name(spelled):
    """`min_along` for np.min / np.amin (one helper a reduction), `repeat_along` for np.repeat,
    or None for another call."""
    name = spelled[3:] if spelled.startswith("np.") else None
    if name == "repeat":
        return "repeat_along"
    return f"{ALONG[name][3:]}_along" if name in ALONG else None


def one_axis(node, keywords):
    """np.min(a, axis=<an int>) (or np.min(a, <an int>)) with no other keyword but keepdims
    (a constant), for the reductions; np.cumsum(a, axis=<an int>) alone for the cumulative."""
    if ast.unparse(node.func) == "np.repeat":  # np.repeat(a, <a count>, axis=<an int>)
        axis = keywords.get("axis", node.args[2] if len(node.args) > 2 else None)
        return len(node.args) in (2, 3) and set(keywords) <= {"axis"} and isinstance(axis, ast.Constant) \
            and type(axis.value) is int and axis.value >= 0
    axis = keywords.get("axis", node.args[1] if len(node.args) > 1 else None)
    if axis is None or len(node.args) > 2 or set(keywords) - {"axis", "keepdims"}:
        return False
    keep = keywords.get("keepdims")
    if keep is not None and (ast.unparse(node.func)[3:] in CUMULATIVE or
                             not (isinstance(keep, ast.Constant) and isinstance(keep.value, bool))):
        return False
    if isinstance(axis, ast.UnaryOp) and isinstance(axis.op, ast.USub):
        axis = axis.operand
    return isinstance(axis, ast.Constant) and type(axis.value) is int


def respelled(node, keywords, attribute):
    """The call `node` (one of ALONG along one axis) as its helper's; `attribute(text)` parses
    a dotted name."""
    array = node.args[0]
    if ast.unparse(node.func) == "np.repeat":
        return ast.Call(ast.Name("repeat_along"), [array, node.args[1], keywords.get("axis", node.args[-1])], [])
    axis = keywords.get("axis", node.args[1] if len(node.args) > 1 else None)
    call = ast.Call(ast.Name(helper_name(ast.unparse(node.func))), [array, axis], [])
    keep = keywords.get("keepdims")
    if keep is not None and keep.value:
        return ast.Call(attribute("np.expand_dims"), [ast.Call(attribute("np.asarray"), [call], []), axis], [])
    return call


def helpers(used):
    """The text of the helpers named in `used` (a set of names), in a fixed order."""
    texts = []
    if any(name.endswith("_along") for name in used):  # (each helper along an axis, and lines_along asked for by
        # name, see the array as lines along it)
        texts.append(_LINES)
    texts += [_REPEAT] if "repeat_along" in used else []
    texts += [_STACK_ROWS] if "stack_rows" in used else []
    texts += [_CONCATENATE_ROWS] if "concatenate_rows" in used else []
    texts += [_MATMUL_STACKED] if "matmul_stacked" in used else []
    for numpy_call in dict.fromkeys(ALONG.values()):
        name = f"{numpy_call[3:]}_along"
        if name in used:
            template = _CUMULATIVE if numpy_call[3:] in CUMULATIVE else _REDUCING
            texts.append(template.replace("NAME", name).replace("CALL", numpy_call))
    return texts


_REDUCING = '''def NAME(a, axis):
    """CALL(a, axis=axis), which numba compiles through the overload below."""
    return CALL(a, axis=axis)


@numba.extending.overload(NAME)
def NAME_typed(a, axis):
    """NAME under numba for the rank of a: CALL of each line along the axis."""
    if not isinstance(a, numba.types.Array) or a.ndim > 3:
        return None
    if a.ndim == 1:
        return lambda a, axis: CALL(a)

    @numba.njit(cache=False)
    def reduced(a, axis):
        lines = lines_along(a, axis)
        out = np.empty((lines.shape[0], lines.shape[2]), a.dtype)
        for i in range(lines.shape[0]):
            for j in range(lines.shape[2]):
                out[i, j] = CALL(lines[i, :, j])
        return out

    if a.ndim == 2:
        return lambda a, axis: reduced(a, axis).reshape(a.size // a.shape[axis % 2])

    def reduced_3(a, axis):
        k = axis % 3
        rest = (a.shape[1] if k == 0 else a.shape[0], a.shape[1] if k == 2 else a.shape[2])
        return reduced(a, axis).reshape(rest)

    return reduced_3
'''

_CUMULATIVE = '''def NAME(a, axis):
    """CALL(a, axis=axis), which numba compiles through the overload below."""
    return CALL(a, axis=axis)


@numba.extending.overload(NAME)
def NAME_typed(a, axis):
    """NAME under numba for the rank of a: CALL of each line along the axis."""
    if not isinstance(a, numba.types.Array) or a.ndim > 3:
        return None

    def along(a, axis):
        lines = lines_along(a, axis)
        out = np.empty_like(lines)
        for i in range(lines.shape[0]):
            for j in range(lines.shape[2]):
                out[i, :, j] = CALL(lines[i, :, j])
        return out.reshape(a.shape)

    return along
'''

_REPEAT = '''def repeat_along(a, count, axis):
    """np.repeat(a, count, axis=axis), which numba compiles through the overload below."""
    return np.repeat(a, count, axis=axis)


@numba.extending.overload(repeat_along)
def repeat_along_typed(a, count, axis):
    """repeat_along under numba for the rank of a (a count, not one a line)."""
    if not isinstance(a, numba.types.Array) or not isinstance(count, numba.types.Integer) or a.ndim > 3:
        return None

    @numba.njit(cache=False)
    def repeated(a, count, axis):
        lines = lines_along(a, axis)
        out = np.empty((lines.shape[0], lines.shape[1] * count, lines.shape[2]), a.dtype)
        for i in range(lines.shape[0]):
            for j in range(lines.shape[1]):
                for r in range(count):
                    out[i, j * count + r, :] = lines[i, j, :]
        return out

    if a.ndim == 1:
        return lambda a, count, axis: repeated(a, count, axis).reshape(a.shape[0] * count)
    if a.ndim == 2:
        return lambda a, count, axis: repeated(a, count, axis).reshape(
            (a.shape[0] * (count if axis == 0 else 1), a.shape[1] * (count if axis == 1 else 1)))
    return lambda a, count, axis: repeated(a, count, axis).reshape(
        (a.shape[0] * (count if axis == 0 else 1), a.shape[1] * (count if axis == 1 else 1),
         a.shape[2] * (count if axis == 2 else 1)))
'''

_LINES = '''@numba.njit(cache=False)
def lines_along(a, axis):
    """a as (before, along, after): the lines along `axis` are lines[i, :, j]."""
    k = axis % a.ndim
    before, after = 1, 1
    for j in range(k):
        before *= a.shape[j]
    for j in range(k + 1, a.ndim):
        after *= a.shape[j]
    return np.ascontiguousarray(a).reshape((before, a.shape[k], after))
'''


# np.stack of a list (the layers' states of lstm, ht's bones): numba's np.stack takes a tuple,
# and a list built by appends has a length known only when the code runs
_STACK_ROWS = '''@numba.njit(cache=False)
def stack_rows(parts):
    """np.stack(parts) of a list of arrays of one shape (numba's np.stack takes a tuple)."""
    out = np.empty((len(parts),) + np.shape(parts[0]))
    for k in range(len(parts)):
        out[k] = parts[k]
    return out
'''


_CONCATENATE_ROWS = '''@numba.njit(cache=False)
def concatenate_rows(parts):
    """np.concatenate(parts) of a list of arrays along axis 0 (numba's takes a tuple)."""
    total = 0
    for part in parts:
        total += part.shape[0]
    out = np.empty((total,) + parts[0].shape[1:])
    start = 0
    for part in parts:
        out[start:start + part.shape[0]] = part
        start += part.shape[0]
    return out
'''


# numba's `@` multiplies vectors and matrices; a stack of matrices (ht's np.stack(absolutes) @
# inverse_base_absolutes, 3-D by 3-D, and its gradients) is this overload of the operator
_MATMUL_STACKED = '''@numba.extending.overload(operator.matmul)
def matmul_stacked(a, b):
    """a @ b under numba where one of them is a stack of matrices (3-D; the other a stack or
    a matrix): one matrix product per item of the stack, a stack of length 1 repeated."""
    if not (isinstance(a, numba.types.Array) and isinstance(b, numba.types.Array)):
        return None
    return {(3, 3): matmul_stacks, (3, 2): matmul_stack_matrix, (2, 3): matmul_matrix_stack}.get((a.ndim, b.ndim))


def matmul_stacks(a, b):
    count = max(a.shape[0], b.shape[0])
    if a.shape[0] not in (1, count) or b.shape[0] not in (1, count):
        raise ValueError("matmul: stacks of different lengths")
    out = np.empty((count, a.shape[1], b.shape[2]))
    for k in range(count):
        left = np.ascontiguousarray(a[k if a.shape[0] > 1 else 0])
        out[k] = left @ np.ascontiguousarray(b[k if b.shape[0] > 1 else 0])
    return out


def matmul_stack_matrix(a, b):
    right = np.ascontiguousarray(b)
    out = np.empty((a.shape[0], a.shape[1], b.shape[1]))
    for k in range(a.shape[0]):
        out[k] = np.ascontiguousarray(a[k]) @ right
    return out


def matmul_matrix_stack(a, b):
    left = np.ascontiguousarray(a)
    out = np.empty((b.shape[0], a.shape[0], b.shape[2]))
    for k in range(b.shape[0]):
        out[k] = left @ np.ascontiguousarray(b[k])
    return out
'''
