"""Stage 6, emit: IR -> Python source, black-formatted.

Each statement becomes a Python AST and is printed with `ast.unparse` (which places
parentheses by precedence); comments and layout are written around them as text, and
black formats the module, but for the statements already in its layout
(gradgen.codegen.layout: most of them, which is most of the time black took). Calls keep the library the user called (`math.cos` for
the derivative of `math.sin`); the generated module imports `math` and `numpy as np` only
if it uses them, and never imports gradgen.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import math
import textwrap

from gradgen.codegen import checkpointing, guards, layout
from gradgen.codegen.spellings import EINSUM_MATMUL
from gradgen.codegen.spellings import SPECIAL as _SPECIAL
from gradgen.codegen.spellings import operator_node as _operator
from gradgen.codegen.spellings import path as _path
from gradgen.ir.nodes import (
    Assign, Break, Call, Checkpointed, Comment, Cond, Const, Continue, Effect, For, If, IndexAdd, Init, Replayed,
    Restore, Save, Spelled, Var, While
)
from gradgen.ir.simplify import is_zero, negative_part
from gradgen.rules import records as record_helpers
from gradgen.rules.records import RECORD_HELPERS
from gradgen.rules.table import HELPER_NAMES, LIBRARY_HELPERS, SMOOTH_HELPER_SOURCES, TABLE

_MODULE_ALIAS = {"math": "math", "numpy": "np"}


class Emitter:
    """Turns IR expressions into Python AST, noting which imports they need."""

    def __init__(self, default_ns, helpers):
        self.default_ns = default_ns
        self.helpers = helpers  # primitive name -> helper function name in the generated module
        self.imports = set()
        self.used_helpers = set()
        # what every function written for the current user function adds (gradgen.codegen.guards):
        # keyword-only parameters for the constants it reads, and the shapes it checks on entry
        self.constant_params, self.stated, self.user_params = [], {}, set()

    def signature(self, name, params):
        """`params` with the constant parameters after them, and the entry check's line (or None)."""
        line = guards.check_line(name, self.stated)
        if line is not None:
            self.used_helpers.add(guards.CHECK)
            self.imports.add("numpy")
        params = list(params)  # the constants after the user's parameters, before tangents or a cotangent
        at = max((i + 1 for i, p in enumerate(params) if p.name in self.user_params), default=0)
        return params[:at] + self.constant_params + params[at:], line

    def expr(self, e) -> ast.expr:
        if isinstance(e, Var):
            return ast.Name(e.name)
        if isinstance(e, Const):
            return self._const(e.value)
        if isinstance(e, Cond):
            return ast.IfExp(self.expr(e.test), self.expr(e.body), self.expr(e.orelse))
        if isinstance(e, Call):
            return self._call(e)
        raise TypeError(f"cannot emit {e!r}")

    def _const(self, value):
        if hasattr(value, "tolist"):  # an array constant: np.array([...]) with its dtype
            # spelled as every NumPy the package supports spells it: `bool` (np.bool is NumPy 2's
            # alone), np.int64, np.uint64; float64 is np.array's own default
            kind = value.dtype.kind
            dtype = ast.Name("bool") if kind == "b" else None if kind == "f" else self._attr("numpy", value.dtype.name)
            keywords = [] if dtype is None else [ast.keyword("dtype", dtype)]
            return ast.Call(self._attr("numpy", "array"), [ast.parse(repr(value.tolist()), mode="eval").body],
                            keywords)
        if isinstance(value, tuple):
            return ast.Tuple([self._const(v) for v in value])
        if isinstance(value, float) and not math.isfinite(value):
            if math.isnan(value):
                return self._attr("math", "nan")
            node = self._attr("math", "inf")
            return node if value > 0 else ast.UnaryOp(ast.USub(), node)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return ast.UnaryOp(ast.USub(), ast.Constant(-value))
        return ast.Constant(value)  # (also a string: a dict's key, a loop over ["W", "b"])

    def _as_written(self, e):
        """A draw or an expression kept as the source wrote it: its text, each variable it
        read spelled as its argument is now (a pass may have renamed it since)."""
        params = dict(e.params)
        self.imports.update(params["modules"])
        tree = ast.parse(params["text"], mode="eval").body
        now = {old: self.expr(arg) for old, arg in zip(params.get("names", ()), e.args)}
        if all(isinstance(a, ast.Name) and a.id == old for old, a in now.items()):
            return tree

        class _Respelled(ast.NodeTransformer):
            def visit_Name(self, node):
                return now.get(node.id, node) if isinstance(node.ctx, ast.Load) else node

        return _Respelled().visit(tree)

    def _attr(self, module, name):
        """`np.exp`, `np.linalg.det`, `scipy.stats.norm.logpdf`: a name in an imported module."""
        self.imports.add(module)
        node = ast.Name(_MODULE_ALIAS.get(module, module.split(".")[0]))
        for part in (module.split(".")[1:] if module not in _MODULE_ALIAS else []) + name.split("."):
            node = ast.Attribute(node, part)
        return node

    def _call(self, e):
        if e.prim in ("draw", "verbatim"):  # as the source wrote it (gradgen/frontend/effects.py, inactive.py)
            return self._as_written(e)
        prim = TABLE[e.prim]
        if e.prim == "neg" and isinstance(e.args[0], Call) and e.args[0].prim in ("mul", "div"):
            return self._negated_product(e.args[0])
        if e.prim in ("getitem", "scatter", "zero_at", "last_writes"):
            return self._indexing(e)
        assert e.prim != "setitem", "a write is a statement of its own"
        args = [self.expr(a) for a in e.args]
        keywords = [ast.keyword(k, self._static(v)) for k, v in e.params]
        if e.ns == "op" or (prim.operator is not None and not prim.names):
            return _operator(prim, args)
        if e.prim in HELPER_NAMES:  # a backward-pass helper differentiated again (gradgen.rules.numpy)
            self.used_helpers.add(HELPER_NAMES[e.prim])
            return ast.Call(ast.Name(HELPER_NAMES[e.prim]), args, keywords)
        if e.prim in self.helpers or prim.kind == "helper":
            if prim.kind == "helper":
                self.used_helpers.add(e.prim)
            return ast.Call(ast.Name(self.helpers.get(e.prim, e.prim)), args, keywords)
        if e.prim in _SPECIAL:
            return _SPECIAL[e.prim](self, args, keywords)
        ns = e.ns if e.ns in prim.names else self._fallback(prim, e.ns)
        if ns is None:
            return self.expr(prim.expand(*e.args))
        if ns == "builtins":
            return ast.Call(ast.Name(prim.names[ns]), args, keywords)
        target = self._attr(ns, prim.names[ns])
        return target if prim.kind == "attribute" else ast.Call(target, args, keywords)

    def _indexing(self, e):
        """`x[index]`, or (a scattered gradient) `scatter(g, x, index)`."""
        layout = dict(e.params)["index"]
        if e.prim == "getitem":
            return ast.Subscript(self.expr(e.args[0]), self.index(layout, e.args[1:]))
        if e.prim in ("zero_at", "last_writes"):
            self.used_helpers.add(e.prim)
            return ast.Call(ast.Name(e.prim), [self.expr(e.args[0]), self.index(layout, e.args[1:], as_value=True)],
                            [])
        self.used_helpers.add("scatter")
        g, like = (self.expr(a) for a in e.args[:2])
        return ast.Call(ast.Name("scatter"), [g, like, self.index(layout, e.args[2:], as_value=True)], [])

    def index(self, layout, exprs, as_value=False):
        """The index expression of `layout` (see lower._subscript), from `exprs` in order.

        `as_value`: written as a value (`slice(1, None)`) rather than inside brackets."""
        exprs = list(exprs)
        items = []
        for kind in layout:
            if kind == "i":
                items.append(self.expr(exprs.pop(0)))
            elif kind == "n":
                items.append(ast.Constant(None))
            elif kind == "e":
                items.append(ast.Constant(Ellipsis))
            else:
                parts = [self.expr(exprs.pop(0)) if bit == "1" else None for bit in kind[1:]]
                if as_value:
                    items.append(ast.Call(ast.Name("slice"), [p or ast.Constant(None) for p in parts], []))
                else:
                    items.append(ast.Slice(*parts))
        return items[0] if len(items) == 1 else ast.Tuple(items)

    def _static(self, value):
        if isinstance(value, Spelled):
            return ast.Name(value.text)
        if value is None:
            return ast.Constant(None)
        return self._const(value)

    def _numpy_call(self, name, args, keywords):
        return ast.Call(self._attr("numpy", name), args, keywords)

    def _negated_product(self, product):
        """`-(a * b)` reads better as `-a * b`: the same number, the sign moved to the front."""
        first, rest = product.args
        negated = Call("neg", (first,), "op")
        return self.expr(Call(product.prim, (negated, rest), "op"))

    def _fallback(self, prim, ns):
        """A namespace that spells `prim`: the caller's, else the module's default, else any.

        None means: write the primitive's expansion instead (scalar `sign` as a conditional),
        so a module that never imported numpy does not start to need it.
        """
        order = [ns] if ns in ("math", "numpy") else []
        order.append(self.default_ns)
        for candidate in order:
            if candidate in prim.names:
                return candidate
        if prim.expand is not None:
            return None
        # a SciPy function a rule calls (digamma for gammaln): the module the user's call came from
        return next((c for c in ("math", "numpy") if c in prim.names), next(iter(prim.names)))

    def statement(self, s) -> str:
        """Source text of one IR statement (several lines for a compound one)."""
        if isinstance(s, Comment):
            return f"# {s.text}"
        if isinstance(s, Assign):
            return self._assign(s)
        if isinstance(s, Effect):
            self.imports.update(s.modules)
            return s.text
        if isinstance(s, If):
            text = f"if {self._text(s.test)}:\n{self.block(s.body)}"
            if len(s.orelse) == 1 and isinstance(s.orelse[0], If):  # else: if -> elif
                return text + "\nel" + self.statement(s.orelse[0])
            return text + (f"\nelse:\n{self.block(s.orelse)}" if s.orelse else "")
        if isinstance(s, For):
            return f"for {s.target} in {self.iteration(s)}:\n{self.block(s.body)}"
        if isinstance(s, While):
            return f"while {self._text(s.test)}:\n{self.block(s.body)}"
        if isinstance(s, Save):
            if s.copy:
                return f"{s.stack}.append({ast.unparse(self._attr('numpy', 'copy'))}({s.name}))"
            return f"{s.stack}.append({s.name})"
        if isinstance(s, Restore):
            return f"{s.name} = {s.stack}.pop()"
        if isinstance(s, Init):
            return f"{s.name} = {s.value}"
        if isinstance(s, (Checkpointed, Replayed)):  # (gradgen/codegen/checkpointing.py)
            return checkpointing.text(self, s)
        if isinstance(s, IndexAdd):
            if s.at and s.chained:  # a path with an index array in it (gradgen.rules.trees)
                self.used_helpers.add("add_at_path")
                path = ast.Tuple([self.expr(k) for k in s.index])
                return f"add_at_path({s.target}, {ast.unparse(path)}, {self._text(s.value)})"
            index = self.index(s.layout, s.index, as_value=s.at)
            if s.at:  # an index array may repeat an element: index_add adds every occurrence
                self.used_helpers.add("index_add")
                return f"index_add({s.target}, {ast.unparse(index)}, {self._text(s.value)})"
            sub = ast.Subscript(ast.Name(s.target), index)
            if s.chained:  # a path into a structured parameter's gradient: dparams[i][0]
                sub = _path(ast.Name(s.target), [self.expr(k) for k in s.index])
            if s.assign:
                return layout.laid(ast.Assign([sub], self.expr(s.value), lineno=0))
            if _negative(s.value) is not None:  # `d[i] -= g`, not `d[i] += -g`
                return layout.laid(ast.AugAssign(sub, ast.Sub(), self.expr(_negative(s.value))))
            return layout.laid(ast.AugAssign(sub, ast.Add(), self.expr(s.value)))
        return {Break: "break", Continue: "continue"}[type(s)]

    def block(self, stmts):
        lines = [self.statement(s) for s in stmts] or ["pass"]
        return _indent("\n".join(lines))

    def _text(self, e):
        return ast.unparse(self.expr(e))

    def _assign(self, s):
        target = ast.Name(s.target)
        expr = s.expr
        if s.accumulate and isinstance(expr, Cond) and is_zero(expr.orelse):
            # a guarded accumulation reads best as the `if` it is
            body = layout.laid(ast.AugAssign(target, ast.Add(), self.expr(expr.body)))
            return f"if {self._text(expr.test)}:\n    {body}"
        if s.accumulate and _negative(expr) is not None:
            return layout.laid(ast.AugAssign(target, ast.Sub(), self.expr(_negative(expr))))
        if s.accumulate:
            return layout.laid(ast.AugAssign(target, ast.Add(), self.expr(expr)))
        if isinstance(expr, Call) and expr.prim == "setitem":
            return self._write(s)
        if isinstance(expr, Call) and expr.prim == "append":  # the user's `hs.append(v)`, in place
            assert expr.args[0] == Var(s.target), "a list grows under its own name"
            return f"{s.target}.append({self._text(expr.args[1])})"
        if s.augmented and isinstance(expr, Call) and expr.args and expr.args[0] == Var(s.target):
            # the user's `x += e`, where x keeps its name
            op = TABLE[expr.prim].operator
            return layout.laid(ast.AugAssign(target, op(), self.expr(expr.args[1])))
        return layout.laid(ast.Assign([target], self.expr(expr), lineno=0))

    def _write(self, s):
        """The user's `x[index] = v`: into x's own array where x keeps its name and its old
        value is not kept for the backward pass; else into a copy (`x_2 = np.copy(x)`)."""
        x, v, *index = s.expr.args
        sub = ast.Subscript(ast.Name(s.target), self.index(dict(s.expr.params)["index"], index), ctx=ast.Store())
        write = layout.laid(ast.Assign([sub], self.expr(v), lineno=0))
        if s.augmented and x == Var(s.target):
            return write
        copy = layout.laid(ast.Assign([ast.Name(s.target)], ast.Call(self._attr("numpy", "copy"), [self.expr(x)], []),
                                      lineno=0))
        return f"{copy}\n{write}"

    def iteration(self, loop):
        """What a loop runs over: as written forward; reversed (or counted) backward."""
        it = loop.iter
        if loop.direction == "times":
            return f"range({self._text(it)})"
        if isinstance(it, Call) and it.prim == "range":
            text = f"range({', '.join(self._text(a) for a in it.args)})"
        else:
            text = self._text(it)
        if loop.direction == "reversed":
            return f"reversed({text}[:{loop.count}])" if loop.count else f"reversed({text})"
        return text


