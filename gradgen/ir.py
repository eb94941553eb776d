"""The intermediate representation: a few small records and a printer.

One user assignment is one `Assign` holding an expression tree over primitives, so the
backward pass can mirror the source statement by statement. Every variable is assigned
once (SSA); the name a `Var` carries is already the name the generated code will use
(the naming module chose it), so no renaming pass is needed.

Expression nodes overload Python's operators through `gradgen.simplify`'s smart
constructors: rules in the primitive table are written as ordinary arithmetic
(`g * out * (1 - out)`) and fold `* 1`, `+ 0` and constants as they are built.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Expr:
    """Base of expression nodes; arithmetic on nodes builds simplified nodes."""

    __slots__ = ()

    def __add__(self, other):
        return _s().add(self, lift(other))

    def __radd__(self, other):
        return _s().add(lift(other), self)

    def __sub__(self, other):
        return _s().sub(self, lift(other))

    def __rsub__(self, other):
        return _s().sub(lift(other), self)

    def __mul__(self, other):
        return _s().mul(self, lift(other))

    def __rmul__(self, other):
        return _s().mul(lift(other), self)

    def __truediv__(self, other):
        return _s().div(self, lift(other))

    def __rtruediv__(self, other):
        return _s().div(lift(other), self)

    def __pow__(self, other):
        return _s().power(self, lift(other))

    def __rpow__(self, other):
        return _s().power(lift(other), self)

    def __neg__(self):
        return _s().neg(self)


def _s():
    from gradgen import simplify

    return simplify


@dataclass(frozen=True, eq=True)
class Const(Expr):
    """A number (int, float or bool)."""

    value: object

    def __str__(self):
        return repr(self.value)


@dataclass(frozen=True, eq=True)
class Var(Expr):
    """A variable: a parameter, a module constant, or an SSA value."""

    name: str

    def __str__(self):
        return self.name


@dataclass(frozen=True, eq=True)
class Call(Expr):
    """A primitive applied to arguments.

    `ns` says which library spelling to emit ("op" for an operator, "math", "numpy",
    "builtins", or None for a node built by a rule, which takes its caller's `ns`).
    """

    prim: str
    args: tuple
    ns: str | None = None
    loc: tuple | None = field(default=None, compare=False, repr=False)  # (line, col) in the source

    def __str__(self):
        return f"{self.prim}({', '.join(map(str, self.args))})"


@dataclass(frozen=True, eq=True)
class Cond(Expr):
    """`body if test else orelse`: only the branch taken is evaluated (and differentiated)."""

    test: Expr
    body: Expr
    orelse: Expr

    def __str__(self):
        return f"({self.body} if {self.test} else {self.orelse})"


def lift(x) -> Expr:
    """Turn a Python number into a Const; leave nodes alone."""
    return x if isinstance(x, Expr) else Const(x)


@dataclass
class Assign:
    """`target = expr` (or `target += expr` when `accumulate`), from source line `line`.

    `source` is the user's text of the statement this came from, cited in comments.
    """

    target: str
    expr: Expr
    line: int | None = None
    source: str | None = None
    accumulate: bool = False
    col: int = 1

    def __str__(self):
        op = "+=" if self.accumulate else "="
        return f"{self.target} {op} {self.expr}"


@dataclass
class Comment:
    """A comment line in generated code (provenance, section markers)."""

    text: str

    def __str__(self):
        return f"# {self.text}"


@dataclass
class Param:
    """A parameter of the user's function: its name and its default, if any."""

    name: str
    default: object = None
    has_default: bool = False


@dataclass
class Function:
    """A lowered user function: straight-line SSA body ending in `result`.

    `display` maps each SSA name to the user's name it versions (for provenance and for
    naming adjoints); `lines` records where each SSA value was assigned.
    """

    name: str
    params: list
    body: list
    result: Expr
    result_name: str
    line: int = 0
    constants: dict = field(default_factory=dict)
    helpers: dict = field(default_factory=dict)
    display: dict = field(default_factory=dict)

    def __str__(self):
        head = f"def {self.name}({', '.join(p.name for p in self.params)}):"
        lines = [head] + [f"    {s}" for s in self.body]
        lines.append(f"    return {self.result}")
        return "\n".join(lines)


def variables(expr: Expr):
    """Yield every Var in `expr`, left to right (with repeats)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            yield e
        elif isinstance(e, Call):
            stack.extend(reversed(e.args))
        elif isinstance(e, Cond):
            stack.extend((e.orelse, e.body, e.test))
