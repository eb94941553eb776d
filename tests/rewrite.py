"""Rewrites of a generated program that keep its meaning exactly, for the fuzzer.

The generators in `programs.py` never write helpers or tuple unpacking; these rewrites add
them to any generated `def f` without changing a single floating-point operation, so every
guarantee the generator gave (domains, distance from kinks and branch boundaries) still
holds:

* `outline`: `u = <expr>` becomes `u = _h1(a, u, ...)` with `def _h1(a, u, ...): return <expr>`
  at module level (its parameters are the locals `<expr>` reads). `u += <expr>` likewise.
* `outline_pair`: two consecutive assignments `u = e1; v = e2` become one helper that runs
  both and returns `u, v`, unpacked at the call: `u, v = _h2(...)`.
* `pack`: `u = e1; v = e2`, where `e2` does not read `u`, becomes `u, v = e1, e2`.

Each rewrite is applied to a random subset of the statements it fits, in any block of `f`.
"""

from __future__ import annotations

import ast
import random


def rewrite(source: str, rng: random.Random, rate: float = 0.4) -> str:
    """`source` with some assignments of `f` outlined into helpers or packed into tuples."""
    tree = ast.parse(source)
    fnode = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f")
    state = _State(rng, rate, _locals_of(fnode))
    _rewrite_block(fnode.body, state)
    index = tree.body.index(fnode)
    tree.body[index:index] = state.helpers
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


class _State:
    def __init__(self, rng, rate, local_names):
        self.rng = rng
        self.rate = rate
        self.locals = local_names  # names local to f: the only ones a helper must be passed
        self.helpers: list[ast.FunctionDef] = []

    def fresh(self) -> str:
        return f"_h{len(self.helpers) + 1}"


def _locals_of(fnode) -> set[str]:
    names = {a.arg for a in fnode.args.args + fnode.args.kwonlyargs}
    for node in ast.walk(fnode):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _reads(node, local_names) -> list[str]:
    """Local names `node` reads, in order of first appearance."""
    seen = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in local_names and n.id not in seen:
            seen.append(n.id)
    return seen


def _simple(stmt) -> bool:
    """`name = expr` with one plain name on the left."""
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)


def _rewrite_block(stmts: list, state: _State) -> None:
    i = 0
    while i < len(stmts):
        stmt = stmts[i]
        for field in ("body", "orelse"):
            if isinstance(stmt, (ast.If, ast.For, ast.While)):
                _rewrite_block(getattr(stmt, field), state)
        pair = i + 1 < len(stmts) and _simple(stmt) and _simple(stmts[i + 1])
        if pair and stmt.targets[0].id != stmts[i + 1].targets[0].id and state.rng.random() < state.rate:
            second = stmts[i + 1]
            packable = stmt.targets[0].id not in _reads(second.value, {stmt.targets[0].id})
            packable = packable and (PACK_ARRAY_DRAWS or not (_array_draw(stmt.value) or _array_draw(second.value)))
            if packable and state.rng.random() < 0.5:
                stmts[i:i + 2] = [_pack(stmt, second)]
            else:
                stmts[i:i + 2] = [_outline_pair(stmt, second, state)]
        elif isinstance(stmt, (ast.Assign, ast.AugAssign)) and _outlinable(stmt) and state.rng.random() < state.rate:
            stmts[i] = _outline(stmt, state)
        i += 1


PACK_ARRAY_DRAWS = True  # `u, e = (a, rs.randn(2))`: off until check's sympy trace handles it
# (fuzz-failures/draw-array-in-tuple-no-sympy.py: no sympy value for any parameter)


