"""Following a lowered function at a point, for `gradgen graph` (gradgen/tools/graph.py): the
nodes and edges of its computational graph, with every node's forward value.

The IR's expressions are evaluated as `check`'s trace does, as Python text over NumPy
(gradgen's own IR: the user's file is never run). Each primitive call is an operation
node, each assignment a variable node; a branch is followed as taken, a loop unrolled as
it runs at the point, a helper's inlined body drawn once per call. Past BUILD_NODES made,
or MAX_NODES that reach the result, the graph is refused at the loop that made it so.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import math
from dataclasses import dataclass, field

import numpy as np

from gradgen.codegen.emit import HELPERS, Emitter
from gradgen.errors import CompileError
from gradgen.ir.nodes import Assign, Break, Call, Cond, Const, Continue, For, If, Var, While, variables
from gradgen.rules.table import SCIPY_MODULES, TABLE

MAX_NODES = 400  # drawn (after nodes that cannot reach the result are dropped)
BUILD_NODES = 4 * MAX_NODES  # made while following the function (a bound on the work)
MAX_ITERATIONS = 100_000  # of one `while` that makes no nodes (its body only counts)

# primitives whose values are not numbers or arrays (lists, structured parameters, draws)
_REFUSED = {"draw": "a random draw", "append": "a Python list", "list": "a Python list",
            "tree_keys": "a dict parameter"}


@dataclass
class Node:
    """A variable (kind "param", "data" or "var") or an operation ("op") of the graph.

    `active`: depends on a differentiated parameter, so it has a gradient (`grad`).
    `names`: for an op, the variable its result is assigned to, if any (its value and
    gradient are then shown there rather than on the op)."""

    id: int
    kind: str
    label: str
    value: object
    active: bool = False
    grad: object = None
    line: int | None = None
    result: bool = False
    names: bool = False
    prim: str | None = None
    call: object = None  # the op's Call over placeholders `_a0, _a1, ...` and literals
    env: dict = field(default_factory=dict, repr=False)  # the placeholders' values
    shown: object = None  # the IR expression of this node in the user's names (for formulas)
    inputs_shown: tuple = ()  # an op's arguments in the user's names


@dataclass
class Edge:
    """`src` feeds input `index` of op `dst` (kind "input"), or is assigned to variable `dst`
    ("assign"). `label`: the local derivative d(dst)/d(src) at the point (or the rule)."""

    src: int
    dst: int
    index: int = 0
    kind: str = "input"
    label: str = ""
    local: object = None


@dataclass
class _Literal:
    """A constant inside an expression: folded into its operation's label, not a node."""

    def __init__(self, value):
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def drawable(value):
    """A number or an array (or a shape: a tuple of integers, as `X.shape` is)."""
    if isinstance(value, tuple):
        return all(isinstance(v, (int, np.integer)) for v in value)
    return isinstance(value, (int, float, np.number, np.ndarray, bool, np.bool_))


def _environment(module):
    """What the IR's Python text needs: math, NumPy, the sigmoid, the generated helpers,
    and the SciPy modules the rule table calls, where the file imports SciPy."""
    env = {"math": math, "np": np, "sigmoid": lambda x: 1 / (1 + np.exp(-x))}
    if any(q.split(".")[0] == "scipy" for q in module.imports.values()):
        for name in SCIPY_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
                env["scipy"] = importlib.import_module("scipy")
    for _, source in HELPERS.values():
        exec(source, env)  # noqa: S102 - gradgen's own helper definitions
    return env


