"""The derivative rule table: every primitive gradgen knows, in one place.

One entry per primitive: its spellings in each library namespace, its sympy equivalent
(used only by verification, never to derive rules), and its vector-Jacobian rule per
input with one signature for all: `(g, out, *inputs) -> contribution`, where `g` is the
upstream gradient, `out` the primal result (reused, as a hand-written pass would: sigmoid'
from `out`, exp' is `out`). Rules are written as plain arithmetic on IR nodes; the smart
constructors in `gradgen.ir.simplify` fold `* 1` and `+ 0` as the expression is built.

Kinds:
  smooth     differentiable; `vjp` has one rule per input (None: no gradient to that input)
  piecewise  piecewise constant (floor, round, sign, comparisons): zero gradient, as in JAX
             and PyTorch; the result is not active
  integer    needs an integer (int(), len()): a differentiated value flowing here is an error
  attribute  a named constant such as math.pi, emitted without a call
Each primitive also declares its forward-mode (tangent) class, `tangent=` (TANGENT_CLASSES;
gradgen.rules.tangents says what each means), as JAX's `deflinear` does: a smooth
elementwise primitive with a rule is "elementwise" without saying so, and a primitive that
declares none is refused by forward mode. `value_slots=` names the arguments of a linear or
bilinear primitive that carry a tangent where its vector-Jacobian rule does not say.
Adding a primitive is adding one `primitive(...)` line to the rule module of its library
(gradgen/rules/numpy.py, linalg.py, shape.py, special.py, lists.py, trees.py: the package's
`__init__` imports them all, so the table is whole wherever it is read, and this module
imports none of them); `tests/test_rules.py` checks every smooth scalar rule against
`sympy.diff`, so the table checks itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gradgen.ir.nodes import Call, Spelled, lift


class _Sympy:
    """sympy, imported on first use. Each primitive's sympy twin is written in the table,
    but only `check` evaluates one: `compile` never imports sympy (a third of a second).
    Inside a twin's lambda, `sympy.exp` is sympy's own; a twin named directly is `twin("exp")`."""

    def __getattr__(self, name):
        import sympy as module  # (start-up: only verification pays for sympy)

        return getattr(module, name)


sympy = _Sympy()


def twin(name):
    """sympy's function `name`, looked up when called (see _Sympy)."""
    def call(*args, **kwargs):
        return getattr(sympy, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


@dataclass(frozen=True)
class Primitive:
    name: str
    arity: int | None  # None: two or more arguments
    names: dict = field(default_factory=dict)  # namespace -> emitted function name
    sympy: object = None
    vjp: tuple | None = None  # one rule per input; for arity None, (rule_for(i),)
    kind: str = "smooth"
    operator: type | None = None  # ast operator class for "op" spellings
    expand: object = None  # IR to emit where a namespace has no spelling (e.g. scalar sign)
    keywords: tuple = ()  # static keyword parameters (axis=, keepdims=), passed to the rules
    min_args: int = 2  # for arity None: the fewest arguments it takes
    elementwise: bool = False  # broadcasts its inputs: the adjoint sums back to each input's shape
    method: bool = False  # also callable as a method: `x.sum(axis=0)`
    result: str | None = None  # "reduction" (axis=/keepdims= decide), "number", "tuple"; None: as its inputs
    sequence: bool = False  # takes a list of arrays as its first argument (np.hstack([a, b]))
    positional: tuple = ()  # ((name, default), ...): keywords the call may pass by position (loc=mu)
    tangent: str | None = None  # forward mode's class (TANGENT_CLASSES); None: refused
    value_slots: tuple | None = None  # the arguments that carry a tangent; None: those the vjp differentiates
    shaped_as: int | None = None  # a helper whose value has the shape of this argument (what it sums back to)


REQUIRED = object()  # a positional parameter without a default
TANGENT_CLASSES = ("elementwise", "linear", "multilinear", "reduction", "linear_in_first", "bilinear", "zero",
                   "explicit", "none", None)
TABLE: dict[str, Primitive] = {}
SPELLINGS: dict[str, tuple[str, str]] = {}  # qualified name -> (primitive, namespace)


# SciPy modules a generated module may call, as the user's file imports them: a call keeps
# its module (`scipy.special.logsumexp`, `scipy.stats.norm.logpdf`), imported as written.
SCIPY_MODULES = ("scipy.special", "scipy.linalg", "scipy.stats", "scipy.integrate")


def namespace_of(spelling):
    """(namespace, name in it) of a qualified spelling: "numpy.linalg.det" -> ("numpy",
    "linalg.det"), "scipy.stats.norm.logpdf" -> ("scipy.stats", "norm.logpdf")."""
    if spelling == "scipy.special.expit":  # written as the sigmoid helper the generated module defines
        return "numpy", "expit"
    if spelling.startswith("numpy."):
        return "numpy", spelling[len("numpy."):]
    for module in SCIPY_MODULES:
        if spelling.startswith(module + "."):
            return module, spelling[len(module) + 1:]
    module, _, short = spelling.rpartition(".")
    return {"": "builtins", "math": "math"}.get(module, "numpy"), short


def primitive(name, arity=1, spellings=(), sympy=None, vjp=None, kind="smooth", op=None, expand=None,
              keywords=(), elementwise=None, method=False, min_args=2, result=None, sequence=False, positional=(),
              written=(), tangent=None, value_slots=None, shaped_as=None):
    """Register a primitive; `spellings` are qualified names like "math.exp", "numpy.exp", "abs";
    `written`: spellings gradgen writes but never reads from a source; `tangent`, `value_slots`:
    its forward-mode class and the arguments that carry a tangent (see the module docstring);
    `shaped_as`: the argument whose shape a helper's value has (a shape is measured on it)."""
    names = {}
    for spelling in spellings:
        ns, short = namespace_of(spelling)
        names.setdefault(ns, short)
        SPELLINGS[spelling] = (name, ns)
    for spelling in written:
        ns, short = namespace_of(spelling)
        names.setdefault(ns, short)
    if vjp is not None and not isinstance(vjp, tuple):
        vjp = (vjp,)
    if elementwise is None:  # operators and ufuncs: the output has the inputs' broadcast shape
        elementwise = kind == "smooth" and not keywords
    if tangent is None and kind == "smooth" and elementwise and vjp is not None:
        tangent = "elementwise"  # a diagonal Jacobian: the vjp applied to the tangent is the tangent
    if tangent not in TANGENT_CLASSES:
        raise ValueError(f"{name}: tangent class {tangent!r} is none of {TANGENT_CLASSES}")
    TABLE[name] = Primitive(name, arity, names, sympy, vjp, kind, op, expand, tuple(keywords), min_args,
                            elementwise, method, result, sequence, tuple(positional), tangent, value_slots,
                            shaped_as)
    return TABLE[name]


# Helpers the backward pass of a library rule calls (plain NumPy, written into the generated
# module when used): name -> (helpers it calls, source). gradgen.codegen.emit adds them to its own.
LIBRARY_HELPERS: dict[str, tuple] = {}
# smooth primitives written as calls of generated helpers: primitive -> the helper's name
# (the backward pass's own helpers, differentiated again: gradgen.rules.numpy's sum_to)
HELPER_NAMES: dict[str, str] = {}
SMOOTH_HELPER_SOURCES: dict[str, tuple] = {}  # their sources, as LIBRARY_HELPERS holds the others'


def helper(name, source, needs=(), tangent=None, value_slots=None):
    """Register a generated helper function and the primitive that calls it (and its
    forward-mode class, as `primitive`: what a Hessian-vector product needs)."""
    LIBRARY_HELPERS[name] = (tuple(needs), source)
    primitive(name, None, sympy=None, kind="helper", min_args=0, tangent=tangent, value_slots=value_slots)


class _Calls:
    """`F.cos(x)` builds a primitive call inside a rule; it takes the caller's namespace.
    Keyword arguments are static parameters: `F.sum(g, axis=0, keepdims=True)`."""

    def __getattr__(self, name):
        if name not in TABLE:
            raise AttributeError(name)
        return lambda *args, **params: Call(name, tuple(lift(a) for a in args), None,
                                            params=tuple(params.items()))


F = _Calls()


def casts_to_int(e):
    """Whether `e` is `x.astype(int)` or `np.array(x, dtype=int)`: whole numbers computed from
    data, piecewise constant as floor is (no derivative, in either mode, nor to sympy)."""
    return isinstance(e, Call) and e.prim in ("astype", "array") and dict(e.params).get("dtype") == Spelled("int")


CUSTOM_CALLS = ("custom_vjp", "custom_estimator")  # the primitives of a custom function's call


NUMERIC = {"math.pi": math.pi, "math.e": math.e}


def lookup(qualified: str):
    """(primitive, namespace) for a qualified spelling such as "numpy.arcsin", or None."""
    return SPELLINGS.get(qualified)


# Rules on whole arrays (reductions, linear algebra, shapes): checked element by element
# in the array corpus, not with scalar symbols.
ARRAY_RULES = {"sum", "mean", "prod", "amax", "amin", "cumsum", "norm", "sum_list", "matmul", "outer", "inner",
               "T", "transpose", "reshape", "expand_dims", "squeeze", "ravel", "flip", "broadcast_to",
               "concatenate", "stack", "array", "where", "getitem", "setitem"}



def is_scalar_rule(prim: Primitive) -> bool:
    """Whether the self-check test can verify this rule with scalar sympy symbols."""
    return prim.kind == "smooth" and prim.vjp is not None and prim.sympy is not None \
        and prim.name not in ARRAY_RULES
