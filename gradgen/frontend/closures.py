"""Functions as values: lambdas, nested `def`s and closures, functions passed as arguments
or defaults (`nonlinearity=np.tanh`), factories that build and return closures.

gradgen differentiates straight-line code, so a function value must be known when the
code is compiled: then a call through it is inlined like a call to a same-file helper,
and a closure reads the variables of the function that defined it (the values they hold
when it is called, as Python's late binding has it). These records are the compile-time
values the lowerer keeps in its environment for such names; no generated code holds them.
"""

from __future__ import annotations

import ast
import collections
import copy
from dataclasses import dataclass


@dataclass(frozen=True)
class FunctionValue:
    """A user function as a value: a nested def, a lambda (as a one-return def) or a
    same-file function named without a call. `closure` is the lowerer's Scope it was
    defined in (None for a top-level function)."""

    node: ast.FunctionDef
    closure: object = None

    @property
    def name(self):
        return self.node.name


@dataclass(frozen=True)
class LibraryFunction:
    """A library function as a value (`np.tanh`): `qualified` is its full name; `spelled`
    is how the source wrote it."""

    qualified: str
    spelled: str

    @property
    def name(self):
        return self.spelled


FUNCTION_VALUES = (FunctionValue, LibraryFunction)


def lambda_as_def(node: ast.Lambda, name: str) -> ast.FunctionDef:
    """`lambda x: e` as `def name(x): return e` (at the lambda's place)."""
    fnode = ast.FunctionDef(name=name, args=node.args, body=[ast.copy_location(ast.Return(node.body), node)],
                            decorator_list=[], returns=None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        fnode.type_params = []
    return ast.fix_missing_locations(ast.copy_location(fnode, node))


def renamed(fnode: ast.FunctionDef, name: str) -> ast.FunctionDef:
    """The same function under another name (a lambda bound to `name` is called `name`)."""
    new = copy.copy(fnode)
    new.name = name
    return new


def own_nodes(nodes):
    """Every node of `nodes` and below, except what belongs to a nested def or lambda (whose
    returns, assignments and names are its own)."""
    stack = collections.deque(nodes)  # breadth first, in ast.walk's order
    while stack:
        node = stack.popleft()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            # the def binds its name here, its decorators and defaults run here; its body is its own
            stack.extend(getattr(node, "decorator_list", []))
            stack.extend(d for d in node.args.defaults + node.args.kw_defaults if d is not None)
            continue
        stack.extend(ast.iter_child_nodes(node))


def returns_a_function(fnode, module) -> bool:
    """Whether a top-level function is a factory: it returns a function it defines (a nested
    def, a lambda, or a tuple of them) or a same-file function. It has no gradient of its
    own; a loss that calls it gets the closure inlined."""
    defined = {n.name for n in own_nodes(fnode.body) if isinstance(n, ast.FunctionDef)}
    defined |= {t.id for n in own_nodes(fnode.body) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda)
                for t in n.targets if isinstance(t, ast.Name)}
    local = {n.id for n in own_nodes(fnode.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    def is_function(e):
        if isinstance(e, ast.Lambda):
            return True
        if isinstance(e, ast.Name):
            return e.id in defined or (e.id in module.functions and e.id not in local)
        if isinstance(e, ast.Tuple):
            return any(is_function(x) for x in e.elts)
        return False

    return any(isinstance(n, ast.Return) and n.value is not None and is_function(n.value)
               for n in own_nodes(fnode.body))


def called_parameter(fnode):
    """The first parameter a function calls (`def apply(f, v): return f(v)`) that has no
    function default, or None. Such a function is known only where it is called with a
    function: it is inlined there and has no gradient of its own."""
    args = fnode.args
    positional = args.args
    with_default = {a.arg for a in positional[len(positional) - len(args.defaults):]}
    with_default |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    params = [a.arg for a in positional + args.kwonlyargs if a.arg not in with_default]
    called = {n.func.id for n in own_nodes(fnode.body) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return next((p for p in params if p in called), None)
