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
    "einsum": lambda em, args, kw: _einsum(em, args, kw[0].value),
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


def _einsum(em, operands, subscripts):
    """`np.einsum(subscripts, *operands)`, of two or more operands `einsum_matmul(subscripts,
    *operands)` (EINSUM_MATMUL: each letter one length, checked; two operands in BLAS)."""
    if len(operands) < 2:
        return em._numpy_call("einsum", [subscripts, *operands], [])
    em.used_helpers.add("einsum_matmul")
    return ast.Call(ast.Name("einsum_matmul"), [subscripts, *operands], [])


# np.einsum's own loop runs every letter's length in turn, in C but without BLAS: on a stacked
# product such as gmm's "kij,nkj->nki" (1000 x 5 2x2 products) it is 10-30x slower than one
# matmul of the operands transposed and reshaped, and so is the gradient's "nki,nkj->kij". Small
# operands (a loop over 3x3 matrices) keep np.einsum: there the reshapes would cost more.
# np.einsum also stretches a letter of length 1 in one operand to its length in another; the
# gradient of an operand (an einsum back to its letters) then has the other's length. A letter
# of the output is summed back (gradgen.transform.reverse.expression._einsum_stretches); a
# summed one is refused when the code runs (tests/test_einsum_matmul.py found it: "e,e->").
EINSUM_MATMUL = ((), '''def einsum_matmul(subscripts, *operands):
    """np.einsum(subscripts, *operands), each summed letter one length in every operand (a
    length 1 stretched would give a gradient of the wrong shape); two large operands as one matmul, the
    letters both keep stacked and those they sum multiplied out in BLAS (np.einsum's own loop
    is 10-30x slower there)."""
    inputs, out = subscripts.split("->")
    parts, operands = inputs.split(","), [np.asarray(x) for x in operands]
    sizes, stretched = {}, False
    for part, x in zip(parts, operands):
        for c, n in zip(part, x.shape):
            if sizes.setdefault(c, n) == n:
                continue
            if c not in out:
                raise ValueError(
                    f"np.einsum({subscripts!r}): letter {c}, summed, has lengths {sizes[c]} and {n}; the "
                    "gradient needs one length per summed letter: np.broadcast_to the operand of length 1 first"
                )
            stretched, sizes[c] = True, max(n, sizes[c])
    if len(operands) != 2 or stretched or operands[0].size * operands[1].size < 4096:
        return np.einsum(subscripts, *operands)
    (sa, sb), (a, b) = parts, operands
    if any(c not in sb + out for c in sa):  # summed in a alone: summed first
        a = np.sum(a, axis=tuple(i for i, c in enumerate(sa) if c not in sb + out))
        sa = "".join(c for c in sa if c in sb + out)
    if any(c not in sa + out for c in sb):
        b = np.sum(b, axis=tuple(i for i, c in enumerate(sb) if c not in sa + out))
        sb = "".join(c for c in sb if c in sa + out)
    stacked = [c for c in out if c in sa and c in sb]
    left, right = [c for c in out if c not in sb], [c for c in out if c not in sa]
    summed = [c for c in sa if c not in out]
    lengths, inner = [sizes[c] for c in stacked], 1
    for c in summed:
        inner *= sizes[c]
    a = a.transpose([sa.index(c) for c in stacked + left + summed]).reshape(lengths + [-1, inner])
    b = b.transpose([sb.index(c) for c in stacked + summed + right]).reshape(lengths + [inner, -1])
    product = (a @ b).reshape(lengths + [sizes[c] for c in left + right])
    return product.transpose([(stacked + left + right).index(c) for c in out])
''')


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