def _negative(e):
    """p where e is `-p` or a product led by a negative number, so `+= e` reads `-= p`."""
    return negative_part(e)


# Helpers the backward pass may call, written into the generated module only when used.
HELPERS = {
    "unbroadcast": ((), '''def unbroadcast(g, like):
    """Sum g over the axes NumPy broadcasting stretched, back to the shape of `like`."""
    shape = np.shape(like)
    if np.shape(g) == shape:
        return g
    if np.ndim(g) < len(shape):  # 0.0 (no gradient yet) or a product of it: stretch
        g = g + np.zeros(shape)
    g = np.sum(g, axis=tuple(range(np.ndim(g) - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and np.shape(g)[i] != 1)
    return np.sum(g, axis=axes, keepdims=True) if axes else g
'''),
    "matmul_shape": ((), '''def matmul_shape(a, b):
    """The shape of a @ b, from the shapes alone (vectors, matrices, stacks)."""
    sa, sb = np.shape(a), np.shape(b)
    a2 = sa if len(sa) > 1 else (1,) + sa
    b2 = sb if len(sb) > 1 else sb + (1,)
    shape = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(sb) == 1:
        shape = shape[:-1]
    if len(sa) == 1:
        shape = shape[:-2] + shape[-1:] if len(sb) > 1 else shape[:-1]
    return shape
'''),
    "matmul_grad_a": (("unbroadcast", "matmul_shape"), '''def matmul_grad_a(g, a, b):
    """Gradient of a @ b with respect to a, given g, the gradient of the product."""
    if np.ndim(b) == 2 and np.ndim(a) <= 2 and np.shape(g) == np.shape(a)[:-1] + np.shape(b)[1:]:
        return g @ b.T  # (g has the product's shape, nothing broadcast: the matrix case)
    g = unbroadcast(g, np.broadcast_to(0.0, matmul_shape(a, b)))
    if np.ndim(b) == 1:
        return unbroadcast(np.multiply.outer(g, b), a)
    if np.ndim(a) == 1:
        return unbroadcast((b @ np.expand_dims(g, -1))[..., 0], a)
    return unbroadcast(g @ np.swapaxes(b, -1, -2), a)
'''),
    "matmul_grad_b": (("unbroadcast", "matmul_shape"), '''def matmul_grad_b(g, a, b):
    """Gradient of a @ b with respect to b, given g, the gradient of the product."""
    if np.ndim(a) == 2 and np.ndim(b) <= 2 and np.shape(g) == np.shape(a)[:1] + np.shape(b)[1:]:
        return a.T @ g  # (g has the product's shape, nothing broadcast: the matrix case)
    g = unbroadcast(g, np.broadcast_to(0.0, matmul_shape(a, b)))
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return g * a
    if np.ndim(a) == 1:
        return unbroadcast(np.expand_dims(a, -1) * np.expand_dims(g, -2), b)
    if np.ndim(b) == 1:
        return unbroadcast((np.swapaxes(a, -1, -2) @ np.expand_dims(g, -1))[..., 0], b)
    return unbroadcast(np.swapaxes(a, -1, -2) @ g, b)
'''),
    "zero_at": ((), '''def zero_at(g, index):
    """A copy of g with zeros at `index`: the gradient of what `x[index] = v` overwrote."""
    if index is Ellipsis or (isinstance(index, tuple) and not index):  # all of x (a 0-d x too): nothing of it is left
        return np.zeros_like(g, dtype=float)
    if np.ndim(g) == 0:  # 0.0: no gradient has reached x yet, and zeros stay zeros
        return g
    g = np.array(g, dtype=float)
    g[index] = 0.0
    return g
'''),
    "last_writes": ((), '''def last_writes(g, index):
    """g[index] for the value v of `x[index] = v`, zero at each element of v that a later one
    overwrote: NumPy keeps the last write to a repeated index (`x[[0, 1, 1]] = v` keeps v[2]),
    so only that element reaches the result. Which one survives is NumPy's own answer: the
    elements' numbers written with the same index and read back."""
    order = np.full(np.shape(g), -1)
    picked = np.shape(order[index])
    numbers = np.arange(np.prod(picked, dtype=int)).reshape(picked)
    order[index] = numbers
    return np.where(order[index] == numbers, g[index], 0.0)
'''),
    "scatter": (("index_add",), '''def scatter(g, like, index):
    """Zeros shaped like `like` with g added at `index` (a repeated index adds up)."""
    out = np.zeros(np.shape(like))
    index_add(out, index, g)
    return out
'''),
    "index_add": ((), '''def index_add(out, index, g):
    """np.add.at(out, index, g): g added into out at index, each repeat of an element adding
    again; through np.bincount where the index is integer arrays, one for each axis of out
    (np.add.at's own loop is 2.5x slower: the gradient of a gather, `A[rows, permutations]`)."""
    parts = index if isinstance(index, tuple) else (index,)
    if not (len(parts) == np.ndim(out) and out.dtype == np.float64 and np.isrealobj(g)
            and all(isinstance(p, np.ndarray) and p.dtype.kind in "iu" for p in parts)):
        np.add.at(out, index, g)
        return
    parts = [np.where(p < 0, p + n, p) if p.min(initial=0) < 0 else p for p, n in zip(parts, np.shape(out))]
    flat = np.ravel_multi_index(parts, np.shape(out))  # (broadcast; an index out of range raises, as in np.add.at)
    weights = np.broadcast_to(g, np.shape(flat)).ravel()
    out += np.bincount(flat.ravel(), weights, minlength=out.size).reshape(np.shape(out))
'''),
    "prod_rows": ((), '''def prod_rows(g, x, axis=None, keepdims=False):
    """np.prod(x, axis) row by row: x with the reduced axes moved last and flattened into one
    (its rows), g with the reduced axes put back, the order the axes moved in and their shape."""
    axes = range(x.ndim) if axis is None else np.atleast_1d(axis)
    axes = [int(a) % x.ndim for a in axes]
    if axis is not None and not keepdims:
        g = np.expand_dims(g, tuple(axes))
    order = [i for i in range(x.ndim) if i not in axes] + axes  # the reduced axes last
    moved = np.transpose(x, order)
    return g, moved.reshape(moved.shape[: x.ndim - len(axes)] + (-1,)), order, moved.shape
'''),
    "prod_grad": (("prod_rows",), '''def prod_grad(g, x, axis=None, keepdims=False):
    """Gradient of np.prod(x, axis) given g, the gradient of the product: g times the
    product of the other elements. That is the product over the element, one division,
    where every |element| lies so near 1 that no partial product of a row can leave the
    normal floats (so none is 0 and the quotient is as exact as the product); elsewhere the
    products before and after each element (exact where x holds zeros, unlike prod / x)."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:  # (np.prod of a number along axis 0, which NumPy allows: the number itself)
        return g * np.ones_like(x)
    axes = tuple(range(x.ndim)) if axis is None else tuple(int(a) % x.ndim for a in np.atleast_1d(axis))
    span = 1000 // max(int(np.prod([x.shape[a] for a in axes])), 1)  # |element| in [2**-span, 2**span]
    if x.size and span and 2.0**-span <= np.abs(x).min() and np.abs(x).max() <= 2.0**span:  # (|x| not kept:
        # a large array held while the next ones are made costs more than making it twice)
        g = g if keepdims or axis is None else np.expand_dims(g, axes)
        return g * np.prod(x, axis=axes, keepdims=True) / x  # (g first: a small array times the product)
    g, rows, order, shape = prod_rows(g, x, axis, keepdims)
    ones = np.ones(rows.shape[:-1] + (1,))
    before = np.cumprod(np.concatenate([ones, rows[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, rows[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return g * np.transpose((before * after).reshape(shape), np.argsort(order))
'''),
    "concatenate_grad": ((), '''def concatenate_grad(g, parts, i, axis):
    """The piece of g that part i of np.concatenate(parts, axis) became."""
    sizes = [np.shape(part)[axis] for part in parts]
    start = sum(sizes[:i])
    piece = [slice(None)] * np.ndim(g)
    piece[axis] = slice(start, start + sizes[i])
    return g[tuple(piece)].copy()  # (a copy: the backward pass may add into it in place)
'''),
}

