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
            if packable and state.rng.random() < 0.5:
                stmts[i:i + 2] = [_pack(stmt, second)]
            else:
                stmts[i:i + 2] = [_outline_pair(stmt, second, state)]
        elif isinstance(stmt, (ast.Assign, ast.AugAssign)) and _outlinable(stmt) and state.rng.random() < state.rate:
            stmts[i] = _outline(stmt, state)
        i += 1


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
