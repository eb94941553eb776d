"""The sympy oracle on arrays (gradgen/verify/symbolic.py is the trace it builds on): NumPy run on
object arrays of sympy expressions.

Two uses. An array program on a small instance runs whole, every element of every array
parameter a symbol, and sympy differentiates its one result (`sympy_array_gradient`). And
the scalar trace, which carries a number's tangent from statement to statement, meets a
statement that makes or reads an array (a state vector, `np.array([0.0, c * 0.0])`, a
list of them): that one statement runs here on symbols, one per element of each input
that carries a tangent, and its elements' derivatives give the tangent of its value, an
array of the value's shape (`_array_tangent`). An element sympy folds to a constant holds
no symbol: its derivative is a 0 in that array, never a question sympy cannot answer.
"""

from __future__ import annotations

import time

import numpy as np
import sympy

from gradgen.ir.nodes import Cond, Const, Var, as_written
from gradgen.limits import time_limit
from gradgen.rules.table import TABLE, casts_to_int
from gradgen.verify.trace import _CUSTOM, _custom_value, _index_of, _real, _Trace, _Unsupported

SMALL_INSTANCE = 12  # array elements: up to this many, sympy differentiates the whole function


def sympy_array_gradient(fn, module, point, wrt):
    """For array programs on a small instance: every element of every array parameter is a
    sympy symbol, the IR runs on object arrays of sympy expressions (decisions such as which
    element is the maximum follow the numbers), and sympy.diff gives the gradient of each
    element. Returns {parameter: array of floats}, or {} where the instance is too large or
    the program does something this interpreter does not follow."""
    if sum(int(np.size(point[w])) for w in wrt) > SMALL_INSTANCE:
        return {}
    symbols = {}
    for w in wrt:
        shape = np.shape(point[w])
        flat = [sympy.Symbol(f"{w}_{k}", real=True) for k in range(int(np.prod(shape)))]
        symbols[w] = np.array(flat, dtype=object).reshape(shape) if shape else flat[0]
    numbers = {}
    for w in wrt:
        for sym, value in zip(np.ravel(np.asarray(symbols[w], dtype=object)), np.ravel(point[w])):
            numbers[sym] = sympy.Float(float(value), 30)
    try:
        with time_limit(SYMPY_SECONDS, _Timeout, clock="cpu"):  # (processor time: the same answer on a loaded machine)
            return _sympy_array_gradient(fn, module, point, wrt, symbols, numbers)
    except _Timeout:
        return {}


def _sympy_array_gradient(fn, module, point, wrt, symbols, numbers):
    try:
        trace = _ArrayTrace(module, point, wrt, fn.params, symbols)
        with np.errstate(all="ignore"):
            trace.run(fn.body)
            result = trace.symbolic(fn.result)
        result = sympy.sympify(result.item() if hasattr(result, "item") else result)
        out = {}
        for w in wrt:
            flat = np.ravel(np.asarray(symbols[w], dtype=object))
            values = [_real(sympy.diff(result, sym).evalf(20, subs=numbers)) for sym in flat]
            out[w] = np.array(values).reshape(np.shape(point[w]))
        return out
    except (_Unsupported, TypeError, ValueError, ZeroDivisionError, AttributeError, IndexError, KeyError):
        return {}


class ScalarTrace(_Trace):
    """The scalar trace, with a statement on arrays followed element by element."""

    def array_tangent(self, expr, value):
        return _array_tangent(self, expr, value)