HELPERS[guards.CHECK] = ((), guards.HELPER)
HELPERS["einsum_matmul"] = EINSUM_MATMUL  # np.einsum of two operands, in BLAS (gradgen.codegen.spellings)
HELPERS.update(checkpointing.HELPERS)  # the schedule of a checkpointed loop
HELPERS.update(LIBRARY_HELPERS)  # those of the library rules (gradgen.rules_*)
HELPERS.update(SMOOTH_HELPER_SOURCES)  # the backward pass's helpers differentiated again (sum_to)
HELPERS.update({name: h for name, h in RECORD_HELPERS.items() if name not in HELPERS})  # Fields, fields_of, is_data


def helper_sources(used, records=False):
    """The definitions of the helpers in `used` and those they call, in a fixed order;
    `records`: those of a file that declares NamedTuples or dataclasses (gradgen.rules.records)."""
    table = {**HELPERS, **RECORD_HELPERS} if records else HELPERS
    needed, todo = set(), list(used)
    while todo:  # (and those they call in turn)
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(table[name][0])
    return [table[name][1] for name in table if name in needed]


def record_imports(used, records):
    """The modules the helpers in `used` import beside NumPy, for a file that declares classes."""
    return set(record_helpers.IMPORTS) if records and set(used) & set(RECORD_HELPERS) else set()


