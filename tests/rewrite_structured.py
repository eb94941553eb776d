"""Fuzzer rewrite: an array program's two parameters `a, b` passed as one structured
parameter `params` (issue 10, item 2), in the forms users write: a tuple unpacked, a list
indexed (`params[-1]`), a dict by key, a nested dict reached through a name, a list of one
pair unpacked with a star, a helper that takes the structure and returns its parts (the
forms a 2-d array would satisfy too are annotated `params: list`, as the checker tells users
to); and,
half the time, a penalty that walks the structure (`for p in params`, `.values()`,
`enumerate`, a nested loop over layers) before the parts are read. The function is the
same function of the same numbers (plus a smooth penalty), so the checker's rows (one per
leaf: `params[0]`, `params['a']`, ...) must all agree with finite differences.
"""

from __future__ import annotations

import ast
import random

ADD = "extra = extra + 0.01 * np.sum(p * p)"
# form -> (how params is built from a and b, the statements that read a and b back,
#          a penalty that visits each array once, the helper it needs)
FORMS = {
    "tuple": (lambda a, b: (a, b), ["a, b = params"], f"for p in params:\n    {ADD}", None),
    "list": (lambda a, b: [a, b], ["a = params[0]", "b = params[-1]"],
             f"for k, p in enumerate(params):\n    {ADD.replace('0.01', '0.01 * (k + 1)')}", None),
    "dict": (lambda a, b: {"a": a, "b": b}, ['a = params["a"]', 'b = params["b"]'],
             f"for p in params.values():\n    {ADD}", None),
    "nested dict": (lambda a, b: {"layer": {"w": a}, "b": b},
                    ['layer = params["layer"]', 'a = layer["w"]', 'b = params["b"]'],
                    f"for name, p in params['layer'].items():\n    {ADD}\np = params['b']\n{ADD}", None),
    "starred": (lambda a, b: [(a, b)], ["*rest, (a, b) = params"],
                f"for layer in params:\n    for p in layer:\n        {ADD}", None),
    "helper": (lambda a, b: (a, b), ["a, b = _parts(params)"],
               f"for p in reversed(params):\n    {ADD}", "def _parts(p):\n    return p[0], p[1]\n"),
}


def structured(source: str, point: dict, rng: random.Random) -> tuple[str, dict]:
    """`def f(a, b, *, ...)` as `def f(params, *, ...)` with a, b read back from params."""
    tree = ast.parse(source)
    fnode = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f")
    if [a.arg for a in fnode.args.args] != ["a", "b"] or fnode.args.defaults:
        return source, point
    form = rng.choice(sorted(FORMS))
    build, reads, penalty, helper = FORMS[form]
    params = build(point["a"], point["b"])
    annotate = form in ("list", "helper") or rng.random() < 0.3  # (indexed by position only: say it is a list)
    fnode.args.args = [ast.arg("params", ast.Name(type(params).__name__, ast.Load()) if annotate else None)]
    body = [ast.parse(line).body[0] for line in reads]
    if rng.random() < 0.5:  # a penalty over every array of the structure, before any part is read or updated
        body = ast.parse(f"extra = 0.0\n{penalty}").body + body
        for ret in _returns(fnode.body):
            ret.value = ast.BinOp(ret.value, ast.Add(), ast.Name("extra", ast.Load()))
    fnode.body = body + fnode.body
    if helper is not None:
        tree.body.insert(tree.body.index(fnode), ast.parse(helper).body[0])
    rest = {k: v for k, v in point.items() if k not in ("a", "b")}
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n", {"params": params, **rest}


def _returns(stmts):
    """The function's own `return value` statements (not those of a def or lambda inside)."""
    for stmt in stmts:
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            yield stmt
        elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                yield from _returns(getattr(stmt, field, []) or [])
