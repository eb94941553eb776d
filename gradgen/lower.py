"""Stage 2, lower: a Python function's AST -> IR (straight-line SSA over primitives).

Lowering resolves every name (parameters, locals, module constants, imported library
functions, same-file helpers), gives each assignment a fresh SSA name from the naming
module while the user's name stays its base, desugars `+=` and tuple unpacking, and
inlines same-file helpers so their bodies are differentiated like the caller's. A helper
whose body is `1 / (1 + exp(-x))` becomes the sigmoid primitive, so its derivative reads
`out * (1 - out)`. Anything outside the supported subset is a CompileError at its place.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from gradgen import comprehensions, effects, primitives
from gradgen.closures import FUNCTION_VALUES, FunctionValue, LibraryFunction, lambda_as_def, own_nodes, renamed
from gradgen.ir import (Assign, Break, Call, Cond, Const, Continue, Effect, For, Function, If, Param, Spelled, Var,
                        While, variables)
from gradgen.parse import NAMED, constant_value
from gradgen.structured import NeedsStructure, StructuredLowering, TreeRef, names_a_container

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
           ast.Mod: "mod", ast.FloorDiv: "floordiv", ast.MatMult: "matmul"}
_FACTS = {"shape", "ndim", "size"}  # attributes of an array that are plain integers
_COUNT = {1: "one", 2: "two", 3: "three"}
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not", ast.Invert: "invert"}
_COMPARE = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_OP_TEXT = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
            ast.Invert: "~", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
            ast.NotIn: "not in"}
_BUILTIN_CALLS = {"abs", "min", "max", "pow", "float", "int", "round", "len"}

# Statements and expressions outside the subset, with what to tell the user.
_UNSUPPORTED_STMT = {
    ast.Try: "'try' is not supported: gradgen differentiates one path of straight code; check the "
             "inputs before calling the function instead",
    ast.With: "'with' is not supported", ast.Global: "'global' is not supported",
    ast.Nonlocal: "'nonlocal' is not supported", ast.ClassDef: "classes are not supported",
    ast.AsyncFunctionDef: "async functions are not supported", ast.Delete: "'del' is not supported",
    ast.Raise: "'raise' is not supported",
    ast.Import: "imports inside functions are not supported",
    ast.ImportFrom: "imports inside functions are not supported",
    ast.AsyncFor: "'async for' is not supported", ast.AsyncWith: "'async with' is not supported",
}
_UNSUPPORTED_EXPR = {
    ast.Yield: "generators are not supported",
    ast.YieldFrom: "generators are not supported", ast.Await: "'await' is not supported",
    ast.ListComp: "comprehensions are not supported", ast.SetComp: "comprehensions are not supported",
    ast.DictComp: "comprehensions are not supported", ast.GeneratorExp: "comprehensions are not supported",
    ast.Starred: "starred expressions are not supported",
    ast.NamedExpr: "':=' is not supported", ast.JoinedStr: "strings are not supported",
    ast.Dict: "dicts are not supported", ast.Set: "sets are not supported",
    ast.List: "lists are not supported here", ast.Tuple: "tuples are not supported here",
    ast.Slice: "slices are not supported",
}


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

    def owns(self, name):
        """Whether `name` is this body's own variable. An inlined helper's parameters are the
        caller's values: a helper that rebinds one gets a variable of its own (hygiene)."""
        return self.owned is None or name in self.owned

    def own(self, name):
        if self.owned is not None:
            self.owned.add(name)


MAX_INLINE_DEPTH = 50  # same-file helpers inlined inside one another (bounds the recursion)
MAX_INLINED_NODES = 100_000  # syntax nodes copied by inlining into one function (bounds the work)


