"""How the primitives without a plain call are spelled (a part of stage 6, emit): `x.T`, a
tuple, NumPy functions taking a list, Python lists and their gradients' rows, a part of a
structured parameter by its path, and the operators. gradgen.codegen.emit's Emitter looks a
primitive up here before it writes a call."""

from __future__ import annotations

import ast

from gradgen.ir.nodes import Field


# primitives written in a shape of their own: `x.T`, a tuple, NumPy functions taking a list
SPECIAL = {
    "T": lambda em, args, kw: ast.Attribute(args[0], "T"),
    "tuple": lambda em, args, kw: ast.Tuple(args),
    "sum_list": lambda em, args, kw: em._numpy_call("sum", [ast.List(args)], kw),
    "concatenate": lambda em, args, kw: em._numpy_call("concatenate", [ast.List(args)], kw),
    "stack": lambda em, args, kw: em._numpy_call("stack", [ast.List(args)], kw),
    "hstack": lambda em, args, kw: em._numpy_call("hstack", [ast.List(args)], kw),
    "vstack": lambda em, args, kw: em._numpy_call("vstack", [ast.List(args)], kw),
    "column_stack": lambda em, args, kw: em._numpy_call("column_stack", [ast.List(args)], kw),
    "astype": lambda em, args, kw: ast.Call(ast.Attribute(args[0], "astype"), [kw[0].value] if kw else [], []),
    # Python lists (gradgen.rules.lists): made, read, stacked; their gradients unstacked and popped
    "list": lambda em, args, kw: ast.List(args),
    "list_get": lambda em, args, kw: ast.Subscript(args[0], args[1]),
    "stack_list": lambda em, args, kw: em._numpy_call("stack", args, kw),
    "concatenate_list": lambda em, args, kw: em._numpy_call("concatenate", args, kw),
    "vstack_list": lambda em, args, kw: em._numpy_call("vstack", args, kw),
    "hstack_list": lambda em, args, kw: em._numpy_call("hstack", args, kw),
    "array_list": lambda em, args, kw: em._numpy_call("array", args, []),
    "unstack": lambda em, args, kw: ast.Call(ast.Name("list"), [_rows(em, args[0], kw)], []),
    "pop": lambda em, args, kw: ast.Call(ast.Attribute(args[0], "pop"), [], []),
    "list_zeros": lambda em, args, kw: ast.BinOp(ast.List([ast.Constant(0.0)]), ast.Mult(),
                                                 ast.Call(ast.Name("len"), args, [])),
    # structured parameters (gradgen.rules.trees): a part read by its path, its length, its keys
    "tree_get": lambda em, args, kw: path(args[0], args[1:]),
    "tree_whole": lambda em, args, kw: path(args[0], args[1:]),
    "odeint": lambda em, args, kw: _odeint(em, args, kw),
    "tree_data": lambda em, args, kw: path(args[0], args[1:]),
    "tree_len": lambda em, args, kw: ast.Call(ast.Name("len"), [path(args[0], args[1:])], []),
    "tree_keys": lambda em, args, kw: ast.Call(ast.Name("list"), [path(args[0], args[1:])], []),
    "range": lambda em, args, kw: ast.Call(ast.Name("range"), args, []),
    "einsum": lambda em, args, kw: em._numpy_call("einsum", [kw[0].value] + args, []),
    "range_slice": lambda em, args, kw: ast.Subscript(ast.Call(ast.Name("range"), [args[0]], []),
                                                      ast.Slice(*[None if _is_none(a) else a for a in args[1:]])),
    # gradgen.stop_gradient(x) and a custom_vjp call (gradgen/frontend/custom_calls.py): just the value
    "stop_gradient": lambda em, args, kw: args[0],
    "custom_vjp": lambda em, args, kw: args[0],
    "custom_estimator": lambda em, args, kw: args[0],
}


def _odeint(em, args, kw):
    """`scipy.integrate.odeint(f, y0, t, (a, b), rtol=...)`: the function from its static
    parameter, the args as one tuple (gradgen.rules.integrate)."""
    given = [k for k in kw if k.arg not in ("func", "func_vjp")]
    func = next(k.value for k in kw if k.arg == "func")
    positional = [func, *args[:2]] + ([ast.Tuple(list(args[2:]))] if len(args) > 2 else [])
    return ast.Call(em._attr("scipy.integrate", "odeint"), positional, given)


def path(root, steps):
    """`root[k1][k2]...`: one subscript per step of the path, or `.W` for a field (Field)."""
    for step in steps:
        field = isinstance(step, ast.Constant) and isinstance(step.value, Field)
        root = ast.Attribute(root, str(step.value)) if field else ast.Subscript(root, step)
    return root


def _is_none(node):
    return isinstance(node, ast.Constant) and node.value is None


def _rows(em, g, kw):
    """g's rows along the stacked axis: g itself for axis 0, else g with that axis moved first."""
    axis = next((k.value for k in kw if k.arg == "axis"), ast.Constant(0))
    if isinstance(axis, ast.Constant) and axis.value == 0:
        return g
    return em._numpy_call("moveaxis", [g, axis, ast.Constant(0)], [])


def operator_node(prim, args):
    """A primitive with an operator spelling (`a + b`, `-a`, `a < b`, `a and b`) as its AST."""
    op = prim.operator
    if issubclass(op, ast.unaryop):
        return ast.UnaryOp(op(), args[0])
    if issubclass(op, ast.boolop):
        return ast.BoolOp(op(), args)
    if issubclass(op, ast.cmpop):
        return ast.Compare(args[0], [op()], [args[1]])
    return ast.BinOp(args[0], op(), args[1])
