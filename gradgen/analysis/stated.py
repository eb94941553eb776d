"""Analysis: static shapes, where the source says them.

A person writing a backward pass knows that `b1` has shape (h,) and `X @ W1 + b1` shape
(n, h), so they write `dpre.sum(axis=0)` for b1's gradient and `X.T @ dpre` for W1's, and
never a helper that inspects shapes at run time. gradgen knows the same where the source
tells it: jaxtyping annotations (`W1: Float[np.ndarray, "d h"]`, read from the text, so
jaxtyping need not be installed), `float`/`int` annotations, array defaults and module
constants, and `gradgen compile --shapes FILE:FUNC` (the shapes of an example point).

A shape is a tuple of dimensions: an int, a symbol from an annotation (`"n"`), a symbol
less a count (`"n - 1"`, for `x[1:]`), or None (a dimension not known). A value whose rank
is not known has shape None. Shapes flow through the IR by each primitive's rule
(broadcasting, reductions, matmul, transposes, indexing, reshapes); whatever this module
cannot follow is None, and the backward pass then keeps its run-time dispatch.
"""

from __future__ import annotations

import ast
import math

from gradgen.ir.nodes import Assign, Call, Cond, Const, For, If, Var, While
from gradgen.rules.table import TABLE

# the dtype classes of jaxtyping (Float[np.ndarray, "n d"]); any of them names a shape
JAXTYPING = {"Float", "Float16", "Float32", "Float64", "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8",
             "Bool", "Shaped", "Num", "Real", "Inexact", "Integer", "Complex", "Complex64", "Complex128",
             "BFloat16", "Key"}
_SAME_AS_FIRST = {"softmax", "log_softmax", "flip", "copy", "pos", "zeros_like", "ones_like",
                  "array", "astype"}
_NUMBERS = {"len", "ndim", "size", "float", "int", "det", "logdet", "trace", "tree_len", "vdot"}
_REDUCTIONS = {"sum", "mean", "prod", "amax", "amin", "std", "var", "logsumexp", "max", "min", "nansum", "nanmean", "norm"}


# ---- what the source says -----------------------------------------------------------------

def _flattened(shape):
    """The shape of a flattened array of `shape` (soak seed 2004 #3573: np.cumsum(A) of an
    (a, a) A is no (a, a) array, and a mean of it counts a * a); None where lengths are letters.
    A number flattened is one element (np.cumprod of a 0-d array has shape (1,): soak seed 34000 #1318)."""
    if shape == ():
        return (1,)
    if shape is None or len(shape) == 1:
        return shape
    return (math.prod(shape),) if all(isinstance(d, int) for d in shape) else None


def annotated_shape(annotation):
    """The shape an annotation states, or None: `float`/`int` are numbers (shape ()), a
    jaxtyping annotation `Float[np.ndarray, "n d"]` has the dimensions its string names
    (`"*batch"`, `"..."` or `"#n"` leave the rank or that dimension open)."""
    if isinstance(annotation, ast.Name) and annotation.id in ("float", "int"):
        return ()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # "Float[np.ndarray, 'n']"
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if not isinstance(annotation, ast.Subscript):
        return None
    base = annotation.value
    name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
    index = annotation.slice
    if name not in JAXTYPING or not isinstance(index, ast.Tuple) or len(index.elts) != 2:
        return None
    spec = index.elts[1]
    if not (isinstance(spec, ast.Constant) and isinstance(spec.value, str)):
        return None
    return dims_of(spec.value)


def dims_of(spec):
    """The shape a jaxtyping dimension string names (`"n d"` -> ("n", "d"), `""` -> ())."""
    dims = []
    for token in spec.split():
        if token.startswith("*") or token == "...":
            return None  # any number of axes
        if token.isdigit():
            dims.append(int(token))
        elif token.isidentifier() and token != "_":
            dims.append(token)
        else:
            dims.append(None)  # "_", "#n" (may broadcast), "n=3", "n+1": not a fixed symbol
    return tuple(dims)


