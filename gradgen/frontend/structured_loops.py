"""Loops over the parts of a structured parameter (a mixin of gradgen.frontend.lower.Lowerer,
beside gradgen.frontend.structured): `for W, b in params`, `enumerate`, `zip` with other
sequences, `reversed`, a slice, `.items()` / `.values()` / `.keys()`. Each runs over indices
(`for i in range(len(params))`) and binds its target to the parts at the index, read fresh
every trip, so that the backward sweep walks the same parts in reverse.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from gradgen.frontend.scopes import _exits, _lookup, _LoopVariable, _stored_names
from gradgen.frontend.structured import SliceStep, TreeRef
from gradgen.ir.nodes import Assign, Call, Const, For, Var

_DICT_VIEWS = {"items", "values", "keys"}


class TreeLoopLowering:
    """The loops over parts (a mixin: it uses the Lowerer's expr, _bind_target, _emit,
    _loop_body machinery and gradgen.frontend.structured's paths)."""

    def _tree_for(self, scope, stmt):
        """`for W, b in params`, `enumerate`, `zip` with other sequences, `reversed`, a slice,
        `.items()` / `.values()` / `.keys()`: True if the loop runs over parts (and is now
        lowered), False to leave it to the loops over arrays and lists."""
        pinned = self._pin_indices(scope, stmt)
        plan = self._tree_loop_plan(scope, stmt)
        scope.env.update(pinned)
        if plan is None:
            return False
        counter_name, iterable, binds = plan
        if stmt.orelse:
            raise self.m.error(stmt, "'else' on a loop is not supported")
        target = self.namer.define(counter_name or "i")
        scope.own(target)
        self.loop_targets.add(target)
        self.bound.add(target)
        if counter_name is not None:
            scope.env[counter_name] = Var(target)
        outer, self.body = self.body, []
        names = []

        def bind(name, part):  # each name the target unpacks: read fresh every iteration
            names.append(name)
            if part.path and isinstance(part.path[-1], SliceStep):
                scope.env[name] = part
                return
            element = self.namer.define(name)
            scope.own(element)
            self.bound.add(element)
            self.body.append(Assign(element, part.read(), stmt.lineno, self._text(stmt), col=stmt.col_offset + 1,
                                    overwrites=True))
            scope.env[name] = TreeRef(part.root, part.path, Var(element)) if isinstance(part, TreeRef) \
                else Var(element)

        for node, make in binds:
            self._bind_target(scope, node, make(Var(target)), stmt, bind)
        first, self.body = self.body, outer
        self._prebind(scope, stmt.body, stmt)
        count = self._counter(stmt) if _exits(stmt.body, ast.Break) else None
        body = self._loop_body(scope, stmt, count, first)
        self.body.append(For(target, iterable, body, stmt.lineno, self._text(stmt), count))
        for name in ([counter_name] if counter_name else []) + names:
            scope.env[name] = _LoopVariable(name)
        return True

    def _pin_indices(self, scope, stmt):
        """`for x in params[k:]` whose body assigns k: Python reads the parts the loop runs
        over once, before it; so does the generated code, from a copy of k made there. The
        names copied, with the variables to give them back after planning the loop."""
        loads = {n.id for n in ast.walk(stmt.iter) if isinstance(n, ast.Name)}
        if not any(isinstance(_lookup(scope, name), TreeRef) for name in loads):
            return {}
        pinned = {}
        for name in sorted(loads & set(_stored_names(stmt.body))):
            if isinstance(scope.env.get(name), Var):
                pinned[name] = scope.env[name]
                copy = self.namer.define(f"{name}_start")
                self._emit(copy, pinned[name], stmt, overwrites=self.loop_depth > 0)
                scope.env[name] = Var(copy)
        return pinned

    def _tree_loop_plan(self, scope, stmt):
        """(user name of the loop index or None, what it runs over, [(target, part at index)])."""
        target, node = stmt.target, stmt.iter
        view = self._dict_view(scope, node)
        if view is not None:
            return self._dict_loop(scope, stmt, view, node.func.attr)
        ref = self._ref(scope, node)
        if ref is not None and self._keys_of(scope, target, stmt.body):
            return self._dict_loop(scope, stmt, ref, "keys")  # `for key in params: params[key]`
        if ref is not None:
            self._by_position(ref, node, "loops over", text=f"for ... in {self.m.segment(node)}")  # (not a dataclass)
            iterable, parent = ref.indices()
            return None, iterable, [(target, parent.child)]
        if self._builtin_call(scope, node, "reversed") and len(node.args) == 1:
            ref = self._ref(scope, node.args[0])
            if ref is not None:
                iterable, parent = ref.indices()
                backwards = Call("range_slice", (Call("len", (iterable,), "builtins"), Const(None), Const(None),
                                                 Const(-1)), "builtins")
                index = lambda i: Call("getitem", (iterable, i), "op", params=(("index", ("i",)),))  # noqa: E731
                return None, backwards, [(target, lambda i: parent.child(index(i)))]
            return None
        if self._builtin_call(scope, node, "enumerate") and len(node.args) == 1 \
                and isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name):
            ref = self._ref(scope, node.args[0])
            if ref is None:
                return None
            iterable, parent = ref.indices()
            if iterable.prim != "range":  # a slice: enumerate counts its positions, the parts are at its indices
                positions = Call("range", (Call("len", (iterable,), "builtins"),), "builtins")
                index = lambda i: Call("getitem", (iterable, i), "op", params=(("index", ("i",)),))  # noqa: E731
                return target.elts[0].id, positions, [(target.elts[1], lambda i: parent.child(index(i)))]
            return target.elts[0].id, iterable, [(target.elts[1], parent.child)]
        if self._builtin_call(scope, node, "zip") and isinstance(target, ast.Tuple) \
                and any(self._ref(scope, a) is not None for a in node.args):
            if len(target.elts) != len(node.args):
                raise self.m.error(target, f"the loop target unpacks {len(target.elts)} names from zip of "
                                           f"{len(node.args)} sequences")
            return self._zip_plan(scope, stmt, target, node)
        return None

    def _keys_of(self, scope, target, body):
        """Whether a loop's name indexes a structured parameter in its body (`for key in
        params: params[key]`): then it takes what Python's loop gives, a dict's keys (or a
        list's items, `list(params)`), as plain values, never parts read by index."""
        if not isinstance(target, ast.Name):
            return False
        for node in ast.walk(ast.Module(body=list(body), type_ignores=[])):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id == target.id:
                base = node.value
                while isinstance(base, ast.Subscript):
                    base = base.value
                if isinstance(base, ast.Name) and isinstance(_lookup(scope, base.id), TreeRef):
                    return True
        return False

    def _zip_plan(self, scope, stmt, target, node):
        """`for (W, b), x in zip(params, xs)`: one index over the shortest sequence."""
        lengths, binds = [], []
        for t, arg in zip(target.elts, node.args):
            ref = self._ref(scope, arg)
            if ref is not None:
                lengths.append(ref.length())
                binds.append((t, ref.child))
                continue
            sequence = self._loop_sequence(scope, arg, t.id if isinstance(t, ast.Name) else "items", stmt)
            if not isinstance(t, ast.Name):
                raise self.m.error(t, "unpacking the rows of an array in a loop target is not supported: loop "
                                      "over zip(...) of the columns, or index the row")
            lengths.append(self._call("len", (sequence,), "builtins", arg))
            binds.append((t, self._row_of(sequence, arg)))
        n = lengths[0] if len(lengths) == 1 else Call("min", tuple(lengths), "builtins")
        return None, Call("range", (n,), "builtins"), binds

    def _row_of(self, sequence, node):
        """The reader of row i of an array or list, as a TreeRef-like part for _bind_target."""
        lowerer = self

        class _Row:
            def __init__(self, i):
                self.root, self.path = sequence, ()
                prim = "list_get" if lowerer._is_list(sequence) else "getitem"
                params = () if prim == "list_get" else (("index", ("i",)),)
                self.value = lowerer._call(prim, (sequence, i), "builtins" if prim == "list_get" else "op", node,
                                           params)

            def read(self):
                return self.value

        return _Row

    def _dict_view(self, scope, node):
        """`params.items()` (or `.values()`, `.keys()`) of a part: the part, else None."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DICT_VIEWS \
                and not node.args and not node.keywords:
            ref = self._ref(scope, node.func.value)
            if ref is None:
                self._needs_structure(scope, node.func.value)
            return ref
        return None

    def _dict_loop(self, scope, stmt, ref, view):
        """A loop over a dict's keys, as the forward pass lists them once (`params_keys =
        list(params)`): the backward sweep walks the same list in reverse."""
        if ref.path and isinstance(ref.path[-1], SliceStep):
            raise self.m.error(stmt.iter, "a slice is not a dict")
        keys = self.namer.define(f"{ref.root.name}_keys")
        self._emit(keys, Call("tree_keys", (ref.root, *ref.path), "builtins"), stmt,
                   overwrites=self.loop_depth > 0)
        target = stmt.target
        if view == "items":
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)):
                raise self.m.error(target, "a loop over .items() unpacks a key name and a value: "
                                           "`for key, value in params.items()`")
            key_name, value_target = target.elts[0].id, target.elts[1]
        elif view == "keys":
            if not isinstance(target, ast.Name):
                raise self.m.error(target, "a loop over .keys() takes one name")
            key_name, value_target = target.id, None
        else:
            key_name, value_target = None, target
        key_of = lambda i: Call("tree_get", (Var(keys), i), "builtins")  # noqa: E731
        binds = [] if value_target is None else [(value_target, lambda i: ref.child(key_of(i)))]
        if key_name is not None:
            binds.insert(0, (ast.Name(key_name, ast.Store()), lambda i: _Key(key_of(i))))
        return None, Call("range", (Call("len", (Var(keys),), "builtins"),), "builtins"), binds


@dataclass(frozen=True)
class _Key:
    """A dict's key, bound by a loop over `.items()` or `.keys()`: a plain value."""

    value: object
    root: object = None
    path: tuple = ()

    def read(self):
        return self.value
