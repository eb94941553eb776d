"""The sympy oracle: the IR evaluated with sympy symbols and differentiated by
`sympy.diff`, sharing nothing with the rule table but each primitive's `sympy` twin.

Scalar programs are followed as a trace (forward mode, statement by statement, the chain
rule applied numerically): each distinct statement is differentiated by sympy once and its
partial derivatives evaluated in floats at every execution (gradgen/symbolic_plans.py), or,
with `exact=True`, every execution differentiated and evaluated at 30 digits. Array
programs on a small instance run on object arrays of sympy expressions. A conditional
follows the branch the sample point takes.
"""

from __future__ import annotations

import ast
import math

import numpy as np

import sympy

from gradgen.emit import Emitter
from gradgen.ir import Assign, Break, Call, Cond, Const, Continue, For, If, Var, While, is_draw, variables
from gradgen.limits import time_limit
from gradgen.primitives import TABLE
from gradgen.symbolic_plans import Fallback, partials, plans_for
from gradgen.usercode import fresh


class _Unsupported(Exception):
    """The sympy side cannot follow this program (the table then shows '-')."""


def sympy_gradient(fn, module, point, wrt, exact=False):
    """d(result)/d(param) for each `wrt` param, following the path `point` takes.

    Forward mode over the executed trace: sympy differentiates each statement's expression
    (nothing from the rule table is used), and the chain rule between statements is applied
    numerically. A loop of any length stays linear in cost. By default each distinct
    statement is differentiated once and evaluated in floats wherever it runs (the plans are
    kept for the next point of `fn`); `exact=True` differentiates every execution and works
    at 30 digits throughout (the referee where the floats and the generated code disagree).
    """
    try:
        trace = _Trace(module, point, wrt, fn.params, None if exact else plans_for(fn))
        with np.errstate(all="ignore"):  # (a nan or an inf where the program makes one, unannounced)
            trace.run(fn.body)
            _, tangent = trace.evaluate(fn.result)
    except (_Unsupported, TypeError, ValueError, ZeroDivisionError, OverflowError, ArithmeticError):
        return [None] * len(wrt)
    return [_real(t) for t in tangent]


def _real(value):
    value = complex(value)
    return value.real if abs(value.imag) <= 1e-12 * max(1.0, abs(value.real)) else math.nan


def _python(value):
    """A 30-digit sympy number as a Python float (complex where it is not real)."""
    value = complex(value)
    return value.real if value.imag == 0 else value