def shape_of_value(value):
    """The shape of a number or an array known at compile time (a default, a constant)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return ()
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(d, int) for d in shape) and hasattr(value, "dtype"):
        return shape
    return None


def shapes_of_point(point):
    """{parameter: shape} of the numbers and arrays of a point (`--shapes FILE:FUNC`)."""
    out = {}
    for name, value in point.items():
        shape = shape_of_value(value)
        if shape is not None:
            out[name] = shape
    return out


def symbolic_shapes(point):
    """shapes_of_point with each length other than 1 named by a letter, one per length (as a
    jaxtyping annotation states them): tests and the fuzzer compile with these too."""
    letters, out = {}, {}
    for name, shape in shapes_of_point(point).items():
        out[name] = tuple(d if d == 1 else letters.setdefault(d, _letter(len(letters))) for d in shape)
    return out


def _letter(k):
    return "abcdefghijklmnopqrstuvwxyz"[k % 26] + ("" if k < 26 else str(k // 26))


def spelled(shape):
    """A shape as a reader writes it: (784, 256), (n, d), (h,)."""
    dims = ["?" if d is None else str(d) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def known(shape):
    """Whether every dimension of `shape` is known."""
    return shape is not None and all(d is not None for d in shape)


# ---- broadcasting and dimension arithmetic ------------------------------------------------

def broadcast(*shapes):
    """The shape NumPy broadcasting gives, as far as the dimensions say: a 1 gives way to
    anything, equal dimensions stay, and two different symbols give an unknown dimension."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        dims = {s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0}
        dims.discard(1)
        out.append(dims.pop() if len(dims) == 1 else 1 if not dims else None)
    return tuple(out)


def minus(dim, count):
    """`dim` less `count` elements (a slice that drops some): an int, or a symbol `"n - 2"`."""
    if dim is None:
        return None
    if isinstance(dim, int):
        return max(dim - count, 0)
    base, _, less = dim.partition(" - ")
    total = (int(less) if less else 0) + count
    return f"{base} - {total}" if total else base


