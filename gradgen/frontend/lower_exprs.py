"""Lowering of expressions (a mixin of gradgen.frontend.lower.Lowerer): names, constants,
operators, comparisons, subscripts and attributes, each to its IR."""

from __future__ import annotations

import ast

from gradgen.errors import CompileError, Final
from gradgen.frontend import comprehensions, flattening, inactive, local_imports, records
from gradgen.frontend.closures import FUNCTION_VALUES, FunctionValue, LibraryFunction, lambda_as_def
from gradgen.frontend.known_lists import STATIC_VALUES
from gradgen.frontend.constants import NAMED
from gradgen.frontend.scopes import (
    _BINOPS, _OP_TEXT, ArgsTuple, PartsOfAPath, _is_text, _lookup, _LoopVariable, _static_int, _UnmadeList
)
from gradgen.frontend.structured import TreeRef
from gradgen.ir.nodes import Call, Cond, Const, Var
from gradgen.rules import table as primitives
from gradgen.rules.lists import LIST_READERS

# readers of a whole list, whose value an append changes (an element read, hs[i], stays)
_WHOLE_LIST_READERS = {"stack_list", "array_list", "concatenate_list", "vstack_list", "hstack_list", "len"}

_FACTS = {"shape", "ndim", "size"}  # attributes of an array that are plain integers

_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "invert"}

_COMPARE = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}

_UNSUPPORTED_EXPR = {
    ast.Yield: "'yield' inside an expression (x = yield v) is not supported: gradgen inlines a generator that "
               "yields values (a statement 'yield v') where a loop consumes it",
    ast.YieldFrom: "'yield from' is supported as a statement only (yield from g(...))",
    ast.Await: "'await' is not supported",
    ast.ListComp: "comprehensions are not supported", ast.SetComp: "comprehensions are not supported",
    ast.DictComp: "comprehensions are not supported", ast.GeneratorExp: "comprehensions are not supported",
    ast.Starred: "starred expressions are not supported",
    ast.NamedExpr: "':=' is not supported", ast.JoinedStr: "strings are not supported",
    ast.Dict: "dicts are not supported", ast.Set: "sets are not supported",
    ast.List: "lists are not supported here", ast.Tuple: "tuples are not supported here",
    ast.Slice: "slices are not supported",
}


