"""Hypothesis strategies for random scalar programs, as source text.

`control_programs()` (at the end of this file) adds `if`/`elif`/`else`, early returns, `for`
and `while` loops, `break` and `continue` to the straight-line programs described here.

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

import ast
import math
import random
import re
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

# Same-file helpers (inlined by gradgen): their names, and the names their parameters and
# locals take, chosen to collide with the caller's (`a`, `s`, `h`, ... exist in both).
HELPER_BASES = ("step", "mix", "cell", "polar", "blend", "warp", "update")
HELPER_NAMES = ("a", "b", "c", "d", "x", "y", "h", "s", "u", "t", "r", "w", "z")
MAX_HELPERS = 4  # helpers per program
MAX_HELPER_DEPTH = 2  # a helper calling a helper, at most
IN_PLACE = re.compile(r"^(\s*)([A-Za-z_]\w*) (\*\*|//|[-+*/%])= (.+)$")  # `name op= e`, one line


@dataclass
class Helper:
    """A generated same-file helper: its parameters' intervals, its returns' intervals."""

    name: str
    params: list
    boxes: list
    returns: list
    lines: list
    pure: bool  # smooth and free of comparisons on its whole box: may be called again
    shared: bool = False  # may return a 0-d array


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
    shared: bool = False  # may be a 0-d array (np.where of numbers): a mutable object

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
        self.zero_d: set[str] = set()  # names that may hold a 0-d array: never updated in place
        self.sigmoid = False  # the program calls a same-file `sigmoid` helper
        self.pool = LOCALS  # names a statement may assign
        self.helpers: list[Helper] = []  # same-file helpers generated so far
        self.helper_rate = 0.0  # how often an expression or statement calls a new helper
        self.helper_level = 0  # helpers being generated around the current statement
        self.pure = True  # the helper being generated is smooth and free of comparisons
        self._compiled: dict[str, object] = {}

    # -- helpers ---------------------------------------------------------------------

    def choice(self, options):
        return self.choices.choice(options)

    def chance(self, p: float) -> bool:
        return self.choices.integer(0, 99) < p * 100

    def integer(self, lo: int, hi: int) -> int:
        return self.choices.integer(lo, hi)

    def value(self, e: Expr) -> float:
        """The value of `e` at the sample point, given the statements so far."""
        self.define_helpers(self.namespace)
        return float(eval(e.text, self.namespace, dict(self.env)))

    def run(self, statement: str, scope: dict) -> None:
        """Execute `statement` in `scope` (the variables), as the program would."""
        self.define_helpers(self.namespace)
        exec(statement, self.namespace, scope)

    def render(self, text: str, instrumented: bool = False) -> str:
        return text

    def define_helpers(self, namespace: dict, instrumented: bool = False) -> None:
        """(Re)define every helper in `namespace`, as its text reads now."""
        for helper in self.helpers:
            text = self.render("\n".join(helper.lines), instrumented)
            code = self._compiled.get(text)
            if code is None:
                code = self._compiled[text] = compile(text, "<helper>", "exec")
            exec(code, namespace)

    def near_origin(self, args: list[Expr]) -> bool:
        """Whether `hypot(*args)` is within 0.1 of its kink at the origin at the point."""
        return self.helper_level > 0 or math.hypot(*map(self.value, args)) < 0.1

    def exponents(self) -> list[str]:
        """Integer parameters that may serve as exponents (`x ** n`)."""
        return self.int_params

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
        return Expr(name, lo, hi, shared=name in self.zero_d)

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
                            "guarded", "power", "kink", "ifexp", "neg", "step"])
        if self.helper_rate and self.helpers_allowed() and self.chance(self.helper_rate):
            kind = "helper"
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
            if self.style == "numpy" and self.chance(0.2):
                return Expr(f"{wrap(x, MUL - 1)} * np.reciprocal({p.text})", lo, hi, MUL)
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
        if self.chance(0.2):  # (`+x` may be x itself in gradgen's code: a 0-d array stays shared)
            return Expr(f"+{wrap(x, UNARY - 1)}", x.lo, x.hi, UNARY, x.shared)
        return Expr(f"-{wrap(x, UNARY - 1)}", -x.hi, -x.lo, UNARY)

    def gen_unary(self, depth: int) -> Expr:
        """Functions defined everywhere; the growing ones get a small argument."""
        name = self.choice(["sin", "cos", "atan", "tanh", "erf", "exp", "sinh", "cosh", "expm1", "sigmoid"])
        if name == "sigmoid":  # a same-file helper that gradgen recognises as the primitive
            x = self.expr(depth)
            self.sigmoid = True
            self.namespace["sigmoid"] = lambda z: 1 / (1 + math.exp(-z))
            return Expr(f"sigmoid({x.text})", 1 / (1 + math.exp(-x.lo)), 1 / (1 + math.exp(-x.hi)))
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
        if self.near_origin(args):
            args[-1] = self.positive(depth)
        return self.call("hypot", args, 0.0, math.hypot(*(a.bound for a in args)))

    def gen_power(self, depth: int) -> Expr:
        exponents = self.exponents()
        kind = self.choice(["int", "int", "const", "var", "call"] + ["param"] * 2 * bool(exponents))
        if kind == "int":  # any sign of base: 2, 3, or the floats 2.0, 3.0
            x = self.small(depth, limit=3.0)
            n = self.choice([2, 3, 2.0, 3.0])
            lo, hi = (x.lo**3, x.hi**3) if n == 3 else self.square(x)
            if self.style == "numpy" and n == 2 and self.chance(0.3):
                return Expr(f"np.square({x.text})", lo, hi)
            return Expr(f"{wrap(x, POW)} ** {n!r}", lo, hi, POW)
        if kind == "param":  # an integer exponent from a parameter that is not differentiated
            x = self.small(depth, limit=2.0)
            n = self.choice(exponents)
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
            if spelled.endswith("power") and isinstance(c, int):
                # NumPy refuses an integer to a negative integer power (the base may be all
                # literals, `np.power(1 + 2 * 2, -2)`): a float exponent is valid Python.
                y = Expr(repr(float(c)), c, c, UNARY)
            return Expr(f"{spelled}({p.text}, {y.text})", lo, hi)
        return Expr(f"{wrap(p, POW)} ** {wrap(y, POW)}", lo, hi, POW)

    @staticmethod
    def square(x: Expr) -> tuple[float, float]:
        low = 0.0 if x.lo <= 0 <= x.hi else min(x.lo**2, x.hi**2)
        return low, max(x.lo**2, x.hi**2)

    def gen_kink(self, depth: int) -> Expr:
        """abs, fabs, min and max, with the point at least KINK away from the kink."""
        if self.helper_level:  # a helper may run at many points: no kinks in one
            return self.gen_unary(depth)
        name = self.choice(["abs", "abs", "fabs", "min", "max", "min", "max", "clip"])
        if name == "clip" and self.style == "numpy":  # np.clip, the point KINK inside or outside its bounds
            x = self.small(depth)
            lo = self.shifted(Expr(repr(self.choice([-1.0, -0.5, 0.0])), 0, 0), self.value(x))
            hi = self.shifted(Expr(repr(self.choice([0.5, 1.0, 2.0])), 0, 0), self.value(x))
            lo_v, hi_v = self.value(lo), self.value(hi)
            if lo_v > hi_v:
                lo, hi, lo_v, hi_v = hi, lo, hi_v, lo_v
            return Expr(f"np.clip({x.text}, {lo.text}, {hi.text})", lo_v, hi_v)
        if name == "clip":
            name = "abs"
        if name in ("abs", "fabs"):
            x = self.shifted(self.expr(depth), 0.0)
            low = 0.0 if x.lo <= 0 <= x.hi else min(abs(x.lo), abs(x.hi))
            return self.call(name, [x], low, x.bound)
        args = [self.small(depth) for _ in range(self.choice([2, 2, 2, 3]))]
        for i in range(1, len(args)):
            for earlier in args[:i] * 2:  # twice: a shift may land near another argument
                args[i] = self.shifted(args[i], self.value(earlier))
        if self.style == "numpy" and len(args) == 2 and self.chance(0.5):
            name = "np.maximum" if name == "max" else "np.minimum"
            lo = min(args[0].lo, args[1].lo) if name == "np.minimum" else max(args[0].lo, args[1].lo)
            hi = min(args[0].hi, args[1].hi) if name == "np.minimum" else max(args[0].hi, args[1].hi)
            return Expr(f"{name}({args[0].text}, {args[1].text})", lo, hi)
        if name == "min":
            return self.call("min", args, min(a.lo for a in args), min(a.hi for a in args))
        return self.call("max", args, max(a.lo for a in args), max(a.hi for a in args))

    def gen_step(self, depth: int) -> Expr:
        """Piecewise constant functions (zero gradient) and `float`, their argument at least
        KINK away from every jump at the point: floor, ceil, trunc, round, `//`, np.sign."""
        if self.helper_level:
            return self.gen_unary(depth)
        name = self.choice(["floor", "ceil", "trunc", "round", "floordiv", "sign", "float"])
        x = self.small(depth)
        if name == "float":
            return Expr(f"float({x.text})", x.lo, x.hi)
        if name == "sign" and self.style != "numpy":
            name = "floor"
        period, offset = {"round": (1.0, 0.5), "sign": (math.inf, 0.0)}.get(name, (1.0, 0.0))
        divisor = self.choice([0.5, 2.0, 1.0]) if name == "floordiv" else 1.0
        period *= divisor
        if self.jump_distance(self.value(x), period, offset) < KINK:
            half = 0.75 if period == math.inf else period / 2
            x = Expr(f"{wrap(x, ADD - 1)} + {half!r}", x.lo + half, x.hi + half, ADD)
            if self.jump_distance(self.value(x), period, offset) < KINK:
                return x
        lo, hi = math.floor(x.lo / divisor) - 1, math.ceil(x.hi / divisor) + 1
        if name == "floordiv":
            return Expr(f"{wrap(x, MUL - 1)} // {divisor!r}", lo, hi, MUL)
        if name == "round":
            spelled = "np.round" if self.style == "numpy" else "round"
            return Expr(f"{spelled}({x.text})", lo, hi)
        if name == "sign":
            return Expr(f"np.sign({x.text})", -1.0, 1.0)
        return self.call(name, [x], lo, hi)

    @staticmethod
    def jump_distance(value: float, period: float, offset: float) -> float:
        if period == math.inf:
            return abs(value - offset)
        r = (value - offset) % period
        return min(r, period - r)

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
        if self.style == "numpy" and kind in ("compare", "chained") and self.chance(0.4):
            return Expr(f"np.where({test}, {then.text}, {orelse.text})", min(then.lo, orelse.lo),
                        max(then.hi, orelse.hi), shared=True)
        text = f"{wrap(then, IFEXP)} if {test} else {wrap(orelse, IFEXP)}"
        return Expr(text, min(then.lo, orelse.lo), max(then.hi, orelse.hi), IFEXP, then.shared or orelse.shared)

    def compare(self, depth: int, n_ops: int) -> str:
        """`x < y`, or a chain `x < y >= z` for n_ops=2, with neighbours apart at the point."""
        self.pure = False
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

    # -- same-file helpers -------------------------------------------------------------
    #
    # A helper is drawn in a scope of its own: its parameters (named like the caller's
    # variables, so that `def mix(a, s)` may be called as `mix(s, a)` from a caller that has
    # its own `a` and `s`) hold the arguments' intervals, and its body rebinds a parameter
    # (`a = a * x`, `a += ...`, in an `if` or a loop in control programs) and assigns locals
    # that the caller also has. It never holds a kink, and a comparison in it makes it
    # single-use (its point is where it was drawn); a smooth one drawn over wide intervals
    # may be called again.

    def helpers_allowed(self) -> bool:
        return self.helper_level < MAX_HELPER_DEPTH and len(self.helpers) < MAX_HELPERS

    def helper_arg(self, depth: int) -> Expr:
        """An argument that is a float (a loop index, `i + 1` or a constant `2` is an int, and
        a helper's `x ** -2` of a NumPy int raises)."""
        e = self.small(depth)
        self.define_helpers(self.namespace)
        value = eval(self.render(e.text), self.namespace, dict(self.env))
        if isinstance(value, (int, np.integer)):
            return Expr(f"{wrap(e, ADD - 1)} + 0.5", e.lo + 0.5, e.hi + 0.5, ADD)
        return e

    def helper_call(self, helper: Helper, args: list[Expr]) -> str:
        return f"{helper.name}({', '.join(a.text for a in args)})"

    def gen_helper(self, depth: int) -> Expr:
        """A call of a same-file helper returning one number (a new one, or a smooth one again)."""
        if not self.helpers_allowed():
            return self.gen_unary(depth)
        again = [h for h in self.helpers if h.pure and len(h.returns) == 1]
        if again and self.chance(0.4):
            helper = self.choice(again)
            args = [self.helper_arg(depth) for _ in helper.params]
            if all(lo <= a.lo and a.hi <= hi for a, (lo, hi) in zip(args, helper.boxes)):
                return Expr(self.helper_call(helper, args), *helper.returns[0], shared=helper.shared)
        args = [self.helper_arg(depth) for _ in range(self.choice([1, 2, 2, 3]))]
        helper = self.make_helper(args, 1)
        return Expr(self.helper_call(helper, args), *helper.returns[0], shared=helper.shared)

    def tuple_helper_call(self, n1: str, n2: str, depth: int) -> str:
        """`n1, n2 = polar(r, t)`: a helper returning two numbers, unpacked at the call."""
        args = [self.helper_arg(max(depth - 1, 0)) for _ in range(self.choice([1, 2, 2, 3]))]
        helper = self.make_helper(args, 2)
        statement = f"{n1}, {n2} = {self.helper_call(helper, args)}"
        scope = dict(self.env)
        self.run(statement, scope)
        self.bind(n1, Expr(n1, *helper.returns[0], shared=helper.shared), float(scope[n1]))
        self.bind(n2, Expr(n2, *helper.returns[1], shared=helper.shared), float(scope[n2]))
        return statement

    def helper_param_names(self, k: int) -> list[str]:
        """Parameter names, mostly the caller's own variable names (in another order)."""
        mine = [n for n in sorted(self.env) if n in HELPER_NAMES]
        names = []
        while len(names) < k:
            options = [n for n in (mine if mine and self.chance(0.6) else HELPER_NAMES) if n not in names]
            names.append(self.choice(options or [n for n in HELPER_NAMES if n not in names]))
        return names

    def scope_state(self):
        return (self.env, self.box, self.readonly, self.int_params, self.recent, self.zero_d, self.pool,
                self.pure)

    def set_scope_state(self, state) -> None:
        (self.env, self.box, self.readonly, self.int_params, self.recent, self.zero_d, self.pool,
         self.pure) = state

    def enter_helper(self, params, boxes, values, shared):
        saved = self.scope_state()
        constants = [n for n in self.readonly if n == "K"]
        self.env = {**{n: saved[0][n] for n in constants}, **dict(zip(params, values))}
        self.box = {**{n: saved[1][n] for n in constants}, **dict(zip(params, boxes))}
        self.readonly = set(constants)
        self.int_params = []
        self.recent = list(params)
        self.zero_d = {p for p, sh in zip(params, shared) if sh}
        self.pool = tuple(dict.fromkeys(self.pool + HELPER_NAMES))
        self.pure = True
        self.helper_level += 1
        return saved

    def leave_helper(self, saved) -> bool:
        pure = self.pure
        self.helper_level -= 1
        self.set_scope_state(saved)
        self.pure = self.pure and pure
        return pure

    def make_helper(self, args: list[Expr], n_returns: int, contract=None) -> Helper:
        """A new helper taking `args`, returning `n_returns` numbers; `contract` is None, or
        ("acc", step): the first parameter plus at most `step`, or ("fit", lo, hi)."""
        values = [self.value(a) for a in args]
        params = self.helper_param_names(len(args))
        again = n_returns == 1 and contract is None and self.chance(0.4)
        boxes = [hull(a.lo, a.hi, -LIMIT, LIMIT) if again else (a.lo, a.hi) for a in args]
        shared = [again or a.shared for a in args]
        saved = self.enter_helper(params, boxes, values, shared)
        try:
            body = self.helper_body(params, contract)
            returns = self.helper_returns(params, n_returns, contract)
            self.repair_returns(returns)
            body.append(f"return {', '.join(e.text for e in returns)}")
        finally:
            pure = self.leave_helper(saved)
        name = f"{self.choice(HELPER_BASES)}{len(self.helpers) + 1}"
        lines = [f"def {name}({', '.join(params)}):"] + [f"    {line}" for line in body]
        helper = Helper(name, params, boxes, [(e.lo, e.hi) for e in returns], lines, pure and again,
                        any(e.shared for e in returns))
        self.helpers.append(helper)
        return helper

    def repair_returns(self, returns: list[Expr]) -> None:
        """(Comparisons in the returned expressions are placed where they are drawn.)"""

    def helper_body(self, params: list[str], contract) -> list[str]:
        """Some statements, one of them rebinding a parameter; with an "acc" contract the
        first parameter is only updated last (`p = p + e`, |e| <= step)."""
        first = params[0]
        if contract and contract[0] == "acc":
            self.readonly.add(first)
            rebound = params[1] if len(params) > 1 else None
        else:
            rebound = first if len(params) == 1 or self.chance(0.6) else self.choice(params)
        plan = ["free"] * self.choice([0, 1, 1, 2]) + ["rebind"] * (rebound is not None)
        body = []
        while plan:
            item = plan.pop(self.integer(0, len(plan) - 1))
            body += self.helper_statement(rebound if item == "rebind" else None)
        if contract and contract[0] == "acc":
            self.readonly.discard(first)
            body += self.helper_statement(first, step=contract[1])
        return body

    def helper_statement(self, rebound: str | None, step: float | None = None) -> list[str]:
        if step is not None:
            return [self.accumulate_straight(rebound, step)]
        if rebound is None:
            return [self.statement(self.pool)]
        return [self.rebind(rebound)]

    def accumulate_straight(self, name: str, step: float) -> str:
        e = self.small(self.statement_depth() - 1, limit=step)
        if e.bound > step:
            e = Expr(f"{step!r} * {self.call('tanh', [e], -1.0, 1.0).text}", -step, step, MUL)
        statement = self.in_place(name, self.choice(["+=", "-="]), e)
        scope = dict(self.env)
        self.run(statement, scope)
        lo, hi = self.box[name]
        self.bind(name, Expr(name, lo - step, hi + step), float(scope[name]))
        return statement

    def rebind(self, name: str) -> str:
        """`p = p * e`, `p op= e`, or `p = <any expression>`: a parameter rebound."""
        depth = self.statement_depth()
        form = self.choice(["aug", "aug", "mul", "expr"])
        if form == "aug":
            return self.augassign(depth - 1, name)
        if form == "mul":
            x = Expr(name, *self.box[name])
            if x.bound > LIMIT / 2:
                x = self.squash(x)
            y = self.small(depth - 1, limit=2.0)
            e = Expr(f"{wrap(x, MUL - 1)} * {wrap(y, MUL)}", *hull(x.lo * y.lo, x.lo * y.hi, x.hi * y.lo,
                                                                    x.hi * y.hi), MUL)
        else:
            e = self.expr(depth, leaf_ok=False)
        self.bind(name, e, self.value(e))
        return f"{name} = {e.text}"

    def helper_returns(self, params: list[str], n: int, contract) -> list[Expr]:
        """What the helper returns: a rebound parameter, or an expression (fitted by contract)."""
        if contract and contract[0] == "acc":
            return [Expr(params[0], *self.box[params[0]], shared=params[0] in self.zero_d)]
        returns = []
        for k in range(n):
            rebound = [p for p in params if p in self.recent and p not in [r.text for r in returns]]
            if rebound and self.chance(0.5):
                name = self.choice(rebound)
                e = Expr(name, *self.box[name], shared=name in self.zero_d)
            else:
                e = self.expr(self.choice([1, 2]), leaf_ok=k == 0 and self.chance(0.3))
            if e.bound > LIMIT:
                e = self.squash(e)
            if contract and contract[0] == "fit":
                e = self.fit_into(e, contract[1], contract[2])
            returns.append(e)
        return returns

    def fit_into(self, e: Expr, lo: float, hi: float) -> Expr:
        if lo <= e.lo and e.hi <= hi:
            return e
        return self.call(self.choice(["tanh", "sin", "erf"]), [e], -1.0, 1.0)

    # -- statements ------------------------------------------------------------------

    def statement(self, locals_pool) -> str:
        kind = self.choice(["assign", "assign", "assign", "aug", "tuple"])
        if kind == "tuple" and self.helper_rate and self.helpers_allowed() and self.chance(0.5):
            kind = "helper_tuple"
        depth = self.statement_depth()
        if kind == "helper_tuple":
            n1, n2 = self.target(locals_pool), self.target(locals_pool)
            if n1 != n2:
                return self.tuple_helper_call(n1, n2, depth)
            kind = "assign"
        if kind == "aug" and not self.assignable():
            kind = "assign"
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

    def statement_depth(self) -> int:
        return self.choice([1, 2, 2, 3])

    def assignable(self) -> list[str]:
        return sorted(n for n in self.env if n not in self.readonly)

    def target(self, locals_pool) -> str:
        """A fresh local, or a name already in scope (parameters included)."""
        if self.chance(0.35) and self.assignable():
            return self.choice(self.assignable())
        return self.choice([n for n in locals_pool if n not in self.readonly])

    def bind(self, name: str, e: Expr, value: float) -> None:
        if e.shared:  # (for good: a later path may still see the array)
            self.zero_d.add(name)
        self.env[name] = value
        self.box[name] = (e.lo, e.hi)
        if name in self.recent:
            self.recent.remove(name)
        self.recent.append(name)

    def in_place(self, name: str, op: str, e: Expr) -> str:
        """`name op= e`, or `name = name op (e)` where name may hold a 0-d array: updated in
        place, the array would change under every other name sharing it, which gradgen
        refuses (and a generated program stays inside the subset)."""
        if name in self.zero_d or self.helper_level and self.style == "numpy":
            # (in a NumPy file a helper's parameter may be an array: a helper that another
            # one, outlined by rewrite.py with unannotated parameters, calls would change it)
            return f"{name} = {name} {op[:-1]} ({e.text})"
        return f"{name} {op} {e.text}"

    def augassign(self, depth: int, name: str | None = None) -> str:
        name = name or self.choice(self.assignable())
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
        statement = self.in_place(name, op, e)
        scope = dict(self.env)
        self.run(statement, scope)
        self.bind(name, new, float(scope[name]))
        return statement

    def annotate_helpers(self, every: list[str]) -> None:
        """Where any function updates a value in place, every helper's parameters are
        annotated `float` too (see `parameters`): a helper given an array and passing it on
        to one that updates it in place would change its caller's array."""
        for helper in self.helpers:
            signature = ", ".join(parameters(helper.params, [], every))
            helper.lines[0] = f"def {helper.name}({signature}):"

    def module(self, signature, constants, body) -> str:
        """The whole module: imports, constants, the sigmoid helper if used, then `def f`."""
        sigmoid = ["", "", "def sigmoid(z):", f"    return 1 / (1 + {self.fn('exp')}(-z))"] if self.sigmoid else []
        lines = []
        if self.style == "from" and self.imported:
            lines.append(f"from math import {', '.join(sorted(self.imported))}")
        if self.style == "math" or self.uses_math:
            lines.append("import math")
        if self.style == "numpy":
            lines.append("import numpy as np")
        if constants:
            lines += [""] + constants
        lines += sigmoid
        for helper in self.helpers:
            lines += ["", ""] + [self.render(line) for line in helper.lines]
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
    b.pool = pool
    b.helper_rate = helper_rate(point, [0.0, 0.0, 0.0, 0.05, 0.1])
    constants = []
    if choices.integer(0, 4) == 4:  # a module-level constant, read like a parameter
        k = choices.choice([0.5, 1.25, 2.0])
        constants.append(f"K = {k!r}")
        b.readonly.add("K")
        b.env["K"], b.box["K"] = k, (k, k)
        b.namespace["K"] = k  # (read by helpers as a global)
    body = [b.statement(pool) for _ in range(choices.integer(1, max_statements))]
    body.append(b.result())
    if choices.integer(0, 9) == 9:
        body.insert(0, '"""A generated program."""')
    every = body + [line for h in b.helpers for line in h.lines]
    b.annotate_helpers(every)
    signature = ", ".join(parameters(params, b.int_params, every))
    if choices.integer(0, 4) == 4:  # defaults (the sample point) on the trailing parameters
        k = choices.integer(1, len(params))
        signature = ", ".join(parameters(params[:-k], b.int_params, every)
                              + [f"{p}={point[p]!r}" for p in params[-k:]])
    return Program(b.module(signature, constants, body), point, wrt)


def helper_rate(point: dict, rates: list[float]) -> float:
    """How often this program calls generated helpers: a function of its point, not a draw,
    so that a program without them is exactly the one drawn before helpers existed."""
    return random.Random(repr(sorted(point.items()))).choice(rates)


_IN_PLACE = re.compile(r"^\s*(?!_)\w+ (\+|-|\*|/|\*\*)= ", re.MULTILINE)


def parameters(params: list[str], ints: list[str], body: list[str]) -> list[str]:
    """`f`'s parameter list. Where the body updates a value in place (`u += e`), the
    parameters are annotated `float` (an int one `int`): without a default or an annotation a
    parameter may be an array, and `u = a; u += e` on an array would change `a` too (gradgen
    refuses that; so does `y = t = b ** n; ...; t += e` while `n` may be an array: seed 1206,
    program 7297)."""
    if not any(_IN_PLACE.search(line) for line in body):
        return list(params)
    return [f"{p}: int" if p in ints else f"{p}: float" for p in params]


@st.composite
def programs(draw, max_statements: int = 8, integer_param: bool = False) -> Program:
    """Hypothesis strategy: a random program and its sample point (see `build_program`)."""
    return build_program(HypothesisChoices(draw), max_statements, integer_param)


def seeded_program(seed: int, max_statements: int = 8) -> Program:
    """The same kind of program from a seed, without hypothesis."""
    return build_program(SeededChoices(seed), max_statements)


# ---- control flow -----------------------------------------------------------------------
#
# `control_programs()` adds statements around the straight-line ones: `if`/`elif`/`else` on
# comparisons of active values, early `return` under an `if`, `for i in range(...)` (constant
# bounds, or an int parameter `n` that is not differentiated), `while` loops on a counter
# (`while k < 4:`, sometimes `and` an active comparison), nested loops, and `break` or
# `continue` under a condition on the loop index. Two things keep every program correct input:
#
# * Loop bodies stay in their domains on every iteration. Before a loop, the variables its
#   body carries from one iteration to the next are declared with an interval that holds on
#   every iteration: an accumulator (`s += <bounded by B>`) widens by B per trip, a value
#   overwritten each trip (`x = <fitted into its interval>`) and a product (`p *= <in
#   [-1, 1]>`) keep theirs. Anything else the body assigns is a temporary, read only after
#   it is assigned in the same iteration and forgotten after the loop. Kinks (`abs`, `min`,
#   `max`, `hypot` near the origin) stay out of loops.
# * The point stays KINK away from every comparison it evaluates. A comparison of active
#   values is `x < y + shift` with a `shift` chosen after the statement is drawn: the
#   statement runs instrumented at the point, and a shift is moved (or, failing that, set so
#   the comparison is constant over the whole box) until every evaluation of every
#   comparison, on every iteration, is at least KINK clear of its boundary.

MAX_TRIPS = 6  # iterations of a loop with a constant bound
MAX_N = 4  # the int parameter `n` (a loop bound only) takes values 0..MAX_N
MAX_NEST = 2  # control statements inside control statements, at most this deep
MAX_LOOPS = 2  # loops inside loops, at most this deep
INDEX_NAMES = ("i", "j")  # for-loop indices by loop depth
COUNTER_NAMES = ("k", "m")  # while-loop counters by loop depth
PLACEHOLDER = re.compile("\x00(\\d+)\x00")  # a comparison operand whose shift is not final


@dataclass
class Site:
    """An operand of a comparison, shifted so that it stays KINK away from `refs` (the operand
    before it) wherever it is evaluated at the sample point."""

    operand: Expr
    refs: list[Expr]
    shift: float = 0.0


class _Return(Exception):
    """An early `return` taken while a statement runs at the sample point."""


class _ControlBuilder(_Builder):
    """A `_Builder` that also draws `if`, `for` and `while` statements (see above)."""

    def __init__(self, choices, style: str, point: dict[str, float]):
        super().__init__(choices, style, point)
        self.level = 0  # loops around the statement being drawn
        self.owner = {p: 0 for p in point}  # the loop level each variable was first bound at
        self.carried: dict[str, tuple[str, tuple[float, float]]] = {}  # name -> (kind, interval)
        self.indices: list[str] = []  # loop indices and counters in scope
        self.sites: list[Site] = []
        self.returned = False  # an early return is taken at the point: the rest is not run
        self.records: list[tuple[int, list[float]]] = []
        self.steps: dict[str, float] = {}  # accumulator -> its largest step per trip
        self.outer_loops = 0  # loops around the call of the helper being drawn
        self.rebound: tuple = (None, None)  # (parameter, step) for the next "rebind" statement

    # -- text with comparisons whose shift is chosen later -------------------------------

    def render(self, text: str, instrumented: bool = False) -> str:
        return PLACEHOLDER.sub(lambda m: self.site_text(int(m.group(1)), instrumented), text)

    def site_text(self, k: int, instrumented: bool) -> str:
        site = self.sites[k]
        if instrumented:
            refs = ", ".join(self.render(r.text, True) for r in site.refs)
            return f"_site({k}, {self.render(site.operand.text, True)}, {site.shift!r}, {refs})"
        operand = self.render(wrap(site.operand, ADD - 1))
        if site.shift == 0:
            return operand
        return f"{operand} {'+' if site.shift > 0 else '-'} {abs(site.shift)!r}"

    def value(self, e: Expr) -> float:
        self.define_helpers(self.namespace)
        return float(eval(self.render(e.text), self.namespace, dict(self.env)))

    def run(self, statement: str, scope: dict) -> None:
        self.define_helpers(self.namespace)
        exec(self.render(statement), self.namespace, scope)

    def execute(self, lines: list[str], env: dict, instrumented: bool) -> tuple[dict, bool]:
        """Run `lines` from `env`: (the variables after, whether an early return was taken)."""
        text = self.render("\n".join(lines), instrumented)
        text = re.sub(r"^(\s*)return .*$", r"\1raise _Return()", text, flags=re.M)
        self.records = []

        def record(k, x, shift, *refs):
            self.records.append((k, [x - r for r in refs]))
            return x + shift

        namespace = {**self.namespace, "_site": record, "_Return": _Return}
        self.define_helpers(namespace, instrumented)
        scope = dict(env)
        try:
            exec(text, namespace, scope)
        except _Return:
            return scope, True
        return scope, False

    def interval(self, e: Expr) -> tuple[float, float]:
        m = PLACEHOLDER.fullmatch(e.text)
        if m is None:
            return e.lo, e.hi
        site = self.sites[int(m.group(1))]
        return site.operand.lo + site.shift, site.operand.hi + site.shift

    def violations(self) -> list[int]:
        return [k for k, raws in self.records
                if any(abs(r + self.sites[k].shift) < KINK for r in raws)]

    def clear_shift(self, k: int) -> float | None:
        """The shift nearest the current one that clears every evaluation of site `k` seen."""
        raws = [r for j, rs in self.records if j == k for r in rs]
        current = self.sites[k].shift
        steps = sorted(range(-40, 41), key=lambda m: (abs(m * 0.05 - current), -m))
        for m in steps:
            c = round(m * 0.05, 2)
            if all(abs(r + c) >= 1.1 * KINK for r in raws):
                return c
        return None

    def constant_shift(self, k: int) -> float:
        """A shift that makes comparison `k` the same everywhere in the box."""
        site = self.sites[k]
        ref_lo = min(self.interval(r)[0] for r in site.refs)
        ref_hi = max(self.interval(r)[1] for r in site.refs)
        low, high = site.operand.lo - ref_hi, site.operand.hi - ref_lo  # bounds of the difference
        up = round(math.ceil((0.5 - low) / 0.05) * 0.05, 2)
        down = round(math.floor((-0.5 - high) / 0.05) * 0.05, 2)
        current = site.shift
        return up if abs(up - current) <= abs(down - current) else down

    def repair(self, lines: list[str], env: dict) -> None:
        """Move shifts until no comparison in `lines` runs within KINK of its boundary."""
        tries: dict[int, int] = {}
        for _ in range(60):
            self.execute(lines, env, instrumented=True)
            bad = self.violations()
            if not bad:
                return
            k = bad[0]
            tries[k] = tries.get(k, 0) + 1
            shift = self.clear_shift(k) if tries[k] <= 3 else None
            self.sites[k].shift = self.constant_shift(k) if shift is None else shift
        # Give up moving: every comparison constant over the box, earlier sites first.
        text = self.render("\n".join(lines), instrumented=True)
        for k in sorted(set(int(k) for k in re.findall(r"_site\((\d+),", text))):
            self.sites[k].shift = self.constant_shift(k)
        self.execute(lines, env, instrumented=True)
        assert not self.violations(), "a constant comparison came within KINK of its boundary"

    def verify(self, signature: str, constants: list[str], body: list[str], point: dict) -> None:
        """Run the whole program instrumented at the point: every comparison it evaluates
        must be KINK clear of its boundary (a check on this generator, not on gradgen)."""
        lines = [*constants, f"def f({signature}):", *indent(body)]
        self.records = []

        def record(k, x, shift, *refs):
            self.records.append((k, [x - r for r in refs]))
            return x + shift

        namespace = {**self.namespace, "_site": record}
        self.define_helpers(namespace, instrumented=True)
        exec(self.render("\n".join(lines), instrumented=True), namespace)
        namespace["f"](**point)
        assert not self.violations(), "the generator left a comparison within KINK of its boundary"

    # -- scope ---------------------------------------------------------------------------

    def snapshot(self):
        return dict(self.env), dict(self.box), list(self.recent), dict(self.owner)

    def restore(self, state) -> None:
        env, box, recent, owner = state
        self.env, self.box, self.recent, self.owner = dict(env), dict(box), list(recent), dict(owner)

    def merge(self, paths, pre) -> None:
        """Scope after an `if`: the variables bound on every path, over the hull of intervals."""
        names = set.intersection(*(set(box) for _, box, _, _ in paths))
        env, _, recent, _ = paths[-1]
        self.env = {n: env[n] for n in names}
        self.box = {n: hull(*(b for _, box, _, _ in paths for b in box[n])) for n in names}
        self.recent = [n for n in recent if n in names]
        self.owner = {n: pre[3].get(n, self.level) for n in names}

    def drop(self, name: str) -> None:
        for table in (self.env, self.box, self.owner):
            table.pop(name, None)
        for seq in (self.recent, self.indices, self.int_params):
            if name in seq:
                seq.remove(name)
        self.readonly.discard(name)

    def bind(self, name: str, e: Expr, value: float) -> None:
        if name not in self.box:
            self.owner[name] = self.level
        super().bind(name, e, value)
        if name in self.carried:  # holds on every iteration, whatever this assignment gives
            self.box[name] = self.carried[name][1]

    def assignable(self) -> list[str]:
        if self.level == 0:
            return super().assignable()
        return sorted(n for n in self.env if self.owner.get(n) == self.level and n not in self.readonly)

    def fresh(self, pool) -> list[str]:
        return [n for n in pool if n not in self.box]

    # -- expressions inside loops ------------------------------------------------------

    def var(self) -> Expr:
        if self.indices and self.chance(0.1):
            name = self.choice(self.indices)
            lo, hi = self.box[name]
            if self.chance(0.5):
                return Expr(f"{name} + 1", lo + 1, hi + 1, ADD)
            return Expr(name, lo, hi)
        return super().var()

    def exponents(self) -> list[str]:
        return []  # `n` and the loop indices are bounds, not exponents

    def near_origin(self, args: list[Expr]) -> bool:
        return self.level > 0 or super().near_origin(args)

    def gen_kink(self, depth: int) -> Expr:
        if self.level > 0:  # the point's values change from one iteration to the next
            return self.gen_unary(depth)
        return super().gen_kink(depth)

    def gen_step(self, depth: int) -> Expr:
        if self.level > 0:
            return self.gen_unary(depth)
        return super().gen_step(depth)

    def compare(self, depth: int, n_ops: int) -> str:
        if self.level > 0 or self.helper_level:
            return self.site_compare(depth, n_ops)
        return super().compare(depth, n_ops)

    def site_compare(self, depth: int, n_ops: int) -> str:
        """`x < y + shift` (or a chain), each shift chosen when the statement is repaired."""
        self.pure = False
        previous = self.small(depth)
        text = wrap(previous, CMP)
        for _ in range(n_ops):
            operand = self.small(depth)
            self.sites.append(Site(operand, [previous]))
            previous = Expr(f"\x00{len(self.sites) - 1}\x00", operand.lo, operand.hi, ADD)
            text += f" {self.choice(['<', '>', '<=', '>='])} {wrap(previous, CMP)}"
        return text

    def fit(self, e: Expr, lo: float, hi: float) -> Expr:
        """`e`, or `e` squashed into [-1, 1], so that it lies in [lo, hi] (which holds [-1, 1])."""
        if lo <= e.lo and e.hi <= hi:
            return e
        name = self.choice(["tanh", "sin", "erf"])
        return self.call(name, [e], -1.0, 1.0)

    def bounded(self, depth: int, bound: float) -> Expr:
        """An expression with |value| <= bound everywhere in the box."""
        e = self.expr(depth)
        if e.bound <= bound:
            return e
        inner = self.fit(e, 0.0, 0.0)
        if bound == 1.0:
            return inner
        return Expr(f"{bound!r} * {inner.text}", -bound, bound, MUL)

    # -- statements ------------------------------------------------------------------------

    # -- helpers ----------------------------------------------------------------------------

    def scope_state(self):
        return super().scope_state() + (self.level, self.owner, self.carried, self.indices, self.returned,
                                        self.outer_loops, self.steps)

    def set_scope_state(self, state) -> None:
        super().set_scope_state(state[:-7])
        (self.level, self.owner, self.carried, self.indices, self.returned, self.outer_loops,
         self.steps) = state[-7:]

    def enter_helper(self, params, boxes, values, shared):
        """The helper's body is drawn at loop level 0 of its own (its loops are `for i`,
        like the caller's), with at most as many loops as the caller has left."""
        saved = super().enter_helper(params, boxes, values, shared)
        self.outer_loops += self.level
        self.level = 0
        self.owner = {n: 0 for n in self.env}
        self.carried, self.indices, self.steps = {}, [], {}
        self.returned = False
        return saved

    def repair_returns(self, returns: list[Expr]) -> None:
        """Move the shifts of comparisons in the returned expressions clear of the point
        (a return line is not run by `execute`: an assignment of the same values is)."""
        self.repair([f"_returned = {', '.join(e.text for e in returns)}"], dict(self.env))

    def helper_statement(self, rebound: str | None, step: float | None = None) -> list[str]:
        self.rebound = (rebound, step)
        kind = "acc_param" if step is not None else "rebind" if rebound is not None else None
        return self.any_statement(MAX_NEST - 1, kind)

    def rebind_control(self, name: str, nest: int) -> list[str]:
        """A parameter rebound plainly, in an `if` (one or both branches), or in a loop."""
        forms = ["plain", "if", "if"] + ["loop"] * 2 * (self.level + self.outer_loops < MAX_LOOPS)
        form = self.choice(forms)
        if form == "plain":
            return [self.rebind(name)]
        if form == "if":
            pre = self.snapshot()
            lines = [f"if {self.condition(self.choice([1, 1, 2]))}:"] + indent([self.rebind(name)])
            paths = [self.snapshot()]
            self.restore(pre)
            if self.chance(0.5):
                lines += ["else:"] + indent([self.rebind(name)])
                paths.append(self.snapshot())
            else:
                paths.append(pre)
            self.merge(paths, pre)
            return lines
        # `for i in range(k): p = p + e` (|e| <= step), maybe with a temporary first
        trips = self.integer(1, 4)
        index = INDEX_NAMES[self.level]
        step = self.choice([0.1, 0.25, 0.5])
        lo, hi = self.box[name]
        interval = (lo - trips * step, hi + trips * step)
        self.carried[name] = ("acc", interval)
        self.box[name] = interval
        self.level += 1
        self.env[index], self.box[index] = 0, (0, trips - 1)
        self.readonly.add(index)
        self.int_params.append(index)
        self.indices.append(index)
        body = [self.loop_simple()] if self.chance(0.4) else []
        body.append(self.accumulate(name, step))
        for temporary in [n for n in self.box if self.owner.get(n) == self.level]:
            self.drop(temporary)
        self.drop(index)
        self.level -= 1
        del self.carried[name]
        self.box[name] = interval
        return [f"for {index} in range({trips}):"] + indent(body)

    def loop_helper(self, depth: int) -> str | None:
        """In a loop body: `s = cell(s, x)` (an accumulator updated by a helper that rebinds
        it), `h = mix(...)` (a value overwritten every trip), or `u, v = polar(r, t)`."""
        acc = [n for n, (kind, _) in self.carried.items() if kind == "acc" and n in self.steps]
        over = [n for n, (kind, _) in self.carried.items() if kind == "over"]
        targets = self.fresh(self.pool) + self.assignable()
        kind = self.choice(["acc"] * 2 * bool(acc) + ["over"] * bool(over) + ["tuple"] * (len(targets) >= 2)
                           + ["none"])
        others = [self.helper_arg(max(depth - 1, 0)) for _ in range(self.choice([0, 1, 1, 2]))]
        if kind == "acc":
            name = self.choice(acc)
            args = [Expr(name, *self.box[name], shared=name in self.zero_d)] + others
            helper = self.make_helper(args, 1, ("acc", self.steps[name]))
        elif kind == "over":
            name = self.choice(over)
            args = others or [self.helper_arg(depth)]
            helper = self.make_helper(args, 1, ("fit", *self.carried[name][1]))
        elif kind == "tuple":
            n1 = self.choice(targets)
            n2 = self.choice([t for t in targets if t != n1])
            return self.tuple_helper_call(n1, n2, depth)
        else:
            return None
        statement = f"{name} = {self.helper_call(helper, args)}"
        scope = dict(self.env)
        self.run(statement, scope)
        self.bind(name, Expr(name, *self.box[name], shared=helper.shared), float(scope[name]))
        return statement

    def condition(self, depth: int) -> str:
        """An `if` test: comparisons of active values, or (in loops) of the loop index."""
        if self.indices and self.chance(0.25):
            test = self.index_test()
            if self.chance(0.3):
                test = f"{test} and {self.site_compare(depth, 1)}"
            return test
        kind = self.choice(["compare", "compare", "compare", "chained", "and", "or", "not"])
        if kind in ("and", "or"):
            return f"{self.site_compare(depth, 1)} {kind} {self.site_compare(depth, 1)}"
        if kind == "not":
            return f"not {self.site_compare(depth, 1)}"
        return self.site_compare(depth, 2 if kind == "chained" else 1)

    def index_test(self) -> str:
        name = self.choice(self.indices)
        lo, hi = self.box[name]
        c = self.integer(int(lo), int(hi))
        form = self.choice(["==", "==", ">=", "<", ">", "odd", "even"])
        if form == "odd":
            return f"{name} % 2 == 1"
        if form == "even":
            return f"{name} % 2 == 0"
        return f"{name} {form} {c}"

    def integer(self, lo: int, hi: int) -> int:
        return self.choices.integer(lo, hi)

    def depth(self) -> int:
        return self.choice([1, 1, 2])

    def statement_depth(self) -> int:
        return self.depth()

    def block(self, n: int, nest: int) -> list[str]:
        lines = []
        for _ in range(n):
            lines += self.any_statement(nest)
        return lines

    def any_statement(self, nest: int, kind: str | None = None) -> list[str]:
        """One statement (several lines for a compound one) at the current loop level."""
        if kind is None:
            kinds = ["simple"] * 3
            if nest < MAX_NEST:
                kinds += ["if", "if"]
                if self.level + self.outer_loops < MAX_LOOPS:
                    kinds += ["for", "for", "while"]
            kind = self.choice(kinds)
        if self.level > 0:
            return self.generate(kind, nest)
        # Outside loops the point's values are known exactly: fix the shifts now, then move on
        # with the values the statement leaves.
        pre = dict(self.env)
        lines = self.generate(kind, nest)
        if not self.returned:
            self.repair(lines, pre)
        env, returned = self.execute(lines, pre, instrumented=False)
        if returned:
            self.returned = True
        else:
            self.env = {n: env[n] for n in self.box}
        return lines

    def generate(self, kind: str, nest: int) -> list[str]:
        if kind == "rebind":
            return self.rebind_control(self.rebound[0], nest)
        if kind == "acc_param":
            return [self.accumulate_straight(*self.rebound)]
        if kind == "if":
            return self.if_statement(nest)
        if kind == "return":
            return self.early_return()
        if kind in ("for", "while"):
            return self.loop(kind, nest)
        if self.level == 0:
            return [self.statement(self.pool)]
        return [self.loop_simple()]

    def if_statement(self, nest: int) -> list[str]:
        pre = self.snapshot()
        n_tests = self.choice([1, 1, 1, 2, 3])
        has_else = self.chance(0.6)
        lines, paths = [], []
        for t in range(n_tests):
            self.restore(pre)
            test = self.condition(self.choice([1, 1, 2]))
            body = self.block(self.integer(1, 2), nest + 1)
            paths.append(self.snapshot())
            lines += [f"{'if' if t == 0 else 'elif'} {test}:"] + indent(body)
        self.restore(pre)
        if has_else:
            body = self.block(self.integer(1, 2), nest + 1)
            paths.append(self.snapshot())
            lines += ["else:"] + indent(body)
        else:
            paths.append(pre)
        self.merge(paths, pre)
        return lines

    def early_return(self) -> list[str]:
        """`if <test>: ...; return ...`; the code after it runs on the other path."""
        pre = self.snapshot()
        test = self.condition(self.choice([1, 1, 2]))
        body = self.block(self.integer(0, 2), MAX_NEST)
        body.append(self.result())
        self.restore(pre)
        return [f"if {test}:"] + indent(body)

    def loop_simple(self) -> str:
        """An assignment in a loop body: to a temporary, or to a value the loop carries."""
        over = [n for n, (kind, _) in self.carried.items() if kind == "over"]
        scale = [n for n, (kind, _) in self.carried.items() if kind == "scale"]
        kind = self.choice(["assign", "assign", "aug"] + ["over"] * 2 * bool(over) + ["scale"] * bool(scale))
        depth = self.depth()
        if self.helper_rate and self.helpers_allowed() and self.chance(2 * self.helper_rate):
            statement = self.loop_helper(depth)
            if statement is not None:
                return statement
        if kind == "aug" and self.assignable():
            return self.augassign(depth)
        if kind == "over":
            name = self.choice(sorted(over))
            e = self.fit(self.expr(depth, leaf_ok=False), *self.carried[name][1])
        elif kind == "scale":
            name = self.choice(sorted(scale))
            factor = self.choice(["squash", "squash", "cos", "const"])
            if factor == "const":
                e = Expr(repr(self.choice([0.5, 0.9, -0.75])), -0.9, 0.9, UNARY)
            elif factor == "cos":
                e = self.call("cos", [self.expr(depth)], -1.0, 1.0)
            else:
                e = self.fit(self.expr(depth), 0.0, 0.0)
            form = self.choice(["*=", "p * e", "e * p"])
            statement = (self.in_place(name, "*=", e) if form == "*=" else f"{name} = {name} * {wrap(e, MUL)}"
                         if form == "p * e" else f"{name} = {wrap(e, MUL - 1)} * {name}")
            scope = dict(self.env)
            self.run(statement, scope)
            self.bind(name, Expr(name, *self.box[name]), float(scope[name]))
            return statement
        else:
            targets = self.fresh(self.pool) + self.assignable()
            if not targets:
                return self.augassign(depth) if self.assignable() else "pass"
            name = self.choice(targets)
            e = self.expr(depth, leaf_ok=False)
        self.bind(name, e, self.value(e))
        return f"{name} = {e.text}"

    def loop(self, kind: str, nest: int) -> list[str]:
        """A `for` or `while` loop, with the lines that initialise what it accumulates."""
        level = self.level
        lines = []
        # The header: its bound on the number of trips, and the index (or counter) interval.
        if kind == "for":
            index = INDEX_NAMES[level]
            header, first, index_box, trips = self.range_header()
        else:
            index = COUNTER_NAMES[level]
            bound = "n" if "n" in self.env and self.chance(0.3) else str(self.integer(1, MAX_TRIPS))
            trips = MAX_N if bound == "n" else int(bound)
            first, index_box = 0, (0, trips)
            lines.append(f"{index} = 0")
        # What the body carries from one trip to the next.
        candidates = [n for n in sorted(self.box) if self.owner.get(n) == level and n not in self.readonly
                      and n not in self.carried]
        declared = {}
        for _ in range(self.choice([0, 1, 1, 2])):  # accumulators, new or existing
            new = self.fresh(self.pool)
            if new and (not candidates or self.chance(0.6)):
                name = self.choice(new)
                start = self.choice(["0.0", "0.0", "1.0", "expr"])
                e = self.expr(self.depth()) if start == "expr" else Expr(start, float(start), float(start))
                self.bind(name, e, self.value(e))
                lines.append(f"{name} = {e.text}")
            elif candidates:
                name = self.choice(candidates)
            else:
                continue
            if name in declared:
                continue
            if name in candidates:
                candidates.remove(name)
            step = self.choice([0.1, 0.25, 0.5, 1.0, 2.0])
            self.steps[name] = step
            lo, hi = self.box[name]
            declared[name] = ("acc", (lo - trips * step, hi + trips * step), step)
        for _ in range(self.choice([0, 1, 1, 2])):  # overwritten every trip
            if candidates:
                name = self.choice(candidates)
                candidates.remove(name)
                declared[name] = ("over", hull(*self.box[name], -1.0, 1.0), None)
        if candidates and self.chance(0.25):  # multiplied every trip by a factor in [-1, 1]
            name = self.choice(candidates)
            size = max(abs(b) for b in self.box[name])
            declared[name] = ("scale", (-size, size), None)
        for name, (role, interval, _) in declared.items():
            self.carried[name] = (role, interval)
            self.box[name] = interval
        if kind == "while":
            test = f"{index} < {bound}"
            active = [n for n in declared if declared[n][0] in ("acc", "over")]
            if active and self.chance(0.4):  # the trip count also depends on active values
                self.level += 1  # (the comparison is evaluated on every trip)
                name = self.choice(active)
                test += f" and {self.site_compare_with(Expr(name, *self.box[name]))}"
                self.level -= 1
            header = f"while {test}:"
        # The body.
        self.level += 1
        self.env[index], self.box[index] = first, index_box
        self.readonly.add(index)
        self.int_params.append(index)
        self.indices.append(index)
        plan = [f"acc {n}" for n in declared if declared[n][0] == "acc"]
        plan += ["statement"] * self.integer(1, 2 if level == 0 else 1)
        increment_first = kind == "while" and self.chance(0.5)
        if self.chance(0.3) and (kind == "for" or increment_first):
            plan.append("jump")
        order = []
        while plan:
            order.append(plan.pop(self.integer(0, len(plan) - 1)))
        if kind == "while":
            order.insert(0 if increment_first else len(order),  "increment")
        body = []
        zero_d_before = set(self.zero_d)
        for item in order:
            if item == "increment":
                body.append(self.choice([f"{index} += 1", f"{index} = {index} + 1"]))
            elif item == "jump":
                body += [f"if {self.index_test_of(index)}:", f"    {self.choice(['break', 'continue'])}"]
            elif item.startswith("acc "):
                name = item[4:]
                body.append(self.accumulate(name, declared[name][2]))
            else:
                body += self.any_statement(nest + 1)
        if self.zero_d - zero_d_before:
            body = self.no_in_place_after_0d(body)
        for name in [n for n in self.box if self.owner.get(n) == self.level]:
            self.drop(name)  # the body's temporaries
        self.drop(index)
        self.level -= 1
        for name, (_, interval, _) in declared.items():
            del self.carried[name]
            self.box[name] = interval
            self.env[name] = self.env.get(name, 0.0)
        lines += [header] + indent(body)
        return lines

    def no_in_place_after_0d(self, body: list[str]) -> list[str]:
        """A loop body in which a name first came to hold a 0-d array (`np.where`): on the next
        trip a name the body bound earlier may share that array (`w = a` before `a = np.where
        (...)`), so every name the body assigns counts as 0-d from here on, and every update in
        place in the body is written `name = name op (e)` (the same value; seed 1213 #6802)."""
        text = PLACEHOLDER.sub("0.0", "\n".join(indent(body)))  # (comparison sites not yet rendered)
        tree = ast.parse("while True:\n" + text)
        assigned = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
                    and isinstance(node.ctx, ast.Store)}
        self.zero_d |= assigned
        return [IN_PLACE.sub(r"\1\2 = \2 \3 (\4)", line) for line in body]

    def index_test_of(self, index: str) -> str:
        saved, self.indices = self.indices, [index]
        try:
            return self.index_test()
        finally:
            self.indices = saved

    def site_compare_with(self, left: Expr) -> str:
        self.pure = False
        operand = self.small(self.depth())
        self.sites.append(Site(operand, [left]))
        site = Expr(f"\x00{len(self.sites) - 1}\x00", operand.lo, operand.hi, ADD)
        return f"{left.text} {self.choice(['<', '>', '<=', '>='])} {wrap(site, CMP)}"

    def range_header(self):
        """(`for` line, first index value, index interval, bound on the number of trips)."""
        index = INDEX_NAMES[self.level]
        outer = [i for i in self.indices if i in INDEX_NAMES]
        form = self.choice(["k", "k", "k", "k0k1", "step", "n", "n1", "outer"])
        if form in ("n", "n1") and "n" not in self.env or form == "outer" and not outer:
            form = "k"
        if form == "k":
            k = self.integer(1, MAX_TRIPS)
            return f"for {index} in range({k}):", 0, (0, k - 1), k
        if form == "k0k1":
            k0 = self.integer(0, 3)
            k1 = self.integer(k0 + 1, k0 + MAX_TRIPS)
            return f"for {index} in range({k0}, {k1}):", k0, (k0, k1 - 1), k1 - k0
        if form == "step":
            k = self.integer(2, 2 * MAX_TRIPS)
            return f"for {index} in range(0, {k}, 2):", 0, (0, k - 1), (k + 1) // 2
        if form == "n":
            return f"for {index} in range(n):", 0, (0, MAX_N - 1), MAX_N
        if form == "n1":
            return f"for {index} in range(1, n + 1):", 1, (1, MAX_N), MAX_N
        i = self.choice(outer)  # a bound computed from the outer index: range(i + 1)
        lo, hi = self.box[i]
        return f"for {index} in range({i} + 1):", 0, (0, hi), int(hi) + 1

    def accumulate(self, name: str, step: float) -> str:
        """One update of an accumulator by at most `step` in magnitude."""
        e = self.bounded(self.depth(), step)
        form = self.choice(["+=", "-=", "s + e", "s - e", "e + s"])
        if form in ("+=", "-="):
            statement = self.in_place(name, form, e)
        elif form == "s + e":
            statement = f"{name} = {name} + {wrap(e, ADD)}"
        elif form == "s - e":
            statement = f"{name} = {name} - {wrap(e, ADD)}"
        else:
            statement = f"{name} = {wrap(e, ADD - 1)} + {name}"
        scope = dict(self.env)
        self.run(statement, scope)
        self.bind(name, Expr(name, *self.box[name]), float(scope[name]))
        return statement


