"""Array code under `--jit numba`: what numba compiles of NumPy, what gradgen respells for it, and
the typed versions of gradgen's array helpers.

* `CALLS`: the NumPy functions numba compiles on arrays, each with the keywords it takes
  there (numba's `np.sum` takes `axis`, its `np.max` none); a call outside it is refused,
  located at the user's call (gradgen/codegen/numba_check.py).
* `Respell`: the forms numba lacks, written as ones it has: `np.take(g, k, axis=1)` as
  `g[:, k]`, `np.flip(g, axis=1)` as `g[:, ::-1]`, `np.sum(a, axis=k, keepdims=True)`
  as `np.expand_dims(np.sum(a, axis=k), k)`, `np.mean(a, axis=k)` as the sum over the
  length, `np.zeros_like(a, dtype=float)` with `dtype=np.float64`, a list of arrays given to
  `np.concatenate`/`np.stack` as a tuple (each part of a stack through `np.asarray`: numba
  stacks arrays only, and a number is a 0-d one), a list variable stacked as `stack_rows(l)`
  or concatenated as `concatenate_rows(l)` (numba_along), and what `np.expand_dims` is given too.
* `OVERLOADS`: gradgen's helpers that undo broadcasting (`unbroadcast`, `matmul_grad_a`,
  `matmul_grad_b`) and those of reads and writes at an index (`zero_at`, `scatter`, which
  adds through numba_along's add_at) ask NumPy for shapes and ranks while they run; numba types a function once
  per argument types, so each gets a `numba.extending.overload` that picks, from the types
  of a call, the code for those ranks (a number's gradient is the number, a vector's sum of
  a stretched matrix a loop). The plain helper stays beside it for Python callers.
"""

from __future__ import annotations

import ast

from gradgen.codegen import numba_along, numba_einsum, numba_index

# numba's NumPy (0.59+), on arrays and numbers: function -> the keywords numba takes for it (not np.squeeze
# nor np.diagonal: numba 0.68 has neither, and a module calling them failed at its first call: fuzz 63001 #291)
_NONE = frozenset()
_AXIS = frozenset({"axis"})
CALLS = {
    **{name: _NONE for name in """zeros ones empty zeros_like ones_like empty_like full full_like arange linspace
        eye identity array asarray ascontiguousarray copy shape size prod cumsum cumprod mean var std max min amax amin
        median dot vdot outer kron transpose ravel reshape expand_dims atleast_1d atleast_2d atleast_3d
        broadcast_to swapaxes flip fliplr flipud diag trace tril triu cross sort argsort delete repeat
        nonzero count_nonzero all any isclose allclose sign interp diff ediff1d hstack vstack dstack column_stack
        convolve searchsorted unique broadcast""".split()},  # (np.broadcast: respelled, Respell)
    "sum": _AXIS, "expand_dims": _AXIS, "argmax": _AXIS, "argmin": _AXIS, "cumsum": _NONE, "concatenate": _AXIS, "stack": _AXIS,
    "zeros_like": frozenset({"dtype"}), "ones_like": frozenset({"dtype"}), "full_like": frozenset({"dtype"}),
    "zeros": frozenset({"dtype"}), "ones": frozenset({"dtype"}), "empty": frozenset({"dtype"}),
    "linalg.norm": _NONE, "linalg.det": _NONE, "linalg.inv": _NONE, "linalg.solve": _NONE,
    "linalg.cholesky": _NONE, "linalg.slogdet": _NONE, "linalg.eigh": _NONE, "linalg.lstsq": _NONE,
    "take": _NONE, "where": _NONE, "clip": _NONE,
}
ATTRIBUTES = frozenset({"T", "shape", "ndim", "size", "dtype"})
METHODS = frozenset({"copy", "reshape", "ravel", "flatten", "transpose", "sum", "astype", "dot"})
DTYPES = {"float": "np.float64", "int": "np.int64", "bool": "np.bool_"}


