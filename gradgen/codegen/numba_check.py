"""What numba compiles of a generated function: the list gradgen/codegen/numba_jit.py checks it against.

`Checker` walks a generated function against a list of what numba compiles in nopython
mode (numbers, tuples, `if`/`for`/`while`, `math.*` and NumPy's functions of numbers, the
module's own functions, stacks that are appended to and popped) and raises `Refusal`,
naming the first construct outside it. A list of what is allowed, not of what is not: a
construct nobody thought of is refused at compile time instead of failing inside numba at
the first call.

The respellings are gradgen/codegen/numba_spell.py's.
"""

from __future__ import annotations

import ast

import numpy as np

from gradgen.codegen import emit, numba_einsum
from gradgen.codegen.numba_arrays import (ATTRIBUTES, CALLS, DTYPES, METHODS, OVERLOADS, counts_what_it_divides,
                                          respelled_reduction)

MATH = frozenset("""sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp expm1 exp2 log log1p
    log10 log2 sqrt pow fabs floor ceil trunc erf erfc gamma lgamma hypot copysign isnan isinf isfinite degrees
    radians ldexp pi e inf nan tau""".split())
NUMPY = frozenset("""sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh exp expm1 exp2
    log log1p log10 log2 sqrt cbrt square abs absolute fabs sign floor ceil trunc rint reciprocal hypot power
    maximum minimum fmax fmin logaddexp logaddexp2 copysign deg2rad rad2deg isnan isinf isfinite pi e inf nan
    euler_gamma logical_and logical_or logical_not round around clip where""".split())  # (np.clip and np.where of numbers respelled: see Respell)