def function_text(name, params, docstring, sections, returns, emitter):
    """`def name(params): docstring; sections...; return returns`, black-formatted."""
    params, check = emitter.signature(name, params)
    head = f"def {name}({signature_text(params)}):\n{_indent(_docstring(docstring))}\n"
    units = []
    for header, stmts in sections:
        if header:
            units.append(f"    # {header}")
        units += [layout.indented(emitter.statement(s)) for s in stmts]
    units.append(f"    return {returns}")
    return format_function(head, units, check)


def signature_text(params):
    """`a, b=0.5, *, X, SCALE=SCALE`: the parameters as a `def` spells them."""
    parts = [f"{p.name}={p.function or literal(p.default)}" if p.has_default else p.name for p in params]
    first_keyword = next((i for i, p in enumerate(params) if p.keyword_only), None)
    if first_keyword is not None:
        parts.insert(first_keyword, "*")
    return ", ".join(parts)


CHUNK = 200  # statements black formats at a time


def format_function(head, units, check=None):
    """black on a function, a few hundred statements at a time; `check`, the entry check
    (gradgen.codegen.guards), goes in after the docstring as one line, however long.

    black's own cost grows faster than the file; a body statement's layout depends only on
    the statement and its indentation, so formatting the body in slices (each inside a
    stand-in `def`) gives the same text in time linear in the function's length. The
    statements already in black's layout (gradgen.codegen.layout) skip black altogether."""
    if FORMAT and layout.independent(units):
        text = layout.format_body(head, units, format_source, CHUNK)
    else:
        text = _format_in_slices(head, units)
    if check is not None:
        end = text.index('"""', text.index('"""') + 3) + 4
        text = f"{text[:end]}    {check}\n{text[end:]}"
    return text