class StaticShapes:
    """The shape of every value of one function that the source determines.

    `of(expr)` answers for any expression over the function's names, including the
    gradient expressions the backward pass builds from them; `witness(dim)` is an
    expression that measures a symbol at run time (`len(X)` for the n of `X: "n d"`)."""

    def __init__(self, fn, module=None, assumed=None):
        self.env, self.witnesses, self.stated = {}, {}, {}
        constants = getattr(module, "constants", None) or {}
        for name, value in constants.items():
            shape = shape_of_value(value)
            if shape is not None:
                self.env[name] = shape
        for p in fn.params:
            shape = (assumed or {}).get(p.name)
            if shape is None:
                shape = getattr(p, "shape", None)
            if shape is None and p.number:
                shape = ()
            if shape is None:  # (unknown, and a value the body binds to it later does not say it)
                self.env[p.name] = None
            if shape is not None:
                self.env[p.name] = self.stated[p.name] = tuple(shape)
                for axis, dim in enumerate(shape):
                    if isinstance(dim, str) and dim not in self.witnesses:
                        self.witnesses[dim] = (p.name, axis)
        self.counts = {}
        self._block(fn.body)
        self._block(fn.body)  # (a value read before a later statement binds it again)
        # a parameter the body assigns again measures nothing after that: no witness
        self.witnesses = {d: w for d, w in self.witnesses.items() if w[0] not in self.counts}

    def _block(self, stmts):
        for s in stmts:
            if isinstance(s, Assign):
                shape = self.of(s.expr)
                if s.accumulate:
                    shape = broadcast(shape, self.env.get(s.target))
                self._bind(s.target, shape, s.overwrites)
            elif isinstance(s, If):
                self._block(s.body)
                self._block(s.orelse)
            elif isinstance(s, For):
                self._bind(s.target, self._element(s.iter), True)
                self._trips(s.body)
            elif isinstance(s, While):
                self._trips(s.body)

    def _trips(self, body):
        """A loop body, trip after trip until no shape changes: a trip sees what the one before
        made (`c = b; b = a; a = x` reaches c on the third). A name bound to two shapes has
        none (None), and None stays, so this ends."""
        before = None
        while before != self.env:
            before = dict(self.env)
            self._block(body)

    def _bind(self, name, shape, overwrites):
        """A name bound again to another shape has no one shape."""
        if name in self.env and (overwrites or self.counts.get(name)) and self.env[name] != shape:
            shape = None
        self.counts[name] = self.counts.get(name, 0) + 1
        self.env[name] = shape

    def _element(self, iterable):
        if isinstance(iterable, Call) and iterable.prim in ("range", "range_slice"):
            return ()
        shape = self.of(iterable)
        return shape[1:] if shape else None

    # ---- expressions ----------------------------------------------------------------------
    def of(self, e):
        """e's shape, or None where the source does not determine it."""
        if isinstance(e, Const):
            return () if isinstance(e.value, (int, float)) and not isinstance(e.value, bool) else None
        if isinstance(e, Var):
            return self.env.get(e.name)
        if isinstance(e, Cond):
            body, orelse = self.of(e.body), self.of(e.orelse)
            return body if body == orelse else None
        if not isinstance(e, Call):
            return None
        prim = TABLE.get(e.prim)
        params = dict(e.params)
        if prim is not None and prim.kind == "attribute" and not e.args:  # np.pi, math.e
            return ()
        if e.prim in ("eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "where", "logical_and", "broadcast") or \
                (prim is not None and prim.elementwise):
            return broadcast(*(self.of(a) for a in e.args))
        if e.prim in _NUMBERS or (prim is not None and prim.result == "number"):
            return ()
        if e.prim in _REDUCTIONS or (prim is not None and prim.result == "reduction"):
            if e.prim in ("max", "min") and len(e.args) > 1:  # builtin max(a, b): one of them, whatever its shape
                return broadcast(*(self.of(a) for a in e.args)) if all(self.of(a) == () for a in e.args) else None
            return _reduced(self.of(e.args[0]), params.get("axis"), params.get("keepdims", False))
        if e.prim in _SAME_AS_FIRST:
            return self.of(e.args[0])
        if e.prim in ("cumsum", "cumprod", "sort"):  # along an axis: the same shape; axis=None: flattened
            flat = params.get("axis", -1 if e.prim == "sort" else None) is None
            return _flattened(self.of(e.args[0])) if flat else self.of(e.args[0])
        rule = _RULES.get(e.prim)
        return rule(self, e, params) if rule is not None else None

    def witness(self, dim):
        """An expression whose value is `dim` when the function runs, or None."""
        if isinstance(dim, int):
            return Const(dim)
        if dim not in self.witnesses:
            base, _, less = (dim or "").partition(" - ")
            inner = self.witness(base) if less else None
            return None if inner is None else Call("sub", (inner, Const(int(less))), "op")
        name, axis = self.witnesses[dim]
        if axis == 0:
            return Call("len", (Var(name),), "builtins")
        return Call("getitem", (Call("shape", (Var(name),), "numpy"), Const(axis)), "op", params=(("index", ("i",)),))

    def size(self, e):
        """An expression counting e's elements from witnesses (`len(X) * len(W1)`), or None."""
        shape = self.of(e)
        if not known(shape):
            return None
        count, parts = 1, []
        for dim in shape:
            if isinstance(dim, int):
                count *= dim
                continue
            w = self.witness(dim)
            if w is None:
                return None
            parts.append(w)
        out = Const(count) if count != 1 or not parts else None
        for w in parts:
            out = w if out is None else Call("mul", (out, w), "op")
        return out


def _reduced(shape, axis, keepdims):
    if axis is None and not keepdims:  # (every axis: one number, whatever the input's rank)
        return ()
    if shape is None:
        return None
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    axes = axis if isinstance(axis, tuple) else (axis,)
    if not all(isinstance(a, int) and -len(shape) <= a < len(shape) for a in axes):
        return None
    axes = {a % len(shape) for a in axes}
    return tuple(1 if k in axes else d for k, d in enumerate(shape) if keepdims or k not in axes)


def _matmul(self, e, params):
    a, b = (self.of(x) for x in e.args)
    if a is None or b is None or not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(a) == 1:
        return b[:-2] + b[-1:]
    if len(b) == 1:
        return a[:-1]
    batch = broadcast(a[:-2], b[:-2])
    return None if batch is None else batch + (a[-2], b[-1])


def _transpose(self, e, params):
    shape = self.of(e.args[0])
    axes = params.get("axes")
    if shape is None:
        return None
    if axes is None:
        return tuple(reversed(shape))
    if not isinstance(axes, tuple) or sorted(a % len(shape) for a in axes) != list(range(len(shape))):
        return None
    return tuple(shape[a] for a in axes)


def _inner(self, e, params):
    """np.inner(a, b): a's leading axes, then b's (a number for two vectors)."""
    a, b = (self.of(x) for x in e.args)
    if a is None or b is None:
        return None
    return b if not a else a if not b else a[:-1] + b[:-1]


def _einsum(self, e, params):
    """The output subscript's letters, each the length of the operand axes it names as
    np.einsum broadcasts them: a 1 gives way to another length (autograd's MLP,
    "mnd,mdo->mno" of a (1, n, d) and an (m, d, o): m, not 1), and a letter only a 1 and an
    operand of unknown shape name is unknown."""
    inputs, _, output = str(params.get("subscripts", "")).partition("->")
    lengths, open_letters = {}, set()
    for letters, x in zip(inputs.split(","), e.args):
        shape = self.of(x)
        if shape is None or len(shape) != len(letters):
            open_letters |= set(letters)
            continue
        for c, d in zip(letters, shape):
            lengths.setdefault(c, set()).add(d)
    shape = []
    for c in output:
        dims = lengths.get(c, set()) - {1}
        if len(dims) == 1:
            shape.append(next(iter(dims)))
        elif not dims and c in lengths and c not in open_letters:
            shape.append(1)
        else:
            return None
    return tuple(shape)


def _outer(self, e, params):
    a, b = (self.of(x) for x in e.args)
    return (a[0], b[0]) if a is not None and b is not None and len(a) == len(b) == 1 else None


def _int_of(e):
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, Call) and e.prim == "neg" and len(e.args) == 1:
        inner = _int_of(e.args[0])
        return None if inner is None else -inner
    return None


