"""Hypothesis strategies for random straight-line scalar programs, as source text.

`programs()` draws a module holding one `def f(a, b, ...)` (2-4 float parameters, 1-8
statements, one returned value) over gradgen's scalar primitives, together with a sample
point. Every program is correct input, so any mismatch it finds is a bug in gradgen:

* Domains are guarded by construction. Every expression carries an interval that bounds
  its value over the whole parameter box (each parameter in [-BOX, BOX]), so a `log`,
  `sqrt`, `/`, `asin` or variable-exponent `**` only ever receives an argument whose
  interval lies safely inside the domain (`log(1 + u * u)`, `(2 + sin(b)) ** tanh(a)`,
  `asin(0.9 * tanh(c))`). Intervals also keep magnitudes bounded: anything whose bound
  grows past LIMIT is squashed (`tanh`, `sin`, `atan`, `erf`) before it is used again.
* Kinks and ties are avoided at the sample point. The point is drawn first and the program
  is evaluated alongside its generation, so `abs`, `min`, `max`, `hypot` and the comparison
  of a conditional expression are only emitted when their arguments are at least KINK
  apart at the point; otherwise the argument is shifted by a constant. Central finite
  differences and sympy's Piecewise then agree with the branch the program takes.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

BOX = 1.5  # sample points are drawn from [-BOX, BOX] in every parameter
LIMIT = 8.0  # an expression bounded by more than this is squashed before reuse
KINK = 0.05  # minimum distance from a kink or a tie at the sample point (the checker's
# finite differences step up to 2e-3 * max(1, |x|) either side of it)
PARAMS = ("a", "b", "c", "d")
# Plain local names, plus a few that a careless compiler could collide with its own.
LOCALS = ("u", "v", "w", "t", "s", "z", "h", "y")
TRICKY_LOCALS = ("out", "g", "L", "dL_du", "df_da", "df_du", "grad", "result", "f")

# Precedence levels for printing with just the parentheses Python needs.
ATOM, POW, UNARY, MUL, ADD, CMP, IFEXP = 100, 14, 13, 12, 11, 6, 1


@dataclass(frozen=True)
class Program:
    """A generated module and the point to check it at."""

    source: str
    point: dict[str, float]
    wrt: tuple[str, ...] | None = None  # None: gradgen's default choice

    def __repr__(self) -> str:
        return f"Program(point={self.point!r}, wrt={self.wrt!r}, source=\n{self.source})"


@dataclass(frozen=True)
class Expr:
    """Expression text, its precedence, and an interval bounding its value on the box."""

    text: str
    lo: float
    hi: float
    prec: int = ATOM

    @property
    def bound(self) -> float:
        return max(abs(self.lo), abs(self.hi))


def wrap(e: Expr, level: int) -> str:
    """The text of `e` as an operand at precedence `level`, parenthesised if needed."""
    return e.text if e.prec > level else f"({e.text})"


def hull(*values: float) -> tuple[float, float]:
    return min(values), max(values)


# NumPy spellings that differ from math's; erf has none, so numpy-style programs use math.erf.
NUMPY_SPELLINGS = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2",
                   "pow": "power", "erf": None}


class HypothesisChoices:
    """Every random choice of the generator, drawn from hypothesis (so it can shrink)."""

    def __init__(self, draw):
        self.draw = draw

    def choice(self, options):
        return self.draw(st.sampled_from(options))

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def coordinate(self) -> float:
        return self.draw(st.floats(-BOX, BOX, allow_nan=False, allow_subnormal=False))


class SeededChoices:
    """The same choices from a seeded `random.Random`, for use outside hypothesis."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def choice(self, options):
        return self.rng.choice(list(options))

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def coordinate(self) -> float:
        return self.rng.uniform(-BOX, BOX)