def _format_in_slices(head, units):
    pieces = [format_source(head + "\n".join(units[:CHUNK]) + "\n")]
    for start in range(CHUNK, len(units), CHUNK):
        piece = format_source("def _():\n" + "\n".join(units[start:start + CHUNK]) + "\n")
        pieces.append(piece.split("\n", 1)[1])
    return "".join(pieces)


def expr_text(e, emitter):
    return ast.unparse(emitter.expr(e))


def literal(value):
    """A folded constant as the generated module writes it (`np.array([1.0, 0.8])`, `0.5`)."""
    return ast.unparse(Emitter("math", {})._const(value))


def _docstring(text):
    text = "\n".join(textwrap.fill(p, 84, break_long_words=False) for p in text.split("\n"))
    return '"""' + text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') + '\n"""'


def _indent(text):
    return "\n".join("    " + line if line else line for line in text.split("\n"))


def module_text(header, docstring, constants, helpers, functions, imports, declared=()):
    """The whole generated module, black-formatted; `header(body)` gives its first comment
    lines, which may describe the text after them (gradgen.codegen.freshness); `declared`:
    the records a default names (gradgen.codegen.record_defaults), after the constants."""
    parts = [_docstring(docstring).replace('\n"""', '"""'), ""]
    parts += ["import numpy as np" if m == "numpy" else f"import {m}" for m in sorted(imports)]
    if constants:
        parts.append("")
        parts += [f"{name} = {literal(value)}" for name, value in constants]
    for text in declared:
        parts += ["", "", text] if text.startswith(("class", "@")) else ["", text]
    pieces = [format_source("\n".join(parts) + "\n")]
    pieces += [format_source(helper) for helper in helpers]
    pieces += list(functions)  # formatted already, piece by piece
    body = "\n\n".join(pieces)
    return "".join(f"# {line}\n" for line in header(body)) + body


FORMAT = True  # black on every piece; the fuzzer turns it off (see unformatted)


@contextlib.contextmanager
def unformatted():
    """Inside, generated text is not passed through black: the fuzzer's way to spend its
    time on gradients (black is most of a compile's time, and checks by itself that its
    output's syntax tree is its input's)."""
    global FORMAT
    saved, FORMAT = FORMAT, False
    try:
        yield
    finally:
        FORMAT = saved


def format_source(text):
    """black's text of `text`, or `text` itself where formatting is off (see FORMAT)."""
    return _black(text) if FORMAT else text


@functools.lru_cache(maxsize=1024)
def _black(text):
    """black, with its default style: the output is the same bytes for the same input (so
    it is remembered: `check` compiles what `compile` just did, and the generated helpers
    are the same text in every module; black is most of a compile's time)."""
    import black  # (start-up: only a compile that formats pays its import)

    return black.format_str(text, mode=black.Mode())


def sigmoid_helper(name, ns, source_name, param="x"):
    """The logistic function, written into the generated module (which never imports
    gradgen), with the parameter name of the user's own helper."""
    exp = "np.exp" if ns == "numpy" else "math.exp"
    return (f"def {name}({param}):\n"
            f'    """The logistic sigmoid 1 / (1 + exp(-{param})), as defined in {source_name}."""\n'
            f"    return 1 / (1 + {exp}(-{param}))\n")

