"""Comprehensions and `sum(...)` as the loops they stand for.

`[f(x) for x in xs if x > 0]` is a list built by a loop; `sum(f(x) for x in xs)` is a total
built by one. gradgen lowers each as the function Python itself runs for it: a nested
function of no arguments, defined where the comprehension is, whose loop variables are its
own (they never leak into, nor clobber, the caller's names) and which reads the caller's
variables as a closure does. The lowering inlines that function like any other helper, so
the loop, the appends and the total are differentiated by the machinery every loop uses.
"""

from __future__ import annotations

import ast


def list_builder(node: ast.ListComp, name: str) -> ast.FunctionDef:
    """`[elt for ... if ...]` as `def name(): name = []; for ...: if ...: name.append(elt);
    return name`."""
    append = ast.Expr(ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "append", ast.Load()), [node.elt], []))
    start = ast.Assign([ast.Name(name, ast.Store())], ast.List([], ast.Load()))
    return _function(node, start, _loops(node.generators, ast.copy_location(append, node.elt)), name)


def total_builder(node: ast.Call, name: str = "total") -> ast.FunctionDef:
    """`sum(elt for ...)`, `sum([elt for ...])` or `sum(xs)` (a list variable) as
    `def total(): total = 0; for ...: total = total + elt; return total` (`sum(..., start)`
    starts there): the same additions, in the same order, as Python's sum."""
    items = node.args[0]
    start = node.args[1] if len(node.args) > 1 else ast.copy_location(ast.Constant(0), node)
    if isinstance(items, (ast.GeneratorExp, ast.ListComp)):
        generators, elt = items.generators, items.elt
    else:  # a list variable: for item in xs
        target = ast.Name(f"{name}_item", ast.Store())
        generators = [ast.comprehension(target, items, [], 0)]
        elt = ast.copy_location(ast.Name(f"{name}_item", ast.Load()), items)
    add = ast.BinOp(ast.Name(name, ast.Load()), ast.Add(), elt)
    update = ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], ast.copy_location(add, elt)), elt)
    first = ast.Assign([ast.Name(name, ast.Store())], start)
    return _function(node, first, _loops(generators, update), name)


def conditional(node: ast.IfExp) -> ast.FunctionDef:
    """`body if test else orelse` whose branches run statements (a helper with a body, a
    list's element read, a draw): `def (): if test: return body; return orelse`, so that
    only the branch taken runs, as in Python."""
    branch = ast.copy_location(ast.If(node.test, [ast.copy_location(ast.Return(node.body), node.body)], []), node)
    return _value_function(node, "conditional", [branch, ast.copy_location(ast.Return(node.orelse), node.orelse)])


def short_circuit(node: ast.BoolOp) -> ast.FunctionDef:
    """`a and b and c` (or `or`) whose later operands run statements: `def (): if not a:
    return False; if not b: return False; return bool(c)` (for `or`: `if a: return True`),
    so that an operand runs only when Python would evaluate it."""
    stop = isinstance(node.op, ast.Or)  # `or` stops at the first true operand, `and` at the first false one
    body = []
    for operand in node.values[:-1]:
        test = operand if stop else ast.copy_location(ast.UnaryOp(ast.Not(), operand), operand)
        leave = ast.copy_location(ast.Return(ast.copy_location(ast.Constant(stop), operand)), operand)
        body.append(ast.copy_location(ast.If(test, [leave], []), operand))
    last = node.values[-1]
    body.append(ast.copy_location(ast.If(last, [ast.copy_location(ast.Return(ast.Constant(True)), last)], []), last))
    body.append(ast.copy_location(ast.Return(ast.Constant(False)), last))
    return _value_function(node, "short_circuit", body)


def _value_function(node, kind, body):
    """`def <kind at line:col>(): body`, its result variable named `value`."""
    fnode = _nullary(node, kind, body)
    fnode.result_name = "value"  # (the variable every return assigns: `value = ...`)
    return fnode


def _nullary(node, kind, body):
    """`def <kind at line:col>(): body`, placed at `node` (named by its place, so that ones
    nested in one another are different functions)."""
    fnode = ast.FunctionDef(name=f"{kind} at {node.lineno}:{node.col_offset + 1}",
                            args=ast.arguments([], [], None, [], [], None, []), body=body,
                            decorator_list=[], returns=None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        fnode.type_params = []
    return ast.fix_missing_locations(ast.copy_location(fnode, node))


def unsupported(node) -> str | None:
    """What in a comprehension gradgen does not lower, if anything."""
    if any(g.is_async for g in node.generators):
        return "an async comprehension is not supported"
    return None


def _loops(generators, innermost):
    """The nested `for`/`if` statements of the comprehension's generators, innermost last."""
    body = [innermost]
    for generator in reversed(generators):
        for test in reversed(generator.ifs):
            body = [ast.copy_location(ast.If(test, body, []), test)]
        body = [ast.copy_location(ast.For(generator.target, generator.iter, body, []), generator.iter)]
    return body


def _function(node, start, loops, result):
    """`def <comprehension>(): start; loops; return result`, placed at `node`."""
    body = [ast.copy_location(start, node), *loops,
            ast.copy_location(ast.Return(ast.Name(result, ast.Load())), node)]
    return _nullary(node, "comprehension", body)
