"""Nested derivatives: `gradgen.grad(potential)` called inside a function gradgen compiles.

A force computed as the gradient of a potential, inside a simulation that is itself
differentiated: `force = gradgen.grad(potential)` then `force(x)`, or directly
`gradgen.grad(potential)(x)` (also `value_and_grad`, `jvp`, `hvp`, with `wrt=`). The inner
derivative is compiled when the outer function is, by gradgen itself (gradgen.api registers
the compiler here: the front end may not import it), to the very source
`gradgen compile --function potential` writes. That source is parsed back and its function
inlined where it is called, like any helper the user wrote, so the outer pass
differentiates through it: second derivatives come from reverse over reverse.

The inlined nodes are placed at the inner call, so a refusal inside them (and the line
comments of the backward pass) points there. Nothing of gradgen is imported by the
generated module.
"""

from __future__ import annotations

import ast
import copy

from gradgen.errors import CompileError
from gradgen.frontend import inactive
from gradgen.frontend.closures import FunctionValue, LibraryFunction
from gradgen.frontend.scopes import Scope, _lookup

# the public function -> (the --emit kind that writes it, the generated function's role)
KINDS = {"gradgen.grad": ("grad", "grad"), "gradgen.value_and_grad": ("grad", "value_and_grad"),
         "gradgen.jvp": ("jvp", "jvp"), "gradgen.hvp": ("hvp", "hvp")}
_NOT_NESTED = {"gradgen.hessian", "gradgen.vjp", "gradgen.jacobian"}

# Set by gradgen.api: (module, function name, wrt, emit kind, role) -> (module text, function name).
compiler = None
_ACTIVE = []  # the nested derivatives being compiled (a function whose gradient needs itself is refused)


def function_value(lowerer, scope, node, sigmoid_pattern):
    """The derivative `node` makes (`gradgen.grad(potential, wrt="x")`) as a function value
    to inline where it is called; None if `node` is no call of gradgen's derivatives.
    `sigmoid_pattern` (gradgen.frontend.lower_calls's, which imports this module) tells the
    one helper of a generated module that is inlined as it is, the sigmoid."""
    m = lowerer.m
    if not isinstance(node, ast.Call):
        return None
    qualified = m.qualified(node.func)
    spelled = ast.unparse(node.func)
    if qualified in _NOT_NESTED:
        raise _refuse(m, node, f"'{spelled}' inside a compiled function is not supported (its result is a matrix "
                               "or takes a cotangent): call gradgen.grad, gradgen.jvp or gradgen.hvp there, or "
                               f"call '{spelled}' outside the function gradgen compiles")
    if qualified not in KINDS:
        return None
    fname, wrt = _arguments(m, scope, node, spelled)
    if fname == lowerer.fnode.name or fname in lowerer.stack:
        raise _refuse(m, node, f"'{spelled}({fname})' is needed to compile '{fname}' itself: gradgen compiles a "
                               "nested derivative of another function; write the derivative out")
    text, name = _compiled(m, node, fname, wrt, qualified, spelled)
    return _inlinable(m, node, text, name, fname, spelled, sigmoid_pattern)


def _refuse(m, node, message):
    """A located refusal that is never kept as written (the generated module has no gradgen)."""
    return inactive.final(m.error(node, message))


def _arguments(m, scope, node, spelled):
    """The function named (a top-level def of this file) and `wrt` (constant names)."""
    usage = f"write {spelled}(f) or {spelled}(f, wrt=\"x\"), f a function defined at the top level of this file"
    target = node.args[0] if node.args else None
    if len(node.args) > 2 or not isinstance(target, ast.Name) or target.id not in m.functions \
            or _lookup(scope, target.id) is not None:
        raise _refuse(m, node, f"'{spelled}' inside a compiled function differentiates a function of this file "
                               f"named directly: {usage}")
    given = {kw.arg: kw.value for kw in node.keywords}
    if set(given) - {"wrt", "argnum"} or len(node.args) + len(given) > 2:
        raise _refuse(m, node, f"'{spelled}' takes the function and wrt= (the parameters to differentiate): {usage}")
    wrt_node = node.args[1] if len(node.args) == 2 else given.get("wrt")
    if "argnum" in given:  # autograd's spelling: positions
        return target.id, _argnum(m, given["argnum"], target.id, spelled)
    return target.id, _wrt(m, node, wrt_node, target.id, spelled)


def _argnum(m, argnum_node, fname, spelled):
    """argnum= (a position or a tuple of them, written out) as the parameters' names."""
    try:
        value = ast.literal_eval(argnum_node)
    except ValueError:
        value = None
    value = (value,) if isinstance(value, int) else value
    fnode = m.functions[fname]
    params = [a.arg for a in fnode.args.posonlyargs + fnode.args.args]
    if not isinstance(value, (list, tuple)) or not value \
            or not all(isinstance(v, int) and -len(params) <= v < len(params) for v in value):
        raise _refuse(m, argnum_node, f"argnum= of '{spelled}' must be written out: a position of a parameter of "
                                      f"'{fname}' ({', '.join(params) or 'none'}) or a tuple of them")
    return tuple(params[v] for v in value)