class _ArrayTrace(_Trace):
    """The trace with sympy expressions (object arrays for arrays) in place of tangents."""

    def __init__(self, module, point, wrt, params, symbols):
        super().__init__(module, point, [], params)
        for name, value in self.values.items():
            self.tangents[name] = symbols.get(name, _as_object(value))

    def loop_tangent(self, item):
        return _as_object(item)

    def evaluate(self, expr):
        value = self.value(expr)
        return value, _as_object(value) if as_written(expr) else self.symbolic(expr)

    def symbolic(self, e):
        if isinstance(e, Var):
            return self.tangents[e.name]
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Cond):
            return self.symbolic(e.body if self.value(e.test) else e.orelse)
        prim = TABLE[e.prim]
        if prim.kind in ("piecewise", "integer", "attribute") or casts_to_int(e):
            return _as_object(self.value(e))
        if e.prim in _CUSTOM:
            return self.symbolic(_custom_value(e))
        args = [self.symbolic(a) for a in e.args]
        params = dict(e.params)
        if e.prim in _ARRAY_OPS:
            return _ARRAY_OPS[e.prim](self, e, args, params)
        if e.prim in _CHOICES:
            numbers = [self.value(a) for a in e.args]
            return _CHOICES[e.prim](args, numbers)
        if prim.sympy is None or params:
            raise _Unsupported(e.prim)
        if any(np.ndim(a) for a in args):
            if not prim.elementwise:  # (its twin is the number's case: cumprod of a number is the number)
                raise _Unsupported(e.prim)
            return np.vectorize(prim.sympy, otypes=[object])(*args)
        return prim.sympy(*args)


class _Statement(_ArrayTrace):
    """One statement of the scalar trace run on object arrays: each element of an input
    that carries a tangent is a symbol, every other input its numbers."""

    def __init__(self, trace, symbols):  # (no __init__ of the traces: the statement's own inputs only)
        self.values, self.compiled, self.emitter, self.env = trace.values, trace.compiled, trace.emitter, trace.env
        self.tangents = _Inputs(symbols, trace.values)


class _Inputs(dict):
    """A statement's inputs for _Statement: the symbols given, else the numbers (as object
    arrays, made when read)."""

    def __init__(self, symbols, values):
        super().__init__(symbols)
        self.values = values

    def __missing__(self, name):
        return _as_object(self.values[name])


def _size(value):
    """How many numbers a value holds (a list's, its elements')."""
    if isinstance(value, (list, tuple)):
        return sum(map(_size, value))
    return int(np.size(value)) if isinstance(value, np.ndarray) else 1


def _active(tangent):
    """Whether a tangent (a tuple per parameter, of numbers or arrays; a list's, a list of
    them) is anything but zeros."""
    if isinstance(tangent, list):
        return any(map(_active, tangent))
    return any(np.any(np.asarray(t) != 0) for t in tangent)


SYMPY_SECONDS = 5.0  # processor time sympy may take for one array program's gradient, past which check uses
# finite differences alone (a loop unrolled symbolically grows fast; the suite gives it less: tests/conftest.py)
MAX_ELEMENTS = 200  # elements of a statement's arrays, past which sympy does not follow it (seconds each)
ARRAY_SECONDS = 5.0  # processor time a trace spends on such statements, past which sympy gives up


def _array_tangent(trace, expr, value):
    """_element_tangent, within the trace's time for statements on arrays (processor time: the
    same answer on a loaded machine)."""
    active = [name for name in trace._names(expr) if _active(trace.tangents.get(name, trace.zero))]
    if not active:  # (data: however large, no derivative to take)
        return trace.zero
    if _size(value) + sum(_size(trace.values.get(name)) for name in trace._names(expr)) > MAX_ELEMENTS:
        raise _Unsupported("a statement on too many elements")
    if trace.array_seconds > ARRAY_SECONDS:
        raise _Unsupported("statements on arrays past their time")
    start = time.process_time()
    try:
        return _element_tangent(trace, expr, active)
    except (AttributeError, IndexError, KeyError) as exc:  # (as _sympy_array_gradient: NumPy on objects refused)
        raise _Unsupported(str(exc)) from exc
    finally:
        trace.array_seconds += time.process_time() - start