class ExprLowering:
    """Expressions: `self.expr(scope, node)` is the IR of one."""

    # ---- expressions -----------------------------------------------------------------
    def expr(self, scope, node, test=False, function_ok=False):
        """The IR of expression `node`; a function value (a lambda, `np.tanh`, a helper named
        without a call) only where `function_ok` (an argument, a return of a helper, the
        right of an assignment), else a located error."""
        start = len(self.body)
        try:
            value = self._expr(scope, node, test)
        except Final:
            raise
        except CompileError as refusal:  # outside the subset: kept as written if no derivative needs it
            del self.body[start:]
            return self._as_written(scope, node, refusal, test)
        if isinstance(value, STATIC_VALUES) and not function_ok:
            raise self._static_misuse(node, value)
        if isinstance(value, ArgsTuple) and not function_ok:
            raise self.m.error(node, f"'{self.m.segment(node)}' is a tuple of values: unpack it (a, b = ...) or "
                                     "index it by a constant")
        if isinstance(value, FUNCTION_VALUES) and not function_ok:
            raise self.m.error(node, f"'{ast.unparse(node) if not isinstance(node, ast.Lambda) else 'lambda'}' is a "
                                     "function, not a number")
        return value

    def _as_written(self, scope, node, refusal, test):
        """`node` as the source wrote it (gradgen.frontend.inactive), in a variable of its
        own unless it is the whole value of an assignment or a condition."""
        call = inactive.as_written(self, scope, node, refusal)
        if test or node is self.whole_value:
            return call
        return self._named(inactive.base_name(node), call, node)

    def _expr(self, scope, node, test=False):
        static = self._static_expr(scope, node)
        if static is not None:  # it reads a list known when compiling (gradgen.frontend.known_lists)
            return static
        if isinstance(node, ast.Lambda):
            return FunctionValue(lambda_as_def(node, "lambda"), scope)
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.Name):
            value = self._read(scope, node)
            if isinstance(value, TreeRef):
                return self._leaf(value, node)
            if isinstance(value, ArgsTuple):
                raise self.m.error(node, f"'{node.id}' is a helper's *args: use its items ({node.id}[0]), "
                                         f"len({node.id}), or pass them on (f(*{node.id}), np.hstack({node.id}))")
            if self._is_list(value):
                raise self.m.error(node, f"'{node.id}' is a list: gradgen reads a list by index ({node.id}[i]), "
                                         f"len({node.id}), a loop over it, sum({node.id}) or np.stack({node.id})")
            return value
        if isinstance(node, ast.ListComp):
            return self._comprehension(scope, node)
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise self.m.error(node, f"operator '{_OP_TEXT.get(type(node.op), '?')}' is not supported")
            operands = (self.expr(scope, node.left), self.expr(scope, node.right))
            self._refuse_non_numbers(node, (node.left, node.right), operands)
            return self._call(op, operands, "op", node)
        if isinstance(node, ast.UnaryOp):
            op = _UNARY.get(type(node.op))
            if op is None or (op == "not" and not test):
                text = "not" if op == "not" else _OP_TEXT.get(type(node.op), "?")
                raise self.m.error(node, f"operator '{text}' is not supported here")
            return self._call(op, (self.expr(scope, node.operand, test),), "op", node)
        if isinstance(node, ast.Compare):
            return self._compare(scope, node)
        if isinstance(node, ast.BoolOp):
            if not test:
                raise self.m.error(node, "'and'/'or' are supported only in conditions")
            op = "and" if isinstance(node.op, ast.And) else "or"
            start = len(self.body)
            first = self.expr(scope, node.values[0], True)
            mark = len(self.body)
            rest = [self.expr(scope, v, True) for v in node.values[1:]]
            if len(self.body) > mark:  # a later operand runs statements: only when Python evaluates it
                del self.body[start:]
                call = ast.copy_location(ast.Call(ast.Name("short_circuit", ast.Load()), [], []), node)
                return self._inline(scope, call, comprehensions.short_circuit(node), closure=scope)
            return self._call(op, (first, *rest), "op", node)
        if isinstance(node, ast.IfExp):
            known = self._known_test(scope, node.test)
            if known is not None:  # known when compiling (a recursion's base case): only the branch taken
                return self.expr(scope, node.body if known else node.orelse)
            start = len(self.body)
            cond = self.expr(scope, node.test, test=True)
            if isinstance(cond, Const):  # known when compiling: only that arm exists
                return self.expr(scope, node.body if cond.value else node.orelse)
            mark = len(self.body)
            body, orelse = self.expr(scope, node.body), self.expr(scope, node.orelse)
            if len(self.body) > mark:  # a branch runs statements: only the branch taken may run them
                del self.body[start:]
                call = ast.copy_location(ast.Call(ast.Name("conditional", ast.Load()), [], []), node)
                return self._inline(scope, call, comprehensions.conditional(node), closure=scope)
            return Cond(cond, body, orelse)
        if isinstance(node, ast.Call):
            return self._call_node(scope, node)
        if isinstance(node, ast.Subscript):
            return self._subscript(scope, node)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, scope)
        message = _UNSUPPORTED_EXPR.get(type(node), f"'{type(node).__name__}' expressions are not supported")
        raise self.m.error(node, message)

    def _refuse_non_numbers(self, node, nodes, operands):
        """`x + None`, `w * "a"`: Python's own TypeError, refused where it is (a string's
        `%` formatting and joining two strings run as written)."""
        texts = [isinstance(v, Const) and isinstance(v.value, str) for v in operands]
        for v in operands:
            if isinstance(v, Const) and v.value is None:
                raise inactive.final(self.m.error(node, f"'{self.m.segment(node)}' computes with None"))
        if any(texts) and not all(texts) and not (texts[0] and isinstance(node.op, ast.Mod)):
            n = nodes[texts.index(True)]
            raise inactive.final(self.m.error(n, "only real numbers are supported, not str constants"))
        if any(texts):  # "a" + "b", "%d steps" % n
            raise self.m.error(node, "an operation on strings: kept as written")

    def _subscript(self, scope, node):
        """`x[i, 1:n, None, ...]`: getitem on x, the index as expressions plus their layout."""
        if isinstance(scope.env.get(getattr(node.value, "id", None)), (_LoopVariable, _UnmadeList, PartsOfAPath)):
            return self._read(scope, node.value)
        ref = self._ref(scope, node)
        if ref is not None:  # params[i][0], layer["W"]: a part of a structured parameter
            return self._leaf(ref, node)
        if flattening.called(self.m, node.value):  # flatten(params)[0] (gradgen/frontend/flattening.py)
            return flattening.item(self, scope, node)
        items = self._args_tuple(scope, node.value)
        if items is not None:  # args[0] of a helper's *args
            index = _static_int(node.slice)
            if index is None or not -len(items.items) <= index < len(items.items):
                raise self.m.error(node, f"an index into *args must be a number from {-len(items.items)} to "
                                         f"{len(items.items) - 1} here")
            return items.items[index]
        self._part_of_part(scope, node)  # params[i][0]: params is a list of layers
        if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            if isinstance(node.value, ast.Name) and isinstance(self.m.constants.get(node.value.id), dict) \
                    and _lookup(scope, node.value.id) is None:
                return self._dict_constant(node)
            self._needs_structure(scope, node.value)  # params["W"]: params is a dict
        items = self._list_arg(scope, node.value)
        if items is not None:
            return self._list_item(scope, node, items)
        value = self.expr(scope, node.value)
        if self._is_list(value):  # [... for ...][i]: the comprehension's list, read by index
            return self._list_item(scope, node, value)
        layout, args = self._index(scope, node.slice)
        return self._call("getitem", (value, *args), "op", node, (("index", layout),))

    def _index(self, scope, index):
        """The index of `x[...]`: its layout (see gradgen.codegen.emit `index`) and its expressions."""
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        layout, args = [], []
        for item in items:
            if isinstance(item, ast.Slice):
                parts = (item.lower, item.upper, item.step)
                layout.append("s" + "".join("0" if p is None else "1" for p in parts))
                args += [self.expr(scope, p) for p in parts if p is not None]
            elif isinstance(item, ast.Constant) and item.value is None or self.m.qualified(item) == "numpy.newaxis":
                layout.append("n")
            elif isinstance(item, ast.Constant) and item.value is Ellipsis:
                layout.append("e")
            else:
                layout.append("i")
                listed = self._list_index(scope, item)
                args.append(self.expr(scope, item) if listed is None else listed)
        return tuple(layout), args

    def _dict_constant(self, node):
        """`HYPERPARAMS["l2"]` of a module-level dict of numbers: the number."""
        table, key = self.m.constants[node.value.id], node.slice.value
        if key not in table:
            raise self.m.error(node, f"'{node.value.id}' has no key {key!r}")
        value = table[key]
        if type(value) not in (int, float):
            raise self.m.error(node, f"{node.value.id}[{key!r}] is not a number")
        return Const(value)

    def _constant(self, node):
        if type(node.value) in (int, float, bool, str) or node.value is None:
            return Const(node.value)
        kind = type(node.value).__name__
        raise self.m.error(node, f"only real numbers are supported, not {kind} constants")

    def _compare(self, scope, node):
        if any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return self._identity(scope, node)
        left = Const(node.left.value) if _is_text(node.left) else self.expr(scope, node.left)
        parts = []
        for op, right_node in zip(node.ops, node.comparators):
            prim = _COMPARE.get(type(op))
            if prim is None:
                raise self.m.error(node, f"comparison '{_OP_TEXT.get(type(op), '?')}' is not supported")
            right = Const(right_node.value) if _is_text(right_node) else self.expr(scope, right_node)
            parts.append(self._call(prim, (left, right), "op", node))
            left = right
        return parts[0] if len(parts) == 1 else self._call("and", tuple(parts), "op", node)

    def _identity(self, scope, node):
        """`b is None`, `b is not None`: known when compiling where both sides are constants
        (a helper's None default, a number passed in), else left to run as written."""
        values = [self.expr(scope, n) for n in [node.left, *node.comparators]]
        if len(node.ops) != 1 or not all(isinstance(v, Const) for v in values):
            raise self.m.error(node, "'is' compares objects; gradgen keeps it as written")
        same = values[0].value is values[1].value or values[0].value == values[1].value is None
        return Const(same if isinstance(node.ops[0], ast.Is) else not same)

    def _call(self, prim, args, ns, node, params=()):
        # (a list in an index is a fancy index, as NumPy reads it: `y[[0, 1, 1]]`, `W[0][idx]`)
        operands = args[:{"getitem": 1, "setitem": 2}.get(prim, len(args))]
        if prim not in LIST_READERS and any(map(self._is_list, operands)):  # `[...] * 2` repeats a list in Python
            text = self.m.segment(node)
            raise self.m.error(node, f"'{text}' computes with a Python list (`*` repeats one, `+` joins two): gradgen "
                                     "reads a list by index, len(...), a loop over it, sum(...), or np.array(...) "
                                     "(an array) first")
        call = Call(prim, tuple(args), ns, loc=(node.lineno, node.col_offset + 1), params=params)
        if prim in _WHOLE_LIST_READERS and any(map(self._is_list, args)) and self._appended_after(node):
            # the list as it is now, named: a later append must not change what the backward pass reads
            return self._named(f"{prim.split('_')[0]}_{args[0].name}", call, node)
        return call

    def _appended_after(self, node):
        """Whether some list may grow after `node` runs: an append on a later line of the
        function `node` is in, or in a loop around it (the next trip), or anywhere in a caller
        it is inlined into. Any list's append counts: a cheap and safe answer."""
        line = node.lineno
        for name in dict.fromkeys([self.fnode.name, *self.stack]):
            fnode = self.m.functions.get(name, self.fnode if name == self.fnode.name else None)
            if fnode is None:
                continue
            appends = [n.lineno for n in ast.walk(fnode) if isinstance(n, ast.Call)
                       and isinstance(n.func, ast.Attribute) and n.func.attr == "append"]
            if not fnode.lineno <= line <= fnode.end_lineno:
                if appends:  # (a caller: its appends may follow the call)
                    return True
                continue
            loops = [(n.lineno, n.end_lineno) for n in ast.walk(fnode) if isinstance(n, (ast.For, ast.While))]
            if any(a >= line for a in appends) or any(
                    start <= line <= end and any(start <= a <= end for a in appends) for start, end in loops):
                return True
        return False

    def _read(self, scope, node):
        name = node.id
        if isinstance(scope.env.get(name), _LoopVariable):
            raise self.m.error(node, f"'{name}' is read after its loop; gradgen does not support that")
        if isinstance(scope.env.get(name), PartsOfAPath):
            raise self._parts_gone(node, scope.env[name])
        if isinstance(scope.env.get(name), _UnmadeList):
            raise self.m.error(node, scope.env[name].message())
        if name in scope.env:
            return scope.env[name]
        if name in scope.locals:
            raise self.m.error(node, f"'{name}' is read before it is assigned")
        if scope.closure is not None:  # a nested def or lambda reads its definer's variables
            return self._read(scope.closure, node)
        if name in self.m.functions and name not in self.m.constants:
            return FunctionValue(self.m.functions[name])
        made = self.m.record_constants.get(name)
        if made is not None and not self.m.imported and (
                name in self.m.runtime or records.declarable(self.m, made.cls) is None):
            return Var(name)  # data: declared again in the generated module (gradgen.codegen.record_defaults),
            # or, read from a running program (gradgen.live), passed to it on every call as its other values are
        if isinstance(self.m.constants.get(name), tuple):
            raise self.m.error(node, f"'{name}' is a sequence: only a loop may run over it")
        if isinstance(self.m.constants.get(name), dict):
            raise self.m.error(node, f"'{name}' is a dict of numbers: read one by its key ({name}['key'])")
        if name in self.m.constants:
            if scope.helper is not None and (name in self.top_params or self.m.imported):
                return Const(self.m.constants[name])  # the caller's parameter shadows it; another file's
            return Var(name)
        if name in self.m.not_constants:
            what = self.m.not_constants[name][1]
            how = f" without a default (`def f(..., arg)`, called as `f(..., {name})`)" \
                if what.startswith("is an instance of") else ""  # (a default naming it is refused too)
            raise self.m.error(node, f"module-level '{name}' {what}; pass it to the function as a parameter{how}")
        if name in self.m.imports:
            return self._attribute(node, scope)
        if name in self.m.functions or name in self.m.classes:
            raise self.m.error(node, f"'{name}' is a function, not a number")
        raise self.m.error(node, f"unknown name '{name}'")

    def _attribute(self, node, scope):
        field = self._field_read(scope, node) if isinstance(node, ast.Attribute) else None
        if field is not None:  # p.W, p.layers[0].W: a field of a parameter's class (gradgen.frontend.records)
            return field
        qualified = self.m.qualified(node)
        found = primitives.lookup(qualified) if qualified else None
        if found and primitives.TABLE[found[0]].kind == "attribute":
            return Call(found[0], (), found[1])
        if qualified is not None and qualified in NAMED:
            return Const(NAMED[qualified])
        imported = local_imports.constant(self.m, qualified)
        if imported is not None:  # `m.SCALE`: a constant of the user's other file
            return Const(imported[1])
        if local_imports.function(self.m, qualified) is not None:  # `act=m.relu`: a function of another file
            return FunctionValue(local_imports.function(self.m, qualified))
        if found is not None:  # `np.tanh` named without a call: a function value
            return LibraryFunction(qualified, ast.unparse(node))
        if isinstance(node, ast.Attribute) and qualified is None and node.attr in _FACTS | {"T"}:
            return self._call(node.attr, (self.expr(scope, node.value),), "numpy", node)
        raise inactive.no_rule(self.m.error(node, f"unknown name '{ast.unparse(node)}'"))