def _array_draw(node) -> bool:
    """Whether `node` makes an array-valued draw (`rs.randn(2)`, `rs.normal(..., size=3)`)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
               and n.func.value.id == "rs" and (n.keywords or (n.func.attr == "randn" and n.args))
               for n in ast.walk(node))


def _outlinable(stmt) -> bool:
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
    return isinstance(target, ast.Name) and (not isinstance(stmt, ast.Assign) or len(stmt.targets) == 1)


def _call(name: str, args: list[str], rng: random.Random) -> ast.Call:
    """`name(a, b, ...)`, sometimes passing the trailing arguments by keyword."""
    k = rng.randint(0, len(args)) if args and rng.random() < 0.3 else len(args)
    positional = [ast.Name(a, ast.Load()) for a in args[:k]]
    keywords = [ast.keyword(a, ast.Name(a, ast.Load())) for a in args[k:]]
    return ast.Call(ast.Name(name, ast.Load()), positional, keywords)


def _helper(name: str, params: list[str], body: list) -> ast.FunctionDef:
    arguments = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                              kw_defaults=[], defaults=[])
    node = ast.FunctionDef(name, arguments, body, [], None)
    node.type_params = []  # (Python 3.12 and later read it)
    return node


def _outline(stmt, state: _State):
    """`u = e` -> `u = _hN(<locals e reads>)`, with `def _hN(...): return e`."""
    params = _reads(stmt.value, state.locals)
    name = state.fresh()
    state.helpers.append(_helper(name, params, [ast.Return(stmt.value)]))
    new_value = _call(name, params, state.rng)
    if isinstance(stmt, ast.Assign):
        return ast.copy_location(ast.Assign([stmt.targets[0]], new_value), stmt)
    return ast.copy_location(ast.AugAssign(stmt.target, stmt.op, new_value), stmt)


def _outline_pair(first, second, state: _State):
    """`u = e1; v = e2` -> `u, v = _hN(...)`, the helper running both and returning both."""
    u, v = first.targets[0].id, second.targets[0].id
    params = _reads(first.value, state.locals)
    params += [p for p in _reads(second.value, state.locals) if p != u and p not in params]
    name = state.fresh()
    body = [ast.Assign([ast.Name(u, ast.Store())], first.value),
            ast.Assign([ast.Name(v, ast.Store())], second.value),
            ast.Return(ast.Tuple([ast.Name(u, ast.Load()), ast.Name(v, ast.Load())], ast.Load()))]
    state.helpers.append(_helper(name, params, body))
    target = ast.Tuple([ast.Name(u, ast.Store()), ast.Name(v, ast.Store())], ast.Store())
    return ast.copy_location(ast.Assign([target], _call(name, params, state.rng)), first)


def _pack(first, second):
    """`u = e1; v = e2` -> `u, v = e1, e2` (e2 does not read u)."""
    target = ast.Tuple([first.targets[0], second.targets[0]], ast.Store())
    return ast.copy_location(ast.Assign([target], ast.Tuple([first.value, second.value], ast.Load())), first)


# ---- functions as values ------------------------------------------------------------------
#
# `functions(source, rng)` rewrites f's statements to call through function values, keeping
# every floating-point operation (and every draw, in its order) exactly:
#
# * `closure`: `u = e` -> `u = _cN(<some of e's locals>)` with `def _cN(...): return e` nested
#   in f, reading e's other locals by closure. It is defined right before the statement or
#   hoisted to the top of f: Python's late binding gives the closure the value each name has
#   when it is called, which is the value `e` read there. A pair `u = e1; v = e2` becomes one
#   closure returning both (the names it assigns and reads first are its parameters).
# * `lambda`: `_lN = lambda ...: e` bound to a name (right before, or at the top of f), called.
# * `apply`: `u = _applyK(g, x, y)` with `def _applyK(g, x, y): return g(x, y)` at module level
#   and `g` a module-level helper, a closure, or a lambda written in the call.
# * `factory`: `def _makeN(c, ...): def _inner(t, ...): return e; return _inner` at module
#   level; f calls `_gN = _makeN(...)` right before the statement (the factory's arguments are
#   bound then, its closure's parameters at the call). A pair becomes a factory returning a
#   tuple of closures.
# * `bind`: a library or same-file function called in f (`math.sin`, `np.tanh`, `sigmoid`) is
#   bound to a name at the top of f (`_f1 = math.sin`), or given as a keyword-only default of
#   f (`def f(a, b, *, _f1=math.sin)`), and called through it.


FUNCTION_DEFAULTS = True  # f may take a function as a keyword-only default (`*, _f1=math.sin`): off until
# `gradgen check` stops failing on it (KeyError in the sympy trace: fuzz-failures/kw-function-default-KeyError.py)


def functions(source: str, rng: random.Random, rate: float = 0.35) -> str:
    """`source` with some of f's statements calling through closures, lambdas, higher-order
    helpers, factories and library functions bound to names."""
    tree = ast.parse(source)
    fnode = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f")
    state = _FnState(rng, rate, tree)
    _bind_library_functions(fnode, state)
    state.locals = _locals_of(fnode) | {t.id for s in state.top for t in s.targets}
    assigned = {n.id for n in ast.walk(fnode) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    state.steady = state.locals - assigned  # parameters f never assigns (a factory called at f's top may capture them)
    _functions_block(fnode.body, state)
    _no_update_in_place(fnode, state.paired)
    start = _body_start(fnode)
    fnode.body[start:start] = state.top
    index = tree.body.index(fnode)
    tree.body[index:index] = state.helpers
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


class _FnState:
    def __init__(self, rng, rate, tree):
        self.rng, self.rate = rng, rate
        self.locals: set[str] = set()
        self.steady: set[str] = set()
        self.nested = False  # inside a branch or loop of f (gradgen binds functions only outside them)
        self.helpers: list = []  # module-level definitions, before f
        self.top: list = []  # statements hoisted to the top of f
        self.paired: set[str] = set()  # names a pair closure returns (`u, v = _cN(...)`)
        self.count = 0
        self.appliers: set[int] = set()
        self.module_functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name != "f"}
        self.imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "math"
                         for a in n.names}
        self.modules = {a.asname or a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"_{base}{self.count}"


def _body_start(fnode) -> int:
    """Where statements may be put at the top of f (after its docstring)."""
    first = fnode.body[0]
    return 1 if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else 0


def _own_walk(node):
    """ast.walk without descending into nested defs and lambdas."""
    stack = [node]
    while stack:
        n = stack.pop(0)
        yield n
        if n is not node and isinstance(n, (ast.FunctionDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def _bind_library_functions(fnode, state: _FnState) -> None:
    bound = {}
    for node in list(_own_walk(fnode)):
        if not isinstance(node, ast.Call) or state.rng.random() >= state.rate * 0.5:
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in state.modules \
                and func.value.id in ("math", "np", "numpy"):
            key = f"{func.value.id}.{func.attr}"
        elif isinstance(func, ast.Name) and (func.id in state.imported or func.id in state.module_functions):
            key = func.id
        else:
            continue
        if key not in bound:
            name = bound[key] = state.fresh("f")
            value = ast.parse(key, mode="eval").body
            if FUNCTION_DEFAULTS and state.rng.random() < 0.3:  # a keyword-only parameter with a function default
                fnode.args.kwonlyargs.append(ast.arg(name))
                fnode.args.kw_defaults.append(value)
            else:
                state.top.append(ast.Assign([ast.Name(name, ast.Store())], value, lineno=0))
        node.func = ast.Name(bound[key], ast.Load())


def _functions_block(stmts: list, state: _FnState) -> None:
    i = 0
    while i < len(stmts):
        stmt = stmts[i]
        if isinstance(stmt, (ast.If, ast.For, ast.While)):
            outer, state.nested = state.nested, True
            for field in ("body", "orelse"):
                _functions_block(getattr(stmt, field), state)
            # after a branch that may return, gradgen takes the rest of f for a branch too
            state.nested = outer or any(isinstance(n, ast.Return) for n in ast.walk(stmt))
        new = None
        pair = i + 1 < len(stmts) and _simple(stmt) and _simple(stmts[i + 1]) \
            and stmt.targets[0].id != stmts[i + 1].targets[0].id
        if pair and state.rng.random() < state.rate * 0.4:
            how = state.rng.choice(["closure", "factory"])
            new = (_closure_pair if how == "closure" else _factory_pair)(stmt, stmts[i + 1], state)
            stmts[i:i + 2] = new
        elif isinstance(stmt, (ast.Assign, ast.AugAssign)) and _outlinable(stmt) and state.rng.random() < state.rate:
            how = state.rng.choice(["closure", "closure", "lambda", "lambda", "apply", "factory"])
            new = {"closure": _closure, "lambda": _lambda, "apply": _apply, "factory": _factory}[how](stmt, state)
            stmts[i:i + 1] = new
        i += len(new) if new else 1


def _split(names: list[str], rng: random.Random, must: set = frozenset()):
    """(parameters, names read by closure): each name goes either way, those in `must` are
    parameters."""
    params = [n for n in names if n in must or rng.random() < 0.5]
    return params, [n for n in names if n not in params]


def _args(params):
    return ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[], kw_defaults=[],
                         defaults=[])


def _with_value(stmt, value):
    if isinstance(stmt, ast.Assign):
        return ast.copy_location(ast.Assign([stmt.targets[0]], value), stmt)
    return ast.copy_location(ast.AugAssign(stmt.target, stmt.op, value), stmt)


def _place(definition, state: _FnState) -> list:
    """The definition, hoisted to the top of f (late binding reads the values at the call)
    or returned to go right before the statement."""
    if state.nested or state.rng.random() < 0.4:
        state.top.append(definition)
        return []
    return [definition]


def _closure(stmt, state: _FnState) -> list:
    params, _ = _split(_reads(stmt.value, state.locals), state.rng)
    name = state.fresh("c")
    body = [ast.Return(stmt.value)]
    shown = [p for p in params if not p.startswith("_") and p != "rs"]  # (numbers: no functions, no random state)
    if state.rng.random() < 0.15 and shown:  # a print inside the closure
        body.insert(0, ast.Expr(ast.Call(ast.Name("print", ast.Load()),
                                         [ast.Constant(name)] + [ast.Name(p, ast.Load()) for p in shown], [])))
    definition = _helper(name, params, body)
    return _place(definition, state) + [_with_value(stmt, _call(name, params, state.rng))]


def _lambda(stmt, state: _FnState) -> list:
    params, _ = _split(_reads(stmt.value, state.locals), state.rng)
    name = state.fresh("l")
    definition = ast.Assign([ast.Name(name, ast.Store())], ast.Lambda(_args(params), stmt.value), lineno=0)
    call = ast.Call(ast.Name(name, ast.Load()), [ast.Name(p, ast.Load()) for p in params], [])
    return _place(definition, state) + [_with_value(stmt, call)]


def _applier(k: int, state: _FnState) -> str:
    name = f"_apply{k}"
    if k not in state.appliers:
        state.appliers.add(k)
        params = [f"x{j}" for j in range(k)]
        call = ast.Call(ast.Name("g", ast.Load()), [ast.Name(p, ast.Load()) for p in params], [])
        state.helpers.append(_helper(name, ["g"] + params, [ast.Return(call)]))
    return name


def _apply(stmt, state: _FnState) -> list:
    """`u = _applyK(g, ...)`: g a module-level helper, a closure, or a lambda in the call."""
    reads = _reads(stmt.value, state.locals)
    how = state.rng.choice(["helper", "closure", "lambda"])
    before = []
    if how == "lambda":
        params, _ = _split(reads, state.rng)
        g = ast.Lambda(_args(params), stmt.value)
    elif how == "closure":
        params, _ = _split(reads, state.rng)
        name = state.fresh("c")
        before = _place(_helper(name, params, [ast.Return(stmt.value)]), state)
        g = ast.Name(name, ast.Load())
    else:
        params = reads
        name = state.fresh("k")  # (not _hN: rewrite's helpers have those names)
        state.helpers.append(_helper(name, params, [ast.Return(stmt.value)]))
        g = ast.Name(name, ast.Load())
    call = ast.Call(ast.Name(_applier(len(params), state), ast.Load()), [g] + [ast.Name(p, ast.Load()) for p in params],
                    [])
    return before + [_with_value(stmt, call)]


def _factory(stmt, state: _FnState) -> list:
    """`_gN = _makeN(<captured>); u = _gN(<the rest>)`, the factory at module level."""
    reads = _reads(stmt.value, state.locals)
    rest, captured = _split(reads, state.rng, {n for n in reads if state.nested and n not in state.steady})
    make, inner, g = state.fresh("make"), state.fresh("inner"), state.fresh("g")
    state.helpers.append(_helper(make, captured, [_helper(inner, rest, [ast.Return(stmt.value)]),
                                                  ast.Return(ast.Name(inner, ast.Load()))]))
    bind = ast.Assign([ast.Name(g, ast.Store())], _call(make, captured, state.rng), lineno=0)
    if state.nested:  # bound at f's top: it captures only parameters f never assigns
        state.top.append(bind)
        return [_with_value(stmt, _call(g, rest, state.rng))]
    return [bind, _with_value(stmt, _call(g, rest, state.rng))]


def _pair_body(first, second):
    u, v = first.targets[0].id, second.targets[0].id
    return [ast.Assign([ast.Name(u, ast.Store())], first.value, lineno=0),
            ast.Assign([ast.Name(v, ast.Store())], second.value, lineno=0),
            ast.Return(ast.Tuple([ast.Name(u, ast.Load()), ast.Name(v, ast.Load())], ast.Load()))]


def _closure_pair(first, second, state: _FnState) -> list:
    """`u = e1; v = e2` -> `u, v = _cN(...)`, a nested def running both. A name it assigns is
    its own local, so those it reads before assigning them are parameters."""
    u, v = first.targets[0].id, second.targets[0].id
    reads = _reads(first.value, state.locals)
    reads += [p for p in _reads(second.value, state.locals) if p != u and p not in reads]
    must = {u, v} & (set(_reads(first.value, {u, v})) | set(_reads(second.value, {v})))
    params, _ = _split(reads, state.rng, must)
    name = state.fresh("c")
    definition = _helper(name, params, _pair_body(first, second))
    target = ast.Tuple([ast.Name(u, ast.Store()), ast.Name(v, ast.Store())], ast.Store())
    state.paired |= {u, v}
    return _place(definition, state) + [ast.copy_location(ast.Assign([target], _call(name, params, state.rng)), first)]


def _no_update_in_place(fnode, names) -> None:
    """`u -= e` -> `u = u - (e)` for a name a pair closure returned, and `u = u.copy()`
    before a write into it (`u[i] *= e`): the closure's own local `u` holds the same array,
    and v was computed from it, so its gradient needs the old numbers that an update in
    place would change (gradgen rightly refuses; soak seeds 1215 #1295, #6039, 1217 #2796).
    The same values, in a new array."""
    for node in list(ast.walk(fnode)):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, stmt in reversed(list(enumerate(block))):
                if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id in names:
                    value = ast.BinOp(ast.Name(stmt.target.id, ast.Load()), stmt.op, stmt.value)
                    block[i] = ast.copy_location(ast.Assign([ast.Name(stmt.target.id, ast.Store())], value), stmt)
                elif _writes_into(stmt) in names:  # `h[i] *= e`: into a copy, as gradgen's message says
                    name = _writes_into(stmt)
                    copy = ast.parse(f"{name} = {name}.copy()").body[0]
                    block.insert(i, ast.copy_location(copy, stmt))


def _writes_into(stmt):
    """The name whose array `stmt` writes into (`h[i] = e`, `h[i] *= e`), if any."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AugAssign) else []
    for t in targets:
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            return t.value.id
    return None


def _factory_pair(first, second, state: _FnState) -> list:
    """`u = e1; v = e2` -> `_p, _q = _makeN(...); u = _p(...); v = _q(...)`: a factory
    returning a tuple of closures. What the second reads of `u` is passed, never captured."""
    u = first.targets[0].id
    r1 = _reads(first.value, state.locals)
    r2 = _reads(second.value, state.locals)
    captured = [n for n in dict.fromkeys(r1 + r2) if n != u and state.rng.random() < 0.5
                and (not state.nested or n in state.steady)]
    rest1 = [n for n in r1 if n not in captured]
    rest2 = [n for n in r2 if n not in captured]
    make, i1, i2 = state.fresh("make"), state.fresh("inner"), state.fresh("inner")
    g1, g2 = state.fresh("g"), state.fresh("g")
    state.helpers.append(_helper(make, captured, [
        _helper(i1, rest1, [ast.Return(first.value)]), _helper(i2, rest2, [ast.Return(second.value)]),
        ast.Return(ast.Tuple([ast.Name(i1, ast.Load()), ast.Name(i2, ast.Load())], ast.Load()))]))
    target = ast.Tuple([ast.Name(g1, ast.Store()), ast.Name(g2, ast.Store())], ast.Store())
    bind = ast.Assign([target], _call(make, captured, state.rng), lineno=0)
    if state.nested:
        state.top.append(bind)
        return [_with_value(first, _call(g1, rest1, state.rng)), _with_value(second, _call(g2, rest2, state.rng))]
    return [bind, _with_value(first, _call(g1, rest1, state.rng)), _with_value(second, _call(g2, rest2, state.rng))]


# ---- prints, asserts and logging -----------------------------------------------------------

def effects(source: str, rng: random.Random, rate: float = 0.12, arrays: bool = False) -> str:
    """`source` with `print(...)`, `logging.info(...)` and always-true `assert`s of variables
    bound at their place (parameters, names assigned earlier on every path to it, loop
    indices) inserted before some of f's statements. Each print starts with a label
    (`p3`), so a run's output tells which prints ran, in which order."""
    tree = ast.parse(source)
    fnode = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f")
    modules = {a.asname or a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    state = _EffectState(rng, rate, modules)
    state.arrays = arrays
    bound = {a.arg for a in fnode.args.args + fnode.args.kwonlyargs} - state.functions(fnode)
    if arrays and any(isinstance(n, ast.AugAssign) for n in ast.walk(fnode)):
        # an array updated in place (`w *= e`): a print reading a name that may share its memory
        # after the update is refused by gradgen's sharing analysis, rightly when it cannot tell
        # (fuzz seed 1203, program 15908: `v = w`, a loop that rebinds v, then `print(v)`)
        return source
    _effects_block(fnode.body, bound, state, top=True)
    if state.logging and "logging" not in modules:
        tree.body.insert(0, ast.Import([ast.alias("logging")]))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


class _EffectState:
    def __init__(self, rng, rate, modules):
        self.rng, self.rate, self.modules = rng, rate, modules
        self.count = 0
        self.logging = False

    @staticmethod
    def functions(fnode) -> set:
        """Names f binds to functions or random states (never printed or asserted on)."""
        names = {a.arg for a, d in zip(fnode.args.kwonlyargs, fnode.args.kw_defaults) if d is not None}
        names |= {"rs"}
        for node in ast.walk(fnode):
            if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Lambda, ast.Attribute, ast.Name, ast.Call)) \
                    and any(isinstance(t, ast.Name) and t.id.startswith(("_f", "_l", "_g")) for t in node.targets):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
                names |= {t.id for t in node.targets[0].elts if isinstance(t, ast.Name) and t.id.startswith("_g")}
        return names

    def statement(self, names: list[str]):
        self.count += 1
        label = f"p{self.count}"
        v = names[0]
        kind = self.rng.choice(["print", "print", "assert", "assert", "logging"])
        if kind == "print":
            return ast.parse(f"print({label!r}, {', '.join(names)})").body[0]
        if kind == "logging":
            self.logging = True
            return ast.parse(f"logging.info('{label} %s', {v})").body[0]
        if self.arrays:
            return ast.parse(self.rng.choice([f"assert np.all(np.isfinite({v}))", f"assert np.all({v} == {v}), 'nan'",
                                              f"assert np.all(np.abs({v}) >= 0.0)"])).body[0]
        options = [f"assert {v} == {v}", f"assert abs({v}) >= 0.0, {label!r}", f"assert {v} - {v} == 0"]
        if "math" in self.modules:
            options.append(f"assert math.isfinite({v})")
        if "np" in self.modules:
            options.append(f"assert np.isfinite({v}), 'not finite'")
        return ast.parse(self.rng.choice(options)).body[0]


