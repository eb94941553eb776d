"""Derivative rules for Python's operators, `math` and NumPy's elementwise functions,
reductions, linear algebra, indexing and constructors, registered into the one table of
gradgen/rules/table.py (which says what a rule is). The library modules beside this one
(linalg, shape, special, lists, trees) register theirs the same way; the package's
`__init__` imports every one, so the table is whole wherever it is read."""

from __future__ import annotations

import ast
import math
import operator

from gradgen.errors import CompileError
from gradgen.ir.nodes import Call, Cond, Const, Spelled, variables
from gradgen.rules.table import ARRAY_RULES, HELPER_NAMES, SMOOTH_HELPER_SOURCES, F, helper, primitive, sympy, twin


def _maxlike(compare):
    """Rule for max/min of any arity: the first extreme argument takes the whole gradient."""

    def rule_for(i):
        def rule(g, out, *xs):
            tests = [getattr(F, compare if j > i else compare + "_strict")(xs[i], xs[j])
                     for j in range(len(xs)) if j != i]
            test = tests[0] if len(tests) == 1 else Call("and", tuple(tests), "op")
            return Cond(test, g, Const(0.0))

        return rule

    return rule_for


def _number(e):
    """The number a Const holds (not an array, not a bool), else None."""
    if isinstance(e, Const) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return e.value
    return None


def _is_zero(x):
    """`x == 0` as a number (0 or 1, as NumPy counts a comparison): the guard that turns a
    0/0 or log(0) at an edge point into the framework's finite value, and is exactly 0 (so
    changes nothing, bit for bit) everywhere else."""
    return Call("eq", (x, Const(0)), "op")


def _pow_base(g, out, x, y):
    """d(x ** y)/dx = y * x ** (y - 1); at y == 0 it is 0 even at x == 0 (x ** 0 is the
    constant 1; PyTorch, and JAX for an integer exponent): the exponent y - 1 + (y == 0)
    makes it 0 * x ** 0, not 0 * 0 ** -1 (nan, or ZeroDivisionError on Python floats)."""
    if _number(y) is not None or not variables(y):  # a constant exponent: folds as before (x ** 2 -> 2 * x)
        return g * y * x ** (y - 1)
    return g * y * x ** (y - 1 + _is_zero(y))


def _pow_exponent(g, out, x, y):
    """d(x ** y)/dy = x ** y * log(x); 0 where x == 0 (JAX and PyTorch): log(x + (x == 0))
    is log(1) there, where 0 * log(0) would be nan (or a ValueError from math.log)."""
    if _number(x) is not None:  # a constant base: 0.0 ** y has derivative 0, 2.0 ** y as before
        return Const(0) if _number(x) == 0 else g * out * F.log(x)
    return g * out * F.log(x + _is_zero(x))


def _over_norm(g, x, out):
    """g * x / out for out = norm or hypot (x one of its arguments): 0 where x == 0, so at the
    origin 0 (PyTorch's torch.linalg.vector_norm; the smallest subgradient) instead of 0/0.
    Where x != 0, out >= |x| > 0 and (x == 0) adds exactly 0."""
    return g * x / (out + _is_zero(x))


def _sign_scalar(x):
    return Cond(Call("gt", (x, Const(0)), "op"), Const(1.0),
                Cond(Call("lt", (x, Const(0)), "op"), Const(-1.0), Const(0.0)))


# --- arithmetic operators -------------------------------------------------------------
primitive("add", 2, spellings=["numpy.add"], sympy=operator.add, op=ast.Add,
          vjp=(lambda g, out, x, y: g, lambda g, out, x, y: g))
primitive("sub", 2, spellings=["numpy.subtract"], sympy=operator.sub, op=ast.Sub,
          vjp=(lambda g, out, x, y: g, lambda g, out, x, y: -g))
primitive("mul", 2, spellings=["numpy.multiply"], sympy=operator.mul, op=ast.Mult,
          vjp=(lambda g, out, x, y: g * y, lambda g, out, x, y: g * x))
primitive("div", 2, spellings=["numpy.divide", "numpy.true_divide"], sympy=operator.truediv, op=ast.Div,
          vjp=(lambda g, out, x, y: g / y, lambda g, out, x, y: -g * out / y))
primitive("pow", 2, spellings=["math.pow", "pow", "numpy.power"], sympy=operator.pow, op=ast.Pow,
          vjp=(lambda g, out, x, y: _pow_base(g, out, x, y), lambda g, out, x, y: _pow_exponent(g, out, x, y)))
primitive("neg", 1, spellings=["numpy.negative"], sympy=operator.neg, op=ast.USub, vjp=lambda g, out, x: -g)
primitive("pos", 1, spellings=["numpy.positive"], sympy=operator.pos, op=ast.UAdd, vjp=lambda g, out, x: g)
primitive("mod", 2, spellings=["numpy.mod", "numpy.remainder"], sympy=lambda x, y: x - y * sympy.floor(x / y),
          op=ast.Mod,
          vjp=(lambda g, out, x, y: g, lambda g, out, x, y: -g * F.floor(x / y)))

