"""The scalar trace the sympy oracle follows (gradgen/verify/symbolic.py runs it): the IR
executed on numbers at the sample point, each statement's tangent worked out by sympy (its
partial derivatives planned once, gradgen/verify/symbolic_plans.py, or exactly) and the chain
rule applied numerically between statements. A statement on arrays is the array trace's
(gradgen/verify/symbolic_arrays.py subclasses this one with `array_tangent`): this module
knows nothing of it, so the three import in one direction."""

from __future__ import annotations

import ast
import importlib
import math

import numpy as np
import sympy

from gradgen.codegen import record_defaults
from gradgen.codegen.emit import Emitter
from gradgen.codegen.spellings import EINSUM_MATMUL
from gradgen.ir.nodes import Assign, Break, Call, Cond, Const, Continue, For, If, Spelled, Var, While, as_written, variables
from gradgen.rules.table import SCIPY_MODULES, TABLE, casts_to_int
from gradgen.verify.symbolic_plans import Fallback, _number, partials
from gradgen.verify.usercode import fresh


class _Unsupported(Exception):
    """The sympy side cannot follow this program (the table then shows '-')."""


def _real(value):
    value = complex(value)
    return value.real if abs(value.imag) <= 1e-12 * max(1.0, abs(value.real)) else math.nan


def _python(value):
    """A 30-digit sympy number as a Python float (complex where it is not real)."""
    value = complex(value)
    return value.real if value.imag == 0 else value


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
        records = {n: record_defaults.instance(module, n) for n in getattr(module, "record_constants", {})
                   if n not in module.constants}  # (`arm=DEFAULT_ARM`, `arm = DEFAULT_ARM`: data the trace reads)
        self.values.update(records)
        self.tangents = {c: self.zero for c in [*module.constants, *records]}
        for p in params:
            if p.function:  # `act=np.tanh`: the code is compiled for it; no value of its own
                continue
            if p.name not in point and isinstance(p.default, Spelled) and p.default.text in records:
                self.values[p.name], self.tangents[p.name] = records[p.default.text], self.zero
                continue
            self.values[p.name] = point[p.name]
            self.tangents[p.name] = tuple(int(p.name == w) for w in self.wrt)
        self.derivatives = {}
        self.names = {}  # id(expr) -> the names it reads
        self.array_seconds = 0.0  # spent in _array_tangent
        self.plans = plans  # None: every statement differentiated and evaluated at 30 digits
        self.compiled = {} if plans is None else plans.compiled
        self.emitter = Emitter("math", {"sigmoid": "sigmoid"})
        self.env = {"math": math, "np": np, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
                    **(_scipy() if "scipy" in module.source else {})}  # (scipy.stats: half a second)
        self.env["einsum_matmul"] = _EINSUM_MATMUL  # (np.einsum of two or more operands is spelled so)
        for made in getattr(module, "ode_functions", {}).values():  # odeint(f, ...): f as the file writes it
            for text in made.texts:
                exec(text, self.env)  # noqa: S102 - the user's own function (gradgen.frontend.odeint)

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
            # a lambda or comprehension of the user's text reads the trace's values as globals
            # (a nested scope sees no eval locals)
            nested = any(isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
                         for n in ast.walk(ast.parse(text, mode="eval")))
            code = self.compiled[id(expr)] = (compile(text, "<trace>", "eval"), expr, nested)
            if as_written(expr):  # the user's own text: the modules it names
                _import_into(self.env, dict(expr.params)["modules"])
        if code[2]:
            return eval(code[0], {**self.env, **self.values})  # noqa: S307 - the user's own text
        return eval(code[0], self.env, self.values)  # noqa: S307 - gradgen's own IR

    def array_tangent(self, expr, value):
        """A statement on arrays: followed element by element by the array trace's subclass
        (gradgen/verify/symbolic_arrays.py), which sympy_gradient runs."""
        raise _Unsupported("a statement on arrays")

    def evaluate(self, expr):
        """(value, tangent): sympy differentiates `expr` in each input that has a tangent."""
        if isinstance(expr, Call) and expr.prim in _LIST_TANGENTS:  # a list's tangent: its elements'
            return self.value(expr), _LIST_TANGENTS[expr.prim](self, expr)
        value = self.value(expr)
        if as_written(expr):  # data: evaluating it again would draw other numbers
            return value, self.zero
        if _holds_array(value) or any(_holds_array(self.values.get(n)) for n in self._names(expr)):
            if isinstance(expr, Var):  # (`hs = [h0]`: h0's own tangent)
                return value, self.tangents.get(expr.name, self.zero)
            return value, self.array_tangent(expr, value)
        if self.plans is not None:
            try:
                return value, self._combine(partials(self, expr, self.plans))
            except Fallback:
                pass
        exact = self._exact_partials(expr)
        if exact is None:  # a number made from an array of numbers (np.sum(np.array([c, 0.0])))
            return value, self.array_tangent(expr, value)
        if self.plans is not None:
            return value, self._combine([(name, _python(p)) for name, p in exact])
        tangent = [0] * len(self.wrt)
        for name, partial in exact:
            tangent = [t + partial * d for t, d in zip(tangent, self.tangents[name])]
        return value, tuple(tangent)

    def _names(self, expr):
        """The distinct names `expr` reads (worked out once per expression)."""
        names = self.names.get(id(expr))
        if names is None:
            names = self.names[id(expr)] = tuple(dict.fromkeys(v.name for v in variables(expr)))
        return names

    def _exact_partials(self, expr):
        """[(name, d expr / d name)] at 30 digits, sympy differentiating `expr` as it is here
        (empty for a value no differentiated parameter reaches: an array drawn beside a
        scalar program, say); None where sympy's scalar twins cannot write `expr` (a number made
        from an array: np.sum(np.array([c, 0.0]))), which _array_tangent follows element by element."""
        if not any(any(self.tangents.get(v.name, self.zero)) for v in variables(expr)):
            return []
        symbols = {}
        try:
            tree = self._symbolic(expr, symbols)
        except TypeError:  # (a tuple, sympy's twin of np.stack, in arithmetic)
            return None
        if not isinstance(tree, sympy.Expr):  # sympy's twins made an array on the way to a number
            return None
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
        if prim.kind in ("piecewise", "integer") or casts_to_int(e):
            return _number(self.value(e))
        if e.prim in ("max", "min"):  # the argument the program picks (the first extreme one)
            values = [self.value(a) for a in e.args]
            extreme = max(values) if e.prim == "max" else min(values)
            return self._symbolic(e.args[values.index(extreme)], symbols)
        if e.prim in _CUSTOM:  # a custom_vjp function: its own body (an estimator's: not compared)
            return self._symbolic(_custom_value(e), symbols)
        return prim.sympy(*[self._symbolic(a, symbols) for a in e.args])


