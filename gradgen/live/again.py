"""A derivative of a derivative: gradgen.grad(g) of a function g gradgen generated.

The generated module is the source compiled (gradgen.live reads it from linecache, as a
notebook cell's): `unguarded` reads it as gradgen's front end must (its shape checks and
constant keywords dropped, its helpers `unbroadcast`/`sum_to` as the primitives a nested
gradient calls, gradgen.frontend.nested), and `passed_on` gives the new derivative what the
first one was given on every call (a closure's data, read from its cells).
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect

SMOOTH_HELPERS = ("unbroadcast", "sum_to")  # helpers of a generated module that are differentiated again


def unguarded(lines):
    """A module gradgen generated, as the source of a function to differentiate again: without
    the shape checks on entry (gradgen.codegen.guards: they check at run time what the module
    was written for, and the module compiled from it makes its own), and without the
    keyword parameters that hand each function the module constants it reads (`*, x=x`):
    the body reads the constant, which the new module hands over in turn. Its helpers
    `unbroadcast` and `sum_to` are gradgen's, read as the primitives a nested gradient
    calls (gradgen.frontend.nested). Lines are kept:
    a check becomes `pass`, a signature is written again on its first line."""
    lines = list(lines)
    for node in ast.walk(ast.parse("".join(lines))):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "check_shapes":
            _rewrite(lines, node, "pass")
        elif isinstance(node, ast.FunctionDef) and node.col_offset == 0 and node.name in SMOOTH_HELPERS:
            _rewrite(lines, node, f"from gradgen import {node.name}")  # (their smooth twins: gradgen.rules.numpy)
        elif isinstance(node, ast.FunctionDef) and node.col_offset == 0 and _constant_keywords(node):
            kept = [(a, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults)
                    if not (isinstance(d, ast.Name) and d.id == a.arg)]
            header = copy.copy(node.args)
            header.kwonlyargs, header.kw_defaults = [a for a, _ in kept], [d for _, d in kept]
            end = node.body[0]
            _rewrite(lines, ast.Pass(lineno=node.lineno, end_lineno=end.lineno - 1, col_offset=0),
                     f"def {node.name}({ast.unparse(header)}):")
    return lines


def _constant_keywords(node):
    return any(isinstance(d, ast.Name) and d.id == a.arg for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults))


def _rewrite(lines, node, text):
    """Lines node.lineno..node.end_lineno become `text` (indented as the first) and blanks."""
    first = lines[node.lineno - 1]
    lines[node.lineno - 1] = first[:len(first) - len(first.lstrip())] + text + "\n"
    for k in range(node.lineno, node.end_lineno):
        lines[k] = "\n"


def passed_on(g, f):
    """`g`, given on every call what `f` is given, when `f` is a derivative gradgen made of
    a function reading the running program (a closure's data): the derivative of it takes
    the same keyword arguments, read from the same cells. Per `f`, never cached with `g`:
    another closure of the same source reads other cells."""
    readers = getattr(f, "given", None)
    if not readers:
        return g
    code = inspect.unwrap(g).__code__
    keywords = set(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
    readers = {name: read for name, read in readers.items() if name in keywords}
    if not readers:
        return g

    @functools.wraps(g)
    def passing(*args, **kwargs):
        for name, read in readers.items():
            kwargs.setdefault(name, read())
        return g(*args, **kwargs)

    passing.source, passing.given = g.source, {**getattr(g, "given", {}), **readers}
    return passing