# --- exponentials and logarithms ------------------------------------------------------
primitive("exp", spellings=["math.exp", "numpy.exp"], sympy=twin("exp"), vjp=lambda g, out, x: g * out)
primitive("expm1", spellings=["math.expm1", "numpy.expm1"], sympy=lambda x: sympy.exp(x) - 1,
          vjp=lambda g, out, x: g * (out + 1))
# math.log(x, base) is "logb"; registered first so that the one-argument "log" owns the spelling
primitive("logb", 2, spellings=["math.log"], sympy=twin("log"),
          vjp=(lambda g, out, x, b: g / (x * F.log(b)), lambda g, out, x, b: -g * out / (b * F.log(b))))
primitive("log", spellings=["math.log", "numpy.log"], sympy=twin("log"), vjp=lambda g, out, x: g / x)
primitive("log2", spellings=["math.log2", "numpy.log2"], sympy=lambda x: sympy.log(x, 2),
          vjp=lambda g, out, x: g / (x * F.log(Const(2))))
primitive("log10", spellings=["math.log10", "numpy.log10"], sympy=lambda x: sympy.log(x, 10),
          vjp=lambda g, out, x: g / (x * F.log(Const(10))))
primitive("log1p", spellings=["math.log1p", "numpy.log1p"], sympy=lambda x: sympy.log(1 + x),
          vjp=lambda g, out, x: g / (1 + x))
primitive("sqrt", spellings=["math.sqrt", "numpy.sqrt"], sympy=twin("sqrt"), vjp=lambda g, out, x: g / (2 * out))
primitive("sigmoid", spellings=["scipy.special.expit"], sympy=lambda x: 1 / (1 + sympy.exp(-x)),
          vjp=lambda g, out, x: g * out * (1 - out))

# --- trigonometric and hyperbolic -----------------------------------------------------
primitive("sin", spellings=["math.sin", "numpy.sin"], sympy=twin("sin"), vjp=lambda g, out, x: g * F.cos(x))
primitive("cos", spellings=["math.cos", "numpy.cos"], sympy=twin("cos"), vjp=lambda g, out, x: -g * F.sin(x))
primitive("tan", spellings=["math.tan", "numpy.tan"], sympy=twin("tan"), vjp=lambda g, out, x: g * (1 + out**2))
primitive("asin", spellings=["math.asin", "numpy.arcsin"], sympy=twin("asin"),
          vjp=lambda g, out, x: g / F.sqrt(1 - x**2))
primitive("acos", spellings=["math.acos", "numpy.arccos"], sympy=twin("acos"),
          vjp=lambda g, out, x: -g / F.sqrt(1 - x**2))
primitive("atan", spellings=["math.atan", "numpy.arctan"], sympy=twin("atan"), vjp=lambda g, out, x: g / (1 + x**2))
primitive("atan2", 2, spellings=["math.atan2", "numpy.arctan2"], sympy=twin("atan2"),
          vjp=(lambda g, out, y, x: g * x / (x**2 + y**2), lambda g, out, y, x: -g * y / (x**2 + y**2)))
primitive("hypot", None, spellings=["math.hypot", "numpy.hypot"], sympy=lambda *xs: sympy.sqrt(sum(x**2 for x in xs)),
          vjp=lambda i: lambda g, out, *xs: _over_norm(g, xs[i], out))
primitive("sinh", spellings=["math.sinh", "numpy.sinh"], sympy=twin("sinh"), vjp=lambda g, out, x: g * F.cosh(x))
primitive("cosh", spellings=["math.cosh", "numpy.cosh"], sympy=twin("cosh"), vjp=lambda g, out, x: g * F.sinh(x))
primitive("tanh", spellings=["math.tanh", "numpy.tanh"], sympy=twin("tanh"),
          vjp=lambda g, out, x: g * (1 - out**2))
primitive("erf", spellings=["math.erf", "scipy.special.erf"], sympy=twin("erf"),
          vjp=lambda g, out, x: g * 2 / F.sqrt(F.pi()) * F.exp(-(x**2)))
primitive("erfc", spellings=["math.erfc", "scipy.special.erfc"], sympy=twin("erfc"),
          vjp=lambda g, out, x: -g * 2 / F.sqrt(F.pi()) * F.exp(-(x**2)))

# --- absolute value, extremes -----------------------------------------------------------
primitive("abs", spellings=["abs", "math.fabs", "numpy.abs", "numpy.absolute", "numpy.fabs"],
          sympy=twin("Abs"), vjp=lambda g, out, x: g * F.sign(x))