class _Builder:
    """Draws one program, statement by statement, evaluating it at the point as it goes."""

    def __init__(self, choices, style: str, point: dict[str, float]):
        self.choices = choices
        self.style = style  # "math", "numpy" (np.* spellings) or "from" (from math import ...)
        self.imported: set[str] = set()  # names used under the "from" style
        self.uses_math = False
        self.env: dict[str, float] = dict(point)  # current value of every variable
        self.box: dict[str, tuple[float, float]] = {p: (-BOX, BOX) for p in point}
        self.namespace = {"math": math, "np": np, "__builtins__": __builtins__}
        self.readonly: set[str] = set()  # module constants and integer parameters
        self.int_params: list[str] = []  # integer parameters, used only as exponents
        self.recent: list[str] = []  # assigned names, latest last

    # -- helpers ---------------------------------------------------------------------

    def choice(self, options):
        return self.choices.choice(options)

    def chance(self, p: float) -> bool:
        return self.choices.integer(0, 99) < p * 100

    def value(self, e: Expr) -> float:
        """The value of `e` at the sample point, given the statements so far."""
        return float(eval(e.text, self.namespace, dict(self.env)))

    def fn(self, name: str) -> str:
        """The spelling of math function `name` under this program's import style."""
        if self.style == "numpy":
            spelled = NUMPY_SPELLINGS.get(name, name)
            if spelled is not None:
                return f"np.{spelled}"
        if self.style == "from":
            self.imported.add(name)
            self.namespace[name] = getattr(math, name)
            return name
        self.uses_math = True
        return f"math.{name}"

    def call(self, name: str, args: list[Expr], lo: float, hi: float) -> Expr:
        spelled = name if name in ("abs", "min", "max", "pow") else self.fn(name)
        return Expr(f"{spelled}({', '.join(a.text for a in args)})", lo, hi)

    # -- leaves ----------------------------------------------------------------------

    def var(self) -> Expr:
        """A variable in scope, favouring the latest assignments so values flow onward."""
        if self.recent and self.chance(0.5):
            name = self.choice(self.recent[-3:])
        else:
            name = self.choice(sorted(set(self.env) - set(self.int_params)))
        lo, hi = self.box[name]
        return Expr(name, lo, hi)

    def const(self) -> Expr:
        c = self.choice([0.5, 2.0, 3.0, 1.5, 0.25, 2, 3, 0.1, 1.25, "pi", "e"])
        if c in ("pi", "e"):
            value = getattr(math, c)
            return Expr(self.fn(c), value, value)
        return Expr(repr(c), c, c)

    # -- expressions -----------------------------------------------------------------

    def expr(self, depth: int, leaf_ok: bool = True) -> Expr:
        """Any bounded expression over the variables in scope (`leaf_ok=False`: not a leaf)."""
        if depth <= 0 or (leaf_ok and self.chance(0.25)):
            return self.var() if self.chance(0.9) else self.const()
        kind = self.choice(["arith", "arith", "arith", "unary", "unary", "guarded",
                            "guarded", "power", "kink", "ifexp", "neg"])
        e = getattr(self, f"gen_{kind}")(depth - 1)
        return self.squash(e) if e.bound > LIMIT else e

    def small(self, depth: int, limit: float = LIMIT) -> Expr:
        e = self.expr(depth)
        return self.squash(e) if e.bound > limit else e

    def squash(self, e: Expr) -> Expr:
        name = self.choice(["tanh", "sin", "atan", "erf"])
        if name == "tanh":
            return self.call("tanh", [e], math.tanh(e.lo), math.tanh(e.hi))
        if name == "atan":
            return self.call("atan", [e], math.atan(e.lo), math.atan(e.hi))
        if name == "erf":
            return self.call("erf", [e], math.erf(e.lo), math.erf(e.hi))
        return self.call("sin", [e], -1.0, 1.0)

    def gen_arith(self, depth: int) -> Expr:
        op = self.choice(["+", "-", "*", "/"])
        x = self.small(depth)
        if op == "/":
            p = self.positive(depth)
            lo, hi = hull(x.lo / p.lo, x.lo / p.hi, x.hi / p.lo, x.hi / p.hi)
            return Expr(f"{wrap(x, MUL - 1)} / {wrap(p, MUL)}", lo, hi, MUL)
        y = self.small(depth)
        if op == "-" and y.text == x.text:
            op = "+"  # `u - u` is a constant; keep the program's gradient alive
        if op == "*":
            lo, hi = hull(x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi)
            return Expr(f"{wrap(x, MUL - 1)} * {wrap(y, MUL)}", lo, hi, MUL)
        if op == "+":
            return Expr(f"{wrap(x, ADD - 1)} + {wrap(y, ADD)}", x.lo + y.lo, x.hi + y.hi, ADD)
        return Expr(f"{wrap(x, ADD - 1)} - {wrap(y, ADD)}", x.lo - y.hi, x.hi - y.lo, ADD)

    def gen_neg(self, depth: int) -> Expr:
        x = self.expr(depth)
        if self.chance(0.2):
            return Expr(f"+{wrap(x, UNARY - 1)}", x.lo, x.hi, UNARY)
        return Expr(f"-{wrap(x, UNARY - 1)}", -x.hi, -x.lo, UNARY)

    def gen_unary(self, depth: int) -> Expr:
        """Functions defined everywhere; the growing ones get a small argument."""
        name = self.choice(["sin", "cos", "atan", "tanh", "erf", "exp", "sinh", "cosh", "expm1"])
        if name in ("exp", "sinh", "cosh", "expm1"):
            x = self.small(depth, limit=3.0)
        else:
            x = self.expr(depth)
        if name in ("sin", "cos"):
            return self.call(name, [x], -1.0, 1.0)
        if name == "cosh":
            low = 0.0 if x.lo <= 0 <= x.hi else min(abs(x.lo), abs(x.hi))
            return self.call(name, [x], math.cosh(low), math.cosh(x.bound))
        f = getattr(math, name)
        return self.call(name, [x], f(x.lo), f(x.hi))

    def gen_guarded(self, depth: int) -> Expr:
        """Functions with a restricted domain, each fed an argument inside it."""
        name = self.choice(["log", "log", "log1p", "sqrt", "sqrt", "asin", "acos", "tan",
                            "atan2", "hypot", "logbase", "log2", "log10"])
        if name in ("log", "sqrt", "log2", "log10"):
            p = self.positive(depth)
            f = getattr(math, name)
            return self.call(name, [p], f(p.lo), f(p.hi))
        if name == "logbase":
            p = self.positive(depth)
            base = self.choice([2.0, 10.0, 3.0])
            lo, hi = math.log(p.lo, base), math.log(p.hi, base)
            self.uses_math = self.uses_math or self.style == "numpy"  # np.log takes no base
            spelled = "math.log" if self.style == "numpy" else self.fn("log")
            return Expr(f"{spelled}({p.text}, {base!r})", lo, hi)
        if name == "log1p":
            p = self.positive(depth)  # log1p(p - 1 + ...) would do too; p > 0 is simplest
            return self.call(name, [p], math.log1p(p.lo), math.log1p(p.hi))
        if name in ("asin", "acos"):
            x = self.unit(depth)
            f = getattr(math, name)
            return self.call(name, [x], *hull(f(x.lo), f(x.hi)))
        if name == "tan":
            x = self.expr(depth)
            if x.bound > 1.2:
                x = self.call(self.choice(["sin", "tanh"]), [x], -1.0, 1.0)
            return self.call("tan", [x], math.tan(x.lo), math.tan(x.hi))
        if name == "atan2":
            # A positive argument keeps atan2 away from its branch cut and the origin.
            x, p = self.expr(depth), self.positive(depth)
            if self.chance(0.5):
                return self.call("atan2", [x, p], -math.pi / 2, math.pi / 2)
            return self.call("atan2", [p, x], 0.0, math.pi)
        # hypot (n-ary in math): kinked only at the origin; keep the point well away from it.
        n_args = 3 if self.style != "numpy" and self.chance(0.3) else 2
        args = [self.small(depth) for _ in range(n_args)]
        if math.hypot(*map(self.value, args)) < 0.1:
            args[-1] = self.positive(depth)
        return self.call("hypot", args, 0.0, math.hypot(*(a.bound for a in args)))

    def gen_power(self, depth: int) -> Expr:
        kind = self.choice(["int", "int", "const", "var", "call"] + ["param"] * 2 * bool(self.int_params))
        if kind == "int":  # any sign of base: 2, 3, or the floats 2.0, 3.0
            x = self.small(depth, limit=3.0)
            n = self.choice([2, 3, 2.0, 3.0])
            lo, hi = (x.lo**3, x.hi**3) if n == 3 else self.square(x)
            return Expr(f"{wrap(x, POW)} ** {n!r}", lo, hi, POW)
        if kind == "param":  # an integer exponent from a parameter that is not differentiated
            x = self.small(depth, limit=2.0)
            n = self.choice(self.int_params)
            bound = max(x.bound, x.bound**3)
            return Expr(f"{wrap(x, POW)} ** {n}", -bound, bound, POW)
        p = self.positive(depth, limit=3.0)
        if kind in ("const", "call"):
            c = self.choice([0.5, 1.5, -1, -0.5, 2.5, -2, 0.3])
            y = Expr(repr(c), c, c, ATOM if c > 0 else UNARY)
        else:
            y = self.small(depth, limit=1.5)
        # p ** y = exp(y * log(p)); bound it through the corners.
        corners = [p.lo**y.lo, p.lo**y.hi, p.hi**y.lo, p.hi**y.hi]
        lo, hi = hull(*corners)
        if kind == "call":  # the builtin, or math.pow / np.power / `from math import pow`
            spelled = "pow" if self.chance(0.5) else self.fn("pow")
            return Expr(f"{spelled}({p.text}, {y.text})", lo, hi)
        return Expr(f"{wrap(p, POW)} ** {wrap(y, POW)}", lo, hi, POW)

    @staticmethod
    def square(x: Expr) -> tuple[float, float]:
        low = 0.0 if x.lo <= 0 <= x.hi else min(x.lo**2, x.hi**2)
        return low, max(x.lo**2, x.hi**2)

    def gen_kink(self, depth: int) -> Expr:
        """abs, fabs, min and max, with the point at least KINK away from the kink."""
        name = self.choice(["abs", "abs", "fabs", "min", "max", "min", "max"])
        if name in ("abs", "fabs"):
            x = self.shifted(self.expr(depth), 0.0)
            low = 0.0 if x.lo <= 0 <= x.hi else min(abs(x.lo), abs(x.hi))
            return self.call(name, [x], low, x.bound)
        args = [self.small(depth) for _ in range(self.choice([2, 2, 2, 3]))]
        for i in range(1, len(args)):
            for earlier in args[:i] * 2:  # twice: a shift may land near another argument
                args[i] = self.shifted(args[i], self.value(earlier))
        if name == "min":
            return self.call("min", args, min(a.lo for a in args), min(a.hi for a in args))
        return self.call("max", args, max(a.lo for a in args), max(a.hi for a in args))

    def shifted(self, x: Expr, other: float) -> Expr:
        """`x`, or `x + 0.75` if `x` is within KINK of `other` at the point."""
        if abs(self.value(x) - other) >= KINK:
            return x
        return Expr(f"{wrap(x, ADD - 1)} + 0.75", x.lo + 0.75, x.hi + 0.75, ADD)

    def gen_ifexp(self, depth: int) -> Expr:
        """`then if <condition> else orelse`; no comparison is within KINK of a tie."""
        kind = self.choice(["compare", "compare", "compare", "chained", "and", "or", "not"])
        if kind in ("and", "or"):
            test = f"{self.compare(depth, 1)} {kind} {self.compare(depth, 1)}"
        elif kind == "not":
            test = f"not {self.compare(depth, 1)}"
        else:
            test = self.compare(depth, 2 if kind == "chained" else 1)
        then, orelse = self.expr(depth), self.expr(depth)
        text = f"{wrap(then, IFEXP)} if {test} else {wrap(orelse, IFEXP)}"
        return Expr(text, min(then.lo, orelse.lo), max(then.hi, orelse.hi), IFEXP)

    def compare(self, depth: int, n_ops: int) -> str:
        """`x < y`, or a chain `x < y >= z` for n_ops=2, with neighbours apart at the point."""
        operands = [self.small(depth)]
        for _ in range(n_ops):
            operands.append(self.shifted(self.small(depth), self.value(operands[-1])))
        text = wrap(operands[0], CMP)
        for operand in operands[1:]:
            text += f" {self.choice(['<', '>', '<=', '>='])} {wrap(operand, CMP)}"
        return text

    def positive(self, depth: int, limit: float = LIMIT) -> Expr:
        """An expression whose interval lies in [0.25, limit-ish]: a safe log/sqrt/divisor."""
        candidates = [n for n in sorted(self.env) if 0.25 <= self.box[n][0] and self.box[n][1] <= limit
                      and n not in self.int_params]
        if candidates and self.chance(0.3):
            name = self.choice(candidates)
            return Expr(name, *self.box[name])
        x = self.small(depth, limit=2.0)
        kind = self.choice(["1+xx", "1+xx", "2+sin", "2+cos", "1.5+tanh", "exp", "sqrt",
                            "cosh", "hypot1", "xsq"])
        if kind == "1+xx":
            return Expr(f"1 + {wrap(x, MUL)} * {wrap(x, MUL)}", 1.0, 1 + x.bound**2, ADD)
        if kind == "xsq":
            return Expr(f"1 + {wrap(x, POW)} ** 2", 1.0, 1 + x.bound**2, ADD)
        if kind in ("2+sin", "2+cos"):
            inner = self.call(kind[2:], [x], -1.0, 1.0)
            return Expr(f"2 + {inner.text}", 1.0, 3.0, ADD)
        if kind == "1.5+tanh":
            inner = self.call("tanh", [x], math.tanh(x.lo), math.tanh(x.hi))
            return Expr(f"1.5 + {inner.text}", 1.5 + inner.lo, 1.5 + inner.hi, ADD)
        if kind == "exp":
            inner = self.call("tanh", [x], math.tanh(x.lo), math.tanh(x.hi))
            return self.call("exp", [inner], math.exp(inner.lo), math.exp(inner.hi))
        if kind == "sqrt":
            sq = f"{wrap(x, MUL)} * {wrap(x, MUL)}"
            return self.call("sqrt", [Expr(f"1 + {sq}", 1.0, 1 + x.bound**2, ADD)],
                             1.0, math.sqrt(1 + x.bound**2))
        if kind == "cosh":
            return self.call("cosh", [x], 1.0, math.cosh(x.bound))
        return self.call("hypot", [x, Expr("1.0", 1.0, 1.0)], 1.0, math.hypot(x.bound, 1.0))

    def unit(self, depth: int) -> Expr:
        """An expression inside [-0.9, 0.9], for asin and acos."""
        x = self.expr(depth)
        if x.lo >= -0.9 and x.hi <= 0.9:
            return x
        inner = self.call(self.choice(["tanh", "sin"]), [x], -1.0, 1.0)
        return Expr(f"0.9 * {inner.text}", -0.9, 0.9, MUL)

    # -- statements ------------------------------------------------------------------

    def statement(self, locals_pool) -> str:
        kind = self.choice(["assign", "assign", "assign", "aug", "tuple"])
        depth = self.choice([1, 2, 2, 3])
        if kind == "aug":
            return self.augassign(depth)
        if kind == "tuple":
            n1, n2 = self.target(locals_pool), self.target(locals_pool)
            if n1 != n2:
                e1, e2 = self.expr(depth - 1), self.expr(depth - 1)
                v1, v2 = self.value(e1), self.value(e2)  # both sides read the old values
                self.bind(n1, e1, v1)
                self.bind(n2, e2, v2)
                return f"{n1}, {n2} = {e1.text}, {e2.text}"
        name = self.target(locals_pool)
        e = self.expr(depth, leaf_ok=False)
        value = self.value(e)
        self.bind(name, e, value)
        if self.chance(0.05):
            return f"{name}: float = {e.text}"
        if self.chance(0.05):
            other = self.target(locals_pool)
            if other != name:
                self.bind(other, e, value)
                return f"{name} = {other} = {e.text}"
        return f"{name} = {e.text}"

    def assignable(self) -> list[str]:
        return sorted(n for n in self.env if n not in self.readonly)

    def target(self, locals_pool) -> str:
        """A fresh local, or a name already in scope (parameters included)."""
        if self.chance(0.35):
            return self.choice(self.assignable())
        return self.choice(locals_pool)

    def bind(self, name: str, e: Expr, value: float) -> None:
        self.env[name] = value
        self.box[name] = (e.lo, e.hi)
        if name in self.recent:
            self.recent.remove(name)
        self.recent.append(name)

    def augassign(self, depth: int) -> str:
        name = self.choice(self.assignable())
        lo, hi = self.box[name]
        current = Expr(name, lo, hi)
        if current.bound > LIMIT / 2:
            op = self.choice(["-=", "+="])
        else:
            op = self.choice(["+=", "-=", "*=", "/=", "+=", "*=", "**="])
        if op == "**=":
            e = Expr("2", 2, 2)
            new = Expr("", *self.square(current))
        elif op == "/=":
            e = self.positive(depth - 1)
            new = Expr("", *hull(lo / e.lo, lo / e.hi, hi / e.lo, hi / e.hi))
        else:
            e = self.small(depth - 1, limit=2.0 if op == "*=" else LIMIT)
            if op == "-=" and e.text == name:
                op = "+="
            if op == "*=":
                new = Expr("", *hull(lo * e.lo, lo * e.hi, hi * e.lo, hi * e.hi))
            elif op == "+=":
                new = Expr("", lo + e.lo, hi + e.hi)
            else:
                new = Expr("", lo - e.hi, hi - e.lo)
        statement = f"{name} {op} {e.text}"
        scope = dict(self.env)
        exec(statement, self.namespace, scope)
        self.bind(name, new, float(scope[name]))
        return statement

    def module(self, signature, constants, body) -> str:
        """The whole module: imports, constants, then `def f`."""
        lines = []
        if self.style == "from" and self.imported:
            lines.append(f"from math import {', '.join(sorted(self.imported))}")
        if self.style == "math" or self.uses_math:
            lines.append("import math")
        if self.style == "numpy":
            lines.append("import numpy as np")
        if constants:
            lines += [""] + constants
        lines += ["", "", f"def f({signature}):"]
        lines += [f"    {line}" for line in body]
        return "\n".join(lines).lstrip("\n") + "\n"

    def result(self) -> str:
        """Return the latest name that varies over the box (so it likely has a gradient)."""
        varying = [n for n in self.recent if self.box[n][0] < self.box[n][1]]
        if varying and self.chance(0.6):
            return f"return {varying[-1]}"
        if self.chance(0.05):  # a parameter as such, or a constant (all gradients zero)
            return f"return {self.choice(sorted(self.env) + ['1.5'])}"
        e = self.expr(self.choice([1, 2]), leaf_ok=False)
        return f"return {e.text}"


