"""What lowering knows of names: a body's bindings (Scope), a helper's `*args` and a
tuple of values (ArgsTuple), and the small facts about statements and names the stages of
gradgen.frontend.lower share (which names a body assigns, whether a loop can exit, ...)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from gradgen.frontend.closures import own_nodes

MAX_INLINE_DEPTH = 50  # same-file helpers inlined inside one another (bounds the recursion)

MAX_INLINED_NODES = 100_000  # syntax nodes copied by inlining into one function (bounds the work)

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
           ast.Mod: "mod", ast.FloorDiv: "floordiv", ast.MatMult: "matmul"}

_OP_TEXT = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
            ast.Invert: "~", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
            ast.NotIn: "not in"}


@dataclass
class Scope:
    """Name bindings of one function body being lowered (the caller's or an inlined helper's)."""

    node: ast.FunctionDef
    env: dict  # user name -> Expr
    locals: set  # names assigned somewhere in this body (Python's local-scope rule)
    helper: str | None = None  # name of the helper being inlined, None at top level
    result: str | None = None  # the variable every `return` assigns, when there are several
    unpacked: int | None = None  # `a, b = helper(...)`: the helper returns a tuple of this many
    owned: set | None = None  # SSA names this body may overwrite in place (None: all, at top level)
    closure: object = None  # the Scope a nested def or lambda was defined in: it reads its variables
    depth: int = 0  # the nesting of loops and branches its body starts at (an inlined helper's: its call's)
    generator: bool = False  # a generator's body, inlined where a loop consumes it (gradgen.frontend.generators)

    def owns(self, name):
        """Whether `name` is this body's own variable. An inlined helper's parameters are the
        caller's values: a helper that rebinds one gets a variable of its own (hygiene)."""
        return self.owned is None or name in self.owned

    def own(self, name):
        if self.owned is not None:
            self.owned.add(name)


class ArgsTuple:
    """A helper's `*args`: the values its call passed past the named parameters."""

    def __init__(self, items):
        self.items = tuple(items)


def _static_int(node):
    """The int `node` writes (`0`, `-1`), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _static_int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _is_text(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class _LoopVariable:
    """Marks a loop variable after its loop: reading it there is refused."""

    def __init__(self, name):
        self.name = name


class _UnmadeList:
    """A name a loop or branch makes a list under, where no list of it can be read: before
    it is made (`kind` "before": a list made in a loop is new in every iteration), after
    the loop that made it ("loop"), or after an `if` that made it on one path only
    ("branch"), or into two variables ("branches": a helper's list on one path). `ssa`: the variable every making of it in the block writes (for "before")."""

    def __init__(self, name, kind, ssa=None, line=None):
        self.name, self.kind, self.ssa, self.line = name, kind, ssa, line

    def message(self):
        name = self.name
        if self.kind == "loop":
            return (f"the list '{name}' is made inside the loop at line {self.line}, so it is read after that loop "
                    f"here: make it before the loop and append to it there")
        if self.kind == "branches":
            return (f"the list '{name}' is made in both branches of the 'if' at line {self.line}, by a helper's call "
                    f"in one of them: make it there with a list literal or comprehension, or before the 'if'")
        if self.kind == "branch":
            return (f"the list '{name}' is made on only one path through the 'if' at line {self.line}: make it "
                    f"before the 'if' and append to it there, or make it in both branches")
        return (f"the list '{name}' is read before it is made: a list made inside a loop or branch is new each "
                f"time, so read it after it is made, or make it before the loop or branch and append to it there")


class PartsOfAPath:
    """A name bound to a run of parts of a structured parameter (or the parameter) whose
    path no longer holds (gradgen.frontend.structured): bound inside a loop or branch and read after
    it, or bound before a variable of its index (`changed`) was assigned again. Reading it
    is refused, with `message()`."""

    def __init__(self, name, ref, changed=None):
        self.name, self.ref, self.changed = name, ref, changed

    def message(self):
        text = self.ref.text() if self.ref.spelled() and not self.ref.reads() else f"parts of '{self.ref.root.name}'"
        why = ("before the index it reads changed" if self.changed is not None
               else "inside a loop or branch, and which parts it names after it depends on the path taken")
        where = text if not text.startswith("parts") else f"the index into '{self.ref.root.name}'"
        return f"'{self.name}' was bound to {text} {why}: write {where} where it is used"


def _lookup(scope, name):
    """What `name` holds in `scope` or the scopes a closure reads, or None."""
    while scope is not None:
        if name in scope.env:
            return scope.env[name]
        if name in scope.locals:
            return None
        scope = scope.closure
    return None


def _always_returns(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


def _exits(stmts, kinds=(ast.Break, ast.Continue)):
    """Whether a loop body can `break` (or `continue`), not counting inner loops."""
    for stmt in stmts:
        if isinstance(stmt, kinds):
            return True
        if isinstance(stmt, ast.If) and (_exits(stmt.body, kinds) or _exits(stmt.orelse, kinds)):
            return True
    return False


def _stored_names(stmts):
    """Names assigned in `stmts` (loop variables apart: each loop names its own)."""
    names, targets = [], set()
    for stmt in stmts:
        for node in own_nodes([stmt]):
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                targets.add(id(node.target))
            elif isinstance(node, ast.comprehension):  # (`[v for v in r]`: v is the comprehension's own)
                targets |= {id(n) for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names \
                    and id(node) not in targets:
                names.append(node.id)
    return names


def _skip_docstring(stmts):
    if stmts and isinstance(stmts[0], ast.Expr) and isinstance(stmts[0].value, ast.Constant) \
            and isinstance(stmts[0].value.value, str):
        return stmts[1:]
    return stmts


def _assigned_names(fnode):
    """Names a function body assigns: Python makes them local to the whole body."""
    names = set()
    for node in own_nodes(fnode.body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
    return names


def parameter_names(fnode):
    """All of a function's parameter names, keyword-only ones last."""
    return [a.arg for a in fnode.args.args + fnode.args.kwonlyargs]


def _names_a_number(annotation):
    """`x: float` (or int) says a parameter is a number, never an array (see shapes)."""
    return isinstance(annotation, ast.Name) and annotation.id in ("float", "int")
