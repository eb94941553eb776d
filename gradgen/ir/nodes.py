"""The intermediate representation: a few small records and a printer.

One user assignment is one `Assign` holding an expression tree over primitives, so the
backward pass can mirror the source statement by statement. Every variable is assigned
once (SSA); the name a `Var` carries is already the name the generated code will use
(the naming module chose it), so no renaming pass is needed.

Expression nodes overload Python's operators through `gradgen.ir.simplify`'s smart
constructors (which simplify hands this module when imported, so nodes import nothing: the
package's `__init__` imports both): rules in the primitive table are written as ordinary arithmetic
(`g * out * (1 - out)`) and fold `* 1`, `+ 0` and constants as they are built.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


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


FOLD = None  # the folding constructors: gradgen/ir/simplify.py puts itself here when imported


def _s():
    return FOLD


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
    params: tuple = ()  # static keyword parameters: (("axis", 0), ("keepdims", True))

    def __str__(self):
        items = [str(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.params]
        return f"{self.prim}({', '.join(items)})"


@dataclass(frozen=True, eq=True)
class Cond(Expr):
    """`body if test else orelse`: only the branch taken is evaluated (and differentiated)."""

    test: Expr
    body: Expr
    orelse: Expr

    def __str__(self):
        return f"({self.body} if {self.test} else {self.orelse})"


@dataclass(frozen=True)
class Spelled:
    """A static parameter written as a name, such as `dtype=float`."""

    text: str

    def __repr__(self):
        return self.text


class Field(str):
    """A step of a structured parameter's path that reads a field by name (`p.W` of a
    NamedTuple or dataclass), held in a Const. It is the field's name where a string will do
    (a step of `add_at_path`'s path, a message), but never equal to a dict's key `"W"`: the
    emitter writes it `.W`, not `["W"]`."""

    __slots__ = ()

    def __eq__(self, other):
        return isinstance(other, Field) and str.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(("field", str(self)))


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
    overwrites: bool = False  # inside control flow: the target may hold an earlier value
    fresh_in_loop: bool = False  # first assigned inside a loop (unbound before it)
    counter: bool = False  # a loop's iteration counter (`n += 1`): never saved
    augmented: bool = False  # written `x += e` by the user: changes an array in place (emitted so if the name is reused)
    number: bool = False  # annotated `x: float = e` (or `int`) by the user: a number, never an array

    def __str__(self):
        op = "+=" if self.accumulate else "="
        return f"{self.target} {op} {self.expr}"


@dataclass
class If:
    """`if test: body else: orelse`. `record` names the saved decision when the backward
    pass cannot recompute `test` (the branches overwrite what it reads)."""

    test: Expr
    body: list
    orelse: list
    line: int | None = None
    source: str | None = None
    record: str | None = None

    def __str__(self):
        text = [f"if {self.test}:"] + _indented(self.body)
        if self.orelse:
            text += ["else:"] + _indented(self.orelse)
        return "\n".join(text)


@dataclass
class For:
    """`for target in iter: body`; `iter` is a `range` call or a constant sequence.

    `count` names the iteration counter a loop that can `break` keeps for its backward sweep.
    """

    target: str
    iter: Expr
    body: list
    line: int | None = None
    source: str | None = None
    count: str | None = None
    direction: str | None = None  # backward sweep: "reversed" (same iterations) or "times" (count)

    def __str__(self):
        if self.direction == "times":
            head = f"for {self.target} in range({self.iter}):"
        elif self.direction == "reversed":
            head = f"for {self.target} in reversed({self.iter}{f'[:{self.count}]' if self.count else ''}):"
        else:
            head = f"for {self.target} in {self.iter}:"
        return "\n".join([head] + _indented(self.body))


@dataclass
class While:
    """`while test: body`; `count` names the iteration counter the backward sweep replays."""

    test: Expr
    body: list
    line: int | None = None
    source: str | None = None
    count: str | None = None

    def __str__(self):
        return "\n".join([f"while {self.test}:"] + _indented(self.body))


@dataclass
class Break:
    line: int | None = None

    def __str__(self):
        return "break"


@dataclass
class Continue:
    line: int | None = None

    def __str__(self):
        return "continue"


@dataclass
class Effect:
    """A statement kept as the source wrote it, for what it does: `print(...)`, a logging
    call, an `assert` (see gradgen/frontend/effects.py). `text` is already in generated names;
    `reads` are the variables it uses, which the forward pass must compute before it."""

    text: str
    reads: tuple
    line: int | None = None
    source: str | None = None
    modules: frozenset = frozenset()
    changes: tuple = ()  # variables it may change in place (`x.sort()`: gradgen.frontend.inactive)
    col: int | None = None

    def __str__(self):
        return self.text


@dataclass
class Save:
    """Forward: push `name`'s value on `stack` (before it is overwritten); a copy of it
    when `copy` (the array is about to be written into in place, `x[i] = e`)."""

    name: str
    stack: str
    copy: bool = False

    def __str__(self):
        return f"{self.stack}.append({f'np.copy({self.name})' if self.copy else self.name})"


@dataclass
class Restore:
    """Backward: pop `name`'s earlier value back from `stack`; `after`: the value the
    assignment `origin` made in a loop trip, popped as the trip's backward sweep starts."""

    name: str
    stack: str
    origin: int = 0  # id of the forward assignment whose save this undoes
    after: bool = False

    def __str__(self):
        return f"{self.name} = {self.stack}.pop()"


@dataclass
class IndexAdd:
    """Backward: `target[index] += value` (or `np.add.at(...)` when `at`; `target[index] =
    value` when `assign`), into an array the backward pass owns."""

    target: str
    layout: tuple
    index: tuple
    value: Expr
    at: bool = False
    assign: bool = False
    chained: bool = False  # `target[k1][k2] = value`: a path into a structured gradient

    def __str__(self):
        return f"{self.target}[{', '.join(map(str, self.index))}] {'=' if self.assign else '+='} {self.value}"


@dataclass
class Init:
    """Forward: `name = value` before a compound statement (`x_stack = []`, `t = None`)."""

    name: str
    value: str

    def __str__(self):
        return f"{self.name} = {self.value}"


@dataclass
class Checkpointed:
    """Forward: a loop run without its tape, keeping the `state` (names; `copied`, those
    written into in place) at the start of the trips binomial checkpointing will take back
    (gradgen/transform/reverse/checkpoint.py). `snapshots`: how many states at most, a
    number or an expression; `names`: the generated names (trip, snapshots, stored, schedule)."""

    loop: For
    state: tuple
    copied: frozenset
    snapshots: object
    names: dict

    def __str__(self):
        return f"# checkpointed, at most {self.snapshots} states of ({', '.join(self.state)})\n{self.loop}"


@dataclass
class Replayed:
    """Backward: the schedule of a `Checkpointed` loop walked: its body again without a tape
    (`again`), and for each trip to reverse, the trip with its tape (`taped`) then its
    `adjoint`; `stacks`, the tape's lists, made empty before."""

    loop: For
    state: tuple
    copied: frozenset
    again: list
    taped: list
    adjoint: list
    stacks: list
    names: dict

    def __str__(self):
        return "\n".join([f"for action in {self.names['schedule']}:"] + _indented(self.taped + self.adjoint))


def _indented(stmts):
    return ["    " + line for s in stmts for line in str(s).split("\n")] or ["    pass"]


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
    keyword_only: bool = False  # after `*`: data, not differentiated unless named in --wrt
    number: bool = False  # annotated `float` or `int`: never an array
    function: str | None = None  # a function default (`act=np.tanh`): how the generated signature spells it
    structured: bool = False  # a list, tuple or dict of arrays and numbers (gradgen.frontend.structured)
    record: str | None = None  # annotated with a NamedTuple or dataclass of the file: its name (frontend.records)
    shape: tuple | None = None  # what its annotation says (gradgen.analysis.stated): `"n d"` -> ("n", "d")

    @property
    def kept_default(self):
        """A function or a type (`dtype=np.float64`) as the default: a check leaves it to the
        functions it compares (each has it), never passing a value of its own."""
        return self.function is not None or isinstance(self.default, Spelled)


@dataclass
class Function:
    """A lowered user function: straight-line SSA body ending in `result`.

    `display` maps each SSA name to the user's name it versions (for provenance and for
    naming adjoints); `lines` records where each SSA value was assigned; `drawn_from`, the
    parameters the source draws from (`rs` of `rs.uniform()`), a branch folded away included.
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
    drawn_from: frozenset = frozenset()

    def __str__(self):
        head = f"def {self.name}({', '.join(p.name for p in self.params)}):"
        return "\n".join([head] + _indented(self.body) + [f"    return {self.result}"])


def children(e):
    """The expressions directly below `e`: a call's arguments, a conditional's test and arms."""
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Cond):
        return (e.test, e.body, e.orelse)
    return ()


def subexpressions(expr, into=children):
    """Every node of `expr`, itself first, then left to right, depth first: the one walk
    over expressions every stage shares. `into(e)`: the nodes below e to visit (a walk that
    follows only differentiable arguments, or only the calls a conditional surely makes,
    passes its own)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(tuple(into(e))))