def build_program(choices, max_statements: int = 8, integer_param: bool = False) -> Program:
    """A random straight-line program `def f(<2-4 params>)` and a point to check it at.

    With `integer_param`, `f` also takes `n` (an int in 1..3, used only as an exponent) and
    the program's `wrt` is a non-empty subset of its float parameters.
    """
    params = list(PARAMS[: choices.integer(2, 4)])
    point = {p: choices.coordinate() for p in params}
    b = _Builder(choices, choices.choice(["math", "math", "numpy", "from"]), point)
    wrt = None
    if integer_param:
        wrt = tuple(p for p in params if choices.integer(0, 2) > 0) or (params[0],)
        point["n"] = b.env["n"] = choices.integer(1, 3)
        b.box["n"] = (1, 3)
        b.readonly.add("n")
        b.int_params.append("n")
        params.append("n")
    pool = LOCALS + (TRICKY_LOCALS if choices.integer(0, 9) == 9 else ())
    constants = []
    if choices.integer(0, 4) == 4:  # a module-level constant, read like a parameter
        k = choices.choice([0.5, 1.25, 2.0])
        constants.append(f"K = {k!r}")
        b.readonly.add("K")
        b.env["K"], b.box["K"] = k, (k, k)
    body = [b.statement(pool) for _ in range(choices.integer(1, max_statements))]
    body.append(b.result())
    if choices.integer(0, 9) == 9:
        body.insert(0, '"""A generated program."""')
    signature = ", ".join(params)
    if choices.integer(0, 4) == 4:  # defaults (the sample point) on the trailing parameters
        k = choices.integer(1, len(params))
        signature = ", ".join(params[:-k] + [f"{p}={point[p]!r}" for p in params[-k:]])
    return Program(b.module(signature, constants, body), point, wrt)


@st.composite
def programs(draw, max_statements: int = 8, integer_param: bool = False) -> Program:
    """Hypothesis strategy: a random program and its sample point (see `build_program`)."""
    return build_program(HypothesisChoices(draw), max_statements, integer_param)


def seeded_program(seed: int, max_statements: int = 8) -> Program:
    """The same kind of program from a seed, without hypothesis."""
    return build_program(SeededChoices(seed), max_statements)