def indent(lines: list[str]) -> list[str]:
    return [f"    {line}" for line in lines]


def build_control_program(choices, max_statements: int = 3, helpers: bool = True) -> Program:
    """A random program with `if`, `for` and `while` statements, and a point to check it at.

    `f` takes 2-4 float parameters and sometimes an int `n` (a loop bound, never
    differentiated; `wrt` then names some or all of the float parameters; without `n` it is
    None, gradgen's default).
    """
    params = list(PARAMS[: choices.integer(2, 4)])
    point = {p: choices.coordinate() for p in params}
    b = _ControlBuilder(choices, choices.choice(["math", "math", "numpy", "from"]), point)
    b.pool = LOCALS + (TRICKY_LOCALS if choices.integer(0, 9) == 9 else ())
    b.helper_rate = helper_rate(point, [0.0, 0.0, 0.05, 0.1, 0.15]) if helpers else 0.0
    wrt = None
    if choices.integer(0, 2) == 2:
        point["n"] = b.env["n"] = choices.choice([0, 1, 2, 2, 3, 3, 4])
        b.box["n"], b.owner["n"] = (0, MAX_N), 0
        b.readonly.add("n")
        b.int_params.append("n")
        if choices.integer(0, 1):
            wrt = tuple(p for p in params if choices.integer(0, 2) > 0) or (params[0],)
        else:
            wrt = tuple(params)
        params.append("n")
    constants = []
    if choices.integer(0, 4) == 4:
        k = choices.choice([0.5, 1.25, 2.0])
        constants.append(f"K = {k!r}")
        b.readonly.add("K")
        b.env["K"], b.box["K"], b.owner["K"] = k, (k, k), 0
        b.namespace["K"] = k  # (read by helpers as a global)
    kinds = [choices.choice(["simple", "simple", "if", "if", "for", "for", "while", "return"])
             for _ in range(choices.integer(1, max_statements))]
    if all(k == "simple" for k in kinds):
        kinds[choices.integer(0, len(kinds) - 1)] = choices.choice(["if", "for", "while"])
    body = []
    for kind in kinds:
        body += b.any_statement(0, kind)
    body.append(b.result())
    b.verify(", ".join(params), constants, body, point)
    body = [b.render(line) for line in body]
    every = body + [b.render(line) for h in b.helpers for line in h.lines]
    b.annotate_helpers(every)
    return Program(b.module(", ".join(parameters(params, b.int_params, every)), constants, body), point, wrt)


@st.composite
def control_programs(draw, max_statements: int = 3) -> Program:
    """Hypothesis strategy: a random program with control flow (see `build_control_program`)."""
    return build_control_program(HypothesisChoices(draw), max_statements)


def seeded_control_program(seed: int, max_statements: int = 3) -> Program:
    try:
        return build_control_program(SeededChoices(seed), max_statements)
    except (AssertionError, ValueError, ArithmeticError):  # (a comparison the repair could not move clear, or
        # a move that took a guarded call out of its domain, soak 39005 #1180: rare, with helpers)
        return build_control_program(SeededChoices(seed), max_statements, helpers=False)
