"""sympy's derivatives of each distinct statement, worked out once and evaluated in floats.

The scalar trace (gradgen/verify/symbolic.py) differentiates every statement it executes, and a
loop of 500 steps executes the same twenty statements 10,000 times. Here a statement is
written in sympy once, over fresh symbols: one per input that carries a tangent, and one
per *slot*, a value no parameter reaches (data, a constant, a comparison's outcome). sympy
differentiates it in each tangent input and the partial derivatives are lambdified to
plain Python (`math`), so that each execution evaluates sympy's formulas at its own
numbers in double precision. Nothing comes from the rule table: the formulas are sympy's.

What makes a statement's formula differ from one execution to the next is in the plan's
key: which of its inputs carry a tangent, the branch a conditional takes, the argument
`max` picks, and an exponent that is a whole number (x**n is differentiated as x**2 when
n is 2, as the 30-digit path does, since n*x**n/x is nan at x = 0). Whatever the floats
cannot answer (an exception, a nan or an inf, a complex number, a value that is not a
number) is raised as `Fallback`, and the trace asks sympy for that statement at 30 digits.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from itertools import repeat

import numpy as np
import sympy

from gradgen.ir.nodes import Call, Cond, Const, Var, subexpressions, variables
from gradgen.rules.table import TABLE

# Primitives whose sympy twin is a closed formula in its arguments (it never looks at their
# values), so that it can be written over symbols; any other primitive a parameter reaches
# leaves its statement to the 30-digit path.
FORMULAS = frozenset({
    "add", "sub", "mul", "div", "pow", "neg", "pos", "square", "reciprocal", "float",
    "exp", "expm1", "log", "logb", "log2", "log10", "log1p", "sqrt", "sigmoid",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "hypot", "sinh", "cosh", "tanh",
    "erf", "erfc", "abs",
})
# the types of the numbers a formula is evaluated at (anything else: an array, a list, a
# random state, goes to the 30-digit path, which says what it makes of it)
SCALARS = frozenset({float, int, bool, np.float64, np.float32, np.float16, np.int64, np.int32, np.int16,
                     np.int8, np.uint64, np.uint32, np.uint16, np.uint8, np.bool_})


def _number(value):
    """A constant for sympy; a whole float is an Integer, as sympy differentiates x**2.0 to
    2.0*x**2.0/x, which is nan at x = 0 (x**2 gives 2*x)."""
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return sympy.Integer(int(value))
    if float(value).is_integer() and abs(value) < 2**53:
        return sympy.Integer(int(value))
    return sympy.Float(float(value), 30)


class Fallback(Exception):
    """This statement, at these numbers, is left to sympy's evaluation at 30 digits."""


class _NoFormula(Exception):
    """A primitive outside FORMULAS is reached by a parameter: no plan for this shape."""


class Plans:
    """The plans of one IR function, shared by every point checked (the IR's expressions
    are told apart by identity, so the function is kept alive with them)."""

    def __init__(self, fn):
        self.fn = fn
        self.statics = {}  # id(expr) -> (distinct names read, whether a decision shapes it)
        self.skeletons = {}  # (id(expr), inputs with a tangent, decisions) -> _Skeleton or None
        self.compiled = {}  # id(expr) -> compiled code of its value (gradgen.verify.trace._Trace.value)
        self.formulas = {}  # (sympy expression, its arguments) -> its lambdified partial derivatives


_RECENT = OrderedDict()  # id(fn) -> Plans, the few functions checked last


def plans_for(fn):
    """The plans of `fn`, made on its first point and reused on the next."""
    plans = _RECENT.get(id(fn))
    if plans is None or plans.fn is not fn:
        plans = _RECENT[id(fn)] = Plans(fn)
        while len(_RECENT) > 8:
            _RECENT.popitem(last=False)
    return plans


def partials(trace, expr, plans):
    """[(name, d expr / d name)] at the trace's numbers, over the inputs of `expr` that carry
    a tangent; raises Fallback where the floats cannot say."""
    static = plans.statics.get(id(expr))
    if static is None:
        static = plans.statics[id(expr)] = _static(expr)
    names, decided = static
    active = tuple(map(any, map(trace.tangents.get, names, repeat(trace.zero))))
    if True not in active:  # a value no differentiated parameter reaches
        return []
    live = None
    if decided:
        live = {n for n, a in zip(names, active) if a}
        key = (id(expr), active, tuple(_decisions(trace, expr, live)))
    else:
        key = (id(expr), active)
    skeleton = plans.skeletons.get(key, plans)
    if skeleton is plans:  # (not yet made)
        live = live or {n for n, a in zip(names, active) if a}
        skeleton = plans.skeletons[key] = _Skeleton.make(trace, expr, live, plans.formulas)
    if skeleton is None:
        raise Fallback
    return skeleton.evaluate(trace)


def _static(expr):
    names = list(dict.fromkeys(v.name for v in variables(expr)))
    decided = any(isinstance(e, Cond) or (isinstance(e, Call) and e.prim in ("max", "min"))
                  for e in subexpressions(expr))
    return names, decided


def _reached(e, live):
    return any(v.name in live for v in variables(e))


def _pick(trace, e):
    """Which argument of max/min the program picks (the first extreme one)."""
    values = [trace.value(a) for a in e.args]
    return values.index(max(values) if e.prim == "max" else min(values))


