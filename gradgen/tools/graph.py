"""`gradgen graph`: the computational graph of one function at one point, as the lessons
draw it.

The function is compiled by gradgen's own pipeline (so everything `compile` refuses is
refused here too, with the same message), then its lowered IR is followed at the point,
as `check`'s sympy trace does: one node per variable (parameters, constants the function
reads, intermediates, the result) and one per operation (each primitive call of each
statement). Every node gets its forward value; a reverse sweep over the graph, with the
rule table's local derivatives evaluated numerically on the edges, gives each node that
depends on a differentiated parameter its gradient dL/dnode (L the returned value).

Control flow is followed at the point: the branch taken, and each loop unrolled for as
many iterations as it runs there, within MAX_NODES (past that, a located refusal).
Arrays are drawn by shape and norm; their edges carry the vector-Jacobian product rule
(`g * (1 - h ** 2)`, g the gradient arriving at the operation), since their local
derivative is a Jacobian. The user's file is never run (a `--inputs` builder is, as for
`check`); only gradgen's own IR is evaluated. gradgen/tools/graph_svg.py lays out and writes it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import numpy as np

from gradgen.api import compile_source
from gradgen.errors import CompileError
from gradgen.ir.nodes import Const, Var
from gradgen.rules.table import TABLE
from gradgen.tools.graph_build import MAX_NODES, Builder, Edge, Node, drawable, format_value, rule_for
from gradgen.verify.finite import point_at

FORMULA_CHARS = 22  # an edge shows its rule as a formula up to this length, else just the number

__all__ = ["Graph", "Node", "Edge", "graph_source", "format_value", "summary", "is_array", "MAX_NODES"]


@dataclass
class Graph:
    """The drawn graph: nodes in topological order (inputs first), edges between them."""

    function: str
    result_name: str
    point: dict
    wrt: list
    nodes: list
    edges: list

    def node(self, label, kind=None):
        """The last node drawn with `label` (and `kind`), for tests and readers."""
        found = [n for n in self.nodes if n.label == label and (kind is None or n.kind == kind)]
        if not found:
            raise KeyError(label)
        return found[-1]


def graph_source(source, filename="<string>", function=None, wrt=None, at=None) -> Graph:
    """The graph of `function` (the only compiled function if None) of `source` at the
    point `at` (a dict; the function's defaults fill in the rest)."""
    compiled = compile_source(source, filename, [function] if function else None, wrt)
    cf = _chosen(compiled, filename)
    module = compiled.module
    point = _point(cf, module, at or {})
    builder = Builder(cf.ir, module, point, cf.wrt)
    nodes, edges = builder.build()
    graph = Graph(cf.name, cf.ir.result_name, point, list(cf.wrt), nodes, edges)
    _sweep(graph, builder)
    return graph


def _chosen(compiled, filename):
    """The one compiled function, or the one no other compiled function calls (the loss,
    not its helpers)."""
    functions = compiled.functions
    if len(functions) > 1:
        calls = {f.name: {n.func.id for n in ast.walk(compiled.module.functions[f.name])
                          if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)} for f in functions}
        functions = [f for f in functions if not any(f.name in calls[g.name] for g in functions if g is not f)]
    if len(functions) != 1:
        names = ", ".join(f.name for f in functions or compiled.functions)
        raise CompileError(f"this file has several functions to draw ({names}); name one with --function NAME",
                           filename)
    return functions[0]


def _point(cf, module, at):
    """Each parameter's value: from `at`, else its default; numbers and arrays only."""
    fnode = module.functions[cf.name]
    params = [p for p in cf.ir.params if not p.kept_default]
    names = {p.name for p in params}
    for name in at:
        if name not in names:
            listed = ", ".join(p.name for p in params) or "none"
            raise CompileError(f"no parameter '{name}' in '{cf.name}' (from --at or --inputs); the parameters "
                               f"are: {listed}", module.filename)
    missing = lambda p: module.error(fnode, f"no value for parameter '{p.name}' of '{cf.name}': the graph is "
                                            "drawn at a point; give it with --at name=value,... or --inputs FILE:FUNC")
    point = point_at(params, at, missing)
    for p in params:
        if not drawable(point[p.name]) or (p.structured and not isinstance(point[p.name], np.ndarray)):
            raise module.error(fnode, f"parameter '{p.name}' of '{cf.name}' is a {type(point[p.name]).__name__} "
                                      "here: gradgen graph draws functions of numbers and arrays")
    return point