class Builder:
    """Follows the lowered function at the point, making nodes and edges as it goes."""

    def __init__(self, fn, module, point, wrt):
        self.fn, self.module, self.wrt = fn, module, set(wrt)
        self.nodes, self.edges = [], []
        self.values = dict(module.constants)
        self.values.update(point)
        self.where = {}  # variable -> the node holding its current value
        self.loops = []  # (statement, iterations, whether its count depends on an array) of every loop followed
        # names whose values come from an array (a loop bound read from one is changed by --inputs, not --at)
        self.from_arrays = {name for name, value in self.values.items() if isinstance(value, np.ndarray) and value.ndim}
        self.env = _environment(module)
        self.emitter = Emitter("numpy", {"sigmoid": "sigmoid"})
        self.code = {}
        for p in fn.params:
            if not p.function:
                self.where[p.name] = self.node("param" if p.name in self.wrt else "data", p.name,
                                               point[p.name], active=p.name in self.wrt, line=fn.line).id
        self.first_param = len(self.nodes)

    def build(self):
        self.run(self.fn.body)
        result = self.expression(self.fn.result)
        if not isinstance(result, Node) or result.kind == "op":
            result = self.variable(self.fn.result_name, result, self.fn.line)
        result.result = True
        return self.drawn(result)

    # ---- nodes -------------------------------------------------------------------------------

    def node(self, kind, label, value, **fields):
        if len(self.nodes) >= BUILD_NODES:
            raise self.too_large(len(self.nodes))
        node = Node(len(self.nodes), kind, label, value, **fields)
        if node.shown is None:
            node.shown = Var(label)
        self.nodes.append(node)
        return node

    def read(self, name):
        """The node holding `name`; a constant or a loop variable gets one when first read."""
        if name not in self.where:
            self.where[name] = self.node("data", self.display(name), self.values[name]).id
        return self.nodes[self.where[name]]

    def display(self, name):
        return self.fn.display.get(name, name)

    def variable(self, target, source, line):
        """Variable `target` assigned from `source` (a node or a literal)."""
        if isinstance(source, _Literal):
            node = self.node("data", self.display(target), source.value, line=line)
        else:
            node = self.node("var", self.display(target), source.value, active=source.active, line=line)
            self.edges.append(Edge(source.id, node.id, kind="assign"))
            if source.kind == "op":
                source.names = True
                source.shown = node.shown
        self.where[target] = node.id
        return node

    # ---- statements --------------------------------------------------------------------------

    def run(self, stmts):
        for stmt in stmts:
            if isinstance(stmt, Assign):
                self.assign(stmt)
            elif isinstance(stmt, If):
                self.run(stmt.body if self.test(stmt.test, stmt) else stmt.orelse)
            elif isinstance(stmt, For):
                self.loop(stmt, self.items(stmt))
            elif isinstance(stmt, While):
                self.loop(stmt, None)
            elif isinstance(stmt, Break):
                raise _Break
            elif isinstance(stmt, Continue):
                raise _Continue
            # an Effect (print, assert, logging) draws nothing

    def assign(self, stmt):
        self._track(stmt.target, stmt.expr)
        if stmt.counter:  # a loop's own iteration count: bookkeeping, not part of the function
            self.values[stmt.target] = self.evaluate(stmt.expr, {}, stmt)
            return
        source = self.expression(stmt.expr, stmt)
        self.values[stmt.target] = source.value
        self.variable(stmt.target, source, stmt.line)

    def test(self, expr, stmt):
        return bool(self.evaluate(expr, {}, stmt))

    def items(self, stmt):
        it = stmt.iter
        if isinstance(it, Call) and it.prim == "range":
            return range(*[int(self.evaluate(a, {}, stmt)) for a in it.args])
        if isinstance(it, Const) and isinstance(it.value, tuple):
            return it.value
        value = self.evaluate(it, {}, stmt, numbers=False)
        if isinstance(value, (tuple, range)):
            return value
        raise self.error(stmt, f"gradgen graph follows loops over range(...) and tuples of numbers; this one runs "
                               f"over a {type(value).__name__}")

    def _track(self, target, expr):
        """`target` comes from an array when `expr` reads a name that does."""
        if any(v.name in self.from_arrays for v in variables(expr)):
            self.from_arrays.add(target)
        else:
            self.from_arrays.discard(target)

    def loop(self, stmt, items):
        """Unrolled at the point: every iteration's statements make nodes of their own."""
        header = stmt.iter if isinstance(stmt, For) else stmt.test
        sized = any(v.name in self.from_arrays for v in variables(header))
        if isinstance(stmt, For):
            self._track(stmt.target, header)
        self.loops.append([stmt, 0, sized])
        record = self.loops[-1]
        iterations = iter(items) if items is not None else None
        while True:
            if iterations is not None:
                item = next(iterations, _Break)
                if item is _Break:
                    break
                self.values[stmt.target] = item
                self.where.pop(stmt.target, None)  # a node of its own when read
            elif not self.test(stmt.test, stmt):
                break
            record[1] += 1
            if record[1] > MAX_ITERATIONS:
                raise self.error(stmt, f"this loop ran more than {MAX_ITERATIONS:,} times at the point; draw the "
                                       f"graph at a point where it runs fewer times ({_where_fewer(sized)})")
            try:
                self.run(stmt.body)
            except _Continue:
                continue
            except _Break:
                break

    # ---- expressions -------------------------------------------------------------------------

    def expression(self, expr, stmt=None):
        """The node (or literal) `expr` evaluates to, making a node per operation."""
        if isinstance(expr, Var):
            return self.read(expr.name)
        if isinstance(expr, Const):
            return _Literal(expr.value)
        if isinstance(expr, Cond):  # only the branch taken is part of the graph at the point
            return self.expression(expr.body if self.test(expr.test, stmt) else expr.orelse, stmt)
        if not isinstance(expr, Call):
            raise self.error(stmt, f"gradgen graph cannot draw {type(expr).__name__}")
        if expr.prim in _REFUSED:
            raise self.error(stmt, f"gradgen graph draws functions of numbers and arrays; this uses "
                                   f"{_REFUSED[expr.prim]}", expr.loc)
        args = [self.expression(a, stmt) for a in expr.args]
        env, placeholders, shown = {}, [], []
        for i, arg in enumerate(args):
            if isinstance(arg, _Literal):
                placeholders.append(Const(arg.value))
                shown.append(Const(arg.value))
            else:
                placeholders.append(Var(f"_a{i}"))
                env[f"_a{i}"] = arg.value
                shown.append(arg.shown)
        call = Call(expr.prim, tuple(placeholders), expr.ns, expr.loc, expr.params)
        value = self.evaluate(call, env, stmt, numbers=bool(env))
        if not env:  # made of constants only (np.zeros(3), math.pi, a shape (-1, 1)): a constant itself
            return _Literal(value)
        prim = TABLE[expr.prim]
        smooth = prim.kind == "smooth" and prim.vjp is not None
        active = smooth and any(isinstance(a, Node) and a.active and rule_for(prim, i) is not None
                                for i, a in enumerate(args))
        line = expr.loc[0] if expr.loc else getattr(stmt, "line", None)
        label = self.subscript(call) if expr.prim in _INDEXING else op_label(expr.prim, args, expr.params)
        node = self.node("op", label, value, active=active, line=line,
                         prim=expr.prim, call=call, env=env,
                         shown=Call(expr.prim, tuple(shown), expr.ns, None, expr.params), inputs_shown=tuple(shown))
        for i, arg in enumerate(args):
            if isinstance(arg, Node):
                self.edges.append(Edge(arg.id, node.id, i))
        return node

    def subscript(self, call):
        """An indexing as written, each node input a dot: `·[:, 0]`, `·[·]`, `·[1] = ·`."""
        args = tuple(Var("·") if isinstance(a, Var) else a for a in call.args)
        if call.prim == "setitem":
            x, v, *index = args
            read = Call("getitem", (x, *index), call.ns, params=call.params)
            return f"{ast.unparse(self.emitter.expr(read))} = {ast.unparse(self.emitter.expr(v))}"
        return ast.unparse(self.emitter.expr(Call(call.prim, args, call.ns, params=call.params)))

    def evaluate(self, expr, env, stmt, numbers=True):
        """`expr` (IR over names in `self.values` and `env`) evaluated as the program would
        (a number or an array, where `numbers`)."""
        if isinstance(expr, Call) and expr.prim == "setitem":
            return self._write(expr, env, stmt)
        text = ast.unparse(self.emitter.expr(expr))
        code = self.code.get(text)
        if code is None:
            code = self.code[text] = compile(text, "<graph>", "eval")
        try:
            with np.errstate(all="ignore"):
                value = eval(code, self.env, {**self.values, **env})  # noqa: S307 - gradgen's own IR
        except Exception as exc:  # noqa: BLE001 - the function fails at this point: said where
            loc = getattr(expr, "loc", None)
            raise self.error(stmt, f"at the point, this raises {type(exc).__name__}: {exc}", loc) from None
        if numbers and not drawable(value):
            raise self.error(stmt, f"gradgen graph draws functions of numbers and arrays; this makes a "
                                   f"{type(value).__name__}", getattr(expr, "loc", None))
        return value

    def _write(self, expr, env, stmt):
        """`x[index] = v`, into a copy of x (the IR's meaning of a write)."""
        x, v, *index = expr.args
        names = {"_x": self.evaluate(x, env, stmt), "_v": self.evaluate(v, env, stmt)}
        names.update({f"_i{k}": self.evaluate(e, env, stmt) for k, e in enumerate(index)})
        subscript = self.emitter.index(dict(expr.params)["index"], [Var(f"_i{k}") for k in range(len(index))])
        out = np.array(names["_x"], dtype=np.result_type(names["_x"], names["_v"]))
        exec(f"_out[{ast.unparse(subscript)}] = _v", self.env, {**names, "_out": out})  # noqa: S102
        return out

    # ---- what is drawn -----------------------------------------------------------------------

    def drawn(self, result):
        """The nodes that reach the result, and every parameter; renumbered in order."""
        reaches = {result.id}
        feeds = {}
        for e in self.edges:
            feeds.setdefault(e.dst, []).append(e.src)
        for node in reversed(self.nodes):
            if node.id in reaches:
                reaches.update(feeds.get(node.id, ()))
        keep = [n for n in self.nodes if n.id in reaches or n.id < self.first_param]
        if len(keep) > MAX_NODES:
            raise self.too_large(len(keep), finished=True)
        number = {n.id: i for i, n in enumerate(keep)}
        for n in keep:
            n.id = number[n.id]
        edges = [Edge(number[e.src], number[e.dst], e.index, e.kind) for e in self.edges
                 if e.src in number and e.dst in number]
        return keep, edges

    def too_large(self, count, finished=False):
        name = self.fn.name
        size = (f"has {count} nodes, more than the {MAX_NODES} gradgen graph draws" if finished
                else f"has more than {MAX_NODES} nodes")
        if self.loops:
            stmt, times, sized = max(self.loops, key=lambda r: r[1])
            runs = f"runs {times} times here" if finished else f"had run {times} times when gradgen stopped"
            return self.error(stmt, f"the graph of '{name}' at this point {size} (this loop {runs}); draw it at a "
                                    f"point where the loop runs fewer times ({_where_fewer(sized)}), or draw a "
                                    "function without the loop")
        return self.module.error(self.module.functions[name], f"the graph of '{name}' {size}")

    def error(self, stmt, message, loc=None):
        """A located error: at `loc` (line, col), else at the statement's first character."""
        line = loc[0] if loc else getattr(stmt, "line", None) or self.fn.line
        text = self.module.line_text(line)
        col = loc[1] if loc else getattr(stmt, "col", None)
        if col is None:
            col = len(text) - len(text.lstrip()) + 1 if text else 1
        return CompileError(message, self.module.filename, line, col, text)