primitive("max", None, spellings=["max"], sympy=twin("Max"), vjp=_maxlike("ge"))
primitive("min", None, spellings=["min"], sympy=twin("Min"), vjp=_maxlike("le"))

# --- named constants --------------------------------------------------------------------
primitive("pi", 0, spellings=["math.pi", "numpy.pi"], sympy=lambda: sympy.pi, kind="attribute", tangent="none")
primitive("e", 0, spellings=["math.e", "numpy.e"], sympy=lambda: sympy.E, kind="attribute", tangent="none")
primitive("tau", 0, spellings=["math.tau"], sympy=lambda: 2 * sympy.pi, kind="attribute", tangent="none")

# --- piecewise constant: zero gradient almost everywhere (as JAX and PyTorch) -----------
# (tangent="none": the result carries no derivative, in forward mode either)
primitive("sign", spellings=["numpy.sign"], sympy=twin("sign"), kind="piecewise", expand=_sign_scalar, tangent="none")
primitive("floor", spellings=["math.floor", "numpy.floor"], sympy=twin("floor"), kind="piecewise", tangent="none")
primitive("ceil", spellings=["math.ceil", "numpy.ceil"], sympy=twin("ceiling"), kind="piecewise", tangent="none")
primitive("trunc", spellings=["math.trunc", "numpy.trunc"], sympy=lambda x: sympy.sign(x) * sympy.floor(abs(x)),
          kind="piecewise", tangent="none")
primitive("round", spellings=["round", "numpy.round"], sympy=lambda x: sympy.floor(x + sympy.Rational(1, 2)),
          kind="piecewise", tangent="none")
primitive("floordiv", 2, sympy=lambda x, y: sympy.floor(x / y), kind="piecewise", op=ast.FloorDiv, tangent="none")
for _name, _op, _fn in [("lt", ast.Lt, operator.lt), ("le", ast.LtE, operator.le), ("gt", ast.Gt, operator.gt),
                        ("ge", ast.GtE, operator.ge), ("eq", ast.Eq, operator.eq), ("ne", ast.NotEq, operator.ne)]:
    primitive(_name, 2, sympy=_fn, kind="piecewise", op=_op, tangent="none")
primitive("ge_strict", 2, sympy=operator.gt, kind="piecewise", op=ast.Gt, tangent="none")  # max's tie-break
primitive("le_strict", 2, sympy=operator.lt, kind="piecewise", op=ast.Lt, tangent="none")  # min's tie-break
primitive("and", None, sympy=lambda *xs: all(xs), kind="piecewise", op=ast.And, tangent="none")
primitive("or", None, sympy=lambda *xs: any(xs), kind="piecewise", op=ast.Or, tangent="none")
primitive("not", 1, sympy=operator.not_, kind="piecewise", op=ast.Not, tangent="none")

# --- integer positions: a differentiated value may not flow here ------------------------
primitive("int", spellings=["int"], sympy=lambda x: sympy.Integer(int(x)), kind="integer", tangent="none")
primitive("factorial", spellings=["math.factorial"], sympy=twin("factorial"), kind="integer", tangent="none")
primitive("len", spellings=["len"], sympy=len, kind="piecewise", tangent="none")
primitive("invert", 1, sympy=operator.invert, kind="piecewise", op=ast.Invert, tangent="none")  # ~mask
primitive("range", None, sympy=range, kind="integer", min_args=1, tangent="none")  # a loop's range (1 to 3 arguments)

# --- conversions that do nothing to a derivative ----------------------------------------
primitive("float", spellings=["float", "numpy.float64"], sympy=lambda x: x, vjp=lambda g, out, x: g)

# --- NumPy: elementwise ------------------------------------------------------------------
def _tie_weight(mine, other, wins):
    """1 where `mine` wins, 0.5 at a tie (as JAX and PyTorch), 0 where it loses."""
    return F.where(Call("eq", (mine, other), "op"), 0.5, Call(wins, (mine, other), "op"))


primitive("maximum", 2, spellings=["numpy.maximum", "numpy.fmax"], sympy=twin("Max"),
          vjp=(lambda g, out, x, y: g * _tie_weight(x, y, "gt"), lambda g, out, x, y: g * _tie_weight(y, x, "gt")))
primitive("minimum", 2, spellings=["numpy.minimum", "numpy.fmin"], sympy=twin("Min"),
          vjp=(lambda g, out, x, y: g * _tie_weight(x, y, "lt"), lambda g, out, x, y: g * _tie_weight(y, x, "lt")))
primitive("where", 3, spellings=["numpy.where"], sympy=lambda c, a, b: a if c else b,
          vjp=(None, lambda g, out, c, a, b: F.where(c, g, 0.0), lambda g, out, c, a, b: F.where(c, 0.0, g)))