class Lowerer(StructuredLowering):
    """Lowers one top-level function (and the helpers it calls) into one IR Function."""

    def __init__(self, module, fnode, namer, sigmoid_name, structured=frozenset(), arrays_only=frozenset()):
        self.m = module
        self.fnode = fnode
        self.namer = namer
        self.sigmoid_name = sigmoid_name
        self.body = []  # the statement list being filled (a branch or loop body while inside one)
        self.depth = 0  # nesting of if/for/while: inside, assignments overwrite in place
        self.loop_depth = 0
        self.bound = set()  # SSA names assigned so far on the path being lowered
        self.loop_targets = set()
        self.lists = set()  # SSA names holding a Python list (gradgen.rules_lists)
        self.stack = [fnode.name]
        self.helpers = {}  # primitive name -> emitted helper name (the sigmoid)
        self.top_params = set(parameter_names(fnode))
        self.function_defaults = {}  # parameter -> the function value its default names
        args = fnode.args.args + fnode.args.kwonlyargs
        self.structured = set(structured) | {a.arg for a in args if names_a_container(a.annotation)}
        self.origins = {}  # variable -> the parameter lowered as an array it is (a part of)
        self.arrays_only = set(arrays_only)  # looped over, but also used whole: arrays (gradgen.structured)
        self.parts = set()  # the variables of origins that hold a part (`layer = params[k]`)

    # ---- functions -------------------------------------------------------------------
    def lower(self) -> Function:
        params = self._params(self.fnode)
        self.function_defaults = {p.name: self.function_defaults[p.name] for p in params if p.function}
        env = {p.name: self.function_defaults.get(p.name, Var(p.name)) for p in params}
        for p in params:
            p.structured = p.name in self.structured
            if p.structured:
                env[p.name] = TreeRef(Var(p.name))
            elif not p.function and p.name not in _assigned_names(self.fnode):  # (else a value that changes)
                self.origins[p.name] = p.name
        for p in params:
            if p.function:
                self.body.append(_function_guard(p, self.function_defaults[p.name], self.fnode.name))
        self.bound |= set(env)  # a parameter assigned inside an if overwrites its value
        scope = Scope(self.fnode, env, _assigned_names(self.fnode))
        sigmoid_ns = sigmoid_pattern(self.fnode, self.m)
        if sigmoid_ns is not None:  # the sigmoid itself: differentiate it as the primitive
            self.helpers["sigmoid"] = self.sigmoid_name
            stmt = _skip_docstring(self.fnode.body)[0]
            name = self.namer.define(self.fnode.name)
            self._emit(name, Call("sigmoid", (env[params[0].name],), sigmoid_ns), stmt)
            result, result_name = Var(name), self.fnode.name
        else:
            result, result_name = self._body(scope, self.fnode.body)
        return Function(self.fnode.name, params, self.body, result, result_name, self.fnode.lineno,
                        helpers=self.helpers, display=dict(self.namer.base_of))

    def _params(self, fnode, helper=False):
        for node in ast.walk(fnode):
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                raise self.m.error(node, "generators are not supported")
        args = fnode.args
        if fnode.decorator_list:
            raise self.m.error(fnode.decorator_list[0], "decorators are not supported")
        for bad, what in ((None if helper else args.vararg, "*args"), (args.kwarg, "**kwargs")):
            if bad is not None:
                raise self.m.error(bad, f"{what} parameters are not supported: name each parameter")
        if args.posonlyargs:
            raise self.m.error(args.posonlyargs[0], "positional-only parameters are not supported")
        params = [Param(a.arg, number=_names_a_number(a.annotation)) for a in args.args]
        for param, default in zip(params[len(params) - len(args.defaults):], args.defaults):
            function = self._function_default(default)
            if function is not None:  # `nonlinearity=np.tanh`: compiled for that function
                param.function = _signature_spelling(function)
                self.function_defaults[param.name] = function
            else:
                param.default = self._default(default, param.name)
            param.has_default = True
        for a, default in zip(args.kwonlyargs, args.kw_defaults):  # data: see choose_wrt
            param = Param(a.arg, keyword_only=True, number=_names_a_number(a.annotation))
            function = self._function_default(default) if default is not None else None
            if function is not None:
                param.function, param.has_default = _signature_spelling(function), True
                self.function_defaults[param.name] = function
            elif default is not None:
                param.default, param.has_default = self._default(default, a.arg), True
            params.append(param)
        return params

    def _function_default(self, node):
        """The function a default names (`np.tanh`, a same-file function, a lambda), or None."""
        if isinstance(node, ast.Lambda):
            return FunctionValue(lambda_as_def(node, "lambda"))
        if isinstance(node, ast.Name) and node.id in self.m.functions:
            return FunctionValue(self.m.functions[node.id])
        qualified = self.m.qualified(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        found = primitives.lookup(qualified) if qualified else None
        if found is not None and primitives.TABLE[found[0]].kind != "attribute":
            return LibraryFunction(qualified, ast.unparse(node))
        return None

    def _default(self, node, name):
        try:
            value = constant_value(node, self.m)
        except ValueError:
            value = None
        if not isinstance(value, (int, float)):
            raise self.m.error(node, f"the default value of '{name}' must be a number")
        return value

    def _body(self, scope, stmts):
        """Lower a function body; returns (result expression, user name of the result).

        Early returns are first restructured so that every path ends in one `return`
        (the statements after an `if` that may return move into its other branch).
        """
        self._refuse_unsupported(_skip_docstring(stmts))
        stmts = self._close_returns(_skip_docstring(stmts))
        if not _always_returns(stmts):
            some = any(isinstance(n, ast.Return) for n in own_nodes(stmts))
            message = (f"not every path through '{scope.node.name}' ends in a 'return'" if some
                       else f"function '{scope.node.name}' has no 'return' at its end")
            raise self.m.error(scope.node, message)
        returns = [n for n in own_nodes(stmts) if isinstance(n, ast.Return)]
        if scope.unpacked is not None and len(returns) > 1:
            raise self.m.error(returns[0], f"'{scope.node.name}' returns a tuple, so it needs exactly one "
                                           "'return', at its end")
        if len(returns) == 1:
            for stmt in stmts[:-1]:
                self._statement(scope, stmt)
            return self._return(scope, stmts[-1])
        scope.result = self.namer.define(getattr(scope.node, "result_name", scope.node.name))
        scope.own(scope.result)
        for stmt in stmts:
            self._statement(scope, stmt)
        return Var(scope.result), scope.node.name

    def _refuse_unsupported(self, stmts):
        """A statement outside the subset is named before anything else is said about the
        body (a `try` is not "a path that does not return"; a nested def's `return` is not
        this function's)."""
        stack = list(stmts)
        while stack:
            stmt = stack.pop(0)
            if type(stmt) in _UNSUPPORTED_STMT:
                raise self.m.error(stmt, _UNSUPPORTED_STMT[type(stmt)])
            for field in ("body", "orelse"):
                stack.extend(getattr(stmt, field, []) if isinstance(stmt, (ast.If, ast.For, ast.While)) else [])

    def _close_returns(self, stmts):
        out = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                if i + 1 < len(stmts):
                    raise self.m.error(stmts[i + 1], "code after 'return' is never run")
                return out + [stmt]
            if isinstance(stmt, (ast.For, ast.While)):
                for node in own_nodes([stmt]):
                    if isinstance(node, ast.Return):
                        raise self.m.error(node, "'return' inside a loop is not supported; "
                                                 "'break' out of it and return after the loop")
            if isinstance(stmt, ast.If) and any(isinstance(n, ast.Return) for n in own_nodes([stmt])):
                rest = stmts[i + 1:]
                body = self._close_returns(stmt.body + ([] if _always_returns(stmt.body) else rest))
                orelse = self._close_returns(stmt.orelse + ([] if _always_returns(stmt.orelse) else rest))
                return out + [ast.copy_location(ast.If(test=stmt.test, body=body, orelse=orelse), stmt)]
            out.append(stmt)
        return out

    def _return(self, scope, stmt):
        if stmt.value is None:
            raise self.m.error(stmt, "'return' needs a value to differentiate")
        if scope.unpacked is not None:
            return self._tuple_return(scope, stmt.value), scope.node.name
        if isinstance(stmt.value, ast.Tuple):
            raise self.m.error(stmt.value, "gradgen differentiates functions that return one number")
        items = self._list_arg(scope, stmt.value) if scope.helper is not None and scope.result is None else None
        if items is not None:  # a helper (a comprehension) returning its list: the list itself
            return items, stmt.value.id
        value = self.expr(scope, stmt.value, function_ok=scope.helper is not None and scope.result is None)
        if scope.result is not None:
            self._emit(scope.result, value, stmt, overwrites=self.loop_depth > 0)
            return None
        if isinstance(stmt.value, ast.Name):
            return value, stmt.value.id
        if scope.helper is not None or isinstance(value, Const):
            return value, scope.node.name
        name = self.namer.define(scope.node.name)
        self._emit(name, value, stmt)
        return Var(name), scope.node.name

    def _tuple_return(self, scope, node):
        """`return a, b` of a helper whose call is unpacked: the tuple of its values."""
        n = scope.unpacked
        helper = self._helper_node(scope, node)
        if isinstance(helper, FunctionValue):  # `return unpack(...)`: the tuple the helper it calls returns
            return self._inline(scope, node, helper.node, unpacked=n, closure=helper.closure)
        if not isinstance(node, ast.Tuple) or len(node.elts) != n:
            raise self.m.error(node, f"'{scope.node.name}' must return a tuple of {n} values here, "
                                     f"as its call is unpacked into {n} names")
        return tuple(self.expr(scope, e, function_ok=True) for e in node.elts)

    # ---- statements ------------------------------------------------------------------
    def _statement(self, scope, stmt):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets[1:]:
                if not isinstance(target, ast.Name):
                    raise self.m.error(target, "chained assignment needs plain names")
            self._assign(scope, stmt.targets[0], stmt.value, stmt)
            first = stmt.targets[0]
            for target in stmt.targets[1:]:
                self._bind(scope, target.id, scope.env[first.id], stmt)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is None:
                raise self.m.error(stmt, "an annotation without a value is not supported")
            self._assign(scope, stmt.target, stmt.value, stmt)
        elif isinstance(stmt, ast.AugAssign):
            self._augassign(scope, stmt)
        elif isinstance(stmt, ast.If):
            self._if(scope, stmt)
        elif isinstance(stmt, ast.For):
            self._for(scope, stmt)
        elif isinstance(stmt, ast.While):
            self._while(scope, stmt)
        elif isinstance(stmt, ast.Break):
            self.body.append(Break(stmt.lineno))
        elif isinstance(stmt, ast.Continue):
            self.body.append(Continue(stmt.lineno))
        elif isinstance(stmt, ast.Return) and scope.result is not None:
            self._return(scope, stmt)
        elif isinstance(stmt, ast.Pass):
            pass
        elif isinstance(stmt, ast.FunctionDef):  # a nested def: a value, inlined where it is called
            self._function_binding(scope, stmt.name, FunctionValue(stmt, scope), stmt)
        elif isinstance(stmt, ast.Assert):
            self._effect(scope, stmt, "an assert")
        elif isinstance(stmt, ast.Expr) and effects.is_effect_call(self.m, stmt.value):
            self._effect(scope, stmt, f"'{ast.unparse(stmt.value.func)}(...)'")
        elif isinstance(stmt, ast.Expr) and effects.is_draw(self.m, stmt.value, lambda n: _lookup(scope, n)):
            self.expr(scope, stmt.value)  # a draw whose numbers are thrown away still advances the state
        elif isinstance(stmt, ast.Expr) and self._list_method(scope, stmt.value) is not None:
            self._append(scope, stmt)
        elif isinstance(stmt, ast.Expr):
            message = _UNSUPPORTED_EXPR.get(type(stmt.value), "an expression statement does nothing to the result")
            raise self.m.error(stmt, message)
        else:
            raise self.m.error(stmt, _UNSUPPORTED_STMT.get(type(stmt), f"'{type(stmt).__name__}' is not supported"))

    def _assign(self, scope, target, value, stmt):
        if isinstance(target, ast.Name) and effects.is_draw(self.m, value, lambda n: _lookup(scope, n)):
            self._bind(scope, target.id, self._draw_call(scope, value), stmt)  # eps = rs.randn(n)
        elif isinstance(target, ast.Name) and isinstance(value, (ast.List, ast.ListComp)):
            self._new_list(scope, target.id, value, stmt)
        elif isinstance(target, ast.Name) and self._tuple_of_values(scope, value, stmt) is not None:
            scope.env[target.id] = self._tuple_of_values(scope, value, stmt)  # pair = helper(...): its values
        elif isinstance(target, ast.Tuple) and self._args_tuple(scope, value) is not None:
            items = self._args_tuple(scope, value).items  # a, b = pair
            if len(items) != len(target.elts) or not all(isinstance(t, ast.Name) for t in target.elts):
                raise self.m.error(target, f"'{self.m.segment(value)}' holds {len(items)} values: unpack them into "
                                           f"{len(items)} names")
            for t, item in zip(target.elts, items):
                self._bind(scope, t.id, item, stmt)
        elif isinstance(target, (ast.Name, ast.Tuple, ast.List)) and self._ref(scope, value) is not None:
            self._bind_target(scope, target, self._ref(scope, value), stmt)  # layer = params[i]; W, b = layer
        elif isinstance(target, ast.Name):
            self._bind(scope, target.id, self.expr(scope, value, function_ok=True), stmt)
        elif isinstance(target, ast.Tuple):
            names = [t for t in target.elts]
            if not all(isinstance(t, ast.Name) for t in names):
                self._needs_structure(scope, value)
                raise self.m.error(target, "tuple unpacking needs plain names on the left")
            if isinstance(value, ast.Name) and isinstance(self._lookup(scope, value.id), Var) \
                    and self.origins.get(self._lookup(scope, value.id).name) == self._lookup(scope, value.id).name:
                raise NeedsStructure(self._lookup(scope, value.id).name)  # W, b = params: its parts
            helper = self._helper_node(scope, value)
            if isinstance(helper, FunctionValue):  # a, b = helper(...): the helper's returned tuple
                values = self._inline(scope, value, helper.node, unpacked=len(names), closure=helper.closure)
                if self.depth > 0:
                    values = self._before_clobbering(scope, [n.id for n in names], list(values), stmt)
                for name, v in zip(names, values):
                    self._bind(scope, name.id, v, stmt)
                return
            if not isinstance(value, ast.Tuple):
                whole = self.expr(scope, value)
                if not (isinstance(whole, Call) and whole.prim == "shape"):  # a, b, c = np.exp(v): its rows
                    whole = self._unpacking_source(whole, [n.id for n in names], stmt)
                values = [self._call("getitem", (whole, Const(i)), "op", value, (("index", ("i",)),))
                          for i in range(len(names))]  # n, d = x.shape
                for name, v in zip(names, values):
                    self._bind(scope, name.id, v, stmt)
                return
            if len(value.elts) != len(names):
                raise self.m.error(value, f"tuple unpacking needs a tuple of {len(names)} values on the right")
            values = [self.expr(scope, v) for v in value.elts]  # all evaluated before any is bound
            if self.depth > 0:  # names are overwritten in place: keep values an earlier one clobbers
                values = self._before_clobbering(scope, [n.id for n in names], values, stmt)
            for name, v in zip(names, values):
                self._bind(scope, name.id, v, stmt)
        elif isinstance(target, ast.Subscript):
            self._write(scope, target, self.expr(scope, value), stmt)
        else:
            raise self.m.error(target, "assignment to this kind of target is not supported")

    def _unpacking_source(self, whole, names, stmt):
        """`a, b, c = e` with e an array: e computed once, checked to have exactly as many
        rows as names (Python's own ValueError otherwise), then read row by row."""
        if not isinstance(whole, Var):
            temp = self.namer.define("_".join(names) if len(names) <= 3 else "values")
            self._emit(temp, whole, stmt, overwrites=self.loop_depth > 0)
            whole = Var(temp)
        n = len(names)
        if whole.name in self.top_params:  # the caller's value: an array, not a tuple of parameters
            kind = (f"{whole.name!r} is a {{type({whole.name}).__name__}}: gradgen compiled "
                    f"'{', '.join(names)} = {whole.name}' for an array; pass the parts as separate parameters")
            self.body.append(Effect(f"if not isinstance({whole.name}, np.ndarray):\n    raise TypeError(f{kind!r})",
                                    (whole,), stmt.lineno, self.m.segment(stmt), frozenset({"numpy"})))
        message = f"cannot unpack {{len({whole.name})}} values into {n} names ({', '.join(names)})"
        self.body.append(Effect(f"if len({whole.name}) != {n}:\n    raise ValueError(f{message!r})", (whole,),
                                stmt.lineno, self.m.segment(stmt)))
        return whole

    def _before_clobbering(self, scope, names, values, stmt):
        """`a, b = b, a + b` inside control flow: `b_new = a + b` first, then `a = b; b = b_new`."""
        out = []
        for i, (name, value) in enumerate(zip(names, values)):
            earlier = {scope.env[n].name for n in names[:i] if isinstance(scope.env.get(n), Var)}
            if any(v.name in earlier for v in variables(value)):
                temp = self.namer.define(f"{name}_new")
                self._emit(temp, value, stmt, overwrites=self.loop_depth > 0)
                value = Var(temp)
            out.append(value)
        return out

    # ---- Python lists (see gradgen.rules_lists) ---------------------------------------
    def _is_list(self, value):
        return isinstance(value, Var) and value.name in self.lists

    def _new_list(self, scope, name, value, stmt):
        """`hs = [h0]`, `hs = []`, `hs = [f(x) for x in xs]`: a list of its own."""
        if self.depth > 0:
            raise self.m.error(stmt, f"a list made inside a loop or branch ('{name}') is not supported yet: make it "
                                     "before the loop or branch and append to it there")
        if isinstance(value, ast.ListComp):
            made = self._comprehension(scope, value, name)
        else:
            ssa = self.namer.define(name)
            self._emit(ssa, self._call("list", tuple(self.expr(scope, e) for e in value.elts), "builtins", value), stmt)
            self.lists.add(ssa)
            made = Var(ssa)
        self._bind_list(scope, name, made, stmt)

    def _bind_list(self, scope, name, value, stmt):
        """A name for a list: the list itself (`ys = hs` is a second name for the same list,
        as in Python). A list is bound outside loops and branches, and a name that holds
        one is given no other value."""
        if not self._is_list(value):
            raise self.m.error(stmt, f"'{name}' holds a list: give the new value another name")
        if self.depth > 0:
            raise self.m.error(stmt, f"'{name}' is bound to a list inside a loop or branch; bind it before")
        scope.env[name] = value

    def _comprehension(self, scope, node, name="items"):
        """`[elt for ...]`: the list its function (gradgen.comprehensions) builds."""
        problem = comprehensions.unsupported(node)
        if problem:
            raise self.m.error(node, problem)
        if self.depth > 0:
            raise self.m.error(node, "a list comprehension inside a loop or branch is not supported yet: build the "
                                     "list before the loop, or sum(...) a generator expression")
        call = ast.copy_location(ast.Call(ast.Name(name, ast.Load()), [], []), node)
        return self._inline(scope, call, comprehensions.list_builder(node, name), closure=scope)

    def _total(self, scope, node):
        """`sum(elt for ...)`, `sum([elt for ...])`, `sum(xs)` of a list: an accumulating loop."""
        if isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp)):
            problem = comprehensions.unsupported(node.args[0])
            if problem:
                raise self.m.error(node.args[0], problem)
        call = ast.copy_location(ast.Call(ast.Name("sum", ast.Load()), [], []), node)
        return self._inline(scope, call, comprehensions.total_builder(node), closure=scope)

    def _list_arg(self, scope, node):
        """The list a name holds, if `node` is such a name; else None."""
        if isinstance(node, ast.Name):
            value = _lookup(scope, node.id)
            if self._is_list(value):
                return value
        return None

    def _list_method(self, scope, node):
        """`hs.append(...)` (or another method) called on a list: the list, else None."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return self._list_arg(scope, node.func.value)
        return None

    def _append(self, scope, stmt):
        """`hs.append(v)`: the list grows in place; its gradient list will pop v's."""
        call = stmt.value
        current = self._list_method(scope, call)
        name = call.func.value.id
        if call.func.attr != "append":
            raise self.m.error(call, f"'{name}.{call.func.attr}(...)' is not supported: gradgen grows a list with "
                                     f"append only ({name}.append(x), one element at a time)")
        if len(call.args) != 1 or call.keywords:
            raise self.m.error(call, f"'{name}.append' takes one argument")
        value = self.expr(scope, call.args[0])
        self._emit(current.name, self._call("append", (current, value), "builtins", call), stmt, overwrites=True,
                   augmented=True)

    def _list_item(self, scope, node, current):
        """`hs[i]` (one index): the element, read into a variable of its own."""
        name = node.value.id
        if isinstance(node.slice, (ast.Slice, ast.Tuple)):
            raise self.m.error(node, f"slicing the list '{name}' is not supported yet: loop over range(...) and "
                                     f"read {name}[i], or np.stack({name}) first")
        item = self.namer.define(f"{name}_item")
        self._emit(item, self._call("list_get", (current, self.expr(scope, node.slice)), "builtins", node), node,
                   overwrites=self.loop_depth > 0)
        return Var(item)

    def _augassign(self, scope, stmt):
        op = _BINOPS.get(type(stmt.op))
        if op is None:
            raise self.m.error(stmt, f"operator '{_OP_TEXT.get(type(stmt.op), '?')}=' is not supported")
        if isinstance(stmt.target, ast.Subscript):  # x[i] += e: x[i] = x[i] + e
            read = self._subscript(scope, stmt.target)
            self._write(scope, stmt.target, Call(op, (read, self.expr(scope, stmt.value)), "op"), stmt)
            return
        if not isinstance(stmt.target, ast.Name):
            raise self.m.error(stmt.target, "augmented assignment needs a plain name or x[index]")
        if isinstance(_lookup(scope, stmt.target.id), TreeRef):  # W += e: W is no longer the part
            self._unref(scope, stmt.target.id, stmt)
        current = self._read(scope, stmt.target)
        value = Call(op, (current, self.expr(scope, stmt.value)), "op")
        self._bind(scope, stmt.target.id, value, stmt, augmented=True)

    def _write(self, scope, target, value, stmt):
        """`x[index] = value`: x with value written at the index, differentiated as a new
        value of x (what was overwritten gets no gradient). It stays a write into x's own
        array, as you wrote it, wherever that is safe (see gradgen.emit and the sharing
        analysis, which refuses a write another name that shares x's array would see)."""
        if not isinstance(target.value, ast.Name):
            raise self.m.error(target, f"writing into '{self.m.segment(target)}' is not supported: write into a "
                                       "name with one index, x[i, j] = ... (not x[i][j] = ... nor x.attr[i] = ...)")
        name = target.value.id
        if isinstance(_lookup(scope, name), TreeRef):  # W[i] = e: from here on W is a variable of its own
            self._unref(scope, name, stmt)
        current = self._read(scope, target.value)
        if not isinstance(current, Var) or (name in self.m.constants and current == Var(name)):
            raise self.m.error(target, f"writing into '{name}' would change a module-level value for every later "
                                       f"call; copy it first ({name}_local = {name}.copy())")
        layout, index = self._index(scope, target.slice)
        call = self._call("setitem", (current, value, *index), "op", target, (("index", layout),))
        if isinstance(current, Var) and scope.owns(current.name) and current.name not in self.loop_targets:
            self._emit(current.name, call, stmt, overwrites=True, augmented=True)  # x keeps its name
            return
        self._bind(scope, name, call, stmt, augmented=True)

    def _function_binding(self, scope, name, value, stmt):
        """`act = np.tanh`, `def inner(...)`, `f = lambda x: ...`: known when compiled, so a
        call through the name is inlined. Bound inside a branch or loop, it would be known
        only when the code runs."""
        if self.depth > 0:
            raise self.m.error(stmt, f"'{name}' is bound to a function inside a branch or loop; gradgen inlines "
                                     "the function a call reaches, so bind it before the branch or loop")
        scope.env[name] = value

    def _effect(self, scope, stmt, what):
        """print/logging/assert: kept in the forward pass as written, in generated names."""
        renamed = effects.rename(self.m, stmt, lambda n: _lookup(scope, n), self.m.error, what)
        self.body.append(Effect(renamed.text, renamed.reads, stmt.lineno, self.m.segment(stmt),
                                frozenset(renamed.modules)))

    def _draw(self, scope, node):
        """`rs.randn(n)`: data, drawn once where the source draws it, into a variable of its
        own (a rule that needs the numbers reads the variable, never draws again)."""
        name = self.namer.define(_draw_name(node))
        self._emit(name, self._draw_call(scope, node), node, overwrites=self.loop_depth > 0)
        return Var(name)

    def _draw_call(self, scope, node):
        renamed = effects.rename(self.m, node, lambda n: _lookup(scope, n), self.m.error,
                                 f"the draw '{ast.unparse(node)}'")
        return self._call("draw", renamed.reads, "numpy", node,
                          (("text", renamed.text), ("modules", tuple(sorted(renamed.modules)))))

    def _bind(self, scope, name, value, stmt, augmented=False):
        """`name = value`: a fresh SSA name in straight-line code; inside control flow the
        name the variable already has (it was bound on entry), overwritten in place."""
        if isinstance(value, FUNCTION_VALUES):
            if isinstance(value, FunctionValue) and value.name == "lambda":
                value = FunctionValue(renamed(value.node, name), value.closure)
            self._function_binding(scope, name, value, stmt)
            return
        current = scope.env.get(name)
        if isinstance(current, TreeRef):  # the name held a part of a structured parameter: no longer
            current = self._unref(scope, name, stmt)
        if self._is_list(value) or self._is_list(current):
            self._bind_list(scope, name, value, stmt)
            return
        if isinstance(current, _LoopVariable):
            current = None
        if self.depth > 0 and isinstance(current, Var) and scope.owns(current.name):
            if current.name in self.loop_targets:
                raise self.m.error(stmt, f"assigning to the loop variable '{name}' inside its loop is not supported")
            overwrites = self.loop_depth > 0 or current.name in self.bound
            self._emit(current.name, value, stmt, overwrites=overwrites, augmented=augmented)
            return
        ssa = self.namer.define(name)
        self._emit(ssa, value, stmt, overwrites=self.loop_depth > 0, augmented=augmented)
        scope.env[name] = Var(ssa)
        scope.own(ssa)

    def _emit(self, ssa, value, stmt, overwrites=False, augmented=False, counter=False):
        self._note_origin(ssa, value)
        number = isinstance(stmt, ast.AnnAssign) and _names_a_number(stmt.annotation)
        self.body.append(Assign(ssa, value, stmt.lineno, self._text(stmt), col=stmt.col_offset + 1,
                                overwrites=overwrites, augmented=augmented, counter=counter, number=number))
        self.bound.add(ssa)

    def _text(self, stmt):
        """The source a backward block cites: a statement, or the header of a compound one."""
        if isinstance(stmt, ast.If):
            return f"if {self.m.segment(stmt.test)}:"
        if isinstance(stmt, ast.While):
            return f"while {self.m.segment(stmt.test)}:"
        if isinstance(stmt, ast.For):
            return f"for {self.m.segment(stmt.target)} in {self.m.segment(stmt.iter)}:"
        return self.m.segment(stmt)

    # ---- control flow ----------------------------------------------------------------
    def _prebind(self, scope, stmts, stmt):
        """Give every name assigned inside a compound statement its name before entering it,
        so that all branches and iterations write the same variable. A helper's parameter it
        rebinds there is first copied into a variable of the helper's own (`a_1 = a`): the
        caller's variable must keep its value."""
        for name in _stored_names(stmts):
            current = scope.env.get(name)
            if isinstance(current, TreeRef):  # assigned in the block: from here on a variable
                current = self._unref(scope, name, stmt, in_block=True)
            if isinstance(current, ArgsTuple):
                raise self.m.error(stmt, f"'{name}' holds a tuple of values and is assigned inside a loop or branch: "
                                         "unpack it into names before (a, b = pair) and assign those")
            if isinstance(current, Var) and scope.owns(current.name):
                continue
            ssa = self.namer.define(name)
            if isinstance(current, (Var, Const)):
                self._emit(ssa, current, stmt, overwrites=self.loop_depth > 0)
            scope.env[name] = Var(ssa)
            scope.own(ssa)

    def _block(self, scope, stmts, loop=False):
        outer, self.body = self.body, []
        self.depth += 1
        self.loop_depth += loop
        for stmt in stmts:
            self._statement(scope, stmt)
        self.depth -= 1
        self.loop_depth -= loop
        block, self.body = self.body, outer
        return block

    def _if(self, scope, stmt):
        test = self.expr(scope, stmt.test, test=True)
        self._prebind(scope, stmt.body + stmt.orelse, stmt)
        entry = set(self.bound)
        body = self._block(scope, stmt.body)
        after_body, self.bound = self.bound, set(entry)
        orelse = self._block(scope, stmt.orelse)
        self.bound |= after_body
        self.body.append(If(test, body, orelse, stmt.lineno, self._text(stmt)))

    def _for(self, scope, stmt):
        stmt = self._spread_zip(scope, stmt)
        if self._tree_for(scope, stmt):  # over the parts of a structured parameter
            return
        self._loop_over_parameter(scope, stmt.iter)  # `for c in coeffs`: coeffs may be a list
        if stmt.orelse:
            raise self.m.error(stmt, "'else' on a loop is not supported")
        counter, iterable, elements = self._loop_plan(scope, stmt)
        users = counter is not None  # `i` when the source never names the index: no user variable
        target = self.namer.define(counter or "i")
        if users:
            scope.env[counter] = Var(target)
        scope.own(target)
        self.loop_targets.add(target)
        self.bound.add(target)
        first = []
        for name, sequence, node in elements:  # `x = xs[i]` for each name the target unpacks
            element = self.namer.define(name)
            scope.env[name] = Var(element)
            scope.own(element)
            self.bound.add(element)
            if self._is_list(sequence):  # `for h in hs`: h = hs[i], read into h
                row = self._call("list_get", (sequence, Var(target)), "builtins", node)
            else:
                row = self._call("getitem", (sequence, Var(target)), "op", node, (("index", ("i",)),))
            first.append(Assign(element, row, stmt.lineno, self._text(stmt), col=stmt.col_offset + 1,
                                overwrites=True))
        self._prebind(scope, stmt.body, stmt)
        count = self._counter(stmt) if _exits(stmt.body, ast.Break) else None
        body = self._loop_body(scope, stmt, count, first)
        self.body.append(For(target, iterable, body, stmt.lineno, self._text(stmt), count))
        for name in ([counter] if users else []) + [name for name, _, _ in elements]:
            scope.env[name] = _LoopVariable(name)

    def _spread_zip(self, scope, stmt):
        """`for a, b, c in zip(*unpack(params))`: the helper's tuple, computed once before
        the loop into variables of their own, spread as zip's arguments."""
        node, target = stmt.iter, stmt.target
        if not (self._builtin_call(scope, node, "zip") and isinstance(target, ast.Tuple)
                and any(isinstance(a, ast.Starred) for a in node.args)):
            return stmt
        starred = [a for a in node.args if isinstance(a, ast.Starred)]
        helper = self._helper_node(scope, starred[0].value)
        if len(starred) > 1 or not isinstance(helper, FunctionValue):
            raise self.m.error(starred[0], "zip(*...) takes one starred call of a function of this file that returns "
                                           "a tuple (zip(*unpack(params)))")
        n = len(target.elts) - (len(node.args) - 1)
        values = self._inline(scope, starred[0].value, helper.node, unpacked=n, closure=helper.closure)
        spread = []
        for k, value in enumerate(values):
            name = f"{helper.node.name}_{k}"
            temp = self.namer.define(name)
            self._emit(temp, value, stmt, overwrites=self.loop_depth > 0)
            scope.env[name] = Var(temp)
            spread.append(ast.copy_location(ast.Name(name, ast.Load()), starred[0]))
        args = [x for a in node.args for x in (spread if a is starred[0] else [a])]
        return ast.copy_location(ast.For(target, ast.copy_location(ast.Call(node.func, args, []), node), stmt.body,
                                         stmt.orelse, None), stmt)

    def _loop_plan(self, scope, stmt):
        """(the counter's user name or None, what it runs over, [(name, sequence, node)]): a loop over
        values runs over their first axis by index (`for W in Ws`, `for x, y in zip(xs,
        ys)`, `for i, x in enumerate(xs)`: `for i in range(len(xs)): x = xs[i]`), so that
        the gradient flows back row by row (`dxs[i] += dx`)."""
        target, node = stmt.target, stmt.iter
        if isinstance(target, ast.Name) and (self._builtin_call(scope, node, "zip")
                                             or self._builtin_call(scope, node, "enumerate")):
            raise self.m.error(target, f"'{target.id}' would be a tuple of {node.func.id}'s rows: unpack it in the "
                                       "loop target (`for x, y in zip(xs, ys)`, `for i, x in enumerate(xs)`)")
        if isinstance(target, ast.Name) and isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) \
                and isinstance(node.value, ast.Name) and isinstance(_lookup(scope, node.value.id), Var):
            # `for h in hs[1:]` (a list or an array): over the indices the slice keeps, read from hs itself
            sequence = self._loop_sequence(scope, node.value, target.id, stmt)
            parts = [Const(None) if p is None else self.expr(scope, p)
                     for p in (node.slice.lower, node.slice.upper, node.slice.step)]
            kept = self._call("range_slice", (self._call("len", (sequence,), "builtins", node), *parts), "builtins",
                              node)
            return None, kept, [(target.id, sequence, node)]
        if isinstance(target, ast.Name) and self._builtin_call(scope, node, "reversed") and len(node.args) == 1:
            sequence = self._loop_sequence(scope, node.args[0], target.id, stmt)  # `for c in reversed(coeffs)`
            backwards = self._call("range_slice", (self._call("len", (sequence,), "builtins", node), Const(None),
                                                   Const(None), Const(-1)), "builtins", node)
            return None, backwards, [(target.id, sequence, node)]
        if isinstance(target, ast.Name):
            sequence = self._sequence(scope, stmt)
            if sequence is None:
                return target.id, self._iterable(scope, node), []
            return None, self._index_range([sequence], node), [(target.id, sequence, node)]
        if isinstance(target, ast.Tuple) and self._builtin_call(scope, node, "enumerate") \
                and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name):
            elements = self._unpacked(scope, target.elts[1], node.args[0], stmt)
            return target.elts[0].id, self._index_range([e[1] for e in elements], node), elements
        if isinstance(target, ast.Tuple) and self._builtin_call(scope, node, "zip"):
            elements = self._unpacked(scope, target, node, stmt)
            return None, self._index_range([e[1] for e in elements], node), elements
        self._needs_structure(scope, node)  # `for W, b in params`: params is a list of pairs
        raise self.m.error(target, "a loop variable must be a plain name, or names unpacking zip(...) or "
                                   "enumerate(...) of arrays or parameters (`for x, y in zip(xs, ys)`)")

    def _builtin_call(self, scope, node, name):
        """`zip(a, b)` / `enumerate(a)`: the builtin, positional arguments only."""
        ok = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name \
            and _lookup(scope, name) is None and name not in self.m.functions and name not in self.m.imports
        if ok and (node.keywords or not node.args or (name == "enumerate" and len(node.args) != 1)):
            raise self.m.error(node, f"{name}() takes positional arguments only here"
                                     + (" (one sequence; no start=)" if name == "enumerate" else ""))
        return ok

    def _unpacked(self, scope, target, node, stmt):
        """[(name, sequence, node)] for a loop target over `node`: a name takes the rows of
        one sequence; names in parentheses take those of zip(...)'s sequences, in order."""
        if isinstance(target, ast.Name):
            if self._builtin_call(scope, node, "zip"):
                raise self.m.error(target, f"'{target.id}' would be a tuple of zip's rows: unpack it in the loop "
                                           "target (`for x, y in zip(xs, ys)`)")
            return [(target.id, self._loop_sequence(scope, node, target.id, stmt), node)]
        if isinstance(target, ast.Tuple) and self._builtin_call(scope, node, "zip"):
            if len(target.elts) != len(node.args):
                raise self.m.error(target, f"the loop target unpacks {len(target.elts)} names from zip of "
                                           f"{len(node.args)} sequences")
            return [e for t, a in zip(target.elts, node.args) for e in self._unpacked(scope, t, a, stmt)]
        self._needs_structure(scope, node)
        raise self.m.error(target, "unpacking the rows of one array in a loop target is not supported: "
                                   "loop over zip(...) of the columns, or index the row")

    def _loop_sequence(self, scope, node, name, stmt):
        """The value a loop reads rows of: a variable, or an expression computed once, before
        the loop, into `<name>_values`."""
        if isinstance(node, ast.Name) and node.id in _stored_names(stmt.body):
            raise self.m.error(node, f"the loop assigns to '{node.id}', the sequence it runs over; "
                                     f"loop over a copy (`for ... in list_copy`) or give the new value another name")
        if isinstance(node, (ast.Tuple, ast.List)):
            raise self.m.error(node, "zip and enumerate run over arrays or parameters here; write the numbers as "
                                     "np.array([...]) or a module-level tuple")
        items = self._list_arg(scope, node)
        if items is not None:
            return items
        value = self.expr(scope, node)
        if isinstance(value, Var):
            return value
        temp = self.namer.define(f"{name}_values")
        self._emit(temp, value, stmt, overwrites=self.loop_depth > 0)
        return Var(temp)

    def _index_range(self, sequences, node):
        """`range(len(xs))`, or `range(min(len(xs), len(ys)))` for zip (it stops at the shortest)."""
        lengths = [self._call("len", (s,), "builtins", node) for s in sequences]
        n = lengths[0] if len(lengths) == 1 else self._call("min", tuple(lengths), "builtins", node)
        return self._call("range", (n,), "builtins", node)

    def _sequence(self, scope, stmt):
        """The value a loop runs over the first axis of (`for W in Ws`), or None. The loop
        reads it by index, so that the gradient flows back row by row (`dWs[i] += dW`)."""
        node = stmt.iter
        items = self._list_arg(scope, node)
        if items is not None:  # `for h in hs` over a list (read from a closure's definer too)
            return items
        if not (isinstance(node, ast.Name) and isinstance(_lookup(scope, node.id), Var)):
            return None
        if node.id in _stored_names(stmt.body):
            raise self.m.error(node, f"the loop assigns to '{node.id}', the sequence it runs over; "
                                     f"loop over a copy (`for ... in list_copy`) or give the new value another name")
        return _lookup(scope, node.id)

    def _while(self, scope, stmt):
        if stmt.orelse:
            raise self.m.error(stmt, "'else' on a loop is not supported")
        start, env = len(self.body), dict(scope.env)
        self._prebind(scope, stmt.body, stmt)
        mark = len(self.body)
        test = self.expr(scope, stmt.test, test=True)
        if len(self.body) > mark:
            # the test runs statements (a helper with a body, a draw): they must run before
            # every test, so the loop is `while True:` with `if not test: break` first
            del self.body[start:]
            scope.env = env
            exit_test = ast.copy_location(ast.UnaryOp(ast.Not(), stmt.test), stmt.test)
            leave = ast.copy_location(ast.If(exit_test, [ast.copy_location(ast.Break(), stmt)], []), stmt.test)
            stmt = ast.copy_location(ast.While(ast.copy_location(ast.Constant(True), stmt.test), [leave, *stmt.body],
                                               []), stmt)
            self._prebind(scope, stmt.body, stmt)
            test = self.expr(scope, stmt.test, test=True)
        count = self._counter(stmt)
        body = self._loop_body(scope, stmt, count)
        self.body.append(While(test, body, stmt.lineno, self._text(stmt), count))

    def _counter(self, stmt):
        """`iterations = 0` before a loop whose backward sweep must know how often it ran."""
        count = self.namer.define("iterations")
        self._emit(count, Const(0), stmt, overwrites=self.loop_depth > 0)
        return count

    def _loop_body(self, scope, stmt, count, first=()):
        outer, self.body = self.body, list(first)
        body = self.body + self._block(scope, stmt.body, loop=True)
        self.body = outer
        if count is not None:
            increment = Assign(count, Call("add", (Var(count), Const(1)), "op"), stmt.lineno, self._text(stmt),
                               overwrites=True, augmented=True, counter=True)
            body.insert(0, increment)
        return body

    def _iterable(self, scope, node):
        """`range(...)` or a module-level tuple of numbers (a value's rows: see _sequence)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" \
                and "range" not in scope.env and "range" not in self.m.functions:
            if node.keywords or not 1 <= len(node.args) <= 3:
                raise self.m.error(node, "range() takes one to three positional arguments here")
            return self._call("range", tuple(self.expr(scope, a) for a in node.args), "builtins", node)
        if isinstance(node, ast.Name) and isinstance(self.m.constants.get(node.id), tuple):
            return Var(node.id)
        if isinstance(node, (ast.Tuple, ast.List)) and node.elts and all(
                isinstance(e, ast.Constant) and type(e.value) in (int, float, str) for e in node.elts):
            return Const(tuple(e.value for e in node.elts))  # for name in ["layer1", "layer2"]
        if isinstance(node, ast.Subscript) and self._list_arg(scope, node.value) is not None:
            name = node.value.id
            raise self.m.error(node, f"a loop over '{self.m.segment(node)}' is not supported: loop over the list "
                                     f"'{name}', a slice of it ({name}[1:]), or range(...) and read {name}[i]")
        raise self.m.error(node, "a loop must run over range(...), a module-level tuple of numbers, "
                                 "or a parameter")

    # ---- expressions -----------------------------------------------------------------
    def expr(self, scope, node, test=False, function_ok=False):
        """The IR of expression `node`; a function value (a lambda, `np.tanh`, a helper named
        without a call) only where `function_ok` (an argument, a return of a helper, the
        right of an assignment), else a located error."""
        value = self._expr(scope, node, test)
        if isinstance(value, FUNCTION_VALUES) and not function_ok:
            raise self.m.error(node, f"'{ast.unparse(node) if not isinstance(node, ast.Lambda) else 'lambda'}' is a "
                                     "function, not a number")
        return value

    def _expr(self, scope, node, test=False):
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
            return self._call(op, (self.expr(scope, node.left), self.expr(scope, node.right)), "op", node)
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
            start = len(self.body)
            cond = self.expr(scope, node.test, test=True)
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

    def _subscript(self, scope, node):
        """`x[i, 1:n, None, ...]`: getitem on x, the index as expressions plus their layout."""
        if isinstance(scope.env.get(getattr(node.value, "id", None)), _LoopVariable):
            return self._read(scope, node.value)
        ref = self._ref(scope, node)
        if ref is not None:  # params[i][0], layer["W"]: a part of a structured parameter
            return self._leaf(ref, node)
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
        layout, args = self._index(scope, node.slice)
        return self._call("getitem", (value, *args), "op", node, (("index", layout),))

    def _index(self, scope, index):
        """The index of `x[...]`: its layout (see gradgen.emit `index`) and its expressions."""
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
                args.append(self.expr(scope, item))
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
        if type(node.value) in (int, float, bool):
            return Const(node.value)
        kind = type(node.value).__name__
        raise self.m.error(node, f"only real numbers are supported, not {kind} constants")

    def _compare(self, scope, node):
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

    def _call(self, prim, args, ns, node, params=()):
        return Call(prim, tuple(args), ns, loc=(node.lineno, node.col_offset + 1), params=params)

    def _read(self, scope, node):
        name = node.id
        if isinstance(scope.env.get(name), _LoopVariable):
            raise self.m.error(node, f"'{name}' is read after its loop; gradgen does not support that")
        if name in scope.env:
            return scope.env[name]
        if name in scope.locals:
            raise self.m.error(node, f"'{name}' is read before it is assigned")
        if scope.closure is not None:  # a nested def or lambda reads its definer's variables
            return self._read(scope.closure, node)
        if name in self.m.functions and name not in self.m.constants:
            return FunctionValue(self.m.functions[name])
        if isinstance(self.m.constants.get(name), tuple):
            raise self.m.error(node, f"'{name}' is a sequence: only a loop may run over it")
        if isinstance(self.m.constants.get(name), dict):
            raise self.m.error(node, f"'{name}' is a dict of numbers: read one by its key ({name}['key'])")
        if name in self.m.constants:
            if scope.helper is not None and name in self.top_params:
                return Const(self.m.constants[name])  # the caller's parameter shadows it
            return Var(name)
        if name in self.m.not_constants:
            what = self.m.not_constants[name][1]
            raise self.m.error(node, f"module-level '{name}' {what}; pass it to the function as a parameter")
        if name in self.m.imports:
            return self._attribute(node, scope)
        if name in self.m.functions or name in self.m.classes:
            raise self.m.error(node, f"'{name}' is a function, not a number")
        raise self.m.error(node, f"unknown name '{name}'")

    def _attribute(self, node, scope):
        qualified = self.m.qualified(node)
        found = primitives.lookup(qualified) if qualified else None
        if found and primitives.TABLE[found[0]].kind == "attribute":
            return Call(found[0], (), found[1])
        if qualified is not None and qualified in NAMED:
            return Const(NAMED[qualified])
        if found is not None:  # `np.tanh` named without a call: a function value
            return LibraryFunction(qualified, ast.unparse(node))
        if isinstance(node, ast.Attribute) and qualified is None and node.attr in _FACTS | {"T"}:
            return self._call(node.attr, (self.expr(scope, node.value),), "numpy", node)
        raise self.m.error(node, f"unknown name '{ast.unparse(node)}'")

    # ---- calls -----------------------------------------------------------------------
    def _call_node(self, scope, node):
        func = node.func
        if effects.is_draw(self.m, node, lambda n: _lookup(scope, n)):
            return self._draw(scope, node)
        if isinstance(func, ast.Name) and func.id in self.m.classes:
            raise self.m.error(node, f"'{func.id}' is a class: gradgen differentiates plain functions only")
        if isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1 and not node.keywords \
                and _lookup(scope, "len") is None and "len" not in self.m.functions:
            items = self._args_tuple(scope, node.args[0])
            if items is not None:  # len(args): known where the helper is called
                return Const(len(items.items))
            ref = self._ref(scope, node.args[0])
            if ref is not None:  # len(params), len(params[i]): measured at run time
                length = ref.length()
                return self._call(length.prim, length.args, length.ns, node)
        callee = self._helper_node(scope, node)
        if isinstance(callee, FunctionValue):
            return self._inline(scope, node, callee.node, closure=callee.closure)
        if isinstance(func, ast.Name) and func.id == "sum" and _lookup(scope, "sum") is None \
                and "sum" not in self.m.functions and 1 <= len(node.args) <= 2 and not node.keywords \
                and (isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp))
                     or self._list_arg(scope, node.args[0]) is not None):
            return self._total(scope, node)
        if isinstance(callee, LibraryFunction):  # act(x) with act = np.tanh
            return self._primitive_call(scope, node, callee.spelled, *primitives.lookup(callee.qualified))
        if isinstance(func, ast.Name) and func.id in self.m.not_constants:
            raise self.m.error(node, f"'{func.id}' {self.m.not_constants[func.id][1]}")
        qualified = self.m.qualified(func)
        if qualified is None and isinstance(func, ast.Name) and func.id in _BUILTIN_CALLS:
            qualified = func.id
        if qualified is None and isinstance(func, ast.Attribute):
            return self._method_call(scope, node)
        spelled = ast.unparse(func)
        if qualified is None:
            if isinstance(func, ast.Name):
                raise self.m.error(node, f"unknown function '{spelled}': gradgen differentiates its "
                                         "known primitives and functions defined in this file")
            raise self.m.error(node, f"unknown function '{spelled}'")
        found = primitives.lookup(qualified)
        if found is None:
            raise self.m.error(node, self._no_rule(qualified, spelled, node))
        return self._primitive_call(scope, node, spelled, *found)

    def _no_rule(self, qualified, spelled, node):
        """What to say of a call gradgen has no rule for: a random draw, a function of the
        user's other files, or a library function."""
        library = qualified.split(".")[0]
        if library == "random":
            return _DRAW.format(call=ast.unparse(node))
        if library not in _LIBRARIES:
            return (f"'{spelled}' comes from '{qualified.rpartition('.')[0]}', which gradgen does not read: "
                    "it differentiates functions of this file and known library functions; copy the "
                    "function into this file")
        return f"gradgen has no derivative rule for '{spelled}'"

    def _helper_node(self, scope, node):
        """The function value `node` calls, if it calls one by name: a same-file function, a
        nested def or lambda, a function passed in (`nonlinearity(x)`)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            value = _lookup(scope, node.func.id)
            if isinstance(value, FUNCTION_VALUES):
                return value
            if value is None and node.func.id in self.m.functions:
                return FunctionValue(self.m.functions[node.func.id])
        return None

    def _method_call(self, scope, node):
        """`x.sum(axis=0)`, `x.reshape(n, -1)`, `x.dot(w)`: the NumPy function, `x` first."""
        func = node.func
        name = {"dot": "matmul", "max": "amax", "min": "amin", "flatten": "ravel"}.get(func.attr, func.attr)
        prim = primitives.TABLE.get(name)
        if prim is None or not (prim.method or name in ("matmul", "amax", "amin")):
            raise self.m.error(node, f"gradgen has no derivative rule for the method '.{func.attr}()'")
        shape_args = node.args
        if name == "reshape" and not (len(node.args) == 1 and isinstance(node.args[0], ast.Tuple)):
            shape_args = [ast.copy_location(ast.Tuple(elts=list(node.args), ctx=ast.Load()), node)]
        call = ast.copy_location(ast.Call(func=func, args=[func.value] + list(shape_args), keywords=node.keywords), node)
        return self._primitive_call(scope, call, f".{func.attr}()", name, "numpy")

    def _arguments(self, scope, node, prim_name):
        """Positional arguments: a list literal spreads (np.concatenate([a, b])); a tuple is a shape."""
        args = list(node.args)
        items = self._list_arg(scope, args[0]) if args else None
        if items is None and args and isinstance(args[0], ast.ListComp) and prim_name in ("stack", "array",
                                                                                          "concatenate", "vstack",
                                                                                          "hstack"):
            items = self._comprehension(scope, args[0])
        if items is not None:  # a list variable: len(hs), np.stack(hs), np.array(hs), np.sum(hs)
            if prim_name == "len":
                return prim_name, [items]
            if prim_name in ("stack", "array", "concatenate", "vstack", "hstack"):
                return f"{prim_name}_list", [items]
            if prim_name in ("sum", "mean", "amax", "amin", "prod"):
                return prim_name, [self._call("array_list", (items,), "numpy", node)] + [
                    self.expr(scope, a) for a in args[1:]]
            raise self.m.error(args[0], f"'{ast.unparse(args[0])}' is a list: pass np.stack({ast.unparse(args[0])}) "
                                        "(an array) instead")
        sequence = (ast.List, ast.Tuple)
        spread = self._args_tuple(scope, args[0]) if args and not isinstance(args[0], sequence) else None
        if spread is not None and prim_name in ("concatenate", "stack", "hstack", "vstack", "column_stack", "array",
                                                "sum"):  # np.hstack(args + (ones,)): the items, as a list
            args = [ast.copy_location(ast.List([], ast.Load()), args[0])] + list(args[1:])
            elements = list(spread.items)
        elif prim_name in ("concatenate", "stack", "sum", "array", "hstack", "vstack", "column_stack") and args \
                and isinstance(args[0], sequence):
            elements = [self.expr(scope, e) for e in args[0].elts]
        else:
            elements = None
        if elements is not None:
            if prim_name == "sum" and len(args) == 1:
                if node.keywords:  # np.sum([a, b], axis=0): a sum over the stacked list
                    return "sum", [self._call("stack", tuple(elements), "numpy", node)]
                return "sum_list", elements
            if prim_name == "array":
                return "stack", elements
            return prim_name, elements + [self.expr(scope, a) for a in args[1:]]
        prim = primitives.TABLE[prim_name]
        if prim.keywords and prim.arity:  # `x.astype(float)`: arguments past the arity are static (dtype=)
            args = args[:prim.arity]
        values = []
        for arg in args:
            if isinstance(arg, ast.Starred):
                raise self.m.error(arg, "starred arguments are not supported")
            if isinstance(arg, ast.Tuple):
                values.append(self._call("tuple", tuple(self.expr(scope, e) for e in arg.elts), "builtins", arg))
            else:
                values.append(self.expr(scope, arg))
        return prim_name, values

    def _static_parameters(self, node, prim, spelled, extra):
        """Keyword arguments such as axis= and keepdims=: constants, passed to the rule."""
        params = dict(zip(prim.keywords, extra))
        for kw in node.keywords:
            if kw.arg not in prim.keywords:
                raise self.m.error(kw, f"keyword argument '{kw.arg}' to '{spelled}' is not supported")
            params[kw.arg] = self._static(kw.value, kw.arg)
        return tuple(params.items())

    def _static(self, value, name):
        if isinstance(value, ast.Constant) and value.value is None:
            return None
        if name == "subscripts" and isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value  # np.einsum's, checked by _einsum_subscripts
        if name == "dtype" and ast.unparse(value) in ("float", "np.float64", "numpy.float64", "'float64'"):
            return Spelled("float")
        if name == "dtype" and ast.unparse(value) in ("int", "np.int64", "np.int32", "numpy.int64", "'int'"):
            raise self.m.error(value, "an integer dtype (an index computed from data) is not supported yet: compute "
                                      "the integer indices in the caller and pass them in as keyword-only data")
        try:
            return constant_value(value, self.m)
        except ValueError:
            raise self.m.error(value, f"'{name}=' must be a constant here") from None

    def _primitive_call(self, scope, node, spelled, prim_name, ns):
        if prim_name == "einsum":
            node = self._einsum_subscripts(node, spelled)
        node = self._keywords_by_position(node, primitives.TABLE[prim_name], spelled)
        prim_name, args = self._arguments(scope, node, prim_name)
        if prim_name == "log" and len(args) == 2:
            prim_name = "logb"
        prim = primitives.TABLE[prim_name]
        params = ()
        if prim.keywords:
            arity = prim.arity if prim.arity is not None else len(args)
            extra = [self._static(a, k) for a, k in zip(node.args[arity:], prim.keywords)] if prim.arity else []
            args = args[:arity]
            params = self._static_parameters(node, prim, spelled, extra)
        elif node.keywords:
            raise self.m.error(node.keywords[0], f"keyword arguments to '{spelled}' are not supported")
        args = tuple(args)
        if prim.arity is None and len(args) < prim.min_args:
            raise self.m.error(node, f"'{spelled}' needs {_COUNT.get(prim.min_args, prim.min_args)} or more arguments")
        if prim.arity is not None and len(args) != prim.arity:
            plural = "" if prim.arity == 1 else "s"
            raise self.m.error(node, f"'{spelled}' takes {prim.arity} argument{plural}, got {len(args)}")
        if prim_name == "sigmoid":
            self.helpers["sigmoid"] = self.sigmoid_name
        return self._call(prim_name, args, ns, node, params)

    def _einsum_subscripts(self, node, spelled):
        """`np.einsum('wc,wco->o', x, W)`: the subscripts, checked and with the output
        written out, as a static keyword; the operands as the arguments."""
        first = node.args[0] if node.args else None
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) or node.keywords:
            raise self.m.error(node, f"'{spelled}' takes its subscripts as a string first, then the operands "
                                     "(np.einsum('ij,jk->ik', A, B)), no keywords")
        text = first.value.replace(" ", "")
        inputs, arrow, output = text.partition("->")
        parts = inputs.split(",")
        letters = "".join(parts)
        if not arrow:  # implicit: the letters that appear once, in alphabetical order
            output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
        if "." in text or not all(p.isalpha() for p in parts) or not (output.isalpha() or output == "") \
                or any(len(set(p)) != len(p) for p in parts + [output]) or len(parts) != len(node.args) - 1 \
                or any(c not in letters for c in output):
            raise self.m.error(first, f"'{spelled}' is supported with letters only, one per axis of each operand "
                                      "(no index repeated within one, no '...'), one operand per subscript; write a "
                                      "diagonal as np.diagonal(...) first")
        spec = ast.copy_location(ast.Constant(f"{inputs}->{output}"), first)
        return ast.copy_location(ast.Call(node.func, list(node.args[1:]), [ast.keyword("subscripts", spec)]), node)

    def _keywords_by_position(self, node, prim, spelled):
        """`norm.logpdf(w, loc=0.0, scale=s)` as `norm.logpdf(w, 0.0, s)`: a keyword the
        function also takes by position is passed by position (a value, differentiated like
        any argument; a skipped one gets its default), so `scale=np.exp(log_std)` works."""
        names = [name for name, _ in prim.positional]
        moved = {kw.arg: kw.value for kw in node.keywords if kw.arg in names}
        if not moved:
            return node
        args = list(node.args)
        for name in moved:
            if names.index(name) < len(args):
                raise self.m.error(node, f"'{spelled}' got two values for its argument '{name}'")
        for name, default in prim.positional[len(args):max(names.index(n) for n in moved) + 1]:
            if name in moved:
                args.append(moved[name])
            elif default is primitives.REQUIRED:
                raise self.m.error(node, f"'{spelled}' needs its argument '{name}'")
            else:
                args.append(ast.copy_location(ast.Constant(default), node))
        keywords = [kw for kw in node.keywords if kw.arg not in moved]
        return ast.copy_location(ast.Call(func=node.func, args=args, keywords=keywords), node)

    def _inline(self, scope, node, hnode, unpacked=None, closure=None):
        """A call to a same-file function: the sigmoid primitive, or the helper's body inlined
        (`unpacked`: its call is unpacked into that many names; the result is then a tuple)."""
        if hnode.name in self.stack:
            raise self.m.error(node, f"recursive call to '{hnode.name}': gradgen cannot differentiate recursion")
        if len(self.stack) > MAX_INLINE_DEPTH:
            raise self.m.error(node, f"helpers call helpers more than {MAX_INLINE_DEPTH} deep here; "
                                     "gradgen inlines each call and stops there")
        self.inlined = getattr(self, "inlined", 0) + sum(1 for _ in ast.walk(hnode))
        if self.inlined > MAX_INLINED_NODES:  # helpers calling a helper twice double at every level
            raise self.m.error(node, f"inlining the helpers '{self.fnode.name}' calls copies more than "
                                     f"{MAX_INLINED_NODES:,} syntax nodes; gradgen stops here")
        self._params(hnode, helper=True)  # decorators, ...: said of the helper before its call is matched
        args = self._bind_arguments(scope, node, hnode)
        sigmoid_ns = sigmoid_pattern(hnode, self.m)
        if sigmoid_ns is not None and unpacked is None:
            self.helpers["sigmoid"] = self.sigmoid_name
            return self._call("sigmoid", (args[hnode.args.args[0].arg],), sigmoid_ns, node)
        env = {}
        for name, value in args.items():
            if isinstance(value, ArgsTuple):  # *args: each value in a variable of its own
                env[name] = ArgsTuple(tuple(self._named(name, v, node) for v in value.items))
                continue
            if not isinstance(value, (Var, Const, TreeRef, *FUNCTION_VALUES)):
                ssa = self.namer.define(name)
                self._emit(ssa, value, node, overwrites=self.loop_depth > 0)
                value = Var(ssa)
            env[name] = value
        self.stack.append(hnode.name)
        inner = Scope(hnode, env, _assigned_names(hnode), hnode.name, unpacked=unpacked, owned=set(), closure=closure)
        result, _ = self._body(inner, hnode.body)
        self.stack.pop()
        return result

    def _bind_arguments(self, scope, node, hnode):
        """Match a call's arguments to the helper's parameters, as Python would."""
        positional = [a.arg for a in hnode.args.args]
        names = parameter_names(hnode)
        bound = {}
        given = self._spread(scope, node.args)
        if len(given) > len(positional) and hnode.args.vararg is None:
            raise self.m.error(node, f"'{hnode.name}' takes {len(positional)} arguments, got {len(given)}")
        for name, value in zip(positional, given):
            bound[name] = value
        if hnode.args.vararg is not None:  # `def f(w, *args)`: the rest, as a tuple of values
            bound[hnode.args.vararg.arg] = ArgsTuple(tuple(given[len(positional):]))
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in names:
                raise self.m.error(kw, f"'{hnode.name}' has no parameter '{kw.arg}'")
            if kw.arg in bound:
                raise self.m.error(kw, f"'{hnode.name}' got two values for '{kw.arg}'")
            bound[kw.arg] = self._argument(scope, kw.value)
        defaults = dict(zip(positional[len(positional) - len(hnode.args.defaults):], hnode.args.defaults))
        defaults.update({a.arg: d for a, d in zip(hnode.args.kwonlyargs, hnode.args.kw_defaults) if d is not None})
        for name in names:
            if name not in bound:
                if name not in defaults:
                    raise self.m.error(node, f"'{hnode.name}' is missing its argument '{name}'")
                bound[name] = self._function_default(defaults[name]) or Const(self._default(defaults[name], name))
        return {name: bound[name] for name in names + ([hnode.args.vararg.arg] if hnode.args.vararg else [])}

    def _spread(self, scope, nodes):
        """A call's positional values, `*args` of a tuple spread into them."""
        out = []
        for arg in nodes:
            if isinstance(arg, ast.Starred):
                items = self._args_tuple(scope, arg.value)
                if items is None:
                    raise self.m.error(arg, "a starred argument must be a helper's *args (f(*args))")
                out += list(items.items)
            else:
                out.append(self._argument(scope, arg))
        return out

    def _named(self, name, value, node):
        """`value` in a variable of its own unless it is one (or a number, a part, a function)."""
        if isinstance(value, (Var, Const, TreeRef, *FUNCTION_VALUES)):
            return value
        ssa = self.namer.define(name)
        self._emit(ssa, value, node, overwrites=self.loop_depth > 0)
        return Var(ssa)

    def _tuple_of_values(self, scope, node, stmt):
        """`pair = helper(...)` of a helper that returns a tuple (`return a, b`), or `pair =
        (a, b)`: the values, each in a variable of its own; else None."""
        if isinstance(node, ast.Tuple) and node.elts and not any(isinstance(e, ast.Starred) for e in node.elts):
            return ArgsTuple(tuple(self._named("item", self.expr(scope, e), stmt) for e in node.elts))
        helper = self._helper_node(scope, node)
        if not isinstance(helper, FunctionValue):
            return None
        returns = [n.value for n in own_nodes(helper.node.body) if isinstance(n, ast.Return)]
        sizes = {len(r.elts) if isinstance(r, ast.Tuple) else None for r in returns}
        if len(sizes) != 1 or None in sizes:
            return None
        values = self._inline(scope, node, helper.node, unpacked=sizes.pop(), closure=helper.closure)
        return ArgsTuple(tuple(self._named(f"{helper.node.name}_{k}", v, stmt) for k, v in enumerate(values)))

    def _args_tuple(self, scope, node):
        """The ArgsTuple `node` makes: `args`, `args + (x,)`, `args[1:]`; else None."""
        if isinstance(node, ast.Name):
            value = _lookup(scope, node.id)
            return value if isinstance(value, ArgsTuple) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = (self._args_tuple(scope, n) if not isinstance(n, ast.Tuple) else ArgsTuple(
                tuple(self.expr(scope, e) for e in n.elts)) for n in (node.left, node.right))
            if left is not None and right is not None and not (isinstance(node.left, ast.Tuple)
                                                               and isinstance(node.right, ast.Tuple)):
                return ArgsTuple(left.items + right.items)
            return None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            whole = self._args_tuple(scope, node.value)
            if whole is not None:
                parts = [None if p is None else _static_int(p) for p in (node.slice.lower, node.slice.upper,
                                                                           node.slice.step)]
                return ArgsTuple(whole.items[slice(*parts)])
        return None

    def _argument(self, scope, node):
        """A helper's argument: a part of a structured parameter, a list and a tuple of values
        pass as they are."""
        items = self._args_tuple(scope, node)
        if items is not None:
            return items
        ref = self._ref(scope, node)
        if ref is not None:
            return ref
        items = self._list_arg(scope, node)
        if items is not None:
            return items
        return self.expr(scope, node, function_ok=True)

    def _lookup(self, scope, name):
        return _lookup(scope, name)

    def _is_builtin(self, scope, node, name):
        return self._builtin_call(scope, node, name)

    def _exits_loop(self, stmts):
        return _exits(stmts, ast.Break)

    def _after_loop(self, name):
        return _LoopVariable(name)