def _getitem(self, e, params):
    """x[...]: integers drop an axis, slices with constant bounds shorten one, None adds one."""
    shape = self.of(e.args[0])
    layout = params.get("index")
    if shape is None or not layout or "e" in layout:
        return None
    args, out, axis = iter(e.args[1:]), [], 0
    for part in layout:
        if part == "n":
            out.append(1)
            continue
        if axis >= len(shape):
            return None
        if part == "i":
            if self.of(next(args)) != ():
                return None  # an array of indices: its shape, which this does not follow
        elif part.startswith("s"):
            bits = part[1:]
            bounds = [_int_of(next(args)) if bit == "1" else None for bit in bits]
            if bits[1:2] == "1" and bounds[1] is None or bits[:1] == "1" and bounds[0] is None or \
                    bits[2:3] == "1":
                out.append(None)
            else:
                out.append(_sliced(shape[axis], bounds[0], bounds[1]))
        else:
            return None
        axis += 1
    return tuple(out) + tuple(shape[axis:])


def _sliced(dim, start, stop):
    """The length of dim[start:stop] (step 1)."""
    if isinstance(dim, int):
        return len(range(dim)[slice(start, stop)])
    if stop == 0:
        return 0
    start, stop = start or 0, stop or 0
    if start >= 0 and stop <= 0:
        return minus(dim, start - stop)
    return None


