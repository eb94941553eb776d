"""Lowering of Python lists inside the loss (a mixin of gradgen.frontend.lower.Lowerer): lists
made, grown by append, read by index, built by comprehensions (see
gradgen.rules.lists)."""

from __future__ import annotations

import ast

from gradgen.frontend import comprehensions
from gradgen.frontend.closures import FunctionValue, own_nodes
from gradgen.frontend.scopes import _lookup, _LoopVariable, _UnmadeList
from gradgen.ir.nodes import Var


def returns_a_list(fnode):
    """Whether a helper returns a list it makes (`return [... for ...]`, or `return ys`
    where it makes `ys = [...]`)."""
    made = {n.targets[0].id for n in own_nodes(fnode.body) if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and isinstance(n.value, (ast.List, ast.ListComp))}
    returns = [n.value for n in own_nodes(fnode.body) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(r, (ast.List, ast.ListComp)) or isinstance(r, ast.Name) and r.id in made
                                 for r in returns)


def _appends(tree):
    """Whether the module grows any list (`.append(...)`): the only way a list changes."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append"
               for n in ast.walk(tree))


class ListLowering:
    """Python lists: made, appended to, read."""

    # ---- Python lists (see gradgen.rules.lists) ---------------------------------------
    def _is_list(self, value):
        return isinstance(value, Var) and value.name in self.lists

    def _new_list(self, scope, name, value, stmt):
        """`hs = [h0]`, `hs = []`, `hs = [f(x) for x in xs]`: a list of its own. Made inside
        a loop or branch, it is a new list every time that code runs, in the variable the
        block gave its name (see _prebind_list)."""
        if self._static_list_made(scope, name, value, stmt):  # known when compiling (gradgen.frontend.known_lists)
            return
        ssa = self._list_variable(scope, name)
        if isinstance(value, ast.ListComp):
            made = self._comprehension(scope, value, name, ssa)
        else:
            elements = tuple(self.expr(scope, e) for e in value.elts)
            ssa = ssa or self.namer.define(name)
            self._emit(ssa, self._call("list", elements, "builtins", value), stmt,
                       overwrites=self.loop_depth > 0 or ssa in self.bound)
            self.lists.add(ssa)
            made = Var(ssa)
        self._bind_list(scope, name, made, stmt)

    def _list_variable(self, scope, name):
        """The variable a list made under `name` goes into: the one its loop or branch gave
        the name, else (straight code of its function) None, for a fresh one."""
        if self.depth == scope.depth:
            made_for = getattr(scope.node, "list_variable", None)  # a comprehension's list: its caller's variable
            return made_for[1] if made_for and made_for[0] == name else None
        current = scope.env.get(name)
        return current.ssa if isinstance(current, _UnmadeList) and current.kind == "before" else None

    def _bind_list(self, scope, name, value, stmt):
        """A name for a list: the list itself (`ys = hs` is a second name for the same list,
        as in Python). Inside a loop or branch only a name that block makes a list under
        (see _prebind_list) is bound to one, and a name that holds one is given no other value."""
        if not self._is_list(value):
            raise self.m.error(stmt, f"'{name}' holds a list: give the new value another name")
        if self.depth > scope.depth and not isinstance(scope.env.get(name), _UnmadeList):
            raise self.m.error(stmt, f"'{name}' is bound to a list inside a loop or branch; bind it before")
        scope.env[name] = value

    def _emit_result(self, scope, value, stmt):
        """`return v` of a helper with several returns: v into its result variable, a list on
        every path or on none (`[...] if c else [...]` is a list: its gradient a list too)."""
        listed = self._is_list(value)
        if self.returns_list.setdefault(scope.result, listed) != listed:
            what = "the conditional expression" if scope.node.name.startswith("conditional") else f"'{scope.node.name}'"
            raise self.m.error(stmt, f"{what} gives a list on one path and not on another: make it a list on "
                                     "each, or np.array(...) of the list on each")
        if listed:
            self.lists.add(scope.result)
        self._emit(scope.result, value, stmt, overwrites=self.loop_depth > 0)

    # ---- lists made inside loops and branches --------------------------------------------
    def _made_lists(self, scope, stmts):
        """The names `stmts` make lists under, each with its first making: `xs = [...]`,
        `xs = [... for ...]`, `xs = helper(...)` of a helper that returns a list it makes."""
        made = {}
        for node in own_nodes(stmts):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            pairs = [(target, value)]
            if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                    and len(target.elts) == len(value.elts):
                pairs = list(zip(target.elts, value.elts))  # `hs, cs = [], []` (gradgen.frontend.lower_assign)
            for target, value in pairs:
                if isinstance(target, ast.Name) and target.id not in made and self._makes_list(scope, value):
                    made[target.id] = node
        return made

    def _makes_list(self, scope, value):
        if isinstance(value, (ast.List, ast.ListComp)):
            return True
        helper = self._helper_node(scope, value)
        return isinstance(helper, FunctionValue) and returns_a_list(helper.node)

    def _prebind_list(self, scope, name, making, stmt):
        """Before a loop or branch that makes a list under `name`: the variable every making
        of it there writes, the name unreadable until one has run (a list made in a loop
        is new in every iteration: the last iteration's is never read)."""
        current = scope.env.get(name)
        if isinstance(current, _UnmadeList) and current.kind == "before":
            return  # an enclosing loop or branch makes it: the same variable
        if current is not None and not isinstance(current, (_UnmadeList, _LoopVariable)):
            what = "loop" if isinstance(stmt, (ast.For, ast.While)) else "'if'"
            raise self.m.error(making, f"'{name}' holds a value from before the {what} at line {stmt.lineno}, "
                                       f"and a list is made under its name inside it: give the list a name "
                                       "of its own")
        ssa = self.namer.define(name)
        scope.own(ssa)
        scope.env[name] = _UnmadeList(name, "before", ssa)

    def _lists_after_loop(self, scope, stmt):
        """After a loop: the lists it made are not read (each iteration made its own)."""
        for name in self._made_lists(scope, stmt.body):
            scope.env[name] = _UnmadeList(name, "loop", line=stmt.lineno)

    def _lists_of_branch(self, scope, names):
        """After an `if`'s first branch: what it left under the names the branches make lists
        under, which the other branch starts again without."""
        left = {name: scope.env.get(name) for name in names}
        scope.env.update(names)
        return left

    def _join_lists(self, scope, names, first, stmt):
        """After an `if`: a list made on both paths, into the same variable, is read after it;
        one made on one path only is not."""
        for name in names:
            a, b = first[name], scope.env.get(name)
            if self._is_list(a) and a == b:
                continue
            loop = next((x for x in (a, b) if isinstance(x, _UnmadeList) and x.kind == "loop"), None)
            kind = "branches" if self._is_list(a) and self._is_list(b) else "branch"
            scope.env[name] = loop or _UnmadeList(name, kind, line=stmt.lineno)

    def _comprehension(self, scope, node, name="items", ssa=None):
        """`[elt for ...]`: the list its function (gradgen.frontend.comprehensions) builds (into `ssa`,
        when a loop or branch gave its name one)."""
        problem = comprehensions.unsupported(node)
        if problem:
            raise self.m.error(node, problem)
        call = ast.copy_location(ast.Call(ast.Name(name, ast.Load()), [], []), node)
        builder = comprehensions.list_builder(node, name)
        builder.list_variable = (name, ssa) if ssa else None
        return self._inline(scope, call, builder, closure=scope)

    def _total(self, scope, node):
        """`sum(elt for ...)`, `sum([elt for ...])`, `sum(xs)` of a list: an accumulating loop."""
        if isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp)):
            problem = comprehensions.unsupported(node.args[0])
            if problem:
                raise self.m.error(node.args[0], problem)
        elif not isinstance(node.args[0], ast.Name):  # sum(make(w)): the helper's list, made first, under a
            made = node.args[0]                        # name no source can spell
            hidden = f"list at {made.lineno}:{made.col_offset + 1}"
            scope.env[hidden] = self.expr(scope, made)
            node = ast.copy_location(ast.Call(node.func, [ast.copy_location(ast.Name(hidden, ast.Load()), made),
                                                          *node.args[1:]], []), node)
        call = ast.copy_location(ast.Call(ast.Name("sum", ast.Load()), [], []), node)
        return self._inline(scope, call, comprehensions.total_builder(node), closure=scope)

    def _list_arg(self, scope, node):
        """The list a name holds, if `node` is such a name; else None."""
        if isinstance(node, ast.Name):
            value = _lookup(scope, node.id)
            if self._is_list(value):
                return value
        return None

    def _fancy_list(self, scope, node):
        """Whether `node` is a list used as an index (`[2, 0, 2]`, or a name holding a list):
        it indexes an array, never a list or a dict (`W[0][idx]` is W[0, idx])."""
        return isinstance(node, ast.List) or self._list_arg(scope, node) is not None

    def _list_index(self, scope, node):
        """A list used as an index (`y[idx]`, `y[[0, 1, 1]]`): a fancy index, as NumPy reads
        it; None if `node` is no list. The backward pass reads the index again, after the
        forward pass: where the module appends to any list, an array of what the list holds
        now (`idx_now = np.array(idx)`), which no later append changes."""
        if isinstance(node, ast.List):
            return self._call("list", tuple(self.expr(scope, e) for e in node.elts), "builtins", node)
        items = self._list_arg(scope, node)
        if items is None or not _appends(self.m.tree):
            return items
        return self._named(f"{node.id}_now", self._call("array_list", (items,), "numpy", node), node)

    def _list_value(self, scope, node):
        """The list `node` is, made here if need be: a name that holds one, a comprehension,
        a call of a helper that returns one; else None (a literal `[a, b]` spreads instead)."""
        items = self._list_arg(scope, node)
        if items is None and not isinstance(node, ast.List) and self._makes_list(scope, node):
            items = self.expr(scope, node)
        return items if self._is_list(items) else None

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
        name = node.value.id if isinstance(node.value, ast.Name) else "items"
        if isinstance(node.slice, (ast.Slice, ast.Tuple)):
            raise self.m.error(node, f"slicing the list '{name}' is not supported yet: loop over range(...) and "
                                     f"read {name}[i], or np.stack({name}) first")
        item = self.namer.define(f"{name}_item")
        self._emit(item, self._call("list_get", (current, self.expr(scope, node.slice)), "builtins", node), node,
                   overwrites=self.loop_depth > 0)
        return Var(item)
