"""What numba compiles of a generated function, and the respellings gradgen/jit.py makes.

`Checker` walks a generated function against a list of what numba compiles in nopython
mode (numbers, tuples, `if`/`for`/`while`, `math.*` and NumPy's functions of numbers, the
module's own functions, stacks that are appended to and popped) and raises `Refusal`,
naming the first construct outside it. A list of what is allowed, not of what is not: a
construct nobody thought of is refused at compile time instead of failing inside numba at
the first call.

`loops` and `placeholders` give the edits: backward loops over explicit descending ranges,
and `x = None` placeholders started at a zero of the type the name holds (`kinds`).
"""

from __future__ import annotations

import ast

import numpy as np

from gradgen import emit

MATH = frozenset("""sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp expm1 exp2 log log1p
    log10 log2 sqrt pow fabs floor ceil trunc erf erfc gamma lgamma hypot copysign isnan isinf isfinite degrees
    radians ldexp pi e inf nan tau""".split())
NUMPY = frozenset("""sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh exp expm1 exp2
    log log1p log10 log2 sqrt cbrt square abs absolute fabs sign floor ceil trunc rint reciprocal hypot power
    maximum minimum fmax fmin logaddexp logaddexp2 copysign deg2rad rad2deg isnan isinf isfinite pi e inf nan
    euler_gamma logical_and logical_or logical_not round around clip where""".split())  # (np.clip and np.where of numbers respelled: see Respell)
DRAWS = frozenset(n for n in dir(np.random.Generator) + dir(np.random.RandomState) if not n.startswith("_"))
BUILTINS = frozenset({"abs", "min", "max", "float", "int", "bool", "round", "pow", "range", "len"})
INTEGRAL = frozenset({"len", "int", "round", "math.floor", "math.ceil", "math.trunc"})
_STATEMENTS = {ast.With: "a with statement", ast.Try: "a try statement", ast.Raise: "a raise statement",
               ast.Assert: "an assert statement", ast.Delete: "a del statement", ast.Global: "a global declaration",
               ast.Nonlocal: "a nonlocal declaration", ast.Import: "an import inside a function",
               ast.ImportFrom: "an import inside a function", ast.ClassDef: "a class"}