def variables(expr: Expr):
    """Yield every Var in `expr`, left to right (with repeats)."""
    return (e for e in subexpressions(expr) if isinstance(e, Var))


def walk(stmts):
    """Every statement in `stmts`, nested ones included, in source order."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from walk(s.body)
            yield from walk(s.orelse)
        elif isinstance(s, (For, While)):
            yield from walk(s.body)


def assigned(stmts):
    """Names assigned anywhere in `stmts` (loop targets included)."""
    names = set()
    for s in walk(stmts):
        if isinstance(s, Assign):
            names.add(s.target)
        elif isinstance(s, For):
            names.add(s.target)
    return names


def expressions(s):
    """The expressions a statement itself reads (not those of nested statements)."""
    if isinstance(s, Assign):
        return [s.expr]
    if isinstance(s, (If, While)):
        return [s.test]
    if isinstance(s, For):
        return [s.iter]
    if isinstance(s, IndexAdd):  # target[index] += value
        return [s.value, *s.index]
    if isinstance(s, Effect):
        return list(s.reads)
    return []


def is_draw(expr) -> bool:
    """A random draw (`rs.randn(n)`): it changes a random state, so it runs exactly once,
    where the source has it, and is never dropped nor recomputed."""
    return isinstance(expr, Call) and expr.prim == "draw"


def as_written(expr) -> bool:
    """A draw, or an expression kept as the source wrote it (gradgen.frontend.inactive): its
    value is data, computed by the user's own text, and carries no derivative."""
    return isinstance(expr, Call) and expr.prim in ("draw", "verbatim")