primitive("clip", 3, spellings=["numpy.clip"], sympy=lambda x, lo, hi: sympy.Min(sympy.Max(x, lo), hi), method=True,
          vjp=(lambda g, out, x, lo, hi: g * F.logical_and(Call("le", (lo, x), "op"), Call("le", (x, hi), "op")),
               lambda g, out, x, lo, hi: g * F.logical_and(Call("lt", (x, lo), "op"), Call("le", (lo, hi), "op")),
               lambda g, out, x, lo, hi: g * Call("gt", (F.maximum(x, lo), hi), "op")))
primitive("square", spellings=["numpy.square"], sympy=lambda x: x**2, vjp=lambda g, out, x: g * 2 * x)
# angle units: linear, a constant factor (np.radians is np.deg2rad, np.degrees np.rad2deg)
primitive("deg2rad", spellings=["numpy.deg2rad", "numpy.radians", "math.radians"], sympy=lambda x: x * sympy.pi / 180,
          vjp=lambda g, out, x: g * (math.pi / 180))
primitive("rad2deg", spellings=["numpy.rad2deg", "numpy.degrees", "math.degrees"], sympy=lambda x: x * 180 / sympy.pi,
          vjp=lambda g, out, x: g * (180 / math.pi))
primitive("reciprocal", spellings=["numpy.reciprocal"], sympy=lambda x: 1 / x, vjp=lambda g, out, x: -g * out**2)
primitive("logical_and", 2, spellings=["numpy.logical_and"], sympy=lambda a, b: a and b, kind="piecewise",
          tangent="none")


# --- NumPy: reductions (axis=, keepdims=) -----------------------------------------------
def kept(g, p):
    """Put back the axes a reduction dropped, so `g` broadcasts against its input."""
    return g if p.get("axis") is None or p.get("keepdims") else F.expand_dims(g, axis=p["axis"])


def _spread(g, x):
    """`g` over every element of x: a fresh float array of x's shape (writable, float64).
    A g that is one number everywhere already (`-np.ones_like(s) / n`, the gradient of a
    mean) is that number times ones of x's shape, not a product of two arrays of ones."""
    ones = F.ones_like(x, dtype=Spelled("float"))
    if g == Const(1):
        return ones
    spread = _respread(g, ones)
    return spread if spread is not None else g * ones


def _respread(g, ones):
    """g with its array of ones (through the axes a reduction kept) replaced by `ones`, if g
    is ones scaled by numbers; else None."""
    if not isinstance(g, Call):
        return None
    if g.prim == "ones_like":
        return ones
    if g.prim in ("expand_dims", "neg"):
        inner = _respread(g.args[0], ones)
        return None if inner is None else inner if g.prim == "expand_dims" else Call("neg", (inner,), g.ns, g.loc)
    if g.prim in ("mul", "div"):
        a, b = g.args
        if counts_only(b) and _respread(a, ones) is not None:
            return Call(g.prim, (_respread(a, ones), b), g.ns, g.loc)
        if g.prim == "mul" and counts_only(a) and _respread(b, ones) is not None:
            return Call("mul", (a, _respread(b, ones)), g.ns, g.loc)
    return None


def counts_only(e):
    """Whether e is a number made of constants and sizes (np.size(x), np.shape(x)[1])."""
    if isinstance(e, Const):
        return True
    if not isinstance(e, Call):
        return False
    if e.prim in ("size", "len") or (e.prim == "getitem" and isinstance(e.args[0], Call) and e.args[0].prim == "shape"):
        return True
    return e.prim in ("mul", "div", "neg", "add", "sub") and all(counts_only(a) for a in e.args)


def _count(x, p):
    """How many elements of x each result of a reduction along p's axes takes in."""
    axis = p.get("axis")
    if axis is None:
        return F.size(x)
    axes = axis if isinstance(axis, tuple) else (axis,)
    count = None
    for a in axes:
        length = Call("getitem", (F.shape(x), Const(a)), "op", params=(("index", ("i",)),))
        count = length if count is None else count * length
    return count


def _extreme(g, out, x, p):
    """max/min: the gradient goes to the extreme entries, shared equally among ties. Where g
    is ones of the result's shape (the gradient of a sum of it), the share alone: `hit /
    count` has x's shape and floats, which ones of the result's, kept, would only stretch
    into (kmeans' `np.sum(np.min(distances, axis=0))`)."""
    hit = Call("eq", (x, kept(out, p)), "op")
    count = F.sum(hit, axis=p.get("axis"), keepdims=True)
    scale = _ones_scale(g, out)
    if scale is not None:
        return hit / count if scale == Const(1.0) else scale * hit / count
    return kept(g, p) * hit / count


