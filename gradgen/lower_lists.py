"""Lowering of Python lists inside the loss (a mixin of gradgen.lower.Lowerer): lists
made, grown by append, read by index, built by comprehensions (see
gradgen.rules_lists)."""

from __future__ import annotations

import ast

from gradgen import comprehensions
from gradgen.ir import Var
from gradgen.scopes import _lookup


class ListLowering:
    """Python lists: made, appended to, read."""

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
