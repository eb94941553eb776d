"""Lowering of assignments (a mixin of gradgen.frontend.lower.Lowerer): `x = e`, tuple
unpacking (`a, b = pair`, from a structured parameter's part, a helper's tuple, a list),
`x += e` as a new value of x, writes into arrays and lists (`x[i] = e`, `W[0][idx] = e`),
and names bound to functions (`act = np.tanh`)."""

from __future__ import annotations

import ast

from gradgen.frontend import custom_calls, effects, flattening
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
        elif flattening.called(self.m, value):  # v, _ = flatten(params) (gradgen/frontend/flattening.py)
            flattening.assign(self, scope, target, value, stmt)
        elif isinstance(target, ast.Name) and self._function_list(scope, value) is not None:
            self._bind_static(scope, target.id, self._function_list(scope, value), stmt)  # acts = [relu, np.tanh]
        elif isinstance(target, ast.Name) and self._static_dict_made(scope, target.id, value, stmt):
            pass  # params = {"beta": b, "gamma": g}: values by key, known when compiling
        elif isinstance(target, ast.Name) and isinstance(value, (ast.List, ast.ListComp)):
            self._new_list(scope, target.id, value, stmt)
        elif isinstance(target, ast.Name) and self._tuple_of_values(scope, value, stmt) is not None:
            scope.env[target.id] = self._tuple_of_values(scope, value, stmt)  # pair = helper(...): its values
        elif isinstance(target, (ast.Tuple, ast.List)) and self._static_unpacked(scope, target, value, stmt):
            pass  # m, n = shapes[0]: values known when compiling
        elif isinstance(target, (ast.Tuple, ast.List)) and self._args_tuple(scope, value) is not None:
            items = self._args_tuple(scope, value).items  # a, b = pair
            if len(items) != len(target.elts) or not all(_plain(t) for t in target.elts):
                raise self.m.error(target, f"'{self.m.segment(value)}' holds {len(items)} values: unpack them into "
                                           f"{len(items)} names")
            self._targets(scope, target.elts, list(items), stmt)
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
        elif isinstance(target, (ast.Tuple, ast.List)):
            self._unpack(scope, target, value, stmt)
        elif isinstance(target, ast.Subscript):
            self._write(scope, target, self.expr(scope, value), stmt)
        else:
            self._refuse_field_write(scope, target)  # p.W = e (gradgen.frontend.records)
            raise self.m.error(target, "assignment to this kind of target is not supported")

    def _unpack(self, scope, target, value, stmt):
        """`a, b = e` (also `s[i], s[i + 1] = e`, `x[0], (y, z) = e`): e's values, all computed
        before any target is assigned, then each target assigned in turn, as Python does."""
        targets = list(target.elts)
        if not all(_plain(t) for t in targets):
            self._needs_structure(scope, value)  # `*hidden, (W, b) = params`: params is a list
            starred = next((t for t in ast.walk(target) if isinstance(t, ast.Starred)), None)
            if starred is not None:
                raise self.m.error(starred, "a starred target ('*rest') unpacks only a structured parameter here; "
                                            "unpack into as many targets as there are values")
            raise self.m.error(target, "tuple unpacking needs names, or writes into arrays (x[i]), on the left")
        if isinstance(value, ast.Name) and isinstance(_lookup(scope, value.id), Var) \
                and self.origins.get(_lookup(scope, value.id).name) == _lookup(scope, value.id).name \
                and all(isinstance(t, ast.Name) for t in targets):
            raise NeedsStructure(_lookup(scope, value.id).name)  # W, b = params: its parts
        helper = self._helper_node(scope, value)
        if isinstance(helper, FunctionValue) and returns_a_tuple(self.m, helper.node):
            # a, b = helper(...): the helper's returned tuple (one returning an array: its rows, below)
            values = self._inline(scope, value, helper.node, unpacked=len(targets), closure=helper.closure)
            self._targets(scope, targets, self._before_clobbering(scope, targets, list(values), stmt), stmt)
            return
        if not isinstance(value, (ast.Tuple, ast.List)):
            self._unpacked_part(scope, value)  # W, b = layers[0]: layers is a list of pairs
            self._targets(scope, targets, self._rows(scope, targets, self.expr(scope, value), value, stmt), stmt)
            return
        if len(value.elts) != len(targets) or any(isinstance(e, ast.Starred) for e in value.elts):
            raise self.m.error(value, f"tuple unpacking needs a tuple of {len(targets)} values on the right")
        targets, elts = _flattened(targets, value.elts)  # a, (b, c) = x, (y, z): a, b, c = x, y, z
        if any(isinstance(e, (ast.List, ast.ListComp)) for e in elts):
            # `hs, cs = [], []`: each list made under its own name, as `hs = []` makes it (one kept
            # under a temporary name was no list its appends reached: a silent zero gradient,
            # found porting GradBench's lstm)
            read = {n.id for e in elts for n in ast.walk(e) if isinstance(n, ast.Name)}
            if not all(isinstance(t, ast.Name) for t in targets) or read & {t.id for t in targets}:
                raise self.m.error(value, "a list made in a tuple assignment: make each list in an assignment of "
                                          "its own (hs = [] then cs = [])")
            for t, e in zip(targets, elts):
                self._assign(scope, t, e, stmt)
            return
        values = [self.expr(scope, v) for v in elts]  # all evaluated before any is bound
        self._targets(scope, targets, self._before_clobbering(scope, targets, values, stmt), stmt)

    def _rows(self, scope, targets, whole, node, stmt):
        """The values `a, b, c = e` takes from e: an array's rows, a list's items, a shape's numbers."""
        listed = self._is_list(whole)
        if not (isinstance(whole, Call) and whole.prim == "shape"):  # a, b, c = np.exp(v): its rows
            clobbered = whole in self._written(scope, targets)  # a, b = a inside a loop
            whole = self._unpacking_source(whole, targets, stmt, clobbered)
        if listed:  # a, b = helper(...) returning a list: its items
            return [self._call("list_get", (whole, Const(i)), "builtins", node) for i in range(len(targets))]
        return [self._call("getitem", (whole, Const(i)), "op", node, (("index", ("i",)),))
                for i in range(len(targets))]  # n, d = x.shape

    def _targets(self, scope, targets, values, stmt):
        """Each target given its value, left to right: a name bound, `s[i]` written into (its
        index read then, after the targets before it), a nested `(a, b)` unpacked."""
        for target, value in zip(targets, values):
            if isinstance(target, ast.Name):
                self._bind(scope, target.id, value, stmt)
            elif isinstance(target, ast.Subscript):
                self._write(scope, target, value, stmt)
            else:
                inner = list(target.elts)
                self._targets(scope, inner, self._rows(scope, inner, value, target, stmt), stmt)

    def _written(self, scope, targets):
        """The variables assigning `targets` overwrites in place: a name's inside a loop or
        branch (in straight code it gets a new one), an array's written into, anywhere."""
        out = []
        for target in targets:
            for node in ast.walk(target):
                name = node.id if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and self.depth > 0 \
                    else node.value.id if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                    else None
                if name is not None and isinstance(scope.env.get(name), Var):
                    out.append(scope.env[name])
        return out

    def _unpacking_source(self, whole, targets, stmt, clobbered=False):
        """`a, b, c = e` with e an array: e computed once, checked to have exactly as many
        rows as names (Python's own ValueError otherwise), then read row by row; into a
        variable of its own where e is one of the names, overwritten in place (`a, b = a`
        in a loop)."""
        names = [self.m.segment(t) for t in targets]
        bases = [t.id if isinstance(t, ast.Name) else None for t in targets]
        if not isinstance(whole, Var) or clobbered:
            temp = self.namer.define("_".join(bases) if len(bases) <= 3 and None not in bases else "values")
            self._emit(temp, whole, stmt, overwrites=self.loop_depth > 0)
            whole = Var(temp)
        n = len(names)
        if whole.name in self.top_params:  # the caller's value: an array, not a tuple of parameters
            kind = (f"{whole.name!r} is a {{type({whole.name}).__name__}}: gradgen compiled "
                    f"'{', '.join(names)} = {whole.name}' for an array; pass the parts as separate parameters")
            self.body.append(Effect(f"if not isinstance({whole.name}, np.ndarray):\n    raise TypeError(f{kind!r})",
                                    (whole,), stmt.lineno, self.m.segment(stmt), frozenset({"numpy"})))
        what = "names" if None not in bases else "targets"
        message = f"cannot unpack {{len({whole.name})}} values into {n} {what} ({', '.join(names)})"
        self.body.append(Effect(f"if len({whole.name}) != {n}:\n    raise ValueError(f{message!r})", (whole,),
                                stmt.lineno, self.m.segment(stmt)))
        return whole

    def _before_clobbering(self, scope, targets, values, stmt):
        """`a, b = b, a + b` inside control flow (`s[i], s[j] = s[j], s[i]` anywhere): a value
        that reads what a target before it overwrites is computed first (`b_new = a + b`), as is
        one computed after a write into an array (it may read a view of it: Python computes
        every value before it assigns any)."""
        out = []
        for i, (target, value) in enumerate(zip(targets, values)):
            earlier = {v.name for v in self._written(scope, targets[:i])}
            written = any(isinstance(t, ast.Subscript) for t in targets[:i])
            if any(v.name in earlier for v in variables(value)) or written and not isinstance(value, (Var, Const)):
                base = target.id if isinstance(target, ast.Name) else getattr(target.value, "id", "value") \
                    if isinstance(target, ast.Subscript) else "value"
                temp = self.namer.define(f"{base}_new")
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


def _plain(target):
    """A target an unpacking assigns: a name, a write into an array, a nested tuple of them."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_plain(t) for t in target.elts)
    return isinstance(target, (ast.Name, ast.Subscript))


def _flattened(targets, values):
    """`a, (b, c) = x, (y, z)` as `a, b, c = x, y, z` (the same order of evaluation and of
    assignment): nested targets paired with the nested tuples written on the right."""
    out_t, out_v = [], []
    for t, v in zip(targets, values):
        if isinstance(t, (ast.Tuple, ast.List)) and isinstance(v, (ast.Tuple, ast.List)) \
                and len(t.elts) == len(v.elts) and not any(isinstance(e, ast.Starred) for e in v.elts):
            inner_t, inner_v = _flattened(t.elts, v.elts)
            out_t, out_v = out_t + inner_t, out_v + inner_v
        else:
            out_t.append(t)
            out_v.append(v)
    return out_t, out_v