_DISPLAYS = {ast.List: "a list", ast.ListComp: "a list", ast.Dict: "a dict", ast.DictComp: "a dict",
             ast.Set: "a set", ast.SetComp: "a set", ast.GeneratorExp: "a generator", ast.JoinedStr: "a string",
             ast.Lambda: "a lambda (a closure)", ast.NamedExpr: "an assignment expression (:=)",
             ast.Starred: "unpacking with *", ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield"}


class Refusal(Exception):
    """What numba cannot compile: `what` names it, `node` is where the generated code has
    it, `match` finds it in the user's file; `advice` replaces the usual closing words."""

    def __init__(self, what, node, match=None, advice=None):
        super().__init__(what)
        self.what, self.node, self.match, self.advice = what, node, match, advice


def _spelled(call_func):
    def match(node):
        return isinstance(node, ast.Call) and ast.unparse(node.func) == call_func
    return match


def _of_type(kind):
    return lambda node: isinstance(node, kind)


class Checker:
    """Raises Refusal at the first construct of a function numba cannot compile."""

    def __init__(self, constants, functions, refused=(), unknown=lambda fdef: set()):
        self.constants = constants  # module-level name -> value (None: not a literal)
        self.functions = functions  # the names of the module's functions
        self.refused = refused  # those of them numba cannot compile (gradgen's helpers for arrays)
        self.unknown = unknown  # fdef -> its parameters nothing says are numbers
        self.stacks = set()
        self.params = set()

    def function(self, fdef):
        args = fdef.args
        self.params = self.unknown(fdef)
        for extra in (args.vararg, args.kwarg):
            if extra is not None:
                raise Refusal(f"the parameter {'*' if extra is args.vararg else '**'}{extra.arg}", extra,
                              _parameter(extra.arg))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                raise Refusal(f"the keyword-only parameter '{arg.arg}' has a default, which numba does not fill in",
                              arg, _parameter(arg.arg), advice="make it a positional parameter, or compile this file without --jit")
        for default in args.defaults:
            self.expr(default)
        body = fdef.body[1:] if _is_docstring(fdef.body[0]) else fdef.body
        self.stacks = {t.id for s in ast.walk(fdef) if isinstance(s, ast.Assign) and _is_empty_list(s.value)
                       for t in s.targets if isinstance(t, ast.Name)}
        self.statements(body)

    def statements(self, stmts):
        for stmt in stmts:
            self.statement(stmt)

    def statement(self, stmt):
        if isinstance(stmt, (ast.Break, ast.Continue, ast.Pass)):
            return
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self.target(target)
            if not (_is_empty_list(stmt.value) or _is_none(stmt.value)):  # a stack; a placeholder
                self.expr(stmt.value)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            self.target(stmt.target)
            if stmt.value is not None:
                self.expr(stmt.value)
        elif isinstance(stmt, ast.Expr):
            self._dropped(stmt.value)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                self.expr(stmt.value)
        elif isinstance(stmt, (ast.If, ast.While)):
            self.expr(stmt.test)
            self.statements(stmt.body)
            self.statements(stmt.orelse)
        elif isinstance(stmt, ast.For):
            self.target(stmt.target)
            self.iterable(stmt.iter)
            self.statements(stmt.body)
            self.statements(stmt.orelse)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise Refusal(f"the nested function {stmt.name} (a closure)", stmt, _of_type(ast.FunctionDef))
        else:
            what = _STATEMENTS.get(type(stmt), f"the statement {type(stmt).__name__}")
            raise Refusal(what, stmt, _of_type(type(stmt)))

    def _dropped(self, value):
        """A call whose value is dropped: a push onto a stack (or a docstring's string)."""
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "append" \
                and isinstance(value.func.value, ast.Name) and value.func.value.id in self.stacks \
                and len(value.args) == 1 and not value.keywords:
            self.expr(value.args[0])
        else:
            self.expr(value)

    def target(self, node):
        if isinstance(node, ast.Name):
            return
        if isinstance(node, ast.Tuple):
            for elt in node.elts:
                self.target(elt)
            return
        if isinstance(node, ast.Subscript):
            raise Refusal(f"writing into {ast.unparse(node)} (an array or a list)", node, _of_type(ast.Subscript))
        self.expr(node)

    def iterable(self, node):
        """What a loop runs over: a range, a module-level tuple of numbers, or either reversed
        (with the count of iterations a loop that stopped early made: `[:iterations]`)."""
        inner = node.args[0] if _call_to(node, "reversed") and len(node.args) == 1 else node
        if inner is not node and isinstance(inner, ast.Subscript) and _is_head(inner.slice):
            self.expr(inner.slice.upper)
            inner = inner.value
        if _call_to(inner, "range"):
            self.expr(inner)
        elif isinstance(inner, ast.Name) and inner.id in self.constants:
            self.tuple_constant(inner)
        else:
            raise Refusal(f"a loop over {ast.unparse(node)} (a sequence or an array)", node)

    def tuple_constant(self, node):
        value = self.constants.get(node.id)
        if not isinstance(value, tuple):
            raise Refusal(f"the module-level value {node.id} (not a tuple of numbers)", node, _assigns(node.id))
        if len({_kind_of(v) for v in value}) > 1 or any(_kind_of(v) is None for v in value):
            raise Refusal(f"the module-level tuple {node.id} mixes ints and floats, and numba runs over a tuple of "
                          "one type", node, _assigns(node.id),
                          advice="write each of its numbers as a float (1.0), or compile this file without --jit")

    def expr(self, node):
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.Name):
            return None
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            raise Refusal("a matrix product (@)", node, lambda n: isinstance(n, ast.BinOp)
                          and isinstance(n.op, ast.MatMult))
        if isinstance(node, ast.Compare):
            for op in node.ops:
                if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                    what = "an 'is' comparison" if isinstance(op, (ast.Is, ast.IsNot)) else "a membership test (in)"
                    raise Refusal(what, node, _of_type(ast.Compare))
        if type(node) in _DISPLAYS:
            raise Refusal(_DISPLAYS[type(node)], node, _of_type(type(node)))
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
            return None
        raise Refusal(f"the expression {ast.unparse(node)}", node)

    def _constant(self, node):
        if isinstance(node.value, (bool, int, float)):
            return None
        what = {str: "a string", bytes: "a bytes string", complex: "a complex number"}.get(type(node.value),
                                                                                         f"the value {node.value!r}")
        raise Refusal(what, node)

    def _call(self, node):
        spelled = ast.unparse(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "pop" and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in self.stacks and not node.args and not node.keywords:
            return None
        if "random" in spelled.split(".") or (isinstance(node.func, ast.Attribute) and node.func.attr in DRAWS
                                              and ast.unparse(node.func.value) not in ("np", "math")):
            raise Refusal(f"a random draw ({spelled}(...))", node, _spelled(spelled))
        if spelled in emit.HELPERS or spelled in self.refused:
            raise Refusal(f"array code (the helper {spelled} gradgen writes for arrays)", node)
        if not self._callable(node.func):
            first = node.args[0] if node.args else None
            if spelled.startswith("np.") and isinstance(first, ast.Name) and first.id in self.params:
                shown = f"{spelled}({first.id}{', ...' if len(node.args) > 1 or node.keywords else ''})"
                raise Refusal(f"the array function {shown}, as gradgen cannot tell that "
                              f"'{first.id}' is a number", first, _parameter(first.id),
                              advice=f"annotate it '{first.id}: float' or give it a float default, or compile "
                                     "this file without --jit")
            what = f"the array function {spelled}" if spelled.startswith("np.") else f"the call {spelled}"
            raise Refusal(what, node, _spelled(spelled))
        if node.keywords:
            raise Refusal(f"the call {spelled} with keyword arguments", node, _spelled(spelled))
        if spelled == "len" and not (len(node.args) == 1 and isinstance(node.args[0], ast.Name)
                                     and isinstance(self.constants.get(node.args[0].id), tuple)):
            raise Refusal(f"{ast.unparse(node)} (the length of a sequence or an array)", node, _spelled("len"))
        for arg in node.args:
            self.expr(arg)
        return None

    def _callable(self, func):
        if isinstance(func, ast.Name):
            return func.id in BUILTINS or func.id in self.functions
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return (func.value.id, func.attr) in {("math", f) for f in MATH} | {("np", f) for f in NUMPY}
        return False

    def _attribute(self, node):
        if isinstance(node.value, ast.Name) and (node.value.id, node.attr) in {("math", f) for f in MATH} | {
                ("np", f) for f in NUMPY}:
            return None
        if isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy"):
            raise Refusal(f"{ast.unparse(node)} (array code)", node)
        raise Refusal(f"the attribute {ast.unparse(node)} (of an array or a Python object)", node,
                      lambda n: isinstance(n, ast.Attribute) and n.attr == node.attr)

    def _subscript(self, node):
        if isinstance(node.value, ast.Name) and isinstance(self.constants.get(node.value.id), tuple) \
                and not isinstance(node.slice, ast.Slice):
            self.tuple_constant(node.value)
            return self.expr(node.slice)
        raise Refusal(f"indexing {ast.unparse(node)} (an array or a list)", node, _of_type(ast.Subscript))


def _parameter(name):
    return lambda node: isinstance(node, ast.arg) and node.arg == name


def _assigns(name):
    def match(node):
        return isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    return match


# --- the respellings ----------------------------------------------------------------------------

def defaults(fdef):
    """[((start, end) of `=<default>`, "")]: beside keyword-only parameters (the tangents of
    --emit jvp and hvp) numba applies a function's defaults to its last parameters, whatever
    their names (`f(a=0.5, *, da)` called as f(da=1.0) would get a missing, f(2.0) a da of
    0.5): there the defaults go, and every argument is passed."""
    args = fdef.args
    if not args.kwonlyargs:
        return []
    positional = args.posonlyargs + args.args
    return [(("cut", arg, default), "") for arg, default in zip(positional[len(positional) - len(args.defaults):],
                                                                  args.defaults)]


def loops(fdef, constants, taken):
    """[(node or (offset,), new text)]: each backward loop over an explicit descending range."""
    edits = []
    for loop in ast.walk(fdef):
        if not (isinstance(loop, ast.For) and _call_to(loop.iter, "reversed")):
            continue
        inner, count = loop.iter.args[0], None
        if isinstance(inner, ast.Subscript) and _is_head(inner.slice):
            inner, count = inner.value, inner.slice.upper
        if _call_to(inner, "range"):
            edits.append((loop.iter, ast.unparse(descending(inner.args, count))))
        elif count is None:
            edits.append((loop.iter, f"{inner.id}[::-1]"))  # a module-level tuple
        else:  # the first `count` numbers of a module-level tuple, last first: by index
            index = _fresh(f"{loop.target.id}_index", taken)
            taken.add(index)
            edits.append((loop.iter, ast.unparse(descending([count], None))))
            edits.append((loop.target, index))
            edits.append((("insert", loop.body[0]), f"{loop.target.id} = {inner.id}[{index}]"))
    return edits


def descending(args, count=None):
    """The range `reversed(range(*args)[:count])` runs over, written as a range."""
    start, stop, step = _range_parts(args)
    if count is not None:  # the first `count` of them: start + (count - 1) * step down to start
        return _range(_add(start, _mul(_add(count, _int(-1)), step)), _add(start, _neg(step)), _neg(step))
    k = step.value if isinstance(step, ast.Constant) else None
    if k == 1:
        return _range(_add(stop, _int(-1)), _add(start, _int(-1)), _int(-1))
    if k == -1:
        return _range(_add(stop, _int(1)), _add(start, _int(1)), _int(1))
    if isinstance(k, int) and k > 0:  # the last is start + (stop - start - 1) // k * k
        last = _add(start, _mul(_floordiv(_add(_add(stop, _neg(start)), _int(-1)), step), step))
        return _range(last, _add(start, _neg(step)), _neg(step))
    if isinstance(k, int) and k < 0:  # the last is start - (start - stop - 1) // -k * -k
        size = _neg(step)
        last = _add(start, _neg(_mul(_floordiv(_add(_add(start, _neg(stop)), _int(-1)), size), size)))
        return _range(last, _add(start, size), size)
    length = ast.Call(ast.Name("len"), [ast.Call(ast.Name("range"), list(args), [])], [])
    return _range(_add(start, _mul(_add(length, _int(-1)), step)), _add(start, _neg(step)), _neg(step))


def _range_parts(args):
    args = list(args)
    if len(args) == 1:
        return _int(0), args[0], _int(1)
    if len(args) == 2:
        return args[0], args[1], _int(1)
    step = args[2]
    if isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub) and _is_int(step.operand):
        step = _int(-step.operand.value)
    return args[0], args[1], step