def _reshape(self, e, params):
    target = e.args[1] if len(e.args) > 1 else None
    dims = _constant_shape(target)
    if dims is None:
        return None
    if -1 in dims:
        source = self.of(e.args[0])
        if source is None or not all(isinstance(d, int) for d in source) or dims.count(-1) != 1:
            return None
        rest = math.prod(d for d in dims if d != -1)
        return tuple(math.prod(source) // rest if d == -1 else d for d in dims) if rest else None
    return dims


def _constant_shape(e):
    if isinstance(e, Const) and isinstance(e.value, int):
        return (e.value,)
    if isinstance(e, Call) and e.prim == "tuple" and all(_int_of(a) is not None for a in e.args):
        return tuple(_int_of(a) for a in e.args)
    return None


def _made(self, e, params):
    """np.zeros((3, 4)) with a constant shape, or lengths measured from a value of known shape:
    np.zeros(np.shape(x)[0]), np.ones(len(x)), np.zeros(x.shape), np.zeros((len(x), 3))."""
    if not e.args:
        return None
    given = e.args[0]
    if isinstance(given, Call) and given.prim == "shape" and len(given.args) == 1:
        return self.of(given.args[0])
    items = given.args if isinstance(given, Call) and given.prim == "tuple" else (given,)
    dims = tuple(_length(self, item) for item in items)
    return None if None in dims else dims


def _length(self, e):
    """A length `e` spells: an int, `np.shape(x)[k]` / `x.shape[k]`, `len(x)`; None if unknown."""
    count = _int_of(e)
    if count is not None:
        return count
    if isinstance(e, Call) and e.prim == "len" and len(e.args) == 1:
        shape = self.of(e.args[0])
        return shape[0] if shape else None
    if isinstance(e, Call) and e.prim == "getitem" and isinstance(e.args[0], Call) and e.args[0].prim == "shape":
        shape, k = self.of(e.args[0].args[0]), _int_of(e.args[1]) if len(e.args) == 2 else None
        if shape is not None and k is not None and -len(shape) <= k < len(shape):
            return shape[k]
    return None


def _expand_dims(self, e, params):
    shape, axis = self.of(e.args[0]), params.get("axis")
    if shape is None or not isinstance(axis, int) or not -len(shape) - 1 <= axis <= len(shape):
        return None
    axis = axis % (len(shape) + 1)
    return shape[:axis] + (1,) + shape[axis:]


def _ravel(self, e, params):
    shape = self.of(e.args[0])
    if shape is None:
        return None
    return (math.prod(shape),) if all(isinstance(d, int) for d in shape) else (None,)


def _stack(self, e, params):
    """np.stack of values of one shape (np.array([a, b]) of numbers: (2,)): that shape, with the
    count of values as a new axis."""
    shapes = {self.of(a) for a in e.args}
    axis = params.get("axis", 0)
    if len(shapes) != 1 or None in shapes or not isinstance(axis, int):
        return None
    shape = shapes.pop()
    if not -len(shape) - 1 <= axis <= len(shape):
        return None
    axis %= len(shape) + 1
    return shape[:axis] + (len(e.args),) + shape[axis:]


def _concatenate(self, e, params):
    """np.concatenate of arrays of one rank whose other lengths agree: the lengths along `axis`
    added (`[np.ones(1), y[:-1]]`, y (n,): (n,)); unknown where the sum has no spelling."""
    shapes = [self.of(a) for a in e.args]
    axis = params.get("axis", 0)
    if any(s is None or not s for s in shapes) or len({len(s) for s in shapes}) != 1 or not isinstance(axis, int):
        return None
    rank = len(shapes[0])
    if not -rank <= axis < rank:
        return None
    axis %= rank
    others = {s[:axis] + s[axis + 1:] for s in shapes}
    total = _added([s[axis] for s in shapes])
    if len(others) != 1 or total is None:
        return None
    rest = others.pop()
    return rest[:axis] + (total,) + rest[axis:]


def _added(dims):
    """The sum of lengths: an int, a symbol less a count (`minus`), or None (two symbols, a
    symbol plus a count, or an unknown length)."""
    base, offset = None, 0
    for dim in dims:
        if isinstance(dim, int):
            offset += dim
            continue
        if dim is None or base is not None:
            return None
        base, _, less = dim.partition(" - ")
        offset -= int(less) if less else 0
    if base is None:
        return offset
    return base if offset == 0 else minus(base, -offset) if offset < 0 else None


_RULES = {"stack": _stack, "concatenate": _concatenate, "matmul": _matmul, "T": _transpose, "transpose": _transpose, "outer": _outer, "getitem": _getitem,
          "reshape": _reshape, "zeros": _made, "ones": _made, "expand_dims": _expand_dims, "ravel": _ravel,
          "inner": _inner, "einsum": _einsum}