def _wrt(m, node, wrt_node, fname, spelled):
    if wrt_node is None:
        return None
    try:
        value = ast.literal_eval(wrt_node)
    except ValueError:
        value = None
    if isinstance(value, str):
        value = value.split(",")
    if value is None or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _refuse(m, wrt_node, f"wrt= of '{spelled}' must be written out: a string (\"x\" or \"x,k\") or a "
                                   "list of parameter names")
    names = tuple(v.strip() for v in value if v.strip())
    if names == ("all",):  # every parameter that can be differentiated (gradgen.analysis.activity.ALL)
        return names
    fnode = m.functions[fname]
    params = [a.arg for a in fnode.args.posonlyargs + fnode.args.args + fnode.args.kwonlyargs]
    for name in names:
        if name not in params:
            raise _refuse(m, wrt_node, f"'{fname}' has no parameter '{name}'; its parameters are: "
                                       f"{', '.join(params) or 'none'}")
    return names or None


def _compiled(m, node, fname, wrt, qualified, spelled):
    """The generated module for `fname`'s derivative and its function's name, compiled once
    per file (kept on the module record)."""
    kind, role = KINDS[qualified]
    key = (fname, wrt, kind, role)
    cache = m.__dict__.setdefault("_nested", {})
    if key in cache:
        return cache[key]
    if (m.filename, fname) in _ACTIVE:
        raise _refuse(m, node, f"'{spelled}({fname})' is needed to compile '{fname}' itself: gradgen compiles a "
                               "nested derivative of another function; write the derivative out")
    _ACTIVE.append((m.filename, fname))
    try:
        cache[key] = compiler(m, fname, list(wrt) if wrt else None, kind, role)
    except CompileError as exc:
        where = f" (line {exc.line})" if exc.line is not None and exc.line != node.lineno else ""
        raise _refuse(m, node, f"'{spelled}({fname})': gradgen cannot differentiate '{fname}': "
                               f"{exc.message}{where}") from None
    finally:
        _ACTIVE.pop()
    return cache[key]


def _inlinable(m, node, text, name, fname, spelled, sigmoid_pattern):
    """The generated function, parsed and placed at `node`, as a FunctionValue whose closure
    holds the module-level helpers it calls."""
    tree = ast.parse(text)
    _respell_imports(m, node, tree, spelled)
    for part in ast.walk(tree):  # every node at the inner call: refusals and line comments point there
        if "lineno" in part._attributes:
            ast.copy_location(part, node)
    defs = {d.name: d for d in tree.body if isinstance(d, ast.FunctionDef)}
    fnode = defs.pop(name)
    helpers = {}
    for helper, hnode in defs.items():
        if any(isinstance(n, ast.Name) and n.id == helper for n in ast.walk(fnode)):
            if helper == "unbroadcast":  # its smooth twin (gradgen.rules.numpy: sum_to)
                helpers[helper] = LibraryFunction("gradgen.unbroadcast", helper)
                continue
            if sigmoid_pattern(hnode, m) is None:
                raise _refuse(m, node, f"the {_role(name, fname)} gradgen writes for '{fname}' calls its helper "
                                       f"'{helper}', which gradgen does not differentiate again: state the shapes "
                                       f"of the parameters of '{fname}' (jaxtyping annotations) so that no broadcast "
                                       f"needs undoing, or write the derivative of '{fname}' out as a function")
            helpers[helper] = FunctionValue(hnode)
    closure = Scope(copy.copy(fnode), helpers, set())
    return FunctionValue(fnode, closure)


def _role(name, fname):
    return "gradient" if name.endswith("grad") else "derivative"


def _respell_imports(m, node, tree, spelled):
    """The generated module's `np.`/`math.`/`scipy.special.` read through the names this file
    imports them as (`np.log`, or `gammaln` for `from scipy.special import gammaln`)."""
    roots = {}  # a name the generated module's imports bind -> the module it is
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                roots[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
    mine = {qualified: local for local, qualified in m.imports.items()}
    free = {root: module for root, module in roots.items() if root == module.split(".")[0] and _unbound(m, root)}
    for root, module in free.items():  # (`import scipy.special` in the derivative, scipy bound nowhere in this file)
        m.imports[root] = module
        mine.setdefault(module, root)
    _Respelled(roots, mine, lambda q: _refuse(m, node, f"the derivative '{spelled}' makes calls '{q}': import it in "
                                                       f"this file (import {q.rsplit('.', 1)[0] if '.' in q else q})")
               ).visit(tree)


def _unbound(m, name):
    """Whether `name` is bound nowhere in the file (no import, function, constant or variable)."""
    if name in m.imports or name in m.functions or name in m.constants:
        return False
    return not any(isinstance(n, ast.Name) and n.id == name or isinstance(n, ast.arg) and n.arg == name
                   or isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name for n in ast.walk(m.tree))


class _Respelled(ast.NodeTransformer):
    """A dotted name rooted at an import of the generated module (`scipy.special.gammaln`),
    spelled through the longest part of it this file imports (`gammaln`, `sp.gammaln`)."""

    def __init__(self, roots, mine, refusal):
        self.roots, self.mine, self.refusal = roots, mine, refusal

    def visit_Attribute(self, part):
        return self._respelled(part) or self.generic_visit(part)

    def visit_Name(self, part):
        return self._respelled(part) or part

    def _respelled(self, part):
        path = []
        end = part
        while isinstance(end, ast.Attribute):
            path.insert(0, end.attr)
            end = end.value
        if not isinstance(end, ast.Name) or end.id not in self.roots:
            return None
        path = self.roots[end.id].split(".") + path
        for k in range(len(path), 0, -1):
            local = self.mine.get(".".join(path[:k]))
            if local is not None:
                out = ast.Name(id=local, ctx=ast.Load())
                for attr in path[k:]:
                    out = ast.Attribute(value=out, attr=attr, ctx=ast.Load())
                return ast.copy_location(out, part) if not isinstance(part.ctx, ast.Store) else None
        raise self.refusal(".".join(path))