def _range(*parts):
    if _is_int(parts[2]) and parts[2].value == 1:
        parts = parts[:2]  # range(a, b, 1) is range(a, b)
    if len(parts) == 2 and _is_int(parts[0]) and parts[0].value == 0:
        parts = parts[1:]
    return ast.Call(ast.Name("range"), list(parts), [])


def respellings(fdef):
    """[(statement or expression, its new text)]: the calls numba has no version of for numbers,
    respelled as the same arithmetic (see Respell)."""
    edits = []
    for stmt in ast.walk(fdef):
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)):
            node = stmt
        elif isinstance(stmt, (ast.If, ast.While)):
            node = stmt.test
        else:
            continue
        respell = Respell()
        new = respell.visit(_copy(node))
        if respell.changed:
            edits.append((node, ast.unparse(new)))
    return edits


class Respell(ast.NodeTransformer):
    """`math.log(x, b)` is `math.log(x) / math.log(b)` (CPython computes it so); `math.hypot(a,
    b, c)` `math.hypot(math.hypot(a, b), c)` (to an ulp or so); `np.clip(a,
    lo, hi)` of numbers `np.minimum(np.maximum(a, lo), hi)` (NaN passes, as in clip); `np.where(c,
    a, b)` of numbers `a if c else b`."""

    changed = False

    def visit_Call(self, node):
        self.generic_visit(node)
        spelled = ast.unparse(node.func)
        args = node.args
        if node.keywords or any(isinstance(a, ast.Starred) for a in args):
            return node
        if spelled == "math.log" and len(args) == 2:
            new = ast.BinOp(_call("math.log", args[:1]), ast.Div(), _call("math.log", args[1:]))
        elif spelled == "math.hypot" and len(args) > 2:
            new = _call("math.hypot", [_call("math.hypot", args[:2]), *args[2:]]) if len(args) == 3 else \
                _call("math.hypot", [self.visit_Call(_call("math.hypot", args[:-1])), args[-1]])
        elif spelled == "np.clip" and len(args) == 3:
            new = _call("np.minimum", [_call("np.maximum", args[:2]), args[2]])
        elif spelled == "np.where" and len(args) == 3:
            new = ast.IfExp(args[0], args[1], args[2])
        else:
            return node
        self.changed = True
        return new