def _number(value):
    """A constant for sympy; a whole float is an Integer, as sympy differentiates x**2.0 to
    2.0*x**2.0/x, which is nan at x = 0 (x**2 gives 2*x)."""
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return sympy.Integer(int(value))
    if float(value).is_integer() and abs(value) < 2**53:
        return sympy.Integer(int(value))
    return sympy.Float(float(value), 30)


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Trace:
    """Runs the IR on numbers, carrying d(value)/d(param) for every value.

    Values and every decision (branches, loop exits, which argument `max` picks) use
    ordinary floating point, exactly as the program does; only the derivatives come from
    sympy, statement by statement.
    """

    MAX_ITERATIONS = 1_000_000

    def __init__(self, module, point, wrt, params, plans=None):
        point = fresh(point)  # random states copied: the trace draws what the program draws
        self.wrt = list(wrt)
        self.zero = (0,) * len(self.wrt)
        self.values = dict(module.constants)
        self.tangents = {c: self.zero for c in module.constants}
        for p in params:
            if p.function:  # `act=np.tanh`: the code is compiled for it; no value of its own
                continue
            self.values[p.name] = point[p.name]
            self.tangents[p.name] = tuple(int(p.name == w) for w in self.wrt)
        self.derivatives = {}
        self.plans = plans  # None: every statement differentiated and evaluated at 30 digits
        self.compiled = {} if plans is None else plans.compiled
        self.emitter = Emitter("math", {"sigmoid": "sigmoid"})
        self.env = {"math": math, "np": np, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
                    **(_scipy() if "scipy" in module.source else {})}  # (scipy.stats: half a second)

    def run(self, stmts):
        for stmt in stmts:
            if isinstance(stmt, Assign):
                self.values[stmt.target], self.tangents[stmt.target] = self.evaluate(stmt.expr)
            elif isinstance(stmt, If):
                self.run(stmt.body if self.value(stmt.test) else stmt.orelse)
            elif isinstance(stmt, For):
                self._for(stmt)
            elif isinstance(stmt, While):
                for _ in range(self.MAX_ITERATIONS):
                    if not self.value(stmt.test) or not self._iteration(stmt.body):
                        break
                else:
                    raise _Unsupported("too many iterations")
            elif isinstance(stmt, Break):
                raise _Break
            elif isinstance(stmt, Continue):
                raise _Continue

    def _for(self, stmt):
        it = stmt.iter
        if isinstance(it, Call) and it.prim == "range":
            items = range(*[self.value(a) for a in it.args])
        elif isinstance(it, Var) and isinstance(self.values.get(it.name), tuple):
            items = self.values[it.name]
        elif isinstance(it, Const) and isinstance(it.value, tuple):  # for c in [1.0, 2.0]
            items = it.value
        elif isinstance(it, Call) and it.prim == "range_slice":  # for x in reversed(xs): range(len(xs))[::-1]
            items = self.value(it)
        else:
            raise _Unsupported("loop over an array")
        for item in items:
            self.values[stmt.target], self.tangents[stmt.target] = item, self.loop_tangent(item)
            if not self._iteration(stmt.body):
                break

    def loop_tangent(self, item):
        return self.zero

    def _iteration(self, body):
        """Run one iteration; False when it ended in `break`."""
        try:
            self.run(body)
        except _Continue:
            pass
        except _Break:
            return False
        return True

    def value(self, expr):
        """`expr` evaluated as the program evaluates it (Python and NumPy floats; NumPy's
        warnings are silenced by the caller, around the whole trace)."""
        code = self.compiled.get(id(expr))
        if code is None:
            if isinstance(expr, Call) and expr.prim == "append":  # hs.append(v), into a new list
                return self.value(expr.args[0]) + [self.value(expr.args[1])]
            if isinstance(expr, Call) and expr.prim == "setitem":  # x[index] = v, into a copy of x
                x, v, *index = expr.args
                out = np.copy(self.value(x))
                out[_index_of(self, dict(expr.params)["index"], index)] = self.value(v)
                return out
            text = ast.unparse(self.emitter.expr(expr))
            code = self.compiled[id(expr)] = (compile(text, "<trace>", "eval"), expr)
        return eval(code[0], self.env, self.values)  # noqa: S307 - gradgen's own IR

    def evaluate(self, expr):
        """(value, tangent): sympy differentiates `expr` in each input that has a tangent."""
        if isinstance(expr, Call) and expr.prim in _LIST_TANGENTS:  # a list's tangent: its elements'
            return self.value(expr), _LIST_TANGENTS[expr.prim](self, expr)
        value = self.value(expr)
        if is_draw(expr):  # data: evaluating it again would draw other numbers
            return value, self.zero
        if self.plans is not None:
            try:
                return value, self._combine(partials(self, expr, self.plans))
            except Fallback:
                return value, self._combine([(name, _python(p)) for name, p in self._exact_partials(expr)])
        tangent = [0] * len(self.wrt)
        for name, partial in self._exact_partials(expr):
            tangent = [t + partial * d for t, d in zip(tangent, self.tangents[name])]
        return value, tuple(tangent)

    def _exact_partials(self, expr):
        """[(name, d expr / d name)] at 30 digits, sympy differentiating `expr` as it is here
        (empty for a value no differentiated parameter reaches: an array drawn beside a
        scalar program, say)."""
        if not any(any(self.tangents.get(v.name, self.zero)) for v in variables(expr)):
            return []
        symbols = {}
        tree = self._symbolic(expr, symbols)
        numbers = {sym: sympy.Float(self.values[name], 30) for name, sym in symbols.items()}
        return [(name, self._partial(tree, sym).evalf(30, subs=numbers)) for name, sym in symbols.items()]

    def _combine(self, partials):
        """The chain rule: the sum of each input's tangent times its partial derivative."""
        tangent = None
        for name, p in partials:
            d = self.tangents[name]
            tangent = [p * x for x in d] if tangent is None else [t + p * x for t, x in zip(tangent, d)]
        return self.zero if tangent is None else tuple(tangent)

    def _partial(self, tree, sym):
        key = (tree, sym)
        if key not in self.derivatives:
            self.derivatives[key] = sympy.diff(tree, sym)
        return self.derivatives[key]

    def _symbolic(self, e, symbols):
        """`e` in sympy: symbols for inputs that carry a tangent, numbers for the rest."""
        if isinstance(e, Var):
            if all(t == 0 for t in self.tangents.get(e.name, self.zero)):
                return _number(self.values[e.name])
            if e.name not in symbols:
                symbols[e.name] = sympy.Symbol(f"v{len(symbols)}", real=True)
            return symbols[e.name]
        if isinstance(e, Const):
            return _number(e.value)
        if not any(any(self.tangents.get(v.name, self.zero)) for v in variables(e)):
            return _number(self.value(e))  # no parameter reaches it: a number (`np.sum(drawn)`)
        if isinstance(e, Cond):
            return self._symbolic(e.body if self.value(e.test) else e.orelse, symbols)
        prim = TABLE[e.prim]
        if prim.kind in ("piecewise", "integer"):
            return _number(self.value(e))
        if e.prim in ("max", "min"):  # the argument the program picks (the first extreme one)
            values = [self.value(a) for a in e.args]
            extreme = max(values) if e.prim == "max" else min(values)
            return self._symbolic(e.args[values.index(extreme)], symbols)
        if e.prim in _CUSTOM:  # a custom_vjp function: its own body (an estimator's: not compared)
            return self._symbolic(_custom_value(e), symbols)
        return prim.sympy(*[self._symbolic(a, symbols) for a in e.args])