def _decisions(trace, e, live):
    """The branches and picks that shape the formula of `e`, in the order _Skeleton.make
    meets them (only where a parameter reaches: elsewhere `e` is a slot)."""
    if isinstance(e, (Var, Const)) or not _reached(e, live):
        return
    if isinstance(e, Cond):
        taken = bool(trace.value(e.test))
        yield taken
        yield from _decisions(trace, e.body if taken else e.orelse, live)
    elif TABLE[e.prim].kind not in ("piecewise", "integer"):
        if e.prim in ("max", "min"):
            k = _pick(trace, e)
            yield k
            yield from _decisions(trace, e.args[k], live)
        else:
            for a in e.args:
                yield from _decisions(trace, a, live)


class _Skeleton:
    """A statement's formula for one key: sympy's expression over its tangent inputs and its
    slots, and the lambdified partial derivatives (one function per set of whole exponents)."""

    def __init__(self, tree, names, symbols, slots, exponents, formulas):
        self.tree, self.names, self.symbols = tree, names, symbols
        self.slots = slots  # [(symbol, Var name or expression)]
        self.exponents = exponents  # indices of slots that are an exponent
        self.functions = {}  # whole exponents -> lambdified partial derivatives
        self.formulas = formulas  # shared by the function's statements (k1 = f(y), k2 = f(y + h*k1)...)

    @classmethod
    def make(cls, trace, expr, live, formulas):
        builder = _Builder(trace, live)
        try:
            tree = builder.formula(expr)
        except _NoFormula:
            return None
        names = list(builder.symbols)
        exponents = [k for k, (sym, _) in enumerate(builder.slots) if sym in builder.exponents]
        return cls(tree, names, [builder.symbols[n] for n in names], builder.slots, exponents, formulas)

    def evaluate(self, trace):
        values = trace.values
        try:
            numbers = [values[n] for n in self.names]
            numbers += [values[s] if isinstance(s, str) else trace.value(s) for _, s in self.slots]
        except Exception as exc:  # noqa: BLE001 - the 30-digit path meets it again and says
            raise Fallback from exc
        if not SCALARS.issuperset(map(type, numbers)):
            raise Fallback
        whole = tuple(_whole(numbers[len(self.names) + k]) for k in self.exponents) if self.exponents else ()
        function = self.functions.get(whole)
        if function is None:
            function = self.functions[whole] = self._lambdify(whole)
        try:
            out = function(*numbers)
            finite = math.isfinite(sum(out))  # (a nan or an inf makes the sum one; a complex raises)
        except Exception as exc:  # noqa: BLE001 - ZeroDivisionError, OverflowError, ValueError, a complex
            raise Fallback from exc
        if not finite:
            raise Fallback
        return list(zip(self.names, out))

    def _lambdify(self, whole):
        tree = self.tree
        baked = {self.slots[k][0]: sympy.Integer(w) for k, w in zip(self.exponents, whole) if w is not None}
        if baked:
            tree = tree.subs(baked)
        arguments = self.symbols + [s for s, _ in self.slots]
        key = (tree, tuple(arguments))  # (symbols are named in order met: the same statement twice is equal)
        if key not in self.formulas:
            derivatives = [sympy.diff(tree, s) for s in self.symbols]
            self.formulas[key] = sympy.lambdify(arguments, derivatives, modules="math", docstring_limit=0)
        return self.formulas[key]


def _whole(value):
    """A whole-number exponent as an int (a formula of its own), else None (a symbol)."""
    value = float(value)
    return int(value) if value.is_integer() and abs(value) < 2**53 else None


class _Builder:
    """IR -> sympy over fresh symbols, as gradgen.verify.trace._Trace._symbolic writes it with
    numbers: a constant is written as a number; what no parameter reaches is a slot."""

    def __init__(self, trace, live):
        self.trace, self.live = trace, live
        self.symbols = {}  # Var name -> symbol, for inputs with a tangent
        self.slots = []
        self.slot_of = {}  # Var name or id(expression) -> symbol
        self.exponents = set()

    def formula(self, e):
        if isinstance(e, Var):
            if e.name in self.live:
                if e.name not in self.symbols:
                    self.symbols[e.name] = sympy.Symbol(f"x{len(self.symbols)}", real=True)
                return self.symbols[e.name]
            return self._slot(e.name, e.name)
        if isinstance(e, Const):
            return _number(e.value)
        if not _reached(e, self.live):
            return self._slot(id(e), e)
        if isinstance(e, Cond):
            return self.formula(e.body if self.trace.value(e.test) else e.orelse)
        if TABLE[e.prim].kind in ("piecewise", "integer"):
            return self._slot(id(e), e)
        if e.prim in ("max", "min"):
            return self.formula(e.args[_pick(self.trace, e)])
        if e.prim not in FORMULAS or e.params:
            raise _NoFormula(e.prim)
        args = [self.formula(a) for a in e.args]
        if e.prim == "pow" and args[1] in self.slot_of.values():
            self.exponents.add(args[1])
        return TABLE[e.prim].sympy(*args)

    def _slot(self, key, source):
        if key not in self.slot_of:
            self.slot_of[key] = sympy.Symbol(f"c{len(self.slots)}", real=True)
            self.slots.append((self.slot_of[key], source))
        return self.slot_of[key]