def _where_fewer(sized):
    """How to give a point where a loop runs fewer times: its count comes from an array
    (`range(x.shape[0])`), which only --inputs gives, or from numbers, which --at gives."""
    return "smaller arrays: --inputs FILE:FUNC, a function returning them" if sized else "--at"


def rule_for(prim, i):
    return prim.vjp[0](i) if prim.arity is None else prim.vjp[i] if i < len(prim.vjp) else None


def op_label(prim, args, params=()):
    """An operation as the lessons write it: `+`, `×`, `σ`, `exp`; a constant argument is
    part of the label (`** 2`, `1 /`, `+ 1.0`), as are static keywords (`sum axis=0`)."""
    symbol = _SYMBOLS.get(prim, prim)
    consts = [format_value(a.value) if isinstance(a, _Literal) else None for a in args]
    operator = TABLE[prim].operator is not None and prim in _SYMBOLS
    if operator and len(args) == 2 and any(c is not None for c in consts):
        text = f"{consts[0]} {symbol}" if consts[0] is not None else f"{symbol} {consts[1]}"
    elif any(c is not None for c in consts):
        text = f"{symbol}({', '.join(c if c is not None else '·' for c in consts)})"
    else:
        text = symbol
    keywords = " ".join(f"{k}={v!r}" for k, v in params if k != "index")
    return f"{text} {keywords}" if keywords else text


_INDEXING = {"getitem", "setitem", "tree_get"}
_SYMBOLS = {"add": "+", "sub": "−", "mul": "×", "div": "/", "pow": "**", "neg": "−", "pos": "+", "mod": "%",
            "matmul": "@", "sigmoid": "σ", "T": ".T"}


def format_value(value):
    """A number as the lessons write it (1, 0.5, -0.25), an array by its shape."""
    if isinstance(value, np.ndarray) and value.ndim:
        return f"array{value.shape}"
    if isinstance(value, tuple):
        return str(tuple(int(v) for v in value))
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    value = float(value)
    text = f"{value:.4g}"
    return "0" if text == "-0" else text


