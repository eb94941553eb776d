"""The respellings gradgen/codegen/numba_jit.py makes in a generated function, each an edit of its text.

* `loops`: a backward loop over an explicit descending range (`descending`), or over a
  module-level tuple backwards (`COEFFS[::-1]`, or by index after a loop that stopped early);
* `placeholders`: `x = None` (bound before a loop so that its stack can save what the first
  iteration overwrites) started at a zero of the type x holds (`Kinds`): `0.0`, `0`, `False`;
* `respellings`: calls numba has no version of for numbers, written as the same arithmetic;
* `defaults`: the defaults beside keyword-only parameters, which numba would misapply.

An edit is (a node of the generated module, its new text), or (("insert", statement), a
line before it), or (("cut", parameter, default), "") for the `=<default>` between them.
"""

from __future__ import annotations

import ast

from gradgen.codegen import numba_arrays
from gradgen.codegen.numba_bound import bound_before
from gradgen.codegen.naming import unused
from gradgen.codegen.numba_check import call_to, is_head, is_none, kind_of

INTEGRAL = frozenset({"len", "int", "round", "math.floor", "math.ceil", "math.trunc"})


def defaults(fdef):
    """[((start, end) of `=<default>`, "")]: beside keyword-only parameters (the tangents of
    --emit jvp and hvp) numba applies a function's defaults to its last parameters, whatever
    their names (`f(a=0.5, *, da)` called as f(da=1.0) would get a missing, f(2.0) a da of
    0.5): there the defaults go, and every argument is passed."""
    args = fdef.args
    if not args.kwonlyargs:
        return []
    positional = args.posonlyargs + args.args
    return [(("cut", arg, default), "") for arg, default in zip(positional[len(positional) - len(args.defaults):],
                                                                  args.defaults)]


def zero_resets(fdef, adjoint_of=None):
    """[(statement, its new text)]: an adjoint the backward pass resets to a bare `0.0` after it
    held an array (`ds = 0.0` once a loop trip's `s = row` is done) restarts from zeros of a
    value of its type, `np.zeros_like(ds, dtype=np.float64)[()]` (a number stays a number, and a
    float as `0.0` is): numba types a variable once. The value is the adjoint's own where it is
    certainly bound there, else its variable's (`np.zeros_like(r)` in the first trip of a loop
    that binds `df_dr` only in a branch: fuzz --jit numba 63000 #3), else the reset stays 0.0.
    So does an adjoint's first `= 0.0` inside a branch or a loop (ht's `dobjective_dv = 0.0` in
    the branch of a near-zero rotation, whose other branch writes into zeros of v); one on
    the top level is zero_starts'. Only in a function that calls NumPy (a scalar module's
    resets are numbers already)."""
    if not any(isinstance(n, ast.Name) and n.id == "np" for n in ast.walk(fdef)):
        return []
    here, nones, adjoint_of = bound_before(fdef), _none_bound(fdef), adjoint_of or {}
    edits, seen = [], set()
    for stmt in sorted((n for n in ast.walk(fdef) if isinstance(n, ast.Assign)), key=lambda n: (n.lineno, n.col_offset)):
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if not isinstance(target, ast.Name):
            continue
        start = target.id not in seen and target.id in adjoint_of and stmt not in fdef.body  # (else zero_starts')
        if _float_zero(stmt.value) and (target.id in seen or start):
            witness = next((w for w in (target.id, adjoint_of.get(target.id))
                            if w is not None and w in here.get(id(stmt), ()) and w not in nones), None)
            if witness is not None:  # (0.0: a float, as written)
                edits.append((stmt, f"{target.id} = np.zeros_like({witness}, dtype=np.float64)[()]"))
        seen.add(target.id)
    return edits


def _none_bound(fdef):
    """The names a function binds to None somewhere (a placeholder before a loop): never a
    value to take zeros of."""
    return {t.id for n in ast.walk(fdef) if isinstance(n, ast.Assign) and is_none(n.value)
            for t in n.targets if isinstance(t, ast.Name)}