def _element_tangent(trace, expr, active):
    """The tangent of a statement that computes with arrays, lists or makes one: the
    statement runs once on object arrays of symbols (one per element of each input that
    carries a tangent) and sympy differentiates each element of its value in the symbols
    that element holds; the chain rule contracts these derivatives with the inputs'
    tangents. An element sympy folds to a constant (`np.array([0.0, c * 0.0])`) holds no
    symbol, and its derivative is 0: a zero of the value's shape, like any other element."""
    symbols, pieces, numbers, where = {}, [], {}, {}
    for name in active:
        tangent = trace.tangents[name]
        held = trace.values[name]
        parts = list(zip(held, tangent)) if isinstance(held, list) else [(held, tangent)]
        made = []
        for part, part_tangent in parts:
            if isinstance(part, list):
                raise _Unsupported("a list of lists")
            flat = [sympy.Symbol(f"v{len(where) + k}", real=True) for k in range(int(np.size(part)))]
            where.update((sym, (len(pieces), k)) for k, sym in enumerate(flat))
            numbers.update(zip(flat, (sympy.Float(float(x), 30) for x in np.ravel(part))))
            shape = np.shape(part)
            dtype = object if trace.plans is None else float
            pieces.append([np.ravel(np.broadcast_to(np.asarray(t, dtype=dtype), shape)) for t in part_tangent])
            made.append(np.array(flat, dtype=object).reshape(shape) if shape else flat[0])
        symbols[name] = made if isinstance(held, list) else made[0]
    out = np.asarray(_Statement(trace, symbols).symbolic(expr), dtype=object)
    exact = trace.plans is None  # (30 digits throughout, as the scalar statements have them)
    result = [np.zeros(out.shape, dtype=object if exact else float) for _ in trace.wrt]
    for i, element in enumerate(np.ravel(out)):
        element = sympy.sympify(element)
        for sym in element.free_symbols & where.keys():
            piece, k = where[sym]
            weights = [t[k] for t in pieces[piece]]
            if any(weights):
                d = sympy.diff(element, sym).evalf(30, subs=numbers)
                d = d if exact else _real(d)
                for r, weight in zip(result, weights):
                    r.flat[i] += d * weight
    return tuple(r if out.shape else r.item() if exact else float(r) for r in result)


def _as_object(value):
    if isinstance(value, np.ndarray):
        return value.astype(object)
    return value


def _select(mask, a, b):
    return np.where(mask, a, b) if np.ndim(mask) or np.ndim(a) or np.ndim(b) else (a if mask else b)


def _extreme(args, numbers, params, pick):
    x, values = np.asarray(args[0], dtype=object), np.asarray(numbers[0])
    axis, keepdims = params.get("axis"), params.get("keepdims", False)
    if axis is None:
        return np.ravel(x)[int(pick(values))]
    if isinstance(axis, tuple):
        raise _Unsupported("extreme over several axes")
    chosen = np.take_along_axis(x, np.expand_dims(pick(values, axis=axis), axis), axis)
    return chosen if keepdims else np.squeeze(chosen, axis=axis)


_CHOICES = {  # which argument or element the numbers select
    "maximum": lambda a, n: _select(np.asarray(n[0]) >= np.asarray(n[1]), a[0], a[1]),
    "minimum": lambda a, n: _select(np.asarray(n[0]) <= np.asarray(n[1]), a[0], a[1]),
    "abs": lambda a, n: _select(np.asarray(n[0]) >= 0, a[0], -np.asarray(a[0], dtype=object)),
    "where": lambda a, n: _select(np.asarray(n[0], dtype=bool), a[1], a[2]),
    "clip": lambda a, n: _select(np.asarray(n[0]) < np.asarray(n[1]), a[1],
                                 _select(np.asarray(n[0]) > np.asarray(n[2]), a[2], a[0])),
    "max": lambda a, n: a[n.index(max(n))],
    "min": lambda a, n: a[n.index(min(n))],
}

