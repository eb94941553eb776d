"""The generated module as a whole: its header options, its docstring, the shapes line, and
the check that it means what it says (no parameter hides a module, helper or builtin the
generated code calls; no module-level name bound twice). gradgen.api assembles the text
with gradgen/codegen/emit.py and hands it here before anyone imports it."""

from __future__ import annotations

import ast
import builtins
import gc
import math
import os

from gradgen.analysis import stated
from gradgen.analysis.activity import ALL, DEFAULT_WRT
from gradgen.codegen.freshness import SKIPPED_LEAD
from gradgen.errors import CompileError
from gradgen.ir.nodes import Call, expressions, subexpressions, walk
from gradgen.transform.reverse.checkpoint import memory_text


def listed(shapes):
    names = list(shapes)
    text = [f"{n} {stated.spelled(shapes[n])}" for n in names]
    return ", ".join(text[:-1]) + " and " + text[-1] if len(text) > 1 else text[0]


def options(emit_kinds, shapes_from, functions=None, wrt=None, snapshots=None):
    """The compile options beyond the defaults, as the regenerate command spells them (a plain
    `gradgen compile FILE` reads them back: gradgen.tools.files)."""
    out = "".join(f" --function {name}" for name in dict.fromkeys(functions or ()))
    out += f" --wrt {','.join(dict.fromkeys(wrt))}" if wrt else ""
    out += "" if emit_kinds == ("grad",) else f" --emit {','.join(emit_kinds)}"
    out += f" --shapes {shapes_from}" if shapes_from else ""
    if isinstance(snapshots, int):
        out += f" --checkpoint {snapshots}"
    elif snapshots is not None:
        out += f" --checkpoint auto --memory {memory_text(snapshots[1])}"
    return out


def shapes_line(shapes, shapes_from):
    """The header line naming the shapes a module compiled with --shapes assumes."""
    if not shapes_from:
        return None
    listed = ", ".join(f"{name} {stated.spelled(shape)}" for name, shape in shapes.items())
    return f"Shapes assumed (--shapes {shapes_from}): {listed or 'none'}."


def module_docstring(names, shown, emit_kinds):
    if emit_kinds == ("grad",):
        return f"Reverse-mode gradients of {', '.join(names)}, compiled from {shown} by gradgen."
    return f"Derivatives ({', '.join(emit_kinds)}) of {', '.join(names)}, compiled from {shown} by gradgen."


def not_finite(value):
    values = value if isinstance(value, tuple) else (value,)
    return any(isinstance(v, float) and not math.isfinite(v) for v in values)


_IMPORTED_AS = {"np": "NumPy (the generated code imports numpy as np)",
                "math": "the math module (the generated code imports math)",
                "scipy": "SciPy (the generated code imports the scipy modules your file uses)",
                "dataclasses": "the dataclasses module (the generated code builds a dataclass's gradient with it)"}


_BUILTINS = frozenset(dir(builtins))


def check_generated(text, module, results, carried):
    """The generated module must mean what it says: no parameter may hide a module, helper
    or builtin the generated code calls, and no module-level name may be bound twice (a
    constant of the user's named like an import or helper of the generated module)."""
    tree = _parse(text)
    top = {}
    for stmt in tree.body:
        for name in _top_level_names(stmt):
            if name in top and isinstance(stmt, ast.Import) and isinstance(top[name], ast.Import):
                continue  # import scipy.special; import scipy.stats: one package
            if name in top:
                node = _constant_node(module, name)
                what = _IMPORTED_AS.get(name, f"the helper '{name}' gradgen writes into the generated module")
                raise _located(module, node, f"module-level '{name}' would replace {what}; rename it")
            top[name] = stmt
    generated = {name: f for f in results for name in (f.grad_name, f.value_and_grad_name)}
    for fnode in tree.body:
        if not isinstance(fnode, ast.FunctionDef) or fnode.name not in generated:
            continue
        compiled = generated[fnode.name]
        params = {a.arg for a in fnode.args.args + fnode.args.kwonlyargs}
        for node in ast.walk(fnode):
            hidden = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in params:
                hidden = node.func.id
                what = f"the function '{hidden}' the generated code calls"
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in params and node.value.id in _IMPORTED_AS and node.value.id in top):
                hidden = node.value.id
                what = _IMPORTED_AS[hidden]
            elif isinstance(node, ast.keyword) and isinstance(node.value, ast.Name) and node.value.id in params \
                    and node.value.id in _BUILTINS:  # (`dtype=float`; `size=n` reads the parameter n)
                hidden = node.value.id
                what = f"the builtin '{hidden}' the generated code uses"
            if hidden is not None:
                arg = next(a for a in _all_args(module.functions[compiled.name]) if a.arg == hidden)
                error = module.error(arg, f"parameter '{hidden}' would hide {what}; rename the parameter")
                error.function = compiled.name  # (a whole file compiles without it: gradgen.api)
                raise error


def _parse(text):
    """ast.parse with the cycle collector paused (a syntax tree has no cycles): the tree of a
    10,000-statement module is half a million nodes, and every collection their allocation
    sets off scans the compiler's whole heap (0.3 s to parse it alone, 0.8 to 1.7 s with)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(text)
    finally:
        if enabled:
            gc.enable()


def _top_level_names(stmt):
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    if isinstance(stmt, ast.Assign):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    return []


def _all_args(fnode):
    args = fnode.args
    return args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]


def _constant_node(module, name):
    """The user's last module-level assignment of `name`, if there is one."""
    found = None
    for stmt in module.tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found = stmt
    return found


def _located(module, node, message):
    return module.error(node, message) if node is not None else CompileError(message, module.filename)


def display_name(filename):
    """The source file's name as the generated module cites it (header, docstrings): its
    base name, with every character that could end a comment or a string (a newline, a
    quote, a backslash) or that is not printable replaced by `?`."""
    name = os.path.basename(filename) if filename and not filename.startswith("<") else (filename or "<string>")
    return "".join(c if c.isprintable() and c not in "\"\\`" else "?" for c in name)


def differentiated_line(results, wrt):
    """The header's record of the parameters each function is differentiated with respect to,
    and whether `--wrt` or the default chose them (the default a reader may not expect)."""
    chosen = {f.name: f.wrt for f in results}
    listed = "; ".join(f"{name} with respect to {', '.join(ps) or 'nothing'}" for name, ps in chosen.items())
    how = f"the default, {DEFAULT_WRT}" if wrt is None else "--wrt all" if tuple(wrt) == ALL else "--wrt"
    return f"Differentiated ({how}): {listed}."


def functions_line(module, compiled, skipped):
    """The header's record of which functions the module is for, and which of the file's
    others got no gradient of their own (a whole file compiled: data builders, drivers,
    helpers): a reader sees it at once, and a recompile keeps the compiled ones
    (gradgen/tools/files.py reads it back with gradgen.codegen.freshness.recorded_functions)."""
    line = f"Compiled: {', '.join(compiled)}."
    if skipped:
        listed = ", ".join(f"{name} (line {module.functions[name].lineno})" for name in skipped)
        line += f" {SKIPPED_LEAD}{listed}."
    return line


def sigmoid_namespaces(fn):
    """{"sigmoid": the namespace its calls in `fn` were written in}, for the helper the module
    defines (numpy's exp or math's), or {} where `fn` calls none."""
    found = {}
    for stmt in walk(fn.body):
        for expr in expressions(stmt):
            for node in subexpressions(expr):
                if isinstance(node, Call) and node.prim == "sigmoid":
                    found["sigmoid"] = node.ns
    return found