def zero_starts(fdef, adjoint_of, sibling=None):
    """[(statement, its new text)]: an adjoint started at a bare `0.0` on the function's top
    level that a loop adds into later starts from zeros of its variable's value instead,
    `df_du = np.zeros_like(u, dtype=np.float64)[()]` (0.0 plus an array is an array, and numba
    types a variable once: fuzz --jit numba seed 6 #100). Only where that variable is a
    parameter or bound on the top level and never in a loop, or certainly bound where the
    adjoint starts (a loop's variable as its last trip left it, `h` after `while True: h = ...`,
    whose adjoint starts there: fuzz --jit numba 63000 #3). A gradient whose forward pass never
    needed the variable computes it first, as `sibling` (its value-and-gradient function) does
    on its top level, from names bound there."""
    if not adjoint_of or not any(isinstance(n, ast.Name) and n.id == "np" for n in ast.walk(fdef)):
        return []
    in_loops = _loop_bound(fdef)
    made = {} if sibling is None else {
        names[0]: stmt for stmt in sibling.body if isinstance(stmt, ast.Assign)
        and len(names := [t.id for t in _bound_names(stmt)]) == 1 and names[0] not in _loop_bound(sibling)}
    bound = {a.arg for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs}
    here, nones = bound_before(fdef), _none_bound(fdef)
    edits = []
    for stmt in fdef.body:
        names = [t.id for t in _bound_names(stmt)]
        primal = adjoint_of.get(names[0]) if len(names) == 1 else None
        if not (isinstance(stmt, ast.Assign) and primal is not None and _float_zero(stmt.value)
                and names[0] in in_loops and _first(fdef, stmt, names[0])):
            bound.update(names)
            continue
        if primal in in_loops and primal in here[id(stmt)] and primal not in nones:
            edits.append((stmt, f"{names[0]} = np.zeros_like({primal}, dtype=np.float64)[()]"))
        elif primal not in in_loops:
            source = made.get(primal)
            if primal not in bound and source is not None and _reads(source.value) <= bound:
                edits.append((("insert", stmt), ast.unparse(source)))  # (numba's type needs the value)
                bound.add(primal)
            if primal in bound:
                edits.append((stmt, f"{names[0]} = np.zeros_like({primal}, dtype=np.float64)[()]"))
        bound.update(names)
    return edits


def _first(fdef, stmt, name):
    """Whether `stmt` binds `name` first in the function (a later `= 0.0` is zero_resets' edit)."""
    return not any(name in [t.id for t in _bound_names(n)] for n in ast.walk(fdef)
                   if isinstance(n, ast.stmt) and n.lineno < stmt.lineno)


def _loop_bound(fdef):
    return {t.id for loop in ast.walk(fdef) if isinstance(loop, (ast.For, ast.While))
            for n in ast.walk(loop) for t in _bound_names(n)}