def _ones_scale(g, out):
    """The number g is everywhere where g is ones of out's shape times numbers (`np.ones_like(m)`,
    `2.0 * np.ones_like(m)`, `-np.ones_like(m)`), as an expression; else None."""
    if isinstance(g, Call) and g.prim == "ones_like" and g.args[0] == out:
        return Const(1.0)
    if isinstance(g, Call) and g.prim == "neg":
        inner = _ones_scale(g.args[0], out)
        return None if inner is None else Const(-inner.value) if isinstance(inner, Const) else Call("neg", (inner,), g.ns)
    if isinstance(g, Call) and g.prim in ("mul", "div") and len(g.args) == 2:
        number = g.args[1] if g.prim == "div" or isinstance(g.args[0], Call) else g.args[0]
        ones = g.args[0] if number is g.args[1] else g.args[1]
        inner = _ones_scale(ones, out) if isinstance(number, Const) else None
        if inner is not None:
            return Call(g.prim, (inner, number) if g.prim == "div" else (number, inner), g.ns) \
                if inner != Const(1.0) or g.prim == "div" else number
    return None


def _norm(g, out, x, p):
    """np.linalg.norm(x, ord, axis, keepdims): a vector norm along an axis (ord None or 2:
    x / norm; 1: sign(x); inf: sign(x) at the largest |x|, shared among ties), or the
    Frobenius norm (ord None) of the whole array or of the axes named."""
    order, axis = p.get("ord"), p.get("axis")
    if order not in (None, 1, 2, math.inf) or (order is not None and isinstance(axis, tuple)):
        raise CompileError(f"np.linalg.norm(..., ord={order!r}{', axis=' + repr(axis) if axis is not None else ''}) "
                           "has no derivative rule: gradgen differentiates vector norms (ord None, 2, 1, np.inf) and "
                           "the Frobenius norm (ord None)")
    g, out = kept(g, p), kept(out, p)
    if order in (None, 2):
        return _over_norm(g, x, out)
    if order == 1:
        return g * F.sign(x)
    hit = Call("eq", (F.abs(x), out), "op")
    return g * F.sign(x) * hit / F.sum(hit, axis=axis, keepdims=True)


def _axis_given(p):
    """The axis as a helper's last argument, when the call gave one."""
    return (Const(p["axis"]),) if p.get("axis") is not None else ()


def _reversed_cumsum(g, out, x, axis=None):
    if axis is None:
        return F.reshape(F.flip(F.cumsum(F.flip(g))), F.shape(x))
    # (np.cumsum of a number along axis 0 is a 1-element array: back to the number's shape,
    # soak seed 41004 #755, where `np.var(v, axis=-1)` of a vector met it)
    return F.reshape(F.flip(F.cumsum(F.flip(g, axis=axis), axis=axis), axis=axis), F.shape(x))


# tangent="linear": linear in its differentiated inputs jointly, so the tangent is the call on
# the tangents; "reduction": each result reads its own slice; "multilinear": the product rule
REDUCE = ("axis", "keepdims")
primitive("sum", spellings=["numpy.sum"], keywords=REDUCE, method=True, sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: _spread(kept(g, p), x), tangent="linear")
primitive("mean", spellings=["numpy.mean"], keywords=REDUCE, method=True, sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: _spread(kept(g, p), x) / _count(x, p), tangent="linear")
primitive("prod", spellings=["numpy.prod"], keywords=REDUCE, method=True, sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: F.prod_grad(g, x, **p), tangent="reduction")  # not out / x: nan where x holds a 0
primitive("amax", spellings=["numpy.max", "numpy.amax"], keywords=REDUCE, method=True, sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: _extreme(g, out, x, p), tangent="reduction")
primitive("amin", spellings=["numpy.min", "numpy.amin"], keywords=REDUCE, method=True, sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: _extreme(g, out, x, p), tangent="reduction")
primitive("cumsum", spellings=["numpy.cumsum"], keywords=("axis",), method=True, sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: _reversed_cumsum(g, out, x, p.get("axis")), tangent="linear")
# np.cumprod: divide-free (out / x is nan where x holds a 0), by the recurrences in its helpers
primitive("cumprod", spellings=["numpy.cumprod"], keywords=("axis",), method=True, sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: F.cumprod_grad(g, x, *_axis_given(p)), tangent="explicit")
primitive("norm", spellings=["numpy.linalg.norm"], keywords=("ord", "axis", "keepdims"), sympy=lambda x, **p: abs(x),
          vjp=lambda g, out, x, **p: _norm(g, out, x, p), elementwise=False, result="reduction", tangent="reduction")
primitive("sum_list", None, spellings=[], sympy=lambda *xs: sum(xs), min_args=1,
          vjp=lambda i: lambda g, out, *xs: _spread(g, xs[i]), elementwise=False, tangent="linear")

# --- NumPy: linear algebra and shape ------------------------------------------------------
primitive("matmul", 2, spellings=["numpy.matmul", "numpy.dot"], op=ast.MatMult, sympy=operator.mul,
          elementwise=False, tangent="multilinear",
          vjp=(lambda g, out, a, b: F.matmul_grad_a(g, a, b), lambda g, out, a, b: F.matmul_grad_b(g, a, b)))