_ARRAY_OPS = {  # NumPy on object arrays of sympy expressions
    "add": lambda t, e, a, p: a[0] + a[1],
    "sub": lambda t, e, a, p: a[0] - a[1],
    "mul": lambda t, e, a, p: a[0] * a[1],
    "div": lambda t, e, a, p: a[0] / a[1],
    "pow": lambda t, e, a, p: a[0] ** a[1],
    "neg": lambda t, e, a, p: -a[0],
    "pos": lambda t, e, a, p: a[0],
    "matmul": lambda t, e, a, p: np.dot(a[0], a[1]),
    "outer": lambda t, e, a, p: np.outer(a[0], a[1]),
    "inner": lambda t, e, a, p: np.inner(a[0], a[1]),
    "vdot": lambda t, e, a, p: np.dot(np.ravel(a[0]), np.ravel(a[1])),
    "sum": lambda t, e, a, p: np.sum(np.asarray(a[0], dtype=object), **p),
    "mean": lambda t, e, a, p: np.mean(np.asarray(a[0], dtype=object), **p),
    "prod": lambda t, e, a, p: np.prod(np.asarray(a[0], dtype=object), **p),
    "cumsum": lambda t, e, a, p: np.cumsum(np.asarray(a[0], dtype=object), **p),
    "cumprod": lambda t, e, a, p: np.cumprod(np.asarray(a[0], dtype=object), **p),
    "swapaxes": lambda t, e, a, p: np.swapaxes(np.asarray(a[0], dtype=object), p["axis1"], p["axis2"]),
    "copy": lambda t, e, a, p: np.array(a[0], dtype=object) if np.ndim(a[0]) else a[0],
    "amax": lambda t, e, a, p: _extreme(a, [t.value(e.args[0])], p, np.argmax),
    "amin": lambda t, e, a, p: _extreme(a, [t.value(e.args[0])], p, np.argmin),
    "norm": lambda t, e, a, p: sympy.sqrt(np.sum(np.asarray(a[0], dtype=object) ** 2)),
    "sum_list": lambda t, e, a, p: np.sum(np.array(a, dtype=object)),
    "T": lambda t, e, a, p: np.asarray(a[0], dtype=object).T,
    "transpose": lambda t, e, a, p: np.transpose(a[0], p.get("axes")),
    "reshape": lambda t, e, a, p: np.reshape(a[0], t.value(e.args[1])),
    "broadcast_to": lambda t, e, a, p: np.broadcast_to(_as_object(a[0]), t.value(e.args[1])),
    "expand_dims": lambda t, e, a, p: np.expand_dims(a[0], **p),
    "squeeze": lambda t, e, a, p: np.squeeze(a[0], **p),
    "ravel": lambda t, e, a, p: np.ravel(a[0]),
    "flip": lambda t, e, a, p: np.flip(a[0], **p),
    "concatenate": lambda t, e, a, p: np.concatenate([np.asarray(x, dtype=object) for x in a], **p),
    "stack": lambda t, e, a, p: np.stack([np.asarray(x, dtype=object) for x in a], **p),
    "array": lambda t, e, a, p: np.asarray(a[0], dtype=object),
    "getitem": lambda t, e, a, p: _index_objects(t, e, a[0]),
    "setitem": lambda t, e, a, p: _write_objects(t, e, a[0], a[1]),
}


_ARRAY_OPS.update({
    "list": lambda t, e, a, p: list(a),
    "append": lambda t, e, a, p: list(a[0]) + [a[1]],
    "list_get": lambda t, e, a, p: a[0][t.value(e.args[1])],
    "stack_list": lambda t, e, a, p: np.stack([np.asarray(x, dtype=object) for x in a[0]], **p),
    "tree_get": lambda t, e, a, p: _along(a[0], [t.value(step) for step in e.args[1:]]),
    "concatenate_list": lambda t, e, a, p: np.concatenate([np.asarray(x, dtype=object) for x in a[0]], **p),
    "vstack_list": lambda t, e, a, p: np.vstack([np.asarray(x, dtype=object) for x in a[0]]),
    "hstack_list": lambda t, e, a, p: np.hstack([np.asarray(x, dtype=object) for x in a[0]]),
    "array_list": lambda t, e, a, p: np.array([np.asarray(x, dtype=object) for x in a[0]], dtype=object),
})


def _along(value, path):
    """value[k1][k2]...: a part of a structured parameter (an array's, given one)."""
    for step in path:
        value = value[step]
    return value


def _write_objects(trace, e, x, v):
    """x with v written at the index, on a copy of the object array (x itself unchanged)."""
    out = np.array(x, dtype=object)
    out[_index_of(trace, dict(e.params)["index"], e.args[2:])] = v
    return out


def _index_objects(trace, e, x):
    """x[index] on the object array, the index evaluated as the program evaluates it."""
    return np.asarray(x, dtype=object)[_index_of(trace, dict(e.params)["index"], e.args[1:])]


class _Timeout(Exception):
    """sympy ran past its time on a large instance (the sympy column then shows '-')."""