def _call(spelled, args):
    module, name = spelled.split(".")
    return ast.Call(ast.Attribute(ast.Name(module), name), list(args), [])


def _copy(node):
    return ast.parse(ast.unparse(node), mode="exec").body[0] if isinstance(node, ast.stmt) else \
        ast.parse(ast.unparse(node), mode="eval").body


# --- integer arithmetic on syntax trees, folding constants (`n - 1`, not `n + -1`) -----------------

def _int(k):
    return ast.Constant(k)


def _is_int(node):
    return isinstance(node, ast.Constant) and type(node.value) is int


def _neg(node):
    if _is_int(node):
        return _int(-node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return node.operand
    return ast.UnaryOp(ast.USub(), node)


def _add(a, b):
    """a + b, folded: constants summed, `x + (-1)` written `x - 1`, `x - 1 + 1` as x."""
    if _is_int(a) and _is_int(b):
        return _int(a.value + b.value)
    if _is_int(a):
        a, b = b, a
    if _is_int(b) and b.value == 0:
        return a
    if _is_int(b) and isinstance(a, ast.BinOp) and isinstance(a.op, (ast.Add, ast.Sub)) and _is_int(a.right):
        inner = a.right.value if isinstance(a.op, ast.Add) else -a.right.value
        return _add(a.left, _int(inner + b.value))
    if _is_int(b) and b.value < 0:
        return ast.BinOp(a, ast.Sub(), _int(-b.value))
    if isinstance(b, ast.UnaryOp) and isinstance(b.op, ast.USub):
        return ast.BinOp(a, ast.Sub(), b.operand)
    return ast.BinOp(a, ast.Add(), b)


def _mul(a, b):
    if _is_int(a) and _is_int(b):
        return _int(a.value * b.value)
    if _is_int(b) and b.value == 1:
        return a
    if _is_int(a) and a.value == 1:
        return b
    if (_is_int(a) and a.value == 0) or (_is_int(b) and b.value == 0):
        return _int(0)
    return ast.BinOp(a, ast.Mult(), b)


def _floordiv(a, b):
    if _is_int(a) and _is_int(b) and b.value:
        return _int(a.value // b.value)
    return ast.BinOp(a, ast.FloorDiv(), b)


# --- placeholders -------------------------------------------------------------------------------

def placeholders(fdef, constants):
    """[(the None of `x = None`, a zero of the type x holds)]."""
    kinds = Kinds(fdef, constants)
    edits = []
    for stmt in ast.walk(fdef):
        if isinstance(stmt, ast.Assign) and _is_none(stmt.value) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            edits.append((stmt.value, _zero(kinds.of_name(stmt.targets[0].id))))
    return edits


def _zero(kind):
    if isinstance(kind, tuple):
        return "(" + ", ".join(_zero(k) for k in kind) + ("," if len(kind) == 1 else "") + ")"
    return {"bool": "False", "int": "0"}.get(kind, "0.0")


_ORDER = {"bool": 0, "int": 1, "float": 2}


def _join(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, tuple) or isinstance(b, tuple):
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            return tuple(_join(x, y) for x, y in zip(a, b))
        return "float"
    return a if _ORDER[a] >= _ORDER[b] else b


def _kind_of(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return None


class Kinds:
    """The type each local of a generated function holds: bool, int, float or a tuple of
    them (a number the code does not show is a float), from every value it is given."""

    def __init__(self, fdef, constants):
        self.values = {}  # name -> [value expressions]
        self.known = {name: _constant_kind(v) for name, v in constants.items() if _constant_kind(v)}
        args = fdef.args
        positional = args.posonlyargs + args.args
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for arg, default in list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults)):
            kind = _kind_of(default.value) if isinstance(default, ast.Constant) else None
            self.known[arg.arg] = kind or "float"
        for node in ast.walk(fdef):
            self._collect(node)
        for _ in range(len(self.values) + 1):  # to the fixed point: kinds only widen
            changed = False
            for name, values in self.values.items():
                kind = None
                for value in values:
                    kind = _join(kind, self.of(value))
                if kind is not None and kind != self.known.get(name):
                    self.known[name], changed = _join(self.known.get(name), kind), True
            if not changed:
                break

    def _collect(self, node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self._bind(node.target, ast.BinOp(ast.Name(node.target.id), node.op, node.value))
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            self._bind(node.target, ast.Subscript(node.iter, ast.Constant(0)) if not _call_to(node.iter, "range")
                       and not _call_to(node.iter, "reversed") else ast.Constant(0))

    def _bind(self, target, value):
        if isinstance(target, ast.Name):
            self.values.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts):
                self._bind(t, v)

    def of_name(self, name):
        return self.known.get(name) or "float"

    def of(self, node):  # noqa: C901 - one case per kind of expression
        if isinstance(node, ast.Constant):
            return _kind_of(node.value)
        if isinstance(node, ast.Name):
            return self.known.get(node.id)
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp)
                                                           and isinstance(node.op, ast.Not)):
            if isinstance(node, ast.BoolOp):
                return _join_all(self.of(v) for v in node.values)
            return "bool"
        if isinstance(node, ast.UnaryOp):
            return _join(self.of(node.operand), "int")
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Div):
                return "float"
            return _join(_join(self.of(node.left), self.of(node.right)), "int")
        if isinstance(node, ast.IfExp):
            return _join(self.of(node.body), self.of(node.orelse))
        if isinstance(node, ast.Tuple):
            kinds = tuple(self.of(e) for e in node.elts)
            return None if None in kinds else kinds
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Subscript):  # a module-level tuple's number (or a loop over one)
            kind = self.of(node.value)
            return _join_all(kind) if isinstance(kind, tuple) else None
        return "float"

    def _call(self, node):
        spelled = ast.unparse(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "pop":
            return None  # a value saved on a stack: of the kinds pushed
        if spelled in INTEGRAL and len(node.args) == 1:
            return "int"
        if spelled == "bool":
            return "bool"
        if spelled in ("abs", "min", "max"):
            return _join_all(self.of(a) for a in node.args)
        return "float"


def _constant_kind(value):
    if isinstance(value, tuple):
        kinds = tuple(_constant_kind(v) for v in value)
        return None if None in kinds else kinds
    return _kind_of(value)


def _join_all(kinds):
    out = None
    for kind in kinds:
        if kind is None:
            return None
        out = _join(out, kind)
    return out


# --- small predicates -----------------------------------------------------------------------------

def _call_to(node, name):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name \
        and not node.keywords


def _is_head(s):
    """`[:count]`."""
    return isinstance(s, ast.Slice) and s.lower is None and s.step is None and s.upper is not None


def _is_empty_list(value):
    return isinstance(value, ast.List) and not value.elts


def _is_none(value):
    return isinstance(value, ast.Constant) and value.value is None


def _is_docstring(stmt):
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _fresh(base, taken):
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name