primitive("outer", 2, spellings=["numpy.outer"], sympy=operator.mul, elementwise=False, tangent="multilinear",
          vjp=(lambda g, out, a, b: F.reshape(Call("matmul", (g, F.ravel(b)), "op"), F.shape(a)),
               lambda g, out, a, b: F.reshape(Call("matmul", (F.ravel(a), g), "op"), F.shape(b))))
primitive("T", spellings=[], sympy=lambda x: x, vjp=lambda g, out, x: F.T(g), elementwise=False, tangent="linear")
primitive("swapaxes", spellings=["numpy.swapaxes"], keywords=("axis1", "axis2"), method=True, sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: F.swapaxes(g, **p), elementwise=False, tangent="linear")
primitive("transpose", spellings=["numpy.transpose"], keywords=("axes",), method=True, sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: F.transpose(g, axes=_inverse(p.get("axes"))), tangent="linear")
def _reshaped(g, out, x, *rest, **p):
    """Any pure reshape: g in x's shape; the seed 1 of a result that is such a reshape is 1.0
    (np.reshape(1, (1, 1)) is an array of integers: fuzz seed 2012 #114)."""
    if isinstance(g, Const) and type(g.value) is int:
        g = Const(float(g.value))
    return F.reshape(g, F.shape(x))



primitive("reshape", 2, spellings=["numpy.reshape"], method=True, sympy=lambda x, s: x, vjp=(_reshaped, None),
          elementwise=False, tangent="linear")
primitive("expand_dims", spellings=["numpy.expand_dims"], keywords=("axis",), sympy=lambda x, **p: x, vjp=_reshaped,
          tangent="linear")
primitive("squeeze", spellings=["numpy.squeeze"], keywords=("axis",), method=True, sympy=lambda x, **p: x,
          vjp=_reshaped, tangent="linear")
primitive("ravel", spellings=["numpy.ravel"], method=True, sympy=lambda x: x, vjp=_reshaped, elementwise=False,
          tangent="linear")
primitive("flip", spellings=["numpy.flip"], keywords=("axis",), sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: F.flip(g, **p), tangent="linear")
primitive("broadcast_to", 2, spellings=["numpy.broadcast_to"], sympy=lambda x, s: x, elementwise=False,
          vjp=(lambda g, out, x, s: F.unbroadcast(g, x), None), tangent="linear")
primitive("concatenate", None, spellings=["numpy.concatenate"], keywords=("axis",), sympy=lambda *xs, **p: xs,
          min_args=1, tangent="linear",
          vjp=lambda i: lambda g, out, *xs, **p: F.concatenate_grad(g, F.tuple(*xs), i, p.get("axis", 0)))
primitive("stack", None, spellings=["numpy.stack"], keywords=("axis",), sympy=lambda *xs, **p: xs, min_args=1,
          vjp=lambda i: lambda g, out, *xs, **p: F.take(g, i, axis=p.get("axis", 0)), tangent="linear")
primitive("take", 2, spellings=["numpy.take"], keywords=("axis",), sympy=lambda x, i, **p: x, kind="piecewise",
          tangent="linear", value_slots=(0,))  # the indices carry no tangent

# --- indexing: x[i], x[1:, 0], x[mask], x[idx] -------------------------------------------
# Call("getitem", (x, *index expressions), params=(("index", layout),)): `layout` says how
# the expressions form the index (see gradgen.frontend.lower.index_layout). The gradient of x is
# zeros with g added at the index: a "scatter" the backward pass writes as `d[idx] += g`
# (or np.add.at where an index array may repeat).
primitive("getitem", None, keywords=("index",), sympy=None, elementwise=False, tangent="linear",
          vjp=lambda i: (lambda g, out, x, *index, **p: Call("scatter", (g, x) + tuple(index), None,
                                                              params=tuple(p.items()))) if i == 0 else None)
# (tangent="linear_in_first": a helper linear in the gradient it carries, reading the others
# for their shapes or indices only: what a Hessian-vector product needs)
primitive("scatter", None, keywords=("index",), sympy=None, kind="helper", tangent="linear_in_first", shaped_as=1)


# --- writing: x[index] = v ------------------------------------------------------------------
# Call("setitem", (x, v, *index expressions), params=(("index", layout),)): x with v written
# at the index (in place where x keeps its name; gradgen.codegen.emit). What v overwrote is gone, so
# x's gradient is g with zeros at the index ("zero_at": `dx[idx] = 0.0` into an adjoint the
# backward pass owns); v's is g at the index, summed back to v's shape (v broadcasts there),
# from the writes that survive: where an index array repeats an element (`y[[0, 1, 1]] = v`),
# NumPy keeps the last write ("last_writes"; plain `g[index]` where the index cannot repeat,
# gradgen.transform.reverse.expression).
def _setitem_rule(i):
    def rule(g, out, x, v, *index, **p):
        if i == 0:
            return Call("zero_at", (g,) + tuple(index), None, params=tuple(p.items()))
        if i == 1:
            return Call("last_writes", (g,) + tuple(index), None, params=tuple(p.items()))
        return None  # (an index: no derivative)

    return rule