_LIBRARIES = {"math", "numpy", "scipy", "builtins"}
_DRAW = ("'{call}' draws from Python's random module, whose state the generated code cannot share: draw with "
         "NumPy (a np.random.RandomState or Generator parameter, or np.random.*), or pass the noise in as data "
         "(def f(..., *, eps))")


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


def _draw_name(node):
    """The variable a draw goes into when it is part of a larger expression: `noise`."""
    return "noise"


def sigmoid_pattern(fnode, module):
    """The namespace of exp if `fnode` is `def f(x): return 1 / (1 + exp(-x))`, else None."""
    args = fnode.args
    if len(args.args) != 1 or args.vararg or args.kwarg or args.kwonlyargs or fnode.decorator_list:
        return None
    body = _skip_docstring(fnode.body)
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    x = args.args[0].arg
    e = body[0].value
    one = (lambda n: isinstance(n, ast.Constant) and type(n.value) in (int, float) and n.value == 1)
    if not (isinstance(e, ast.BinOp) and isinstance(e.op, ast.Div) and one(e.left)):
        return None
    d = e.right
    if not (isinstance(d, ast.BinOp) and isinstance(d.op, ast.Add) and one(d.left)):
        return None
    c = d.right
    if not (isinstance(c, ast.Call) and len(c.args) == 1 and not c.keywords):
        return None
    found = primitives.lookup(module.qualified(c.func) or "")
    a = c.args[0]
    negated_x = (isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub)
                 and isinstance(a.operand, ast.Name) and a.operand.id == x)
    if found and found[0] == "exp" and negated_x:
        return found[1]
    return None