_CUSTOM = ("custom_vjp", "custom_estimator")
_HELPER_ENV = {"np": np}
exec(EINSUM_MATMUL[1], _HELPER_ENV)  # noqa: S102 - gradgen's own helper text, once
_EINSUM_MATMUL = _HELPER_ENV["einsum_matmul"]


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
    found = {}
    for module in SCIPY_MODULES:
        try:
            importlib.import_module(module)
            found["scipy"] = importlib.import_module("scipy")
        except ImportError:
            continue
    return found


# Python lists in the scalar trace: the tangent of a list is the list of its elements' tangents
_LIST_TANGENTS = {
    "list": lambda t, e: [t.evaluate(a)[1] for a in e.args],
    "append": lambda t, e: t.tangents[e.args[0].name] + [t.evaluate(e.args[1])[1]],
    "list_get": lambda t, e: t.tangents[e.args[0].name][t.value(e.args[1])],
}


def _index_of(trace, layout, exprs):
    return eval(compile(ast.unparse(trace.emitter.index(layout, exprs, as_value=True)),
                        "<index>", "eval"), trace.env, trace.values)  # noqa: S307 - gradgen's own IR


def _holds_array(value):
    """Whether the scalar trace must follow `value` element by element: an array of one or
    more axes, or a list (whose elements may be arrays)."""
    return isinstance(value, list) or (isinstance(value, np.ndarray) and value.ndim > 0)


def _import_into(env, modules):
    """`scipy.special`, `mylib`: imported, each under its first name (as the generated module
    spells it), for the text of an expression kept as the source wrote it."""
    for module in modules:
        top = {"numpy": "np"}.get(module, module.split(".")[0])
        if top not in env:
            importlib.import_module(module)
            env[top] = importlib.import_module(module.split(".")[0])
        else:
            importlib.import_module(module)