class Respell(ast.NodeTransformer):
    """The array calls numba lacks, each written as calls it has (see the module docstring).
    `lists`: the names the function binds to lists (`items = []`)."""

    changed = False

    def __init__(self, lists=frozenset(), arrays=frozenset()):
        self.lists, self.arrays = lists, arrays

    def visit_Subscript(self, node):
        """`A[rows, permutations]`, two index arrays (numba takes one): gather_at (numba_index)."""
        self.generic_visit(node)
        if numba_index.gathers_by_arrays(node, self.arrays):
            self.changed = True
            return numba_index.gathered(node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        spelled = ast.unparse(node.func)
        keywords = {k.arg: k.value for k in node.keywords}
        new = None
        if spelled in ("np.sum", "np.mean") and _one_axis(node, keywords):
            new = self._reduced(node, spelled, keywords)
        elif numba_along.helper_name(spelled) and numba_along.one_axis(node, keywords):
            new = numba_along.respelled(node, keywords, _attribute)  # np.min(a, axis=0): min_along(a, 0)
        elif "dtype" in keywords and isinstance(keywords["dtype"], ast.Name) and keywords["dtype"].id in DTYPES:
            node.keywords = [k if k.arg != "dtype" else ast.keyword("dtype", _attribute(DTYPES[k.value.id]))
                             for k in node.keywords]
            self.changed = True
            if spelled in ("np.zeros_like", "np.ones_like", "np.full_like"):  # (of a number: a number, not 0-d)
                return ast.Subscript(node, ast.Tuple([], ast.Load()), ast.Load())
        elif spelled == "np.take" and len(node.args) == 2 and set(keywords) == {"axis"} \
                and isinstance(keywords["axis"], ast.Constant) and type(keywords["axis"].value) is int \
                and keywords["axis"].value >= 0:  # np.take(g, k, axis=1): g[:, k]
            full = [ast.Slice()] * keywords["axis"].value
            new = ast.Subscript(node.args[0], ast.Tuple([*full, node.args[1]], ast.Load()) if full else node.args[1],
                                ast.Load())
        elif spelled == "np.flip" and len(node.args) == 1 and set(keywords) == {"axis"} \
                and isinstance(keywords["axis"], ast.Constant) and type(keywords["axis"].value) is int \
                and keywords["axis"].value >= 0:  # np.flip(g, axis=1): g[:, ::-1]
            turned = [ast.Slice()] * keywords["axis"].value + [ast.Slice(None, None, ast.Constant(-1))]
            new = ast.Subscript(node.args[0], ast.Tuple(turned, ast.Load()) if len(turned) > 1 else turned[0],
                                ast.Load())
        elif numba_einsum.subscripts(node) is not None:  # einsum_matmul("kij,nkj->nki", a, b): a loop nest
            new = numba_einsum.respelled(node)
        elif spelled == "np.broadcast" and node.args and not node.keywords:
            # (a value measured for its shape: `np.size(np.broadcast(z, y))`; numba has no np.broadcast,
            # an empty array of the broadcast shape measures the same, the logistic regression's mean)
            shapes = [ast.Call(_attribute("np.shape"), [a], []) for a in node.args]
            new = ast.Call(_attribute("np.empty"), [ast.Call(_attribute("np.broadcast_shapes"), shapes, [])], [])
        elif spelled == "np.add.at" and len(node.args) == 3 and not node.keywords:  # (numba has no ufunc.at)
            new = ast.Call(ast.Name("add_at"), node.args, [])
        elif spelled == "np.reshape" and node.args and isinstance(node.args[0], ast.Subscript):
            # (numba reshapes contiguous arrays only; a slice, `g[::-1]` say, may be none)
            node.args[0] = ast.Call(_attribute("np.ascontiguousarray"), [node.args[0]], [])
            self.changed = True
        elif spelled in ("np.expand_dims", "np.ravel") and node.args and not _asarray(node.args[0]):
            node.args[0] = ast.Call(_attribute("np.asarray"), [node.args[0]], [])  # (numba's take arrays only:
            # np.ravel(3) of a number, fuzz --jit numba 63003 #202)
            self.changed = True
        elif list_helper(node, self.lists):  # (numba's np.stack takes tuples, its np.array no list of arrays)
            new = ast.Call(ast.Name(list_helper(node, self.lists)), node.args, [])
        elif spelled in ("np.concatenate", "np.stack") and node.args and isinstance(node.args[0], ast.List):
            parts = node.args[0].elts
            if spelled == "np.stack":  # (numba stacks arrays only: a number as a 0-d array, an array as it is)
                parts = [ast.Call(_attribute("np.asarray"), [p], []) for p in parts]
            node.args[0] = ast.Tuple(parts, ast.Load())
            self.changed = True
        if new is not None:
            self.changed = True
            return new
        return node

    def visit_BinOp(self, node):
        """`d * (x == a) / np.sum(x == a, axis=None, keepdims=True)` (the gradient of np.max):
        the count as a number, which divides the mask it counts to the same numbers (numba
        has no keepdims)."""
        self.generic_visit(node)
        if counts_what_it_divides(node):
            node.right = ast.Call(node.right.func, node.right.args, [])
            self.changed = True
        return node

    def _reduced(self, node, spelled, keywords):
        """np.sum / np.mean of one axis (keepdims or not) as numba's np.sum(a, axis=k)."""
        array, axis = node.args[0], keywords.get("axis", node.args[1] if len(node.args) > 1 else None)
        keep = keywords.get("keepdims")
        if keep is not None and not (isinstance(keep, ast.Constant) and isinstance(keep.value, bool)):
            return None
        summed = ast.Call(_attribute("np.sum"), [array], [ast.keyword("axis", axis)])
        if spelled == "np.mean":
            length = ast.Subscript(ast.Call(_attribute("np.shape"), [array], []), axis, ast.Load())
            summed = ast.BinOp(summed, ast.Div(), length)
        if keep is not None and keep.value:
            summed = ast.Call(_attribute("np.expand_dims"), [ast.Call(_attribute("np.asarray"), [summed], []), axis], [])
        elif spelled == "np.sum" and len(node.args) == 2 and not node.keywords:
            return None  # np.sum(a, k): numba's own spelling already
        return summed


NUMBERS = frozenset({"sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "median", "vdot", "trace",
                     "argmax", "argmin", "count_nonzero", "linalg.norm", "linalg.det"})


def counts_what_it_divides(node):
    """Whether `node` is `... e ... / np.sum(e, axis=None, keepdims=True)`."""
    right = node.right
    return isinstance(node.op, ast.Div) and isinstance(right, ast.Call) and ast.unparse(right.func) == "np.sum" \
        and len(right.args) == 1 and _whole_kept(right) and any(ast.dump(n) == ast.dump(right.args[0])
                                                                 for n in ast.walk(node.left))


def _whole_kept(call):
    """np.sum(e, axis=None, keepdims=True): a (1, ..., 1) array of e's rank."""
    keywords = {k.arg: k.value for k in call.keywords}
    return set(keywords) == {"axis", "keepdims"} and isinstance(keywords["axis"], ast.Constant) and \
        keywords["axis"].value is None and isinstance(keywords["keepdims"], ast.Constant) and \
        keywords["keepdims"].value is True


def _asarray(node):
    return isinstance(node, ast.Call) and ast.unparse(node.func) == "np.asarray"


def kind_of_call(node, spelled):
    """"array" for a call of numba's NumPy that makes an array, "float" for a reduction to a
    number (no axis), None where the arguments decide (np.dot, np.where, np.zeros_like)."""
    name = spelled[3:]
    if name in NUMBERS:
        return "float" if len(node.args) == 1 and not node.keywords else "array"
    if name in ("dot", "where", "zeros_like", "ones_like", "full_like", "copy", "asarray", "sign", "clip"):
        return None
    return "array"


def list_helper(node, lists):
    """The helper numba_along writes for a list given whole to NumPy, which numba takes tuples
    for: "stack_rows" for `np.stack(rows)` of a name (axis 0), or `np.array(items)` /
    `np.asarray(items)` of a list the function builds (its items arrays or numbers: fuzz --jit
    numba 63002 #38); "concatenate_rows" for `np.concatenate(items)` of one (axis 0: the
    lowering of `np.concatenate([q for q in parts])`, fuzz --jit numba 63004 #131); else None."""
    spelled = ast.unparse(node.func)
    if len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
        return None
    axis_0 = not node.keywords or [k.arg for k in node.keywords] == ["axis"] and _is_zero(node.keywords[0].value)
    if spelled == "np.stack":
        return "stack_rows" if axis_0 else None
    if spelled == "np.concatenate":
        return "concatenate_rows" if axis_0 and node.args[0].id in lists else None
    return "stack_rows" if spelled in ("np.array", "np.asarray") and not node.keywords and node.args[0].id in lists \
        else None


def list_names(fdef):
    """The names a function binds to a new list (`items = []`)."""
    return frozenset(t.id for n in ast.walk(fdef) if isinstance(n, ast.Assign) and isinstance(n.value, ast.List)
                     and not n.value.elts for t in n.targets if isinstance(t, ast.Name))


def respelled_reduction(node):
    """Whether `node` is an np.sum / np.mean of one axis, np.take along one, or a reduction
    numba_along writes as its helper, that Respell writes as numba has it."""
    keywords = {k.arg: k.value for k in node.keywords}
    if numba_along.helper_name(ast.unparse(node.func)):
        return numba_along.one_axis(node, keywords)
    if ast.unparse(node.func) in ("np.take", "np.flip"):
        axis = keywords.get("axis")
        return len(node.args) == (2 if ast.unparse(node.func) == "np.take" else 1) and isinstance(axis, ast.Constant) \
            and type(axis.value) is int and axis.value >= 0
    return ast.unparse(node.func) in ("np.sum", "np.mean") and _one_axis(node, keywords)


def _one_axis(node, keywords):
    """np.sum(a, axis=<an int>) with no other keyword but keepdims."""
    axis = keywords.get("axis", node.args[1] if len(node.args) > 1 else None)
    if axis is None or len(node.args) > 2 or set(keywords) - {"axis", "keepdims"}:
        return False
    if isinstance(axis, ast.UnaryOp) and isinstance(axis.op, ast.USub):
        axis = axis.operand
    return isinstance(axis, ast.Constant) and type(axis.value) is int


def _is_zero(node):
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == 0


def _attribute(spelled):
    return ast.parse(spelled, mode="eval").body


# --- gradgen's helpers, typed for numba ---------------------------------------------------------

OVERLOADS = {
    "unbroadcast": '''@numba.extending.overload(unbroadcast)
def unbroadcast_typed(g, like):
    """unbroadcast under numba, chosen by the types of g and like: a number's gradient is g
    summed, an array's the sum over the axes broadcasting stretched. A `like` numba has typed
    only as None so far (a name bound `x = None` before the loop that binds it, as numba's
    inference first meets it) gives g back: typed as a number, the gradient met the array it
    is where x is typed in full (lstm's dobjective_dx); x is never None where this runs."""
    if isinstance(g, numba.types.Optional) or isinstance(like, numba.types.Optional):
        return lambda g, like: unbroadcast(optional_value(g), optional_value(like))
    if like is numba.types.none:
        return lambda g, like: g
    if not isinstance(like, numba.types.Array):
        if isinstance(g, numba.types.Array):
            return lambda g, like: np.sum(g)
        return lambda g, like: g
    if not isinstance(g, numba.types.Array):
        return lambda g, like: np.zeros(np.shape(like)) + g
    if g.ndim == like.ndim and g.layout == "C" and g.dtype == numba.types.float64:
        return unbroadcast_same  # (g itself where it has like's shape, as the plain helper returns it)
    return unbroadcast_arrays


def unbroadcast_same(g, like):
    """unbroadcast of a C float array g of like's rank: g itself where the shapes agree (no
    copy: most calls), else summed as unbroadcast_arrays sums it."""
    if np.shape(g) == np.shape(like):
        return g
    return unbroadcast_summed(g, like)


def unbroadcast_arrays(g, like):
    """g summed into an array shaped like `like`, element by element."""
    return unbroadcast_summed(g, like)


@numba.njit(cache=False)
def unbroadcast_summed(g, like):
    """unbroadcast_arrays' loop, compiled on its own (unbroadcast_same calls it too)."""
    shape = np.shape(like)
    out = np.zeros(shape)
    if g.ndim == like.ndim and np.shape(g) == shape:
        out[...] = g
        return out
    flat = out.reshape(-1)
    skip = g.ndim - like.ndim
    for index in np.ndindex(np.shape(g)):
        k = 0
        for j in range(like.ndim):
            k = k * shape[j] + (index[skip + j] if shape[j] != 1 else 0)
        flat[k] += g[index]
    return out
''',
    "matmul_grad_a": '''@numba.extending.overload(matmul_grad_a)
def matmul_grad_a_typed(g, a, b):
    """matmul_grad_a under numba, for vectors and matrices (chosen by the ranks of a and b);
    g in the product's shape first (a product broadcast further: matmul_fitted)."""
    if any(isinstance(t, numba.types.Optional) for t in (g, a, b)):
        return lambda g, a, b: matmul_grad_a(optional_value(g), optional_value(a), optional_value(b))
    if not isinstance(g, numba.types.Array):
        return matmul_grad_a_vectors if a.ndim == 1 and b.ndim == 1 else None
    if max(a.ndim, b.ndim) == 3 and min(a.ndim, b.ndim) >= 2:  # (a stack of matrices: matmul_stacked)
        return matmul_grad_a_stacked if g.ndim == 3 else None
    if g.ndim > a.ndim + b.ndim - 2:  # (a product broadcast further, `a * (a @ X)` of a vector: fuzz 63002 #192)
        return lambda g, a, b: matmul_grad_a(unbroadcast(g, np.zeros(np.shape(a)[:-1] + np.shape(b)[1:])), a, b)
    if g.ndim != a.ndim + b.ndim - 2:
        return None
    return {(2, 2): matmul_grad_a_matrices, (2, 1): matmul_grad_a_matrix_vector,
            (1, 2): matmul_grad_a_vector_matrix}.get((a.ndim, b.ndim))


def matmul_grad_a_vectors(g, a, b):
    return g * b


def matmul_grad_a_stacked(g, a, b):
    return unbroadcast(g @ np.swapaxes(b, -1, -2), a)


def matmul_grad_a_matrices(g, a, b):
    g = matmul_fitted(g, a, b)
    return g @ np.ascontiguousarray(b.T)


def matmul_grad_a_matrix_vector(g, a, b):
    g = matmul_fitted(g, a, b)
    return np.outer(g, b)


def matmul_grad_a_vector_matrix(g, a, b):
    g = matmul_fitted(g, a, b)
    return b @ g
''',
    "matmul_grad_b": '''@numba.extending.overload(matmul_grad_b)
def matmul_grad_b_typed(g, a, b):
    """matmul_grad_b under numba, for vectors and matrices (chosen by the ranks of a and b);
    g in the product's shape first (a product broadcast further: matmul_fitted)."""
    if any(isinstance(t, numba.types.Optional) for t in (g, a, b)):
        return lambda g, a, b: matmul_grad_b(optional_value(g), optional_value(a), optional_value(b))
    if not isinstance(g, numba.types.Array):
        return matmul_grad_b_vectors if a.ndim == 1 and b.ndim == 1 else None
    if max(a.ndim, b.ndim) == 3 and min(a.ndim, b.ndim) >= 2:  # (a stack of matrices: matmul_stacked)
        return matmul_grad_b_stacked if g.ndim == 3 else None
    if g.ndim > a.ndim + b.ndim - 2:  # (a product broadcast further, `a * (a @ X)` of a vector: fuzz 63002 #192)
        return lambda g, a, b: matmul_grad_b(unbroadcast(g, np.zeros(np.shape(a)[:-1] + np.shape(b)[1:])), a, b)
    if g.ndim != a.ndim + b.ndim - 2 or a.ndim > 2 or b.ndim > 2:
        return None
    return matmul_grad_b_matrix if a.ndim == 2 else matmul_grad_b_vector_matrix


def matmul_grad_b_vectors(g, a, b):
    return g * a


def matmul_grad_b_stacked(g, a, b):
    return unbroadcast(np.swapaxes(a, -1, -2) @ g, b)


def matmul_grad_b_matrix(g, a, b):
    g = matmul_fitted(g, a, b)
    return np.ascontiguousarray(a.T) @ g


def matmul_grad_b_vector_matrix(g, a, b):
    g = matmul_fitted(g, a, b)
    return np.outer(a, g)
''',
    "zero_at": '''@numba.extending.overload(zero_at)
def zero_at_typed(g, index):
    """zero_at under numba: a copy of the array g with zeros at `index`; a number g (the 0.0
    no gradient has replaced yet) stays itself, as zeros stay zeros."""
    if isinstance(g, numba.types.Optional) or isinstance(index, numba.types.Optional):
        return lambda g, index: zero_at(optional_value(g), optional_value(index))
    if not isinstance(g, numba.types.Array):
        return lambda g, index: g

    def zeroed(g, index):
        out = g.astype(np.float64)
        out[index] = 0.0
        return out
    return zeroed
''',
    "scatter": '''@numba.extending.overload(scatter)
def scatter_typed(g, like, index):
    """scatter under numba: zeros shaped like `like`, g added at `index` by add_at (a repeated
    index adds up)."""
    if any(isinstance(t, numba.types.Optional) for t in (g, like, index)):
        return lambda g, like, index: scatter(optional_value(g), optional_value(like), optional_value(index))

    def scattered(g, like, index):
        out = np.zeros(np.shape(like))
        add_at(out, index, g)
        return out
    return scattered
''',
    "index_add": '''@numba.extending.overload(index_add)
def index_add_typed(out, index, g):
    """index_add under numba: add_at, element by element (a repeated index adds up)."""
    if any(isinstance(t, numba.types.Optional) for t in (out, index, g)):
        return lambda out, index, g: add_at(optional_value(out), optional_value(index), optional_value(g))
    return lambda out, index, g: add_at(out, index, g)
''',
    "prod_grad": '''@numba.extending.overload(prod_grad)
def prod_grad_typed(g, x, axis=None, keepdims=False):
    """prod_grad under numba, along one axis or all of them: g times the product of the other
    elements of each line, from the products before and after each element (no division:
    exact where x holds zeros). g, in whatever shape the product has, holds one number a
    line, in the order of the lines."""
    if any(isinstance(t, numba.types.Optional) for t in (g, x)):
        return lambda g, x, axis=None, keepdims=False: prod_grad(optional_value(g), optional_value(x), axis, keepdims)
    if not isinstance(x, numba.types.Array):
        return lambda g, x, axis=None, keepdims=False: g * 1.0
    whole = axis is None or isinstance(axis, (numba.types.NoneType, numba.types.Omitted))
    if not whole and not isinstance(axis, numba.types.Integer):
        return None  # (a tuple of axes: the np.prod it comes from is refused when compiling, numba_check)
    if whole:
        return lambda g, x, axis=None, keepdims=False: prod_grad_lines(
            g, np.ascontiguousarray(x).reshape((1, x.size, 1))).reshape(x.shape)
    return lambda g, x, axis=None, keepdims=False: prod_grad_lines(g, lines_along(x, axis)).reshape(x.shape)


@numba.njit(cache=False)
def prod_grad_lines(g, lines):
    """prod_grad of x seen as lines[i, :, j] (lines_along), g one number a line."""
    per_line = np.ascontiguousarray(np.asarray(g) * 1.0).reshape((lines.shape[0], lines.shape[2]))
    out = np.empty(lines.shape)
    for i in range(lines.shape[0]):
        for j in range(lines.shape[2]):
            run = per_line[i, j]
            for k in range(lines.shape[1]):
                out[i, k, j] = run
                run *= lines[i, k, j]
            run = 1.0
            for k in range(lines.shape[1] - 1, -1, -1):
                out[i, k, j] *= run
                run *= lines[i, k, j]
    return out
''',
    "concatenate_grad": '''@numba.extending.overload(concatenate_grad)
def concatenate_grad_typed(g, parts, i, axis):
    """concatenate_grad under numba: the piece of g that part i became, along `axis`. Part by
    part, each call taking the first off the tuple: a tuple of parts of several types (a C
    array and a view, lstm's (x, hidden[i], x, hidden[i])) has no item numba can index by a
    number it knows only when it runs, and a tuple's first item and the rest it types."""
    if isinstance(g, numba.types.Optional):
        return lambda g, parts, i, axis: concatenate_grad(optional_value(g), parts, i, axis)

    def last(g, parts, i, axis):
        return np.ascontiguousarray(g)

    def piece(g, parts, i, axis):
        moved = np.swapaxes(g, 0, axis)
        length = np.shape(optional_value(parts[0]))[axis]
        if i == 0:
            return np.ascontiguousarray(np.swapaxes(moved[:length], 0, axis))
        return concatenate_grad(np.swapaxes(moved[length:], 0, axis), parts[1:], i - 1, axis)
    return last if len(parts) == 1 else piece
''',
    "unconcatenate": '''@numba.extending.overload(unconcatenate)
def unconcatenate_typed(g, parts, axis=0):
    """unconcatenate under numba: the pieces of g that the parts of a list became, each a
    contiguous copy, as a list (the gradient of np.concatenate of a list variable)."""
    if isinstance(g, numba.types.Optional):
        return lambda g, parts, axis=0: unconcatenate(optional_value(g), parts, axis)

    def pieces(g, parts, axis=0):
        moved = np.swapaxes(g, 0, axis)
        out = []
        start = 0
        for part in parts:
            length = np.shape(part)[axis]
            out.append(np.ascontiguousarray(np.swapaxes(moved[start:start + length], 0, axis)))
            start += length
        return out
    return pieces
''',
    "zeros_like_tree": '''@numba.extending.overload(zeros_like_tree)
def zeros_like_tree_typed(x):
    """zeros_like_tree under numba, for what a list variable holds there (a list of arrays, or
    of numbers): a list of zeros of each item's shape. A structured parameter, which --jit
    numba refuses when compiling, has no other form here."""
    if isinstance(x, numba.types.List) and isinstance(x.dtype, numba.types.Array):
        return lambda x: [np.zeros(np.shape(item)) for item in x]
    if isinstance(x, numba.types.List) and isinstance(x.dtype, numba.types.Number):
        return lambda x: [0.0 for item in x]
    return None
''',
    "matmul_fitted": '''@numba.njit(cache=False)
def matmul_fitted(g, a, b):
    """g in the shape of a @ b: a product broadcast further (`a * (a @ X)` with a @ X of
    shape (1,)) has its gradient summed over the axes broadcasting stretched."""
    shape = np.shape(a)[:-1] + np.shape(b)[1:]
    if np.shape(g) == shape:
        return g
    return unbroadcast(g, np.zeros(shape))
''',
}


def overloads(used):
    """The overloads of the helpers `used` (names defined in the module), in a fixed order,
    after optional_value, which they all call."""
    if "matmul_grad_a" in used or "matmul_grad_b" in used:
        used = set(used) | {"matmul_fitted", "unbroadcast"}  # (matmul_fitted calls unbroadcast)
    texts = [text for name, text in OVERLOADS.items() if name in used]
    return [OPTIONAL_VALUE] + texts if texts else []


# a value saved before its first one in a loop starts as None (gradgen/codegen/numba_spell.py's
# placeholders), which numba types as an optional of what it later holds; the helpers choose
# their code by their arguments' types, so they look through the optional first (an optional
# array is no number: summed as one, a gradient was silently wrong)
OPTIONAL_VALUE = '''@numba.extending.intrinsic
def optional_value(typingctx, x):
    """x itself; an optional's value as the type it holds (numba raises where it holds None).
    The value returned is a new reference (numba releases it, as it releases x)."""
    held = x.type if isinstance(x, numba.types.Optional) else x

    def cast(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], signature.return_type)
        context.nrt.incref(builder, signature.return_type, value)
        return value

    return held(x), cast
'''