primitive("setitem", None, keywords=("index",), sympy=None, elementwise=False, vjp=(_setitem_rule,),
          tangent="linear", value_slots=(0, 1))  # x and v; the index carries no tangent
primitive("zero_at", None, keywords=("index",), sympy=None, kind="helper", tangent="linear_in_first")
primitive("last_writes", None, keywords=("index",), sympy=None, kind="helper", tangent="linear_in_first")

# --- NumPy: facts about arrays and constructors (no derivative flows through them) -----
for _name in ("shape", "ndim", "size"):  # facts about an array, not about its values: no derivative
    primitive(_name, spellings=[f"numpy.{_name}"], sympy=lambda x: x, kind="piecewise", tangent="none")
# np.broadcast(a, b): the shape of a + b without computing it (a gradient that only needs the
# shape of a value made elementwise from several arrays reads this instead: gradgen.analysis.sameshape)
primitive("broadcast", None, written=["numpy.broadcast"], sympy=None, kind="piecewise", min_args=2)
# (n, m) in zeros((n, m)), reshape(x, (n, -1)); a tuple of values (a helper's argument) in forward mode
primitive("tuple", None, sympy=lambda *xs: xs, kind="integer", min_args=0, tangent="linear")
for _name in ("zeros_like", "ones_like"):
    primitive(_name, spellings=[f"numpy.{_name}"], keywords=("dtype",), sympy=lambda x, **p: 0, kind="piecewise",
              tangent="none")
for _name in ("zeros", "ones", "eye"):
    primitive(_name, None, spellings=[f"numpy.{_name}"], keywords=("dtype",), sympy=lambda *xs, **p: 0,
              kind="piecewise", min_args=1, tangent="none")


# Array makers whose values are their arguments' (a silent zero while they were taken for
# constants: `np.full(3, w)`, `np.linspace(0.0, L, n)`, `np.arange(a, b, h)`): linear in the
# fill value, the ends, the start and the step; never in a shape or a count. An integer
# dtype makes whole numbers (no derivative), as np.array's does.
def _made(rule):
    def vjp(i):
        def made(g, out, *xs, **p):
            return Const(0.0) if p.get("dtype") == Spelled("int") else rule(i, g, out, *xs, **p)
        return made
    return (vjp,)


def _full_rule(i, g, out, shape, fill, **p):
    return F.unbroadcast(g, fill) if i == 1 else None


def _linspace_rule(i, g, out, start, stop, num=Const(50), **p):
    if i > 1:
        return None
    endpoint = Const(p.get("endpoint", True))
    return F.linspace_grad(g, (start, stop)[i], num, endpoint, Const(i == 1))


def _arange_rule(i, g, out, *xs, **p):
    if len(xs) == 1 or i == 1:  # arange(stop): 0, 1, ...; the stop only counts
        return None
    return F.unbroadcast(g, xs[0]) if i == 0 else F.sum(g * F.arange(F.size(g)))


primitive("full", None, spellings=["numpy.full"], keywords=("dtype",), min_args=2, elementwise=False,
          vjp=_made(_full_rule), tangent="linear", value_slots=(1,))
primitive("linspace", None, spellings=["numpy.linspace"], keywords=("dtype", "endpoint"), min_args=2,
          elementwise=False, vjp=_made(_linspace_rule), tangent="linear", value_slots=(0, 1))
primitive("arange", None, spellings=["numpy.arange"], keywords=("dtype",), min_args=1, elementwise=False,
          vjp=_made(_arange_rule), tangent="explicit")
helper("linspace_grad", '''def linspace_grad(g, like, num, endpoint=True, stop=False):
    """Gradient of np.linspace(start, stop, num, endpoint) with respect to start (or to stop),
    given g (the points along the first axis), summed to the shape of `like`: point k is
    start + (stop - start) * k / (num - 1), or k / num without the endpoint."""
    steps = num - 1 if endpoint else num
    weights = np.arange(num) / steps if steps > 0 else np.zeros(num)
    weights = weights if stop else 1.0 - weights
    return unbroadcast(np.tensordot(weights, g, axes=(0, 0))[()], like)
''', needs=("unbroadcast",), tangent="linear_in_first")
primitive("array", spellings=["numpy.array", "numpy.asarray"], keywords=("dtype",), sympy=lambda x, **p: x,
          vjp=lambda g, out, x, **p: Const(0.0) if p.get("dtype") == Spelled("int") else g, tangent="linear")



