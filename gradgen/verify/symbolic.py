"""The sympy oracle: the IR evaluated with sympy symbols and differentiated by
`sympy.diff`, sharing nothing with the rule table but each primitive's `sympy` twin.

Scalar programs are followed as a trace (forward mode, statement by statement, the chain
rule applied numerically): each distinct statement is differentiated by sympy once and its
partial derivatives evaluated in floats at every execution (gradgen/verify/symbolic_plans.py), or,
with `exact=True`, every execution differentiated and evaluated at 30 digits. A statement
that makes or reads an array, and array programs on a small instance, run on object arrays
of sympy expressions (gradgen/verify/symbolic_arrays.py). A conditional follows the branch the
sample point takes."""

from __future__ import annotations

import numpy as np
import sympy

from gradgen.ir.nodes import Cond, Const, Var
from gradgen.rules.table import TABLE
from gradgen.verify.symbolic_arrays import ScalarTrace
from gradgen.verify.symbolic_plans import _number, plans_for
from gradgen.verify.trace import _real, _Unsupported


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
        trace = ScalarTrace(module, point, wrt, fn.params, None if exact else plans_for(fn))
        with np.errstate(all="ignore"):  # (a nan or an inf where the program makes one, unannounced)
            trace.run(fn.body)
            _, tangent = trace.evaluate(fn.result)
    except (_Unsupported, TypeError, ValueError, ZeroDivisionError, OverflowError, ArithmeticError):
        return [None] * len(wrt)
    return [_real(t) for t in tangent]


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