DRAWS = frozenset(n for n in dir(np.random.Generator) + dir(np.random.RandomState) if not n.startswith("_"))
BUILTINS = frozenset({"abs", "min", "max", "float", "int", "bool", "round", "pow", "range", "len", "slice"})
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

    def __init__(self, constants, functions, refused=()):
        self.constants = constants  # module-level name -> value (None: not a literal)
        self.functions = functions  # the names of the module's functions
        self.refused = refused  # those of them numba cannot compile (gradgen's helpers for arrays)
        self.stacks = set()

    def function(self, fdef):
        args = fdef.args
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
        self.stacks = {t.id for s in ast.walk(fdef) if isinstance(s, ast.Assign)
                       and (_is_empty_list(s.value) or _rows(s.value) or _pieces(s.value))
                       for t in s.targets if isinstance(t, ast.Name)}  # (unconcatenate: a list of pieces, popped)
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
            if not (_is_empty_list(stmt.value) or is_none(stmt.value)):  # a stack; a placeholder
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
        if isinstance(node, ast.Subscript):  # a write into an array
            return self._subscript(node)
        self.expr(node)

    def iterable(self, node):
        """What a loop runs over: a range, a module-level tuple of numbers, or either reversed
        (with the count of iterations a loop that stopped early made: `[:iterations]`)."""
        inner = node.args[0] if call_to(node, "reversed") and len(node.args) == 1 else node
        if inner is not node and isinstance(inner, ast.Subscript) and is_head(inner.slice):
            self.expr(inner.slice.upper)
            inner = inner.value
        if call_to(inner, "range"):
            self.expr(inner)
        elif isinstance(inner, ast.Name) and inner.id in self.constants:
            self.tuple_constant(inner)
        else:
            raise Refusal(f"a loop over {ast.unparse(node)} (a sequence or an array)", node)

    def tuple_constant(self, node):
        value = self.constants.get(node.id)
        if not isinstance(value, tuple):
            raise Refusal(f"the module-level value {node.id} (not a tuple of numbers)", node, _assigns(node.id))
        if len({kind_of(v) for v in value}) > 1 or any(kind_of(v) is None for v in value):
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
        if isinstance(node, ast.Compare):
            for op in node.ops:
                if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                    what = "an 'is' comparison" if isinstance(op, (ast.Is, ast.IsNot)) else "a membership test (in)"
                    raise Refusal(what, node, _of_type(ast.Compare))
        if type(node) in _DISPLAYS:
            raise Refusal(_DISPLAYS[type(node)], node, _of_type(type(node)))
        if isinstance(node, ast.BinOp) and counts_what_it_divides(node):  # (respelled np.sum(e): numba_arrays)
            self.expr(node.left)
            return self.expr(node.right.args[0])
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
        if _rows(node):  # (the rows of np.stack's gradient, popped as its appends are undone; numba's list)
            return self.expr(node.args[0])
        if spelled in _INDEXED and len(node.args) == _INDEXED[spelled]:  # the last argument an index value
            for arg in node.args[:-1]:
                self.expr(arg)
            return self._index_value(node.args[-1])
        if spelled in OVERLOADS:
            return self._arguments(node)
        if spelled in numba_einsum.SPELLINGS:  # a loop nest of its subscripts (gradgen.codegen.numba_einsum)
            if numba_einsum.subscripts(node) is None:
                raise Refusal("the array function np.einsum", node, _spelled("np.einsum"))
            node = ast.Call(node.func, node.args[1:], [])
            return self._arguments(node)
        if spelled in emit.HELPERS or spelled in self.refused:
            raise Refusal(f"array code (the helper {spelled} gradgen writes for arrays)", node)
        if spelled.startswith("np.") and spelled[3:] in CALLS:
            return self._array_call(node, spelled)
        if spelled == "np.add.at" and len(node.args) == 3 and not node.keywords:  # (respelled add_at: numba_along)
            return self._arguments(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in METHODS and not node.keywords \
                and not (isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "math")):
            self.expr(node.func.value)
            return self._arguments(node)
        if not self._callable(node.func):
            what = f"the array function {spelled}" if spelled.startswith("np.") else f"the call {spelled}"
            raise Refusal(what, node, _spelled(spelled))
        if node.keywords:
            raise Refusal(f"the call {spelled} with keyword arguments", node, _spelled(spelled))
        return self._arguments(node)

    def _index_value(self, node):
        """An index as a value (`(slice(1, None), None, k)`): None and Ellipsis are a new axis
        and all axes there, as inside brackets; numba takes them in an index tuple."""
        for part in node.elts if isinstance(node, ast.Tuple) else [node]:
            if call_to(part, "slice") and not part.keywords:
                for bound in part.args:
                    if not is_none(bound):
                        self.expr(bound)
            elif not (isinstance(part, ast.Constant) and (part.value is None or part.value is Ellipsis)):
                self.expr(part)
        return None

    def _arguments(self, node):
        for arg in node.args:
            self.expr(arg)
        for keyword in node.keywords:
            self.expr(keyword.value)
        return None

    def _array_call(self, node, spelled):
        """np.<f>(...) of numba's NumPy, with only the keywords numba takes for it (dtype a
        NumPy type)."""
        allowed = CALLS[spelled[3:]] | ({"axis", "keepdims"} if respelled_reduction(node) else set())
        for keyword in node.keywords:
            if keyword.arg not in allowed:
                raise Refusal(f"{spelled}(..., {keyword.arg}=...), which numba does not compile", node,
                              _spelled(spelled), advice=f"write {spelled} without {keyword.arg}= (a loop, say), or "
                              "compile this file without --jit")
            if keyword.arg == "dtype":
                if not (isinstance(keyword.value, ast.Attribute) and ast.unparse(keyword.value.value) == "np") \
                        and ast.unparse(keyword.value) not in DTYPES:  # (dtype=float: respelled np.float64)
                    raise Refusal(f"{spelled}(..., dtype={ast.unparse(keyword.value)})", node, _spelled(spelled))
                continue
            self.expr(keyword.value)
        if node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):  # np.array([a, b]): their elements
            for elt in node.args[0].elts:
                self.expr(elt)
            node = ast.Call(node.func, node.args[1:], [])
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
        if node.attr in ATTRIBUTES:  # x.T, x.shape
            return self.expr(node.value)
        raise Refusal(f"the attribute {ast.unparse(node)} (of an array or a Python object)", node,
                      lambda n: isinstance(n, ast.Attribute) and n.attr == node.attr)

    def _subscript(self, node):
        if isinstance(node.value, ast.Name) and isinstance(self.constants.get(node.value.id), tuple):
            if isinstance(node.slice, ast.Slice):
                raise Refusal(f"slicing the module-level tuple {ast.unparse(node)}", node, _of_type(ast.Subscript))
            self.tuple_constant(node.value)
            return self.expr(node.slice)
        self.expr(node.value)  # an array's element, slice, or elements picked by an index array
        for part in node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]:
            if isinstance(part, ast.Slice):
                for bound in (part.lower, part.upper, part.step):
                    if bound is not None:
                        self.expr(bound)
            elif not (isinstance(part, ast.Constant) and (part.value is None or part.value is Ellipsis)):
                self.expr(part)
        return None


# gradgen's helpers of reads and writes at an index (numba_arrays.OVERLOADS), by their count of
# arguments, the last of them the index as a value
_INDEXED = {"zero_at": 2, "scatter": 3}


def _parameter(name):
    return lambda node: isinstance(node, ast.arg) and node.arg == name


def _assigns(name):
    def match(node):
        return isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    return match


# --- small predicates -----------------------------------------------------------------------------

def call_to(node, name):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name \
        and not node.keywords


def is_head(s):
    """`[:count]`."""
    return isinstance(s, ast.Slice) and s.lower is None and s.step is None and s.upper is not None


def _is_empty_list(value):
    return isinstance(value, ast.List) and not value.elts


def is_none(value):
    return isinstance(value, ast.Constant) and value.value is None


def _rows(node):
    """`list(g)`: the rows of an array as a list (numba's list() of an array)."""
    return call_to(node, "list") and len(node.args) == 1 and not node.keywords


def _pieces(node):
    """`unconcatenate(g, parts, axis=0)` (the pieces of g) or `zeros_like_tree(parts)` (zeros
    of each part): a list of arrays, popped (numba_arrays' overloads)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("unconcatenate",
                                                                                              "zeros_like_tree")


def _is_docstring(stmt):
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def kind_of(value):
    """The type of a number the code shows: "bool", "int" or "float" (None: not a number)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return None
