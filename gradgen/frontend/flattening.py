"""`flatten(params)` inside a compiled function (gradgen.flatten, autograd.misc.flatten).

`v, _ = flatten(params)` and `flatten(params)[0]` give the vector of params' leaves, raveled
and joined (a dict's by its sorted keys): of a structured parameter or a part of one
(`flatten(params[1])`), the primitive tree_flatten, whose gradient is cut back into the
leaves and added at the same path of the parameter's gradient (gradgen.rules.trees); of a
list, tuple or dict written in the call (`flatten([W, b])`), np.concatenate of each item's
vector; of any other value (an array, a number), np.ravel. The function flatten returns
beside the vector (`unflatten`) may be bound and passed on, but calling it inside a compiled
function is refused: flatten the parameter outside the loss, or read its parts.
"""

from __future__ import annotations

import ast

from gradgen.frontend import inactive
from gradgen.frontend.closures import LibraryFunction
from gradgen.frontend.structured import SliceStep

SPELLINGS = {"gradgen.flatten", "gradgen.trees.flatten", "autograd.misc.flatten", "autograd.misc.flatten.flatten"}
UNFLATTEN = "gradgen.trees.Unflatten"  # the function value flatten returns beside the vector


def called(m, node):
    """Whether `node` calls flatten (by any of its spellings)."""
    return isinstance(node, ast.Call) and m.qualified(node.func) in SPELLINGS


def assign(lw, scope, target, node, stmt):
    """`v, unflatten = flatten(x)`, `[v, _] = ...`: the names bound (a pair kept under one
    name is refused: its unflatten is no value a NumPy call could take)."""
    if not isinstance(target, (ast.Tuple, ast.List)) or len(target.elts) != 2 \
            or not all(isinstance(t, ast.Name) for t in target.elts):
        raise inactive.final(lw.m.error(target, f"'{lw.m.segment(node)}' returns (vector, unflatten): unpack it "
                                                "into two names (v, unflatten = ...) or take its [0]"))
    for t, value in zip(target.elts, _pair(lw, scope, node)):  # (the vector named as the source names it)
        lw._bind(scope, t.id, value, stmt)


def item(lw, scope, node):
    """`flatten(x)[0]` (the vector) or `flatten(x)[1]` (the unflatten function)."""
    index = node.slice.value if isinstance(node.slice, ast.Constant) and type(node.slice.value) is int else None
    if index not in (0, 1, -1, -2):
        raise inactive.final(lw.m.error(node, f"'{lw.m.segment(node.value)}' returns (vector, unflatten): take "
                                              "its [0] or [1]"))
    return _pair(lw, scope, node.value)[index]


def refuse_call(lw, node, callee):
    """A call of flatten used as one value, or of the unflatten function it returned: refused."""
    if isinstance(callee, LibraryFunction) and callee.qualified == UNFLATTEN:
        name = lw.m.segment(node.func)
        raise inactive.final(lw.m.error(node, f"'{name}' is the unflatten function gradgen.flatten returned: "
                                              "calling it inside a compiled function is not supported; read the "
                                              "parameter's parts instead, or flatten and unflatten outside the "
                                              "function gradgen differentiates (flatten_func does)"))
    if called(lw.m, node):
        raise inactive.final(lw.m.error(node, f"'{lw.m.segment(node)}' returns (vector, unflatten): unpack it "
                                              "(v, _ = ...) or take its [0]"))


def _pair(lw, scope, node):
    if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
        raise inactive.final(lw.m.error(node, f"'{lw.m.segment(node.func)}' takes one argument, the value to "
                                              "flatten"))
    return _vector(lw, scope, node.args[0]), LibraryFunction(UNFLATTEN, lw.m.segment(node.func))


def _vector(lw, scope, node):
    """The IR of the vector flatten makes of `node`."""
    ref = lw._ref(scope, node)
    if ref is not None:
        if any(isinstance(step, SliceStep) for step in ref.path):
            raise inactive.final(lw.m.error(node, f"flatten of a run of parts ('{lw.m.segment(node)}') is not "
                                                  "supported: flatten a list of them ([...]) or the whole parameter"))
        return lw._call("tree_flatten", (ref.root, *ref.path), "builtins", node)
    if isinstance(node, (ast.List, ast.Tuple)):
        return _joined(lw, node, [_vector(lw, scope, e) for e in node.elts])
    if isinstance(node, ast.Dict):
        keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
        if any(k is None for k in keys) or len(set(map(type, keys))) > 1:
            raise inactive.final(lw.m.error(node, "flatten of a dict written here needs constant keys of one kind "
                                                  "(they are taken in sorted order)"))
        order = sorted(range(len(keys)), key=lambda k: keys[k])
        return _joined(lw, node, [_vector(lw, scope, node.values[k]) for k in order])
    lw._needs_structure(scope, node, soft=True)  # flatten(params): params holds parts (an array works too)
    items = lw._args_tuple(scope, node)
    if items is not None:  # a tuple of values (pair = (W, b)): each one's entries
        return _joined(lw, node, [lw._call("ravel", (v,), "numpy", node) for v in items.items])
    value = lw.expr(scope, node)
    if lw._is_list(value):
        raise inactive.final(lw.m.error(node, f"flatten of the list '{lw.m.segment(node)}' made in this function "
                                              "is not supported: flatten a list written in the call "
                                              "(flatten([W, b])), or a parameter"))
    return lw._call("ravel", (value,), "numpy", node)


def _joined(lw, node, parts):
    if not parts:
        raise inactive.final(lw.m.error(node, "flatten of an empty container has no entries to differentiate"))
    if len(parts) == 1:
        return parts[0]
    return lw._call("concatenate", tuple(parts), "numpy", node)