def _effects_block(stmts: list, bound: set, state: _EffectState, top: bool = False) -> None:
    bound = set(bound)
    out = []
    for k, stmt in enumerate(stmts):
        docstring = top and k == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        if not docstring and bound and state.rng.random() < state.rate:
            names = sorted(bound)
            state.rng.shuffle(names)
            out.append(state.statement(names[:state.rng.randint(1, min(3, len(names)))]))
        if isinstance(stmt, (ast.If, ast.While)):
            _effects_block(stmt.body, bound, state)
            if stmt.orelse:
                _effects_block(stmt.orelse, bound, state)
        elif isinstance(stmt, ast.For):
            inner = bound | ({stmt.target.id} if isinstance(stmt.target, ast.Name) else set())
            _effects_block(stmt.body, inner, state)
        out.append(stmt)
        bound |= _binds(stmt)
    stmts[:] = out


def _binds(stmt) -> set:
    """Number-valued names a simple statement binds (not functions nor random states)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    else:
        return set()
    if isinstance(stmt.value, (ast.Lambda, ast.Attribute)) and not isinstance(stmt.value, ast.Subscript):
        if isinstance(stmt.value, ast.Lambda) or not isinstance(stmt.value.value, ast.Name) \
                or stmt.value.value.id in ("math", "np", "numpy"):
            return set()
    names = set()
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and not n.id.startswith(("_f", "_l", "_g", "_e")):
                names.add(n.id)
    return names


# ---- random draws --------------------------------------------------------------------------

def draws(source: str, rng: random.Random, arrays: bool = False) -> str:
    """`source` with a random state parameter `rs` and draws made inside f, used as data:
    `noise` starts at 0.0, statements inserted before some of f's statements (in loops and
    branches too) draw into it (`noise = noise + 0.1 * rs.randn() * a`), draw values no one
    reads (`rs.randn()`, `_e1 = rs.uniform(-1.0, 1.0)`: they must still be drawn, or every
    later draw differs), branch on a draw, draw in a loop of their own, or draw inside an
    expression; and every `return e` of f becomes `return e + noise`. Nothing the program
    computed before reads a draw, so its domains and distances from kinks all still hold;
    the value check (generated == original) proves the generated pass draws the original's
    numbers in the original's order. Array programs also draw from NumPy's global state
    (`np.random.normal(size=...)`)."""
    tree = ast.parse(source)
    fnode = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f")
    args = fnode.args
    if args.defaults or args.kwonlyargs or rng.random() < 0.3:
        args.kwonlyargs.append(ast.arg("rs"))
        args.kw_defaults.append(None)
    else:
        args.args.append(ast.arg("rs"))
    params = [a.arg for a in args.args if a.arg in ("a", "b", "c", "d")]
    stack = arrays and "for W in a" in source  # (a is read only by its loop there)
    state = _DrawState(rng, arrays, [p for p in params if not (stack and p == "a")] or ["b"], stack)
    _draws_block(fnode.body, state, top=True)
    if not state.count:  # (at least one draw: an unused `rs` would be a parameter like any other)
        fnode.body[_body_start(fnode):_body_start(fnode)] = state.statements()
    start = _body_start(fnode)
    fnode.body.insert(start, ast.parse("noise = 0.0").body[0])
    for node in _own_walk(fnode):
        if isinstance(node, ast.Return) and node.value is not None:
            node.value = ast.BinOp(node.value, ast.Add(), ast.Name("noise", ast.Load()))
    if arrays:  # (`np.sum(b)` of a float b, returned as `... + b`, looks like an array result to gradgen)
        fnode.returns = ast.Name("float", ast.Load())
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


class _DrawState:
    def __init__(self, rng, arrays, params, stack):
        self.rng, self.arrays, self.params, self.stack = rng, arrays, params, stack
        self.count = 0

    def fresh(self, base):
        self.count += 1
        return f"{base}{self.count}"

    def term(self, p: str) -> str:
        """A draw times a parameter, summed to a number."""
        if not self.arrays:
            return self.rng.choice([f"0.1 * rs.randn() * {p}", f"{p} * rs.normal(0.0, 0.5)",
                                    f"{p} * rs.uniform(-0.5, 0.5) * rs.randn()"])
        shape = "a.shape" if not self.stack else None
        options = [f"0.1 * np.sum({p}) * rs.randn()", f"np.sum({p}) * rs.uniform(-0.5, 0.5)"]
        if shape:
            options += [f"0.1 * np.sum({p} * rs.randn(*{shape}))", f"np.sum({p} * rs.normal(0.0, 0.5, size={shape}))",
                        f"0.1 * np.mean(np.random.normal(size={shape}) * {p})"]
        return self.rng.choice(options)

    def statements(self) -> list:
        self.count += 1
        p = self.rng.choice(self.params)
        kind = self.rng.choice(["use", "use", "eps", "unused", "unused", "branch", "loop", "nested"])
        if kind == "use":
            lines = [f"noise = noise + {self.term(p)}"]
        elif kind == "eps":
            e = self.fresh("eps")
            draw = "rs.randn()" if not self.arrays or self.stack else self.rng.choice(
                ["rs.randn(*a.shape)", "rs.standard_normal(a.shape)"])
            lines = [f"{e} = {draw}", f"noise = noise + 0.1 * {'np.sum(' if self.arrays else '('}{e} * {p})"]
        elif kind == "unused":
            options = ["rs.randn()", f"{self.fresh('_e')} = rs.uniform(-1.0, 1.0)", "rs.randn(2)",
                       f"{self.fresh('_e')} = rs.normal(0.0, 1.0, size=3)"]
            if self.arrays:
                options += ["np.random.normal(size=3)", f"{self.fresh('_e')} = np.random.normal()"]
            lines = [self.rng.choice(options)]
        elif kind == "branch":
            cond = self.rng.choice(["rs.rand() < 0.5", "rs.uniform(0.0, 1.0) > 0.3"])
            lines = [f"if {cond}:", f"    noise = noise + {self.term(p)}", "else:", "    rs.randn()"]
        elif kind == "loop":
            q = self.fresh("q")
            lines = [f"for {q} in range({self.rng.randint(1, 3)}):", f"    noise = noise + {self.term(p)}"]
        else:
            tanh = "np.tanh" if self.arrays else "0.5 * "
            lines = [f"noise = noise + {tanh}({self.term(p)}) * rs.uniform(0.5, 1.0)"]
        return ast.parse("\n".join(lines)).body


def _draws_block(stmts: list, state: _DrawState, top: bool = False) -> None:
    out = []
    for k, stmt in enumerate(stmts):
        docstring = top and k == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        if not docstring and state.rng.random() < (0.35 if top else 0.25):
            out.extend(state.statements())
        if isinstance(stmt, (ast.If, ast.For, ast.While)):
            _draws_block(stmt.body, state)
            if stmt.orelse:
                _draws_block(stmt.orelse, state)
        out.append(stmt)
    stmts[:] = out


# ---- Python lists (issue 10, item 3) -----------------------------------------------------------

def lists(source: str, rng: random.Random, arrays: bool = False) -> str:
    """`source` with Python lists in f: a loop at f's top level records a value it computes
    (`trace_k = []` before it, `trace_k.append(v * 1.0)` at the end of its body: a new value,
    never one a later in-place update would change), and the result adds a small multiple of
    an aggregate of the trace (`sum(trace_k)`, `sum(t * t for t in trace_k)`, `np.sum(np.stack(
    trace_k))` when non-empty, an indexed `trace_k[-1]`, a comprehension over its indices with
    an integer `if`); or the result is returned through a list (`sum([e for _ in range(1)])`,
    `parts = [e]; return parts[0]`). The function changes, and stays smooth: the fuzzer
    checks the gradient of whatever it is."""
    tree = ast.parse(source)
    fnode = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f")
    loops = [i for i, s in enumerate(fnode.body) if isinstance(s, ast.For) and _recorded(s)]
    ret = fnode.body[-1]
    if not isinstance(ret, ast.Return) or ret.value is None \
            or any(isinstance(n, ast.Return) for s in fnode.body[:-1] for n in ast.walk(s)):
        return source  # (an early return puts what follows it in a branch: lists are made outside those)
    if loops and rng.random() < 0.7:
        i = rng.choice(loops)
        loop, name = fnode.body[i], f"trace{i}"
        value = _recorded(loop)
        loop.body.append(ast.parse(f"{name}.append({value} * 1.0)").body[0])
        fnode.body.insert(i, ast.parse(f"{name} = []").body[0])
        forms = [f"sum({name})", f"sum(t * t for t in {name})", f"len({name}) * 0.5",
                 f"sum({name}[k] for k in range(len({name})) if k % 2 == 0)",
                 f"sum([{name}[k] * {name}[k] for k in range(len({name})) if k >= 1])"]
        forms += [f"({name}[-1] if len({name}) > 0 else 0.0)", f"sum(t * t for t in {name}[1::2])",
                  f"sum(t for t in reversed({name}))"]
        if arrays:  # (np.stack makes an array: scalar programs keep to what sympy follows)
            forms += [f"(np.sum(np.stack({name})) if len({name}) > 0 else 0.0)", f"np.sum(sum({name}))",
                      f"(np.sum(np.vstack({name}) ** 2) if len({name}) > 0 else 0.0)"]
        aggregate = rng.choice(forms)
        if arrays:
            aggregate = f"np.sum({aggregate})"
        ret.value = ast.parse(f"({ast.unparse(ret.value)}) + 0.01 * {aggregate}", mode="eval").body
    else:
        text = ast.unparse(ret.value)
        if rng.random() < 0.5:
            ret.value = ast.parse(f"sum([{text} for _ in range(1)])", mode="eval").body
        else:
            fnode.body.insert(len(fnode.body) - 1, ast.parse(f"parts = [{text}]").body[0])
            ret.value = ast.parse("parts[0]", mode="eval").body
    # (drawn from the program itself: the draws above, and the rewrites after, are unchanged)
    _lists_in_loops(fnode, random.Random(f"lists-in-loops:{source}"), arrays)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _lists_in_loops(fnode, rng: random.Random, arrays: bool) -> None:
    """Most of the time, a list made inside a loop body (of any loop of f, nested or in a
    branch) and used up there: `parts = [v * 1.0, v * 0.5]` (or built by append, by a
    comprehension, by a loop of appends, or in both branches of an `if` on the loop
    counter), then `acc = acc + <aggregate of parts>`; `acc = 0.0` starts f and the result
    adds `0.01 * acc`. A new list every trip: the backward pass must pop each trip's own."""
    loops = [n for n in _own_nodes(fnode.body) if isinstance(n, (ast.For, ast.While)) and _values_of(n)]
    if rng.random() < 0.3:
        return
    if loops:
        k = rng.randrange(len(loops))
        loop, v = loops[k], rng.choice(_values_of(loops[k]))
    else:  # a loop of its own, before the return, over a parameter's value
        params = [a.arg for a in fnode.args.args if a.arg != "rs"]
        if not params:
            return
        k, v = 0, rng.choice(params)
        loop = ast.parse(f"for _n{k} in range(2):\n    pass").body[0]
        loop.body = []
        fnode.body.insert(len(fnode.body) - 1, loop)
    p, acc = f"parts{k}", f"acc{k}"
    forms = [([f"{p} = [{v} * 1.0, {v} * 0.5]"], f"sum({p})"),
             ([f"{p} = [{v} * 0.5]", f"{p}.append({p}[-1] * {v})"], f"{p}[0] * {p}[-1]"),
             ([f"{p} = [{v} * (j + 1.0) for j in range(2)]"], f"sum(t * t for t in {p})"),
             ([f"{p} = []", f"for _m{k} in range(2):\n    {p}.append({v} * (_m{k} + 0.5))"], f"len({p}) * 0.25 + {p}[-1]")]
    if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Call) \
            and getattr(loop.iter.func, "id", None) == "range":
        i = loop.target.id
        forms.append(([f"if {i} % 2 == 0:\n    {p} = [{v} * 1.0, {v} * 0.5]\nelse:\n    {p} = [{v} * 0.25]\n"
                       f"    {p}.append({v} * 0.5)"], f"{p}[0] + {p}[-1] * len({p})"))
    if arrays:
        forms += [([f"{p} = [{v} * 1.0, {v} * 0.5]"], f"np.sum(np.stack({p}))"),
                  ([f"{p} = [{v} * (j + 1.0) for j in range(2)]"], f"np.sum(np.concatenate([np.ravel(q) for q in {p}]))")]
    made, aggregate = rng.choice(forms)
    if arrays:
        aggregate = f"np.sum({aggregate})"
    loop.body += [ast.parse(text).body[0] for text in made] + [ast.parse(f"{acc} = {acc} + {aggregate}").body[0]]
    first = fnode.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value,
                                                                                                     str)
    fnode.body.insert(1 if docstring else 0, ast.parse(f"{acc} = 0.0").body[0])
    ret = fnode.body[-1]
    ret.value = ast.parse(f"({ast.unparse(ret.value)}) + 0.01 * {acc}", mode="eval").body


def _values_of(loop) -> list:
    """The names the loop's body assigns at its own top level, counters (`k = k + 1`) apart."""
    names = []
    for s in loop.body:
        targets = [s.target] if isinstance(s, ast.AugAssign) else getattr(s, "targets", [])
        counter = isinstance(s, ast.Assign) and isinstance(s.value, ast.BinOp) and \
            isinstance(s.value.right, ast.Constant) and type(s.value.right.value) is int
        names += [t.id for t in targets if isinstance(t, ast.Name) and not counter and t.id not in names
                  and not t.id.startswith(("_f", "_g", "_l", "_e"))]
    return names


def _own_nodes(stmts):
    """The nodes of `stmts`, not those of a nested def or lambda (their loops are theirs)."""
    stack = list(stmts)
    while stack:
        node = stack.pop(0)
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _recorded(loop) -> str | None:
    """A name the loop's body assigns at its own top level (the last such), or None."""
    names = [t.id for s in loop.body for t in ([s.target] if isinstance(s, ast.AugAssign) else
                                               getattr(s, "targets", []))
             if isinstance(t, ast.Name) and not t.id.startswith(("_f", "_g", "_l", "_e"))]
    return names[-1] if names else None
