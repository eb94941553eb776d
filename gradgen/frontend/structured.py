"""Lowering of structured parameters: a parameter that is a list, tuple or dict of arrays
and numbers (`params = [(W1, b1), (W2, b2)]`, `params["W"]`), nested at will, whose
length may be known only at run time.

Such a parameter is never one value to the compiler. A name bound to part of it (`layer =
params[i]`, `for W, b in params`, `*hidden, (W, b) = params`) is a TreeRef: the parameter
and the path to the part. Reading it as a number or an array reads that path
(`W = params[i][0]`), and the backward pass adds the part's gradient at the same path of
the parameter's gradient (gradgen.rules.trees); indexing it further, unpacking it,
looping over it or measuring it (`len`) extends the path instead. Loops run over indices
(`for i in range(len(params))`), so the backward sweep walks the same parts in reverse
(gradgen.frontend.structured_loops).

Which parameters are structured is decided by how the function uses them: annotated
`list`, `tuple`, `dict` (or Sequence, Mapping, ...), or used as only a container can be
(indexed by a string, unpacked, looped over with a target that unpacks, `.items()`). A
first lowering treats every parameter as a number or an array; a use that needs a
container raises NeedsStructure, and the function is lowered again with that parameter
structured (gradgen.api). An array passed where a structured parameter is expected still
works: its rows are its parts.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from gradgen.frontend.scopes import PartsOfAPath, _lookup, _stored_names
from gradgen.ir.nodes import Call, Const, Effect, Field, Var, variables

# annotations that say a parameter is a container: `params: list`, `Sequence[...]`, `dict[str, ...]`
_CONTAINERS = {"list", "tuple", "dict", "List", "Tuple", "Dict", "Sequence", "Mapping", "MutableMapping",
               "MutableSequence", "Iterable", "Collection"}


class NeedsStructure(Exception):
    """A use of `param` only a container allows, met while lowering it as an array; `soft`
    for one a list or an array allows alike (a loop over its parts), which an array's whole
    use elsewhere (`np.tanh(x)`) overrules."""

    def __init__(self, param, soft=False):
        super().__init__(param)
        self.param = param
        self.soft = soft


class UsedWhole(Exception):
    """A structured parameter read as one value; `error` says so at its place."""

    def __init__(self, param, error):
        super().__init__(param)
        self.param = param
        self.error = error


def names_a_container(annotation):
    """`list`, `tuple[np.ndarray, ...]`, `typing.Dict[str, float]`, `Sequence[...]`."""
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    if isinstance(annotation, ast.Attribute):
        return annotation.attr in _CONTAINERS
    return isinstance(annotation, ast.Name) and annotation.id in _CONTAINERS


@dataclass(frozen=True)
class SliceStep:
    """`params[lo:hi:step]` as the last step of a path: a run of parts, never a value."""

    lower: object
    upper: object
    step: object

    def range_of(self, length):
        """The indices of the parent the slice keeps: `range(len(parent))[lo:hi:step]`."""
        return Call("range_slice", (length, *(Const(None) if p is None else p
                                              for p in (self.lower, self.upper, self.step))), "builtins")


@dataclass(frozen=True)
class TreeRef:
    """Part of a structured parameter: the parameter, the path to the part, and the
    variable the part was read into where a name was bound to it."""

    root: Var
    path: tuple = ()
    leaf: Var | None = None
    home: Var | None = None  # a run of parts bound in a loop or branch: the variable the name has there

    def runs(self):
        """Whether this names the parameter itself or a run of its parts (`params[1:]`), which
        no variable can hold; a part of a part (`params[0][1:]`) may be an array."""
        return not self.path or len(self.path) == 1 and isinstance(self.path[0], SliceStep)

    def reads(self):
        """The variables its path reads (a loop index, a key)."""
        steps = [p for s in self.path for p in ((s.lower, s.upper, s.step) if isinstance(s, SliceStep) else (s,))]
        return {v.name for s in steps if s is not None for v in variables(s)}

    def child(self, step):
        """The part at `step` below this one (an index into a slice is one of its parent's)."""
        if self.path and isinstance(self.path[-1], SliceStep):
            parent = TreeRef(self.root, self.path[:-1])
            kept = self.path[-1].range_of(parent.length())
            if isinstance(step, Call):  # an index array (`acc[np.array([-1, 0, -1])]`): a range takes none
                kept = Call("array", (kept,), "numpy")
            index = Call("getitem", (kept, step), "op", params=(("index", ("i",)),))
            return TreeRef(self.root, self.path[:-1] + (index,))
        return TreeRef(self.root, self.path + (step,))

    def length(self):
        """`len(...)` of this part, as an expression."""
        if self.path and isinstance(self.path[-1], SliceStep):
            parent = TreeRef(self.root, self.path[:-1])
            return Call("len", (self.path[-1].range_of(parent.length()),), "builtins")
        return Call("tree_len", (self.root, *self.path), "builtins")

    def indices(self):
        """What a loop over this part runs over: `range(len(part))`, or the parent's indices
        a slice keeps; and the part a loop index names."""
        if self.path and isinstance(self.path[-1], SliceStep):
            parent = TreeRef(self.root, self.path[:-1])
            return self.path[-1].range_of(parent.length()), parent
        return Call("range", (self.length(),), "builtins"), self

    def read(self):
        return Call("tree_get", (self.root, *self.path), "builtins")

    def text(self):
        """`params[i]['W']`, `layers[1][1:]`, `p.layers[0].W`: Python source, for a path of names
        and constants."""
        def source(step):
            if isinstance(step, SliceStep):
                parts = (step.lower, step.upper) + ((step.step,) if step.step is not None else ())
                return ":".join("" if p is None else source(p) for p in parts)
            return step.name if isinstance(step, Var) else repr(step.value)
        return self.root.name + "".join(f".{step.value}" if isinstance(getattr(step, "value", None), Field)
                                        else f"[{source(step)}]" for step in self.path)

    def spelled(self):
        """Whether text() can spell the path (names, constants, slices of them)."""
        parts = [p for s in self.path for p in ((s.lower, s.upper, s.step) if isinstance(s, SliceStep) else (s,))]
        return all(p is None or isinstance(p, (Var, Const)) for p in parts)


class StructuredLowering:
    """The part of gradgen.frontend.lower.Lowerer that lowers structured parameters (a mixin: it
    uses the Lowerer's expr, _bind, _emit, _block machinery)."""

    # ---- finding parts ----------------------------------------------------------------
    def _ref(self, scope, node):
        """The TreeRef `node` names (`params`, `params[i]["W"]`, `layer[0]`), else None."""
        if isinstance(node, ast.Name):
            value = _lookup(scope, node.id)
            if isinstance(value, PartsOfAPath):
                raise self._parts_gone(node, value)
            return value if isinstance(value, TreeRef) else None
        if isinstance(node, ast.Subscript):
            base = self._ref(scope, node.value)
            if base is None or isinstance(node.slice, ast.Tuple) or self._fancy_list(scope, node.slice):
                return None
            if isinstance(node.slice, ast.Slice):
                if base.path and isinstance(base.path[-1], SliceStep):
                    return None
                parts = (node.slice.lower, node.slice.upper, node.slice.step)
                return TreeRef(base.root, base.path + (SliceStep(*(None if p is None else self.expr(scope, p)
                                                                   for p in parts)),))
            self._by_position(base, node)  # (not a dataclass: gradgen.frontend.records)
            return base.child(self._step(scope, node.slice))
        if isinstance(node, ast.Attribute):  # p.W, p.layers[0].W: a field (gradgen.frontend.records)
            return self._field_ref(scope, node)
        return None

    def _step(self, scope, node):
        """A step of a path: an int or a string, written or computed (never differentiated)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return Const(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and type(node.operand.value) is int:
            return Const(-node.operand.value)  # params[-1]
        return self.expr(scope, node)

    def _leaf(self, ref, node):
        """The value of a part used as a number or an array."""
        if ref.leaf is not None:
            return ref.leaf
        if not ref.path:
            name = ref.root.name
            record = self._record_named(ref)
            if record is not None:  # (gradgen.frontend.records)
                fields = ", ".join(f"{name}.{f}" for f in record.fields[:2])
                raise UsedWhole(name, self.m.error(node, f"'{name}' is a {record.name} (a {record.kind}): use its "
                                                         f"fields ({fields})"))
            raise UsedWhole(name, self.m.error(node, f"'{name}' is a structured parameter (a list, tuple or dict): "
                                                     f"use its parts ({name}[0], `for W, b in {name}`, {name}['W'])"))
        if isinstance(ref.path[-1], SliceStep):  # `W[1:]` of an array part
            base = self._leaf(TreeRef(ref.root, ref.path[:-1]), node)
            s = ref.path[-1]
            parts = (s.lower, s.upper, s.step)
            layout = "s" + "".join("0" if p is None else "1" for p in parts)
            return self._call("getitem", (base, *[p for p in parts if p is not None]), "op", node,
                              (("index", (layout,)),))
        read = ref.read()
        prim = "tree_data" if self._data_field(ref) else read.prim  # `p.n` of `n: int`: data (gradgen.frontend.records)
        return self._call(prim, read.args, read.ns, node)

    # ---- binding parts to names ---------------------------------------------------------
    def _bind_ref(self, scope, name, ref, stmt):
        """`name = part`: the part read into a variable of the user's name now (dead code if
        the name is only indexed further), remembered with its path; a slice of a part
        (`b[1:]`) too, as an array's slice is read. The parameter itself or a run of its
        parts (`params[1:]`) only names its path: no variable holds a list of parts."""
        if ref.runs():
            self._hold(scope, name, TreeRef(ref.root, ref.path, home=self._home(scope, name, ref, stmt)))
            return
        self._bind(scope, name, self._leaf(TreeRef(ref.root, ref.path), stmt), stmt)
        self._hold(scope, name, TreeRef(ref.root, ref.path, scope.env[name]))

    def _home(self, scope, name, ref, stmt):
        """The variable a name bound to a run of parts inside a loop or branch has there (a
        later value of the name is written into it), or None at the body's own level. One
        that held a value before is refused: a later trip of a loop would read that value
        where Python reads the parts."""
        current = scope.env.get(name)
        if self.depth == scope.depth or not isinstance(current, Var) or not scope.owns(current.name):
            return None
        if current.name in self.bound:
            what = "the structured parameter" if not ref.path else "a run of parts of"
            raise UsedWhole(ref.root.name, self.m.error(stmt, f"'{name}' holds a value and is bound to {what} "
                                                              f"'{ref.root.name}' inside a loop or branch: give one "
                                                              "of them another name"))
        return current

    def _hold(self, scope, name, ref):
        """`scope.env[name] = ref`, remembered while its path's variables keep their values."""
        scope.env[name] = ref
        if ref.reads():
            self.held.append((scope, name, ref))

    def _forget_parts_reading(self, ssa):
        """`ssa` is assigned again: a name bound to a part whose path reads it (`x =
        params[k]`, then `k = k + 1`) no longer names that path; it is the value read."""
        for scope, name, ref in self.held:
            if scope.env.get(name) is ref and ssa in ref.reads():
                scope.env[name] = ref.leaf if ref.leaf is not None else PartsOfAPath(name, ref, ssa)

    def _parts_gone(self, node, gone):
        """The error for reading a PartsOfAPath (an array passed for a parameter only looped
        over is lowered as an array instead, where its name holds a value like any other)."""
        return UsedWhole(gone.ref.root.name, self.m.error(node, gone.message()))

    def _parts_after_block(self, scope, stmts):
        """After a loop or branch, a name it bound to a part is the variable the part was read
        into: which part it was depends on the path taken (and a loop's index on the trip)."""
        for name in _stored_names(stmts):
            ref = scope.env.get(name)
            if isinstance(ref, TreeRef):
                scope.env[name] = ref.leaf if ref.leaf is not None else PartsOfAPath(name, ref)

    def _bind_target(self, scope, target, ref, stmt, bind=None):
        """Bind an assignment or loop target (`W, b`, `(W, b), x`, `*hidden, (W, b)`) to `ref`."""
        bind = bind or (lambda name, part: self._bind_ref(scope, name, part, stmt))
        if isinstance(target, ast.Name):
            bind(target.id, ref)
            return
        if not isinstance(target, (ast.Tuple, ast.List)):
            raise self.m.error(target, "a part of a structured parameter unpacks into names only")
        starred = [i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)]
        if len(starred) > 1:
            raise self.m.error(target, "two starred names in one unpacking")
        n = len(target.elts)
        if not self._by_position(ref, stmt, "unpacks", n - len(starred), bool(starred)):  # (a NamedTuple's: known)
            self._check_length(ref, n - len(starred), stmt, at_least=bool(starred))
        star = starred[0] if starred else n
        for i, t in enumerate(target.elts):
            if i < star:
                self._bind_target(scope, t, ref.child(Const(i)), stmt, bind)
            elif i == star:
                after = n - star - 1
                rest = TreeRef(ref.root, ref.path + (SliceStep(Const(star) if star else None,
                                                               Const(-after) if after else None, None),))
                if not isinstance(t.value, ast.Name):
                    raise self.m.error(t, "a starred target must be a name")
                if ref.path and isinstance(ref.path[-1], SliceStep):
                    raise self.m.error(t, f"a starred name unpacking a slice of '{ref.root.name}' is not "
                                          "supported: unpack the part the slice is taken of")
                self._hold(scope, t.value.id, TreeRef(rest.root, rest.path,
                                                      home=self._home(scope, t.value.id, rest, stmt)))
            else:
                self._bind_target(scope, t, ref.child(Const(i - n)), stmt, bind)

    def _check_length(self, ref, n, stmt, at_least=False):
        """Python's own ValueError when the part has not as many items as the names."""
        if not ref.spelled():
            return  # (a computed index: the generated code takes the first n parts without a check)
        whole = ref.text()
        test = f"len({whole}) < {n}" if at_least else f"len({whole}) != {n}"
        message = f"cannot unpack {{len({whole})}} values into {n} names"
        reads = (ref.root, *(Var(name) for name in sorted(ref.reads())))
        self.body.append(Effect(f"if {test}:\n    raise ValueError(f{message!r})", reads, stmt.lineno,
                                self.m.segment(stmt)))

    def _unref(self, scope, name, stmt, in_block=False):
        """`name`, which held a part, is assigned a new value: from here on it is the variable
        the part was read into (`W = W * 2` then `W[0]` reads the new W, not params[i][0][0]).
        Rebinding a name never changes the parameter: a part not read yet (a helper's
        parameter `h`, called as `smooth(p['W'])`) is read into a local of the name first,
        where a loop or branch assigns it (a loop's first trip reads the part)."""
        ref = scope.env[name]
        if ref.leaf is not None or ref.home is not None:
            scope.env[name] = ref.leaf if ref.leaf is not None else ref.home
            return scope.env[name]
        if not (in_block or self.depth > scope.depth):
            del scope.env[name]
            return None
        if ref.runs():
            what = "a structured parameter" if not ref.path else f"a run of parts of '{ref.root.name}'"
            raise UsedWhole(ref.root.name, self.m.error(stmt, f"'{name}' ({what}) is assigned inside a loop or "
                                                              "branch: give the new value another name"))
        ssa = self.namer.define(name)
        self._emit(ssa, self._leaf(ref, stmt), stmt, overwrites=self.loop_depth > 0)
        scope.env[name] = Var(ssa)
        scope.own(ssa)
        return Var(ssa)

    # ---- the array-mode lowering meeting a container ---------------------------------------
    def _needs_structure(self, scope, node, soft=False):
        """Raise NeedsStructure if `node` is (a part of) a parameter lowered as an array."""
        if isinstance(node, ast.Subscript) or self._names_a_field(node):  # (p.layers: gradgen.frontend.records)
            return self._needs_structure(scope, node.value, soft)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("reversed", "enumerate", "zip"):
            for arg in node.args:  # `for W, b in reversed(params)`
                self._needs_structure(scope, arg.value if isinstance(arg, ast.Starred) else arg)
            return
        if isinstance(node, ast.Name):
            value = _lookup(scope, node.id)
            if isinstance(value, Var) and value.name in self.origins \
                    and not (soft and self.origins[value.name] in self.arrays_only):
                raise NeedsStructure(self.origins[value.name], soft)

    def _loop_over_parameter(self, scope, node):
        """`for c in coeffs`, `reversed(coeffs)`, `enumerate`, `zip` of a parameter lowered as
        an array: a loop over its parts, which is how a list is read; the parameter becomes
        structured, so that a list (of numbers or of arrays of any shapes) and an array both
        work, and a list's gradient is a list."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("reversed", "enumerate", "zip"):
            for arg in node.args:
                self._loop_over_parameter(scope, arg)
        elif self._names_a_field(node):  # for layer in p.layers: p holds a NamedTuple or dataclass
            self._needs_structure(scope, node.value)
        elif isinstance(node, ast.Name):
            value = _lookup(scope, node.id)
            if isinstance(value, Var) and self.origins.get(value.name) == value.name \
                    and value.name not in self.arrays_only:
                raise NeedsStructure(value.name, soft=True)

    def _unpacked_part(self, scope, node):
        """`W, b = layers[0]`, or `W, b = layer` with `layer = layers[k]`, in the array
        lowering: a part unpacked into names, as a list of (W, b) pairs is read; the
        parameter becomes structured, so that its parts may differ in shape (an array
        used whole elsewhere stays one: its row is unpacked)."""
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, (ast.Slice, ast.Tuple)):
            node = node.value
            value = _lookup(scope, node.id) if isinstance(node, ast.Name) else None
            if not (isinstance(value, Var) and value.name in self.origins):
                return
            param = self.origins[value.name]
        elif isinstance(node, ast.Name) and isinstance(_lookup(scope, node.id), Var) \
                and _lookup(scope, node.id).name in self.parts:
            param = self.origins[_lookup(scope, node.id).name]
        else:
            return
        if param not in self.arrays_only:
            raise NeedsStructure(param, soft=True)

    def _part_of_part(self, scope, node):
        """`params[i][0]`, or `layer[0]` with `layer = params[k]`, in the array lowering: a
        part of a part, as a list of layers is read; the parameter becomes structured (an
        array still works so: its rows are its parts), unless it is used whole elsewhere
        (`W[mask][0]` beside `W[:, 0]`): an array, read by one index after another."""
        if isinstance(node.slice, (ast.Slice, ast.Tuple)) or self._fancy_list(scope, node.slice):
            return
        base = node.value
        if isinstance(base, ast.Subscript) and not isinstance(base.slice, (ast.Slice, ast.Tuple)) \
                and not self._fancy_list(scope, base.slice):
            self._needs_structure(scope, base, soft=True)
        elif isinstance(base, ast.Name):
            value = _lookup(scope, base.id)
            if isinstance(value, Var) and value.name in self.parts \
                    and self.origins[value.name] not in self.arrays_only:
                raise NeedsStructure(self.origins[value.name], soft=True)

    def _note_origin(self, ssa, value):
        """`x = params` (a second name) or `layer = params[k]` (a part, by one index): which
        parameter lowered as an array `ssa` now holds, or a part of; forgotten when `ssa` is
        assigned anything else."""
        self.origins.pop(ssa, None)
        self.parts.discard(ssa)
        if isinstance(value, Var) and value.name in self.origins:
            self.origins[ssa] = self.origins[value.name]
            if value.name in self.parts:
                self.parts.add(ssa)
        elif isinstance(value, Call) and isinstance(value.args[0] if value.args else None, Var) \
                and value.args[0].name in self.origins and (
                    value.prim == "list_get" or value.prim == "getitem" and dict(value.params)["index"] == ("i",)):
            self.origins[ssa] = self.origins[value.args[0].name]
            self.parts.add(ssa)