_CUSTOM = ("custom_vjp", "custom_estimator")


def _custom_value(e):
    """The value of a custom_vjp call, which sympy differentiates as the function's body:
    the reference for its rule. An estimator's rule is deliberately not that derivative,
    so there is no sympy reference for it (the column shows '-')."""
    if e.prim == "custom_estimator":
        raise _Unsupported("a marked estimator")
    return e.args[0]


def _scipy():
    """`scipy`, with the modules the rule table calls loaded, for evaluating SciPy calls
    (an empty dict where SciPy or one of its modules is missing: those calls then fail and
    the sympy column shows '-')."""
    import importlib

    from gradgen.primitives import SCIPY_MODULES

    found = {}
    for module in SCIPY_MODULES:
        try:
            importlib.import_module(module)
            found["scipy"] = importlib.import_module("scipy")
        except ImportError:
            continue
    return found


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
        with time_limit(5.0, _Timeout, clock="cpu"):  # (processor time: the same answer on a loaded machine)
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
        return value, _as_object(value) if is_draw(expr) else self.symbolic(expr)

    def symbolic(self, e):
        if isinstance(e, Var):
            return self.tangents[e.name]
        if isinstance(e, Const):
            return e.value
        if isinstance(e, Cond):
            return self.symbolic(e.body if self.value(e.test) else e.orelse)
        prim = TABLE[e.prim]
        if prim.kind in ("piecewise", "integer", "attribute"):
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
        return np.vectorize(prim.sympy, otypes=[object])(*args) if any(np.ndim(a) for a in args) \
            else prim.sympy(*args)


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
    "sum": lambda t, e, a, p: np.sum(np.asarray(a[0], dtype=object), **p),
    "mean": lambda t, e, a, p: np.mean(np.asarray(a[0], dtype=object), **p),
    "prod": lambda t, e, a, p: np.prod(np.asarray(a[0], dtype=object), **p),
    "cumsum": lambda t, e, a, p: np.cumsum(np.asarray(a[0], dtype=object), **p),
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


# Python lists in the scalar trace: the tangent of a list is the list of its elements' tangents
_LIST_TANGENTS = {
    "list": lambda t, e: [t.evaluate(a)[1] for a in e.args],
    "append": lambda t, e: t.tangents[e.args[0].name] + [t.evaluate(e.args[1])[1]],
    "list_get": lambda t, e: t.tangents[e.args[0].name][t.value(e.args[1])],
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


def _index_of(trace, layout, exprs):
    return eval(compile(ast.unparse(trace.emitter.index(layout, exprs, as_value=True)),
                        "<index>", "eval"), trace.env, trace.values)  # noqa: S307 - gradgen's own IR


class _Symbolic:
    """IR -> sympy with named symbols (used to check the rule table against sympy.diff)."""

    def __init__(self, env, numbers):
        self.env = env
        self.numbers = numbers

    def expr(self, e):
        if isinstance(e, Var):
            return self.env[e.name]
        if isinstance(e, Const):
            return _number(e.value)
        if isinstance(e, Cond):
            return self.expr(e.body) if self.truth(e.test) else self.expr(e.orelse)
        prim = TABLE[e.prim]
        args = [self.expr(a) for a in e.args]
        if prim.kind in ("piecewise", "integer"):
            return _number_of(prim.sympy(*[self.numeric(a) for a in args]))
        return prim.sympy(*args)

    def numeric(self, value):
        if isinstance(value, bool):
            return value
        return float(sympy.sympify(value).subs(self.numbers).evalf(30))

    def truth(self, test):
        return bool(self.expr(test))


def _number_of(value):
    if isinstance(value, bool) or value in (sympy.true, sympy.false):
        return sympy.Integer(int(bool(value)))  # a comparison in arithmetic counts 0 or 1, as in NumPy
    return sympy.sympify(value)



class _Timeout(Exception):
    """sympy ran past its time on a large instance (the sympy column then shows '-')."""