def _reads(node):
    """The names `node` reads for their values (not np, math, nor a dtype's float, int, bool)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - {
        "np", "math", "float", "int", "bool"}


def _bound_names(node):
    """The plain names a statement binds (assignment targets, a loop's target)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
    return [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _float_zero(node):
    return isinstance(node, ast.Constant) and type(node.value) is float and node.value == 0.0


def loops(fdef, constants, taken):
    """The edits that make each backward loop (`reversed(...)`) run over an explicit range or a
    module-level tuple backwards."""
    edits = []
    for loop in ast.walk(fdef):
        if not (isinstance(loop, ast.For) and call_to(loop.iter, "reversed")):
            continue
        inner, count = loop.iter.args[0], None
        if isinstance(inner, ast.Subscript) and is_head(inner.slice):
            inner, count = inner.value, inner.slice.upper
        if call_to(inner, "range"):
            edits.append((loop.iter, ast.unparse(descending(inner.args, count))))
        elif count is None:
            edits.append((loop.iter, f"{inner.id}[::-1]"))  # a module-level tuple
        else:  # the first `count` numbers of a module-level tuple, last first: by index
            index = unused(f"{loop.target.id}_index", taken)
            taken.add(index)
            edits.append((loop.iter, ast.unparse(descending([count], None))))
            edits.append((loop.target, index))
            edits.append((("insert", loop.body[0]), f"{loop.target.id} = {inner.id}[{index}]"))
    return edits


def descending(args, count=None):
    """The range `reversed(range(*args)[:count])` runs over, written as a range."""
    start, stop, step = _range_parts(args)
    if count is not None:  # the first `count` of them: start + (count - 1) * step down to start
        return _range(_add(start, _mul(_add(count, _int(-1)), step)), _add(start, _neg(step)), _neg(step))
    k = step.value if isinstance(step, ast.Constant) else None
    if k == 1:
        return _range(_add(stop, _int(-1)), _add(start, _int(-1)), _int(-1))
    if k == -1:
        return _range(_add(stop, _int(1)), _add(start, _int(1)), _int(1))
    if isinstance(k, int) and k > 0:  # the last is start + (stop - start - 1) // k * k
        last = _add(start, _mul(_floordiv(_add(_add(stop, _neg(start)), _int(-1)), step), step))
        return _range(last, _add(start, _neg(step)), _neg(step))
    if isinstance(k, int) and k < 0:  # the last is start - (start - stop - 1) // -k * -k
        size = _neg(step)
        last = _add(start, _neg(_mul(_floordiv(_add(_add(start, _neg(stop)), _int(-1)), size), size)))
        return _range(last, _add(start, size), size)
    length = ast.Call(ast.Name("len"), [ast.Call(ast.Name("range"), list(args), [])], [])
    return _range(_add(start, _mul(_add(length, _int(-1)), step)), _add(start, _neg(step)), _neg(step))


def _range_parts(args):
    args = list(args)
    if len(args) == 1:
        return _int(0), args[0], _int(1)
    if len(args) == 2:
        return args[0], args[1], _int(1)
    step = args[2]
    if isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub) and _is_int(step.operand):
        step = _int(-step.operand.value)
    return args[0], args[1], step


def _range(*parts):
    if _is_int(parts[2]) and parts[2].value == 1:
        parts = parts[:2]  # range(a, b, 1) is range(a, b)
    if len(parts) == 2 and _is_int(parts[0]) and parts[0].value == 0:
        parts = parts[1:]
    return ast.Call(ast.Name("range"), list(parts), [])


def respellings(fdef, arrays=frozenset()):
    """[(statement or expression, its new text)]: the calls numba has no version of for numbers,
    respelled as the same arithmetic (see Respell), and the array code numba lacks
    (numba_arrays.Respell; `arrays`: the names that may hold arrays)."""
    edits, lists = [], numba_arrays.list_names(fdef)
    for stmt in ast.walk(fdef):
        guarded = _guarded_add(stmt)
        if guarded is not None:
            edits.append(guarded)
            continue
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)):
            node = stmt
        elif isinstance(stmt, (ast.If, ast.While)):
            node = stmt.test
        else:
            continue
        respell, spell_arrays = Respell(), numba_arrays.Respell(lists, arrays)
        new = spell_arrays.visit(respell.visit(_copy(node)))
        if respell.changed or spell_arrays.changed:
            edits.append((node, ast.unparse(new)))
    return edits


def _guarded_add(stmt):
    """(stmt, its new text) for gradients added under tests, `d = d + (g if t else 0.0)` or
    `d = a + (g if t else 0.0) + ...` (the backward pass of a conditional expression):
    `d = a`, then `if t: d = d + g` for each, the same numbers, and a name that keeps one
    type where g is an array (numba unifies no array with 0.0: fuzz --jit numba seed 6
    #366); else None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return None
    terms = _added_terms(stmt.value)
    guarded = [_guard(term) for term in terms]
    if len(terms) < 2 or not any(guarded) or all(guarded):
        return None
    name, indent = stmt.targets[0].id, " " * stmt.col_offset
    plain = [t for t, g in zip(terms, guarded) if g is None]
    total = plain[0]
    for term in plain[1:]:
        total = ast.BinOp(total, ast.Add(), term)
    lines = [] if ast.unparse(total) == name else [f"{name} = {_respelled(total)}"]
    for test, g in filter(None, guarded):
        lines.append(f"if {ast.unparse(test)}:\n{indent}    {name} = {name} + {_respelled(g)}")
    return stmt, f"\n{indent}".join(lines)


def _added_terms(node):
    """The terms of `a + b + c` (left to right: `(a + b) + c`, a right operand kept whole),
    or [node] for anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _added_terms(node.left) + [node.right]
    return [node]


