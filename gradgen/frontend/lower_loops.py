"""Lowering of loops (a mixin of gradgen.frontend.lower.Lowerer): `for` over ranges, over the
rows of arrays and lists (zip, enumerate, reversed, slices), `while`, and the counters
the backward sweep needs."""

from __future__ import annotations

import ast

from gradgen.frontend.closures import FunctionValue
from gradgen.frontend.scopes import _exits, _is_text, _lookup, _LoopVariable, _stored_names
from gradgen.ir.nodes import Assign, Call, Const, For, Var, While


class LoopLowering:
    """Loops: `for` and `while`, read by index."""

    def _for(self, scope, stmt):
        stmt = self._listed_for(scope, self._map_for(scope, stmt))  # (gradgen.frontend.mapping)
        if self._generator_for(scope, stmt):  # over a generator's call (gradgen.frontend.generators)
            return
        stmt = self._helper_iterable(scope, stmt)
        if self._unroll(scope, stmt):  # over a list known when compiling (gradgen.frontend.known_lists)
            return
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
        if isinstance(node, (ast.Tuple, ast.List)) and node.elts:  # zip([0.5, 1.0], parts): a list of its own
            temp = self.namer.define(f"{name}_values")
            self._emit(temp, self._call("list", tuple(self.expr(scope, e) for e in node.elts), "builtins", node), stmt,
                       overwrites=self.loop_depth > 0)
            self.lists.add(temp)
            return Var(temp)
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
        if isinstance(test, Const) and test.value and not _exits(stmt.body, ast.Break):
            raise self.m.error(stmt, f"'while {self.m.segment(stmt.test)}:' never ends: it has no 'break' and no "
                                     "'return'; leave it with one (if converged: break)")
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
        self._lists_after_loop(scope, stmt)
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
        base = node
        while isinstance(base, ast.Subscript):
            if _is_text(base.slice):  # `for key in params["layers"]`, `params["c"][1:]`: params is a dict
                self._needs_structure(scope, node)
            base = base.value
        raise self.m.error(node, "a loop must run over range(...), a module-level tuple of numbers, "
                                 "or a parameter")

