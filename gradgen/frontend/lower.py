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

from gradgen.analysis.stated import annotated_shape
from gradgen.errors import CompileError
from gradgen.frontend import custom_calls, effects, inactive, local_imports, loop_returns, raises, records
from gradgen.frontend.closures import FUNCTION_VALUES, FunctionValue, LibraryFunction, lambda_as_def, own_nodes, renamed
from gradgen.frontend.generators import GeneratorLowering, is_generator
from gradgen.frontend.known_lists import STATIC_VALUES, StaticLowering
from gradgen.frontend.lower_assign import AssignLowering
from gradgen.frontend.lower_calls import CallLowering, _draw_name, sigmoid_pattern
from gradgen.frontend.lower_exprs import _UNSUPPORTED_EXPR, ExprLowering
from gradgen.frontend.lower_lists import ListLowering
from gradgen.frontend.lower_loops import LoopLowering
from gradgen.frontend.mapping import MapLowering
from gradgen.frontend.constants import constant_value
from gradgen.frontend.records import RecordLowering
from gradgen.frontend.recursion import RecursionLowering
from gradgen.frontend.scopes import (
    ArgsTuple, PartsOfAPath, Scope, _always_returns, _assigned_names, _lookup, _LoopVariable, _names_a_number,
    _skip_docstring, _stored_names, parameter_names
)
from gradgen.frontend.structured import StructuredLowering, TreeRef, UsedWhole, names_a_container
from gradgen.frontend.structured_loops import TreeLoopLowering
from gradgen.ir.nodes import Assign, Break, Call, Const, Continue, Effect, Function, If, Param, Spelled, Var
from gradgen.rules import table

# Statements outside the subset, with what to tell the user.
_UNSUPPORTED_STMT = {
    ast.Try: "'try' is not supported: gradgen differentiates one path of straight code; check the "
             "inputs before calling the function instead",
    ast.With: "'with' is not supported", ast.Global: "'global' is not supported",
    ast.Nonlocal: "'nonlocal' is not supported", ast.ClassDef: "classes are not supported",
    ast.AsyncFunctionDef: "async functions are not supported", ast.Delete: "'del' is not supported",
    ast.Import: "imports inside functions are not supported: import at the top of the file",
    ast.ImportFrom: "imports inside functions are not supported: import at the top of the file",
    ast.AsyncFor: "'async for' is not supported", ast.AsyncWith: "'async with' is not supported",
}