def is_array(value):
    return isinstance(value, np.ndarray) and value.ndim > 0


def summary(value):
    """A value as a node shows it: a number, or an array's shape and norm."""
    if is_array(value):
        return f"{value.shape} array, norm {format_value(np.linalg.norm(value))}"
    return format_value(value)


# ---- the reverse sweep -----------------------------------------------------------------------

def _sweep(graph, builder):
    """dL/dnode for every active node: from the result back, upstream gradient times local
    gradient along each edge, summed where a value fans out; each edge labelled with its
    local derivative at the point."""
    nodes = graph.nodes
    inputs = {}
    for e in graph.edges:
        inputs.setdefault(e.dst, []).append(e)
    result = next(n for n in nodes if n.result)
    if result.active:
        result.grad = _ones(result.value)
    for node in reversed(nodes):
        for edge in inputs.get(node.id, ()):
            src = nodes[edge.src]
            if edge.kind == "assign" or not src.active:
                continue
            if not node.active:  # piecewise constant (floor, a comparison): no gradient passes
                edge.local, edge.label = 0.0, "0"
                continue
            edge.local, edge.label = _local(node, edge, src, builder)
            if node.grad is not None:
                part = _unbroadcast(_contribution(node, edge, node.grad, builder), src.value)
                src.grad = part if src.grad is None else src.grad + part
        if node.grad is not None:
            for edge in inputs.get(node.id, ()):
                if edge.kind == "assign" and nodes[edge.src].active:
                    src = nodes[edge.src]
                    src.grad = node.grad if src.grad is None else src.grad + node.grad
    for node in nodes:
        if node.active and node.grad is None:  # a parameter the result does not depend on
            node.grad = _ones(node.value) * 0.0


def _ones(value):
    return np.ones_like(value, dtype=float) if is_array(value) else 1.0


def _rule_expr(node, index, g, out, args):
    prim = TABLE[node.prim]
    rule = rule_for(prim, index)
    return rule(g, out, *args, **dict(node.call.params))


def _contribution(node, edge, g, builder):
    if node.prim == "tree_get":  # a part of an array parameter read by its index: g lands there
        part = np.zeros_like(node.env["_a0"], dtype=float)
        part[_path(node)] += g
        return part
    expr = _rule_expr(node, edge.index, Var("_g"), Var("_out"), node.call.args)
    return builder.evaluate(expr, {**node.env, "_g": g, "_out": node.value}, node)


def _local(node, edge, src, builder):
    """The local derivative d(node)/d(src) at the point and its label: `x1 = 1` (the
    rule written in the user's names, then its number) for numbers; for arrays, the
    vector-Jacobian product rule with g the gradient arriving at the operation."""
    scalar = not is_array(node.value) and not is_array(src.value)
    if node.prim == "tree_get":
        return None, f"g at {list(_path(node))}"
    g = Const(1) if scalar else Var("g")
    formula = _readable(_rule_expr(node, edge.index, g, node.shown, node.inputs_shown), builder)
    if not scalar:
        text = formula if len(formula) <= 2 * FORMULA_CHARS else formula[:2 * FORMULA_CHARS - 1] + "…"
        return None, text
    local = builder.evaluate(_rule_expr(node, edge.index, Const(1.0), Var("_out"), node.call.args),
                             {**node.env, "_out": node.value}, node)
    number = format_value(local)
    if formula == number or len(formula) > FORMULA_CHARS or _is_number(formula):
        return local, number
    return local, f"{formula} = {number}"


def _path(node):
    """The index a `tree_get` node reads its array parameter at."""
    return tuple(int(node.env[a.name]) if isinstance(a, Var) else int(a.value) for a in node.call.args[1:])


def _readable(expr, builder):
    text = ast.unparse(builder.emitter.expr(expr))
    return re.sub(r"\b(?:np|math|scipy\.\w+)\.", "", text)  # exp(x), gammaln(y): as the lessons write them


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _unbroadcast(g, value):
    """`g` summed back to the shape of `value` (NumPy broadcasting undone)."""
    shape = np.shape(value)
    if np.shape(g) == shape:
        return g
    g = np.asarray(g)
    if not shape:
        return float(np.sum(g))
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g
