"""Lowering of assignments (a mixin of gradgen.frontend.lower.Lowerer): `x = e`, tuple
unpacking (`a, b = pair`, from a structured parameter's part, a helper's tuple, a list),
`x += e` as a new value of x, writes into arrays and lists (`x[i] = e`, `W[0][idx] = e`),
and names bound to functions (`act = np.tanh`)."""

from __future__ import annotations

import ast

from gradgen.frontend import custom_calls, effects
from gradgen.frontend.closures import FunctionValue
from gradgen.frontend.known_lists import STATIC_VALUES
from gradgen.frontend.lower_calls import returns_a_tuple
from gradgen.frontend.scopes import _BINOPS, _OP_TEXT, _lookup
from gradgen.frontend.structured import NeedsStructure, TreeRef
from gradgen.ir.nodes import Call, Const, Effect, Var, variables


class AssignLowering:
    """`Lowerer`'s assignments; the statement dispatch in gradgen/frontend/lower.py calls them."""

    def _assign(self, scope, target, value, stmt):
        if isinstance(target, ast.Name) and effects.is_draw(self.m, value, lambda n: _lookup(scope, n)):
            self._bind(scope, target.id, self._draw_call(scope, value), stmt)  # eps = rs.randn(n)
        elif isinstance(target, ast.Name) and isinstance(value, (ast.List, ast.ListComp)):
            self._new_list(scope, target.id, value, stmt)
        elif isinstance(target, ast.Name) and self._tuple_of_values(scope, value, stmt) is not None:
            scope.env[target.id] = self._tuple_of_values(scope, value, stmt)  # pair = helper(...): its values
        elif isinstance(target, ast.Tuple) and self._static_unpacked(scope, target, value, stmt):
            pass  # m, n = shapes[0]: values known when compiling
        elif isinstance(target, ast.Tuple) and self._args_tuple(scope, value) is not None:
            items = self._args_tuple(scope, value).items  # a, b = pair
            if len(items) != len(target.elts) or not all(isinstance(t, ast.Name) for t in target.elts):
                raise self.m.error(target, f"'{self.m.segment(value)}' holds {len(items)} values: unpack them into "
                                           f"{len(items)} names")
            for t, item in zip(target.elts, items):
                self._bind(scope, t.id, item, stmt)
        elif isinstance(target, (ast.Name, ast.Tuple, ast.List)) and self._ref(scope, value) is not None:
            self._bind_target(scope, target, self._ref(scope, value), stmt)  # layer = params[i]; W, b = layer
        elif isinstance(target, ast.Name) and self.depth == 0 and custom_calls.called(self, scope, value):
            custom = custom_calls.called(self, scope, value)  # y = safe_log(x): y is the custom call itself
            self._bind(scope, target.id, custom_calls.lower_call(self, scope, value, custom, named=False), stmt)
        elif isinstance(target, ast.Name):
            self.whole_value = value
            lowered = self.expr(scope, value, function_ok=True)
            self.whole_value = None
            self._bind(scope, target.id, lowered, stmt)
        elif isinstance(target, ast.Tuple):
            names = [t for t in target.elts]
            if not all(isinstance(t, ast.Name) for t in names):
                self._needs_structure(scope, value)
                raise self.m.error(target, "tuple unpacking needs plain names on the left")
            if isinstance(value, ast.Name) and isinstance(_lookup(scope, value.id), Var) \
                    and self.origins.get(_lookup(scope, value.id).name) == _lookup(scope, value.id).name:
                raise NeedsStructure(_lookup(scope, value.id).name)  # W, b = params: its parts
            helper = self._helper_node(scope, value)
            if isinstance(helper, FunctionValue) and returns_a_tuple(self.m, helper.node):
                # a, b = helper(...): the helper's returned tuple (one returning an array: its rows, below)
                values = self._inline(scope, value, helper.node, unpacked=len(names), closure=helper.closure)
                if self.depth > 0:
                    values = self._before_clobbering(scope, [n.id for n in names], list(values), stmt)
                for name, v in zip(names, values):
                    self._bind(scope, name.id, v, stmt)
                return
            if not isinstance(value, ast.Tuple):
                self._unpacked_part(scope, value)  # W, b = layers[0]: layers is a list of pairs
                whole = self.expr(scope, value)
                listed = self._is_list(whole)
                if not (isinstance(whole, Call) and whole.prim == "shape"):  # a, b, c = np.exp(v): its rows
                    clobbered = self.depth > 0 and whole in [scope.env.get(n.id) for n in names]  # a, b = a
                    whole = self._unpacking_source(whole, [n.id for n in names], stmt, clobbered)
                if listed:  # a, b = helper(...) returning a list: its items
                    values = [self._call("list_get", (whole, Const(i)), "builtins", value) for i in range(len(names))]
                else:
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
            self._refuse_field_write(scope, target)  # p.W = e (gradgen.frontend.records)
            raise self.m.error(target, "assignment to this kind of target is not supported")

    def _unpacking_source(self, whole, names, stmt, clobbered=False):
        """`a, b, c = e` with e an array: e computed once, checked to have exactly as many
        rows as names (Python's own ValueError otherwise), then read row by row; into a
        variable of its own where e is one of the names, overwritten in place (`a, b = a`
        in a loop)."""
        if not isinstance(whole, Var) or clobbered:
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
        array, as you wrote it, wherever that is safe (see gradgen.codegen.emit and the sharing
        analysis, which refuses a write another name that shares x's array would see)."""
        if not isinstance(target.value, ast.Name):
            raise self.m.error(target, f"writing into '{self.m.segment(target)}' is not supported: write into a "
                                       "name with one index, x[i, j] = ... (not x[i][j] = ... nor x.attr[i] = ...)")
        name = target.value.id
        if isinstance(_lookup(scope, name), TreeRef):  # W[i] = e: from here on W is a variable of its own
            self._unref(scope, name, stmt)
        current = self._read(scope, target.value)
        if isinstance(current, STATIC_VALUES):
            raise self._static_misuse(target.value, current)
        if self._is_list(current):
            raise self.m.error(target, f"writing into the list '{name}' is not supported: append the new values to "
                                       f"a list of their own, or write into np.stack({name})")
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