class Lowerer(AssignLowering, ExprLowering, CallLowering, LoopLowering, ListLowering, StructuredLowering,
              TreeLoopLowering, RecordLowering, StaticLowering, GeneratorLowering,
              MapLowering, RecursionLowering):
    """Lowers one top-level function (and the helpers it calls) into one IR Function."""

    def __init__(self, module, fnode, namer, sigmoid_name, structured=frozenset(), arrays_only=frozenset()):
        self.m = module
        self.fnode = fnode
        self.namer = namer
        self.sigmoid_name = sigmoid_name
        self.body = []  # the statement list being filled (a branch or loop body while inside one)
        self.whole_value = None  # the right side of `name = ...` being lowered (kept as written: not renamed)
        self.depth = 0  # nesting of if/for/while: inside, assignments overwrite in place
        self.loop_depth = 0
        self.bound = set()  # SSA names assigned so far on the path being lowered
        self.loop_targets = set()
        self.lists = set()  # SSA names holding a Python list (gradgen.rules.lists)
        self.returns_list = {}  # a helper's result variable -> whether its first return was a list
        self.stack = [fnode.name]
        self.activations = []  # (helper, its arguments known when compiling, the call) of each call being inlined
        self.helpers = {}  # primitive name -> emitted helper name (the sigmoid)
        self.top_params = set(parameter_names(fnode))
        self.function_defaults = {}  # parameter -> the function value its default names
        args = fnode.args.args + fnode.args.kwonlyargs
        self.param_annotations = {a.arg: a.annotation for a in args}  # (the classes of a parameter's parts)
        self.structured = set(structured) | {a.arg for a in args if names_a_container(a.annotation)
                                             or self._names_a_record(a.annotation)}
        self.origins = {}  # variable -> the parameter lowered as an array it is (a part of)
        self.arrays_only = set(arrays_only)  # looped over, but also used whole: arrays (gradgen.frontend.structured)
        self.parts = set()  # the variables of origins that hold a part (`layer = params[k]`)
        self.held = []  # (scope, name, TreeRef) whose path reads a variable (gradgen.frontend.structured)
        self.consumers = []  # the loops over generators being inlined (gradgen.frontend.generators)
        self.kind_checks = {}  # (parameter, depth) -> the kind an isinstance test relied on (gradgen.frontend.recursion)

    # ---- functions -------------------------------------------------------------------
    def lower(self) -> Function:
        params = self._params(self.fnode)
        self.function_defaults = {p.name: self.function_defaults[p.name] for p in params if p.function}
        env = {p.name: self.function_defaults.get(p.name, Var(p.name)) for p in params}
        for p in params:
            p.structured = p.name in self.structured
            p.record = self._record_name(p.name)
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
        self.body[0:0] = self._kind_guards()
        return Function(self.fnode.name, params, self.body, result, result_name, self.fnode.lineno,
                        helpers=self.helpers, display=dict(self.namer.base_of),
                        drawn_from=effects.drawn_in_source(self.fnode, {p.name for p in params}))

    def _params(self, fnode, helper=False):
        if not helper and is_generator(fnode):
            first = next(n for n in own_nodes(fnode.body) if isinstance(n, (ast.Yield, ast.YieldFrom)))
            raise self.m.error(first, f"'{fnode.name}' is a generator function, which returns no number: gradgen "
                                      "inlines a generator where a loop of the function it differentiates consumes it")
        args = fnode.args
        if fnode.decorator_list:
            raise self.m.error(fnode.decorator_list[0], "decorators are not supported")
        for bad, what in ((None if helper else args.vararg, "*args"), (args.kwarg, "**kwargs")):
            if bad is not None:
                raise self.m.error(bad, f"{what} parameters are not supported: name each parameter")
        if args.posonlyargs:
            raise self.m.error(args.posonlyargs[0], "positional-only parameters are not supported")
        params = [Param(a.arg, number=_names_a_number(a.annotation), shape=annotated_shape(a.annotation))
                  for a in args.args]
        for param, default in zip(params[len(params) - len(args.defaults):], args.defaults):
            function = self._function_default(default)
            if function is not None:  # `nonlinearity=np.tanh`: compiled for that function
                param.function = _signature_spelling(function)
                self.function_defaults[param.name] = function
            else:
                param.default = self._default(default, param.name)
            param.has_default = True
        for a, default in zip(args.kwonlyargs, args.kw_defaults):  # data: see choose_wrt
            param = Param(a.arg, keyword_only=True, number=_names_a_number(a.annotation),
                          shape=annotated_shape(a.annotation))
            function = self._function_default(default) if default is not None else None
            if function is not None:
                param.function, param.has_default = _signature_spelling(function), True
                self.function_defaults[param.name] = function
            elif default is not None:
                param.default, param.has_default = self._default(default, a.arg), True
            params.append(param)
        return params

    def _function_default(self, node):
        """The function a default names (`np.tanh`, a same-file function or one of the user's
        other files, a lambda), or None (a type such as np.float64 is data: see _default)."""
        if self._type_default(node) is not None:
            return None
        if isinstance(node, ast.Lambda):
            return FunctionValue(lambda_as_def(node, "lambda"))
        if isinstance(node, ast.Name) and node.id in self.m.functions:
            return FunctionValue(self.m.functions[node.id])
        qualified = self.m.qualified(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        found = table.lookup(qualified) if qualified else None
        if found is not None and table.TABLE[found[0]].kind != "attribute":
            return LibraryFunction(qualified, ast.unparse(node))
        imported = local_imports.function(self.m, qualified)
        return FunctionValue(imported) if imported is not None else None  # `act=m.relu`: of the user's other file

    def _type_default(self, node):
        """`dtype=np.float64`, `dtype=float`: a type, data passed on as written (to np.empty,
        `.astype`), spelled as the generated module writes it; else None."""
        if isinstance(node, ast.Name) and node.id in _TYPES and node.id not in self.m.functions \
                and node.id not in self.m.constants and node.id not in self.m.imports:
            return Spelled(node.id)
        qualified = self.m.qualified(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if qualified is not None and qualified.startswith("numpy.") and qualified[6:] in _NUMPY_TYPES:
            return Spelled(effects.spelling(qualified)[0])
        return None

    def _default(self, node, name):
        if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str)):
            return node.value  # data, or a choice (`if x is None:`, `if kind == "l1":`)
        spelled = self._type_default(node)
        if spelled is not None:
            return spelled
        try:
            value = constant_value(node, self.m)
        except ValueError:
            value = None
        if not isinstance(value, (int, float)):
            made = self.m.record_constants.get(node.id) if isinstance(node, ast.Name) else None
            problem = records.declarable(self.m, made.cls) if made is not None else None
            if made is not None and problem is None:  # `arm=DEFAULT_ARM`: declared again (codegen.record_defaults)
                return Spelled(node.id)
            if problem is not None:
                raise self.m.error(node, f"the default of '{name}' is module-level '{node.id}', an instance of "
                                         f"{made.cls}, which gradgen cannot declare in the generated module "
                                         f"({problem}): make '{name}' a parameter without a default, and pass "
                                         f"{node.id} where the function is called")
            if isinstance(node, ast.Name) and node.id in self.m.not_constants:  # (a record, a list of arrays, ...)
                raise self.m.error(node, f"the default of '{name}' is module-level '{node.id}', which "
                                         f"{self.m.not_constants[node.id][1]}: make '{name}' a parameter without "
                                         f"a default, and pass {node.id} where the function is called")
            raise self.m.error(node, f"the default value of '{name}' must be a number")
        return value

    def _body(self, scope, stmts):
        """Lower a function body; returns (result expression, user name of the result).

        Early returns are first restructured so that every path ends in one `return`: a
        loop's returns become breaks (gradgen.frontend.loop_returns), and the statements
        after an `if` that may return move into its other branch.
        """
        self._refuse_unsupported(_skip_docstring(stmts))
        stmts = raises.hoist(_skip_docstring(stmts))  # (a branch that raises never reaches the result)
        stmts = self._close_returns(loop_returns.lift(stmts, scope.node, self.m.error))
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
        top = scope.helper is None and scope.result is None
        custom = custom_calls.called(self, scope, stmt.value) if top else None
        if custom is not None:  # return safe_log(x): the result is the custom call itself
            value = custom_calls.lower_call(self, scope, stmt.value, custom, named=False)
        else:
            value = self.expr(scope, stmt.value, function_ok=scope.helper is not None and scope.result is None)
        if top and isinstance(value, Const) and not isinstance(value.value, (int, float)):
            raise self.m.error(stmt.value, f"only real numbers are supported, not {type(value.value).__name__} constants")
        if scope.result is not None:
            self._emit_result(scope, value, stmt)
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
        if getattr(stmt, "return_value", False) and self._list_arg(scope, stmt.value) is not None:  # (loop_returns)
            raise self.m.error(stmt.value, loop_returns.RETURNS_A_LIST)
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
        elif isinstance(stmt, ast.Return) and scope.generator:
            pass  # the end of a path through a generator (gradgen.frontend.generators)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Yield) and scope.generator:
            self._yield(scope, stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.YieldFrom) and scope.generator:
            self._yield_from(scope, stmt)
        elif isinstance(stmt, ast.Pass):
            pass
        elif isinstance(stmt, ast.FunctionDef):  # a nested def: a value, inlined where it is called
            self._function_binding(scope, stmt.name, FunctionValue(stmt, scope), stmt)
        elif isinstance(stmt, ast.Assert) and self._known_test(scope, stmt.test) is True:
            pass  # `assert len(params) == 3` of values known when compiling: it holds
        elif isinstance(stmt, ast.Assert):
            self._effect(scope, stmt, "an assert")
        elif isinstance(stmt, ast.Raise):  # (gradgen.frontend.raises: a check, run as written)
            self._effect(scope, stmt, "a raise")
        elif isinstance(stmt, ast.Expr) and effects.is_effect_call(self.m, stmt.value):
            self._effect(scope, stmt, f"'{ast.unparse(stmt.value.func)}(...)'")
        elif isinstance(stmt, ast.Expr) and effects.is_draw(self.m, stmt.value, lambda n: _lookup(scope, n)):
            self.expr(scope, stmt.value)  # a draw whose numbers are thrown away still advances the state
        elif isinstance(stmt, ast.Expr) and self._static_append(scope, stmt):
            pass  # layers.append((W, b)) to a list kept while compiling
        elif isinstance(stmt, ast.Expr) and self._list_method(scope, stmt.value) is not None:
            self._append(scope, stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(self._helper_node(scope, stmt.value), FunctionValue):
            self._helper_statement(scope, stmt)
        elif isinstance(stmt, ast.Expr) and inactive.keepable_statement(self.m, stmt.value):
            self._kept_statement(scope, stmt)
        elif isinstance(stmt, ast.Expr):
            message = _UNSUPPORTED_EXPR.get(type(stmt.value), "an expression statement does nothing to the result")
            if isinstance(stmt.value, ast.Call) and self.m.qualified(stmt.value.func) == "numpy.add.at":
                message = ("np.add.at changes its array in place, which gradgen does not follow; add each "
                           "element in a loop (for k in range(len(idx)): y[idx[k]] += v[k]), which adds "
                           "every repeat as np.add.at does (y[idx] += v keeps only the last)")
            raise self.m.error(stmt, message)
        else:
            raise self.m.error(stmt, _UNSUPPORTED_STMT.get(type(stmt), f"'{type(stmt).__name__}' is not supported"))

    def _helper_statement(self, scope, stmt):
        """`plot_state(ax, x)`, `log_step(t, loss)`: a helper called for what it does, inlined as
        any call is (its prints and plots kept as written, its result dropped); one that ends
        without a `return` returns None there, as in Python."""
        callee = self._helper_node(scope, stmt.value)
        node = callee.node
        if not _always_returns(_skip_docstring(node.body)):
            ended = ast.copy_location(ast.Return(ast.copy_location(ast.Constant(None), stmt)), stmt)
            node = renamed(node, node.name)
            node.body = [*node.body, ended]
            homes = getattr(self.m, "homes", None)
            if homes is not None and id(callee.node) in homes:  # (a helper of another file stays its file's)
                homes[id(node)] = homes[id(callee.node)]
        self._inline(scope, stmt.value, node, closure=callee.closure)

    def _kept_statement(self, scope, stmt):
        """`x.sort()`, `np.copyto(buf, X)`, `validate(X)`: a call run for what it does, kept as
        written; gradgen.analysis.aliasing refuses it where it changes a value the gradient reads."""
        try:
            renamed = effects.rename(self.m, stmt, lambda n: _lookup(scope, n), self.m.error, "a call")
        except CompileError:  # a name the generated module cannot see (open, a helper of this file)
            raise self.m.error(stmt, "an expression statement does nothing to the result") from None
        changes = tuple(sorted({v.name for v in inactive.mutated(self.m, stmt.value, scope)}))
        self.body.append(Effect(renamed.text, renamed.reads, stmt.lineno, self.m.segment(stmt),
                                frozenset(renamed.modules), changes, stmt.col_offset + 1))

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
                          (("text", renamed.text), ("modules", tuple(sorted(renamed.modules))),
                           ("names", tuple(v.name for v in renamed.reads))))

    def _bind(self, scope, name, value, stmt, augmented=False):
        """`name = value`: a fresh SSA name in straight-line code; inside control flow the
        name the variable already has (it was bound on entry), overwritten in place."""
        if isinstance(value, FUNCTION_VALUES):
            if isinstance(value, FunctionValue) and value.name == "lambda":
                value = FunctionValue(renamed(value.node, name), value.closure)
            self._function_binding(scope, name, value, stmt)
            return
        if isinstance(value, (*STATIC_VALUES, ArgsTuple)):  # known when compiling (gradgen.frontend.known_lists)
            self._bind_static(scope, name, value, stmt)
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
        if ssa in self.bound:  # assigned again: a part whose path reads it is now its value
            self._forget_parts_reading(ssa)
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
        self._prebind_consumers(scope, stmts, stmt)  # a generator's loop that yields: the consuming loop's names
        lists = self._made_lists(scope, stmts)
        for name in _stored_names(stmts):
            current = scope.env.get(name)
            if name in lists:  # a list made in the block: made there afresh (gradgen.frontend.lower_lists)
                self._prebind_list(scope, name, lists[name], stmt)
                continue
            if isinstance(current, PartsOfAPath) and _reads_name(stmts, name):
                # its old value, which the block reads, is parts no variable holds (soak seed 2006 #1004)
                raise UsedWhole(current.ref.root.name, self.m.error(stmt, current.message()))
            if isinstance(current, TreeRef) and current.runs() and current.leaf is None and _reads_name(stmts, name):
                # `m = h` (h a structured parameter), then a loop reading and rebinding m: its first trip
                # reads the parts, which no variable holds (a soak's `m = h; for ...: m = p * m`, with h an
                # array a loop elsewhere runs over: compiled again with h read whole)
                what = "the structured parameter" if not current.path else "a run of parts of"
                raise UsedWhole(current.root.name, self.m.error(stmt, f"'{name}' holds {what} '{current.root.name}' "
                                                                     "and is read and assigned inside this loop or "
                                                                     "branch: give the new value another name"))
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
        self._parts_after_block(scope, stmts)
        self.depth -= 1
        self.loop_depth -= loop
        block, self.body = self.body, outer
        return block

    def _if(self, scope, stmt):
        known = self._known_test(scope, stmt.test)
        if known is not None:  # `if n == 0:` of a helper called with n=3: only the branch taken is lowered
            for inner in stmt.body if known else stmt.orelse:
                self._statement(scope, inner)
            return
        test = self.expr(scope, stmt.test, test=True)
        if isinstance(test, Const):  # known when compiling (`if b is None:` of a helper's default)
            taken = stmt.body if test.value else stmt.orelse
            self._prebind(scope, taken, stmt)
            self.body.extend(self._block(scope, taken))
            return
        self._prebind(scope, stmt.body + stmt.orelse, stmt)
        lists = {name: scope.env[name] for name in self._made_lists(scope, stmt.body + stmt.orelse)}
        entry = set(self.bound)
        body = self._block(scope, stmt.body)
        after_body, self.bound = self.bound, set(entry)
        first = self._lists_of_branch(scope, lists)
        orelse = self._block(scope, stmt.orelse)
        self._join_lists(scope, lists, first, stmt)
        self.bound |= after_body
        self.body.append(If(test, body, orelse, stmt.lineno, self._text(stmt)))