def has_effect(stmt) -> bool:
    """Whether a statement (or one nested in it) must run even if nothing reads its result."""
    return any(isinstance(s, Effect) or (isinstance(s, Assign) and is_draw(s.expr)) for s in walk([stmt]))


def map_expressions(stmts, f):
    """The statements with f applied to every expression node, bottom up (Assign, IndexAdd,
    If and For; other statements are kept as they are)."""
    def expr(e):
        if isinstance(e, Call):
            return f(Call(e.prim, tuple(expr(a) for a in e.args), e.ns, e.loc, e.params))
        if isinstance(e, Cond):
            return f(Cond(expr(e.test), expr(e.body), expr(e.orelse)))
        return f(e)

    out = []
    for s in stmts:
        if isinstance(s, Assign):
            s = replace(s, expr=expr(s.expr))
        elif isinstance(s, IndexAdd):
            s = replace(s, value=expr(s.value), index=tuple(expr(i) for i in s.index))
        elif isinstance(s, If):
            s = replace(s, test=expr(s.test), body=map_expressions(s.body, f), orelse=map_expressions(s.orelse, f))
        elif isinstance(s, For):
            s = replace(s, iter=expr(s.iter), body=map_expressions(s.body, f))
        out.append(s)
    return out


def map_changed(stmts, f):
    """map_expressions that keeps every node f leaves alone the very object it was (later
    stages key facts by a node's id: gradgen.transform.reverse.factoring's sums back)."""
    def expr(e):
        if isinstance(e, Call):
            args = tuple(expr(a) for a in e.args)
            e = e if all(a is b for a, b in zip(args, e.args)) else Call(e.prim, args, e.ns, e.loc, e.params)
        elif isinstance(e, Cond):
            parts = (expr(e.test), expr(e.body), expr(e.orelse))
            e = e if all(a is b for a, b in zip(parts, (e.test, e.body, e.orelse))) else Cond(*parts)
        return f(e)

    out = []
    for s in stmts:
        if isinstance(s, Assign):
            new = expr(s.expr)
            s = s if new is s.expr else replace(s, expr=new)
        elif isinstance(s, IndexAdd):
            value, index = expr(s.value), tuple(expr(i) for i in s.index)
            if value is not s.value or any(a is not b for a, b in zip(index, s.index)):
                s = replace(s, value=value, index=index)
        elif isinstance(s, If):
            test, body, orelse = expr(s.test), map_changed(s.body, f), map_changed(s.orelse, f)
            if test is not s.test or _changed(body, s.body) or _changed(orelse, s.orelse):
                s = replace(s, test=test, body=body, orelse=orelse)
        elif isinstance(s, (For, While)):
            body = map_changed(s.body, f)
            s = replace(s, body=body) if _changed(body, s.body) else s
        out.append(s)
    return out


def _changed(new, old):
    return any(a is not b for a, b in zip(new, old))


def writes_whole_of_any_rank(index) -> bool:
    """Whether an index layout (`x[...]`, `x[()]`, `x[..., None]`) is one a 0-d array takes: a
    write through it may target a NumPy scalar (a 0-d tangent or adjoint `0.0 * x` made), which
    has no item assignment (fuzz seed 2016 #527; seed 2021 #1736: `x[..., None] = v`)."""
    return index is not None and all(part in ("e", "n") for part in index)