def _guard(term):
    """(test, g) for `g if test else 0.0` (or `0.0 if not test else g`), else None."""
    if not isinstance(term, ast.IfExp):
        return None
    if _float_zero(term.orelse):
        return term.test, term.body
    if _float_zero(term.body):
        return ast.UnaryOp(ast.Not(), term.test), term.orelse
    return None


def _respelled(node):
    return ast.unparse(numba_arrays.Respell().visit(Respell().visit(_copy(node))))


class Respell(ast.NodeTransformer):
    """`math.log(x, b)` is `math.log(x) / math.log(b)` (CPython computes it so); `math.hypot(a,
    b, c)` `math.hypot(math.hypot(a, b), c)` (to an ulp or so); `np.clip(a,
    lo, hi)` `np.minimum(np.maximum(a, lo), hi)` (NaN passes, as in clip); `np.where(c, a, b)`
    `np.where(c, a, b)[()]` (a number where c, a and b are, an array where one is)."""

    changed = False

    def visit_Call(self, node):
        self.generic_visit(node)
        spelled = ast.unparse(node.func)
        args = node.args
        if node.keywords or any(isinstance(a, ast.Starred) for a in args):
            return node
        if spelled == "math.log" and len(args) == 2:
            new = ast.BinOp(_call("math.log", args[:1]), ast.Div(), _call("math.log", args[1:]))
        elif spelled == "math.hypot" and len(args) > 2:
            new = _call("math.hypot", [_call("math.hypot", args[:2]), *args[2:]]) if len(args) == 3 else \
                _call("math.hypot", [self.visit_Call(_call("math.hypot", args[:-1])), args[-1]])
        elif spelled == "np.clip" and len(args) == 3:
            new = _call("np.minimum", [_call("np.maximum", args[:2]), args[2]])
        elif spelled == "np.where" and len(args) == 3:  # (numba's np.where of numbers is a 0-d array)
            new = ast.Subscript(node, ast.Tuple([], ast.Load()), ast.Load())
        else:
            return node
        self.changed = True
        return new


def _call(spelled, args):
    module, name = spelled.split(".")
    return ast.Call(ast.Attribute(ast.Name(module), name), list(args), [])


def _copy(node):
    return ast.parse(ast.unparse(node), mode="exec").body[0] if isinstance(node, ast.stmt) else \
        ast.parse(ast.unparse(node), mode="eval").body


# --- integer arithmetic on syntax trees, folding constants (`n - 1`, not `n + -1`) -----------------

def _int(k):
    return ast.Constant(k)


def _is_int(node):
    return isinstance(node, ast.Constant) and type(node.value) is int