# --- helpers the backward pass calls; written into the generated module when used -------
# (tangent="bilinear": in the gradient and one operand, `value_slots` the two that carry tangents;
# prod_grad's is written out, gradgen.rules.tangents, with prod_grad_tangent; that one has none)
# (shaped_as: the argument each one's value is shaped like, the one it sums back to)
for _name, _tangent, _slots, _shaped in (("unbroadcast", "linear_in_first", None, 1),
                                         ("matmul_grad_a", "bilinear", (0, 2), 1),
                                         ("matmul_grad_b", "bilinear", (0, 1), 2),
                                         ("concatenate_grad", "linear_in_first", None, None),
                                         ("prod_grad", "explicit", None, 1)):
    primitive(_name, None, sympy=None, kind="helper", tangent=_tangent, value_slots=_slots, shaped_as=_shaped)
# A gradient gradgen differentiates again (a nested gradgen.grad, gradgen.frontend.nested) calls
# unbroadcast(g, like), the helper kind above that no derivative flows through. There the call is
# its smooth twin: linear in g, whose adjoint spreads a cotangent shaped like `like` back over the
# axes broadcasting summed: sum_to(v, a, b), v shaped like a, broadcast to the shape a and b make
# together and summed back to b's; the adjoint of sum_to(., a, b) is sum_to(., b, a).
SMOOTH_HELPER_SOURCES["sum_to"] = (("unbroadcast",), '''def sum_to(v, a, b):
    """v, shaped like a, broadcast to the shape a and b broadcast to, then summed back to the
    shape of b: the adjoint of unbroadcast(., a) when a is shaped like b (and of itself, a and
    b swapped)."""
    return unbroadcast(np.broadcast_to(v, np.broadcast_shapes(np.shape(a), np.shape(b))), b)
''')
primitive("sum_to", 3, spellings=["gradgen.sum_to"], sympy=None, elementwise=False, tangent="linear_in_first",
          vjp=(lambda g, out, v, a, b: Call("sum_to", (g, b, a)), None, None))
primitive("unbroadcast_twin", 2, spellings=["gradgen.unbroadcast"], sympy=None, elementwise=False,
          tangent="linear_in_first", vjp=(lambda g, out, v, like: Call("sum_to", (g, like, v)), None))
HELPER_NAMES.update({"sum_to": "sum_to", "unbroadcast_twin": "unbroadcast"})
helper("prod_grad_tangent", '''def prod_grad_tangent(g, x, dx, axis=None, keepdims=False):
    """How prod_grad(g, x, axis, keepdims) changes as x moves along dx, g fixed (a second
    derivative): the product of the others of element j moves by the sum over the others k
    of dx_k times the product of the rest; no division, so exact where x holds zeros."""
    x = np.asarray(x, dtype=float)
    dx = np.broadcast_to(dx, x.shape)
    if x.ndim == 0:
        return 0.0 * dx
    g, rows, order, shape = prod_rows(g, x, axis, keepdims)
    drows = np.transpose(dx, order).reshape(rows.shape)
    tangent = np.zeros(rows.shape)
    for j in range(rows.shape[-1]):  # element j's others: the row with x_j as 1 and dx_j as 0
        rest, drest = rows.copy(), drows.copy()
        rest[..., j], drest[..., j] = 1.0, 0.0
        tangent[..., j] = np.sum(prod_grad(1.0, rest, axis=-1, keepdims=True) * drest, axis=-1)
    return g * np.transpose(tangent.reshape(shape), np.argsort(order))
''', needs=("prod_grad", "prod_rows"))


# --- gradgen.stop_gradient, and calls of @gradgen.custom_vjp functions (gradgen/frontend/custom_calls.py) ---
# stop_gradient(x) is x, written as x, and nothing flows back through it (a constant to sympy).
primitive("stop_gradient", spellings=["gradgen.stop_gradient"], sympy=lambda x: x, kind="piecewise")


def _custom_rule(i):
    """A custom call's arguments are (its value, *its inputs): the value gets no gradient
    (its body is not differentiated); the inputs get the user's rule, which gradgen.transform.reverse.backward
    writes statement by statement (gradgen.transform.reverse.custom.backward), never through here."""
    if i == 0:
        return None

    def rule(g, out, *args, **params):
        raise AssertionError("a custom_vjp call is a statement of its own")

    return rule


# Call(..., (value, *inputs), params=(("rule", LoweredRule),)): written as its value; sympy
# differentiates the value (gradgen/verify/symbolic.py), except an estimator's, which it skips.
primitive("custom_vjp", None, min_args=1, elementwise=False, vjp=(_custom_rule,))
primitive("custom_estimator", None, min_args=1, elementwise=False, vjp=(_custom_rule,))


def _inverse(axes):
    if axes is None:
        return None
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return tuple(inverse)


ARRAY_RULES.update({"cumprod", "swapaxes"})  # (with the reductions and shapes in table.ARRAY_RULES)