class _LoopVariable:
    """Marks a loop variable after its loop: reading it there is refused."""

    def __init__(self, name):
        self.name = name


def _signature_spelling(function):
    """How the generated signature writes a function default: `np.tanh` as the generated
    module imports NumPy; None for a function of the user's file, which it does not have."""
    return effects.spelling(function.qualified)[0] if isinstance(function, LibraryFunction) else "None"


def _function_guard(param, function, fname):
    """The generated code is right only for the function it was compiled with: another one
    passed at run time is an error, never a silently wrong gradient."""
    if isinstance(function, LibraryFunction):
        test, said = f"{param.name} is not {param.function}", param.function
    else:
        test, said = f"{param.name} is not None", f"{function.name} (its default)"
    message = f"{fname}'s gradient was compiled for {param.name}={said}; compile a loss that passes the other function"
    modules = {effects.spelling(function.qualified)[1]} if isinstance(function, LibraryFunction) else set()
    return Effect(f"if {test}:\n    raise ValueError({message!r})", (), None, None, frozenset(modules))


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


def lower_function(module, name, namer, sigmoid_name, structured=frozenset(), arrays_only=frozenset()) -> Function:
    """Lower top-level function `name` of `module` into IR.

    `sigmoid_name` is what the generated module calls its sigmoid helper; `structured`
    names the parameters lowered as lists, tuples or dicts, `arrays_only` those looped
    over that must stay arrays (gradgen.structured).
    """
    return Lowerer(module, module.functions[name], namer, sigmoid_name, structured, arrays_only).lower()


def parameter_names(fnode):
    """All of a function's parameter names, keyword-only ones last."""
    return [a.arg for a in fnode.args.args + fnode.args.kwonlyargs]


def sigmoid_helper_name(module):
    """The user's own name for the sigmoid if the file defines one, else scipy's."""
    for name, node in module.functions.items():
        if sigmoid_pattern(node, module) is not None:
            return name
    return "expit"


def returns_a_number(fnode):
    """`def f(x) -> float:` says the result is a number, even where it may look like an array."""
    return _names_a_number(fnode.returns)


def _names_a_number(annotation):
    """`x: float` (or int) says a parameter is a number, never an array (see shapes)."""
    return isinstance(annotation, ast.Name) and annotation.id in ("float", "int")