def _neg(node):
    if _is_int(node):
        return _int(-node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return node.operand
    return ast.UnaryOp(ast.USub(), node)


def _add(a, b):
    """a + b, folded: constants summed, `x + (-1)` written `x - 1`, `x - 1 + 1` as x."""
    if _is_int(a) and _is_int(b):
        return _int(a.value + b.value)
    if _is_int(a):
        a, b = b, a
    if _is_int(b) and b.value == 0:
        return a
    if _is_int(b) and isinstance(a, ast.BinOp) and isinstance(a.op, (ast.Add, ast.Sub)) and _is_int(a.right):
        inner = a.right.value if isinstance(a.op, ast.Add) else -a.right.value
        return _add(a.left, _int(inner + b.value))
    if _is_int(b) and b.value < 0:
        return ast.BinOp(a, ast.Sub(), _int(-b.value))
    if isinstance(b, ast.UnaryOp) and isinstance(b.op, ast.USub):
        return ast.BinOp(a, ast.Sub(), b.operand)
    return ast.BinOp(a, ast.Add(), b)


def _mul(a, b):
    if _is_int(a) and _is_int(b):
        return _int(a.value * b.value)
    if _is_int(b) and b.value == 1:
        return a
    if _is_int(a) and a.value == 1:
        return b
    if (_is_int(a) and a.value == 0) or (_is_int(b) and b.value == 0):
        return _int(0)
    return ast.BinOp(a, ast.Mult(), b)


def _floordiv(a, b):
    if _is_int(a) and _is_int(b) and b.value:
        return _int(a.value // b.value)
    return ast.BinOp(a, ast.FloorDiv(), b)


# --- placeholders -------------------------------------------------------------------------------

def placeholders(fdef, constants, arrays=frozenset()):
    """[(the None of `x = None`, a zero of the type x holds)]. `arrays`: the names gradgen's
    analysis says may hold arrays (gradgen.analysis.arrays); one of them that Kinds takes for a
    number only because a parameter's type is unknown stays None, which numba types as an
    optional of what it later holds (a number or an array alike): a zero there made an array
    loop's first save `h = 0.0` and numba then failed to unify it with the array."""
    kinds = Kinds(fdef, constants)
    lists = numba_arrays.list_names(fdef)
    edits = []
    for stmt in ast.walk(fdef):
        if isinstance(stmt, ast.Assign) and is_none(stmt.value) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name in lists:
                edits.append((stmt.value, _empty_list(fdef, name, kinds, arrays)))
                continue
            kind = kinds.of_name(name)
            edits.append((stmt.value, "None" if kind == "float" and name in arrays else _zero(kind)))
    return edits


def _empty_list(fdef, name, kinds, arrays):
    """The placeholder of a list a loop makes afresh each trip (`parts = []`, saved before it is
    made: fuzz --jit numba 63005 #197): an empty list of the numbers appended to it
    (`[0.0 for _ in range(0)]`, which numba types as theirs), or None where they may be arrays
    or are not all numbers (numba's optional, as before)."""
    appended = [n.args[0] for n in ast.walk(fdef) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == "append" and isinstance(n.func.value, ast.Name) and n.func.value.id == name
                and len(n.args) == 1]
    found = [kinds.of(v) for v in appended]
    if not appended or any(k not in ("bool", "int", "float") for k in found) or any(
            isinstance(n, ast.Name) and n.id in arrays for v in appended for n in ast.walk(v)):
        return "None"
    kind = _join_all(found)
    return f"[{_zero(kind)} for _ in range(0)]"


def typed_placeholders(fdef):
    """[(("insert", loop), `x = <its first value>`)]: a name bound `x = None` (or the zero
    `placeholders` makes of it) so that its loop can save it before the first trip binds it, is bound again
    before that loop to the value the trip first gives it, where that value is plain
    arithmetic of names bound there (`x = current * extra_params[0]`): numba's inference
    meets the None first, and calls of it (`np.ones_like(x)`, a helper's overload) typed a
    number there that later met the array (lstm's x). The value is never read (the first
    trip's save of it is popped last, and nothing before the loop reads x)."""
    here, edits = bound_before(fdef), []
    for stmt in fdef.body:
        if not (isinstance(stmt, ast.Assign) and is_none(stmt.value) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            continue
        name = stmt.targets[0].id
        for loop in (s for s in fdef.body if isinstance(s, (ast.For, ast.While)) and s.lineno > stmt.lineno):
            first = min((n for n in ast.walk(loop) if isinstance(n, ast.Assign) and name in [t.id for t in
                         _bound_names(n)]), key=lambda n: n.lineno, default=None)
            if first is None:
                continue
            if len(first.targets) == 1 and isinstance(first.targets[0], ast.Name) and _plain(first.value) \
                    and _reads(first.value) <= here[id(loop)]:
                edits.append((("insert", loop), f"{name} = {_respelled(first.value)}"))
            break
    return edits


_MAKERS = ("np.zeros", "np.ones", "np.zeros_like", "np.ones_like", "np.empty")


def _plain(node):
    """Arithmetic that cannot raise where the loop would not have run: +, -, * of names,
    numbers and items at a constant index; zeros or ones of a constant shape or of a name's
    (`y = np.zeros(3)`: fuzz --jit numba 63003 #364)."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) in _MAKERS:
        return all(_shape(a) for a in node.args) and all(
            k.arg == "dtype" and isinstance(k.value, (ast.Attribute, ast.Name)) for k in node.keywords)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)) and _plain(node.left) and _plain(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub) and _plain(node.operand)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and not node.slice.elts:
        return _plain(node.value)  # (`np.zeros_like(x, dtype=np.float64)[()]`: particle's dpotential_dx)
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant) \
            and type(node.slice.value) is int
    return isinstance(node, ast.Name) or (isinstance(node, ast.Constant) and type(node.value) in (int, float))


def _shape(node):
    """A constant shape (`3`, `(2, 3)`), a name, or np.shape of a name."""
    if isinstance(node, ast.Tuple):
        return all(_shape(e) for e in node.elts)
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "np.shape":
        return len(node.args) == 1 and isinstance(node.args[0], ast.Name) and not node.keywords
    return isinstance(node, ast.Name) or (isinstance(node, ast.Constant) and type(node.value) is int)


def _zero(kind):
    if kind == "array":  # (numba types `None` then an array as an optional array)
        return "None"
    if isinstance(kind, tuple):
        return "(" + ", ".join(_zero(k) for k in kind) + ("," if len(kind) == 1 else "") + ")"
    return {"bool": "False", "int": "0"}.get(kind, "0.0")


_ORDER = {"bool": 0, "int": 1, "float": 2, "array": 3}


def _join(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, tuple) or isinstance(b, tuple):
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
            return tuple(_join(x, y) for x, y in zip(a, b))
        return "float"
    return a if _ORDER[a] >= _ORDER[b] else b


class Kinds:
    """The type each local of a generated function holds: bool, int, float or a tuple of
    them (a number the code does not show is a float), from every value it is given."""

    def __init__(self, fdef, constants):
        self.values = {}  # name -> [value expressions]
        self.known = {name: _constant_kind(v) for name, v in constants.items() if _constant_kind(v)}
        args = fdef.args
        positional = args.posonlyargs + args.args
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for arg, default in list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults)):
            kind = kind_of(default.value) if isinstance(default, ast.Constant) else None
            self.known[arg.arg] = kind or "float"
        for node in ast.walk(fdef):
            self._collect(node)
        for _ in range(len(self.values) + 1):  # to the fixed point: kinds only widen
            changed = False
            for name, values in self.values.items():
                kind = None
                for value in values:
                    kind = _join(kind, self.of(value))
                if kind is not None and kind != self.known.get(name):
                    self.known[name], changed = _join(self.known.get(name), kind), True
            if not changed:
                break

    def _collect(self, node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self._bind(node.target, ast.BinOp(ast.Name(node.target.id), node.op, node.value))
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            self._bind(node.target, ast.Subscript(node.iter, ast.Constant(0)) if not call_to(node.iter, "range")
                       and not call_to(node.iter, "reversed") else ast.Constant(0))

    def _bind(self, target, value):
        if isinstance(target, ast.Name):
            self.values.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts):
                self._bind(t, v)

    def of_name(self, name):
        return self.known.get(name) or "float"

    def of(self, node):  # noqa: C901 - one case per kind of expression
        if isinstance(node, ast.Constant):
            return kind_of(node.value)
        if isinstance(node, ast.Name):
            return self.known.get(node.id)
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp)
                                                           and isinstance(node.op, ast.Not)):
            if isinstance(node, ast.BoolOp):
                return _join_all(self.of(v) for v in node.values)
            return "bool"
        if isinstance(node, ast.UnaryOp):
            return _join(self.of(node.operand), "int")
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Div):
                return "float"
            return _join(_join(self.of(node.left), self.of(node.right)), "int")
        if isinstance(node, ast.IfExp):
            return _join(self.of(node.body), self.of(node.orelse))
        if isinstance(node, ast.Tuple):
            kinds = tuple(self.of(e) for e in node.elts)
            return None if None in kinds else kinds
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Subscript):  # a module-level tuple's number (or a loop over one)
            kind = self.of(node.value)
            return _join_all(kind) if isinstance(kind, tuple) else None
        return "float"

    def _call(self, node):
        spelled = ast.unparse(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "pop":
            return None  # a value saved on a stack: of the kinds pushed
        if spelled in INTEGRAL and len(node.args) == 1:
            return "int"
        if spelled == "bool":
            return "bool"
        if spelled.startswith("np.") and spelled[3:] in numba_arrays.CALLS:
            return numba_arrays.kind_of_call(node, spelled)
        if spelled in ("abs", "min", "max"):
            return _join_all(self.of(a) for a in node.args)
        return "float"


def _constant_kind(value):
    if isinstance(value, tuple):
        kinds = tuple(_constant_kind(v) for v in value)
        return None if None in kinds else kinds
    return kind_of(value)


def _join_all(kinds):
    out = None
    for kind in kinds:
        if kind is None:
            return None
        out = _join(out, kind)
    return out