_TYPES = {"float", "int", "bool", "complex"}  # a default naming one is a dtype: data
_NUMPY_TYPES = {"float64", "float32", "float16", "longdouble", "int64", "int32", "int16", "int8", "uint8", "uint16",
                "uint32", "uint64", "intp", "bool_", "complex64", "complex128"}


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


def _reads_name(stmts, name):
    """Whether `stmts` read `name` anywhere (its value on entry, on some path)."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
               for s in stmts for n in ast.walk(s))


def lower_function(module, name, namer, sigmoid_name, structured=frozenset(), arrays_only=frozenset()) -> Function:
    """Lower top-level function `name` of `module` into IR.

    `sigmoid_name` is what the generated module calls its sigmoid helper; `structured`
    names the parameters lowered as lists, tuples or dicts, `arrays_only` those looped
    over that must stay arrays (gradgen.frontend.structured).
    """
    return Lowerer(module, module.functions[name], namer, sigmoid_name, structured, arrays_only).lower()


def sigmoid_parameter(module):
    """The parameter name of the file's own sigmoid helper (`t` for `def sigmoid(t)`), else x."""
    for name, node in module.functions.items():
        if sigmoid_pattern(node, module) is not None and node.args.args[0].arg not in ("np", "math", name):
            return node.args.args[0].arg
    return "x"


def sigmoid_helper_name(module):
    """The user's own name for the sigmoid if the file defines one, else scipy's."""
    for name, node in module.functions.items():
        if sigmoid_pattern(node, module) is not None:
            return name
    return "expit"


def returns_a_number(fnode):
    """`def f(x) -> float:` says the result is a number, even where it may look like an array."""
    return _names_a_number(fnode.returns)

