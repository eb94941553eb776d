"""`scipy.integrate.odeint(f, y0, t, args=(...), rtol=...)` inside a compiled function, f a
function of the user's file.

The call runs as written: the generated module defines `f` as the file does (its text, each
library name spelled as the generated module imports it, with the functions of the file it
calls and the constants it reads), and keeps the call. Its gradient (gradgen.rules.integrate)
needs f's vector-Jacobian product with respect to y and each of the args: gradgen compiles it
from f, as `gradgen compile --function f --emit vjp` writes it (gradgen.api hands the compiler
over: the front end may not import it), and the generated module defines it beside f.

An arg may be a number, an array, or a structured parameter or a part of one (a list of
(W, b) pairs): the adjoint solve works on the args' leaves as one vector, and a structured
arg's gradient comes back as that vector, added leaf by leaf into the parameter's gradient
(the primitive tree_whole, gradgen.rules.trees). The times `t` get theirs too; the solver's
options get none, and must be constants when compiling (they pass to the backward solve).
"""

from __future__ import annotations

import ast
import builtins
import copy

from gradgen.errors import CompileError
from gradgen.frontend import inactive
from gradgen.frontend.closures import FunctionValue
from gradgen.frontend.scopes import _lookup
from gradgen.frontend.structured import SliceStep
from gradgen.ir.nodes import Spelled
from gradgen.rules.integrate import KEYWORDS

SPELLINGS = {"scipy.integrate.odeint"}
_PARAMETERS = ("func", "y0", "t", "args")  # odeint's own, in order
_LIBRARIES = ("numpy", "math", "scipy")
# the canonical spelling of a library module in a generated module (and what it imports)
_ROOTS = {"numpy": ("np", "numpy"), "math": ("math", "math")}

# Set by gradgen.api: (module, function name, wrt) -> (module text, vjp function name).
compiler = None


def called(m, node):
    """Whether `node` calls odeint (by any spelling the file imports it as)."""
    return isinstance(node, ast.Call) and m.qualified(node.func) in SPELLINGS


def lowered(lw, scope, node):
    """The IR of an odeint call (gradgen.rules.integrate's primitive), or None for another call."""
    m = lw.m
    if not called(m, node):
        return None
    spelled = m.segment(node.func)
    given = _bound(m, node, spelled)
    fname = _function(m, scope, given["func"], spelled)
    options = _options(m, given, spelled)
    tfirst = dict(options).get("tfirst", False)
    arg_nodes = _arg_nodes(m, given.get("args"), spelled)
    _check_arity(m, node, fname, len(arg_nodes), spelled)
    functions = m.__dict__.setdefault("ode_functions", {})
    if fname not in functions:
        functions[fname] = _written(m, node, fname, len(arg_nodes), tfirst, spelled)
    elif functions[fname].called != (len(arg_nodes), tfirst):  # (one vjp per function: its parameters)
        raise _refuse(m, node, f"'{spelled}' integrates '{fname}' here with {len(arg_nodes)} args"
                               f"{' and tfirst' if tfirst else ''}, and elsewhere otherwise: call it the same way "
                               "everywhere")
    y0 = _value(lw, scope, given["y0"])
    t = _value(lw, scope, given["t"])
    args = tuple(_arg(lw, scope, a, spelled) for a in arg_nodes)
    made = functions[fname]  # (no vjp: the refusal its rule raises, where a derivative flows)
    vjp = Spelled(made.vjp_name) if made.vjp_text is not None else made.vjp_name
    params = (("func", Spelled(fname)), ("func_vjp", vjp)) + options
    return lw._call("odeint", (y0, t) + args, "scipy.integrate", node, params=params)


class OdeFunction:
    """What the generated module defines for one function odeint integrates: the function as
    the file writes it (and the file's functions it calls), and its vjp."""

    def __init__(self, texts, vjp_text, vjp_name, constants, imports, called):
        self.texts, self.vjp_text, self.vjp_name = texts, vjp_text, vjp_name
        self.constants, self.imports = constants, imports
        self.called = called  # (how many args, tfirst): what the vjp's parameters were chosen for


def _refuse(m, node, message):
    return inactive.final(m.error(node, message))


def _bound(m, node, spelled):
    """{parameter: node} of the call, by position or keyword, the solver's options included."""
    given = {}
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        raise _refuse(m, node, f"'{spelled}' with *args or **kwargs: write its arguments out")
    if len(node.args) > len(_PARAMETERS):
        raise _refuse(m, node.args[len(_PARAMETERS)], f"'{spelled}': pass the solver's options by keyword "
                                                      "(rtol=..., atol=...)")
    given.update(zip(_PARAMETERS, node.args))
    for kw in node.keywords:
        given[kw.arg] = kw.value
    for name in ("func", "y0", "t"):
        if name not in given:
            raise _refuse(m, node, f"'{spelled}' needs its function, y0 and t")
    return given


def _function(m, scope, node, spelled):
    """The name of the file's function odeint integrates."""
    usage = (f"'{spelled}' integrates a function of this file named directly: write {spelled}(f, y0, t, "
             "args=(...)), f defined at the top level of this file")
    if not isinstance(node, ast.Name):
        raise _refuse(m, node, usage)
    value = _lookup(scope, node.id)
    if isinstance(value, FunctionValue) and m.functions.get(value.node.name) is value.node:
        return value.node.name
    if value is None and node.id in m.functions:
        return node.id
    raise _refuse(m, node, usage)


def _options(m, given, spelled):
    """The solver's options as static parameters: ((name, constant), ...)."""
    out = []
    for name, node in given.items():
        if name in _PARAMETERS:
            continue
        if name not in KEYWORDS:
            raise _refuse(m, node, f"'{spelled}' with {name}= is not supported where its result is differentiated "
                                   f"(gradgen passes {', '.join(k + '=' for k in KEYWORDS[:3])}... to the backward "
                                   "solve): leave it out")
        value = _constant(m, node)
        if value is None:
            raise _refuse(m, node, f"{name}= of '{spelled}' must be a number gradgen can read when compiling "
                                   "(written in the call, or a constant of the file)")
        out.append((name, value))
    return tuple(out)


def _constant(m, node):
    try:
        value = ast.literal_eval(node)
    except ValueError:
        value = m.constants.get(node.id) if isinstance(node, ast.Name) and node.id not in m.runtime else None
    return value if isinstance(value, (bool, int, float)) else None


def _arg_nodes(m, node, spelled):
    """The args tuple, element by element, as written in the call."""
    if node is None:
        return []
    if isinstance(node, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return list(node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "tuple" \
            and len(node.args) == 1 and isinstance(node.args[0], (ast.Tuple, ast.List)):
        return list(node.args[0].elts)  # tuple((params,)), as autograd's examples write it
    raise _refuse(m, node, f"write the args of '{spelled}' as a tuple in the call: args=(A, k)")


def _check_arity(m, node, fname, count, spelled):
    fnode = m.functions[fname]
    params = fnode.args.posonlyargs + fnode.args.args
    if fnode.args.vararg is not None or fnode.args.kwonlyargs and any(d is None for d in fnode.args.kw_defaults):
        raise _refuse(m, node, f"'{fname}', the function '{spelled}' integrates, must take its parameters by "
                               "position, one for each of y, t and the args")
    if not len(params) - len(fnode.args.defaults) <= 2 + count <= len(params):
        raise _refuse(m, node, f"'{spelled}' calls '{fname}' with y, t and {count} args, but '{fname}' takes "
                               f"{len(params)} parameters")


def _value(lw, scope, node):
    if isinstance(node, (ast.List, ast.Tuple)):  # odeint(f, [1.0, 0.0], t): an array, as odeint reads it
        items = [lw.expr(scope, e) for e in node.elts]
        return lw._call("array_list", (lw._call("list", tuple(items), "builtins", node),), "numpy", node)
    return lw.expr(scope, node)


def _arg(lw, scope, node, spelled):
    """One of the args: a structured parameter or a part of one whole, else its value."""
    ref = lw._ref(scope, node)
    if ref is None:
        lw._needs_structure(scope, node, soft=True)  # a parameter only passed whole: a list works too
        value = None if isinstance(node, (ast.List, ast.Tuple, ast.Dict)) else lw.expr(scope, node)
        if value is None or lw._is_list(value):
            raise _refuse(lw.m, node, f"an arg of '{spelled}' that is a list made in the function is not supported: "
                                      "pass its arrays as args of their own (args=(W, b)), or a parameter whole")
        return value
    if ref.leaf is not None:
        return lw.expr(scope, node)
    if any(isinstance(step, SliceStep) for step in ref.path):
        raise _refuse(lw.m, node, f"a run of parts ('{lw.m.segment(node)}') as an arg of '{spelled}' is not "
                                  "supported: pass the parameter, or a list of its parts")
    return lw._call("tree_whole", (ref.root, *ref.path), "builtins", node)


def _written(m, node, fname, count, tfirst, spelled):
    """The OdeFunction for `fname`: its vjp compiled, the functions written out as the file has them."""
    fnode = m.functions[fname]
    params = [a.arg for a in fnode.args.posonlyargs + fnode.args.args][:2 + count]
    wrt = [p for k, p in enumerate(params) if k != (0 if tfirst else 1)]
    texts, constants, imports = [], set(), set()
    todo, done = [fname], set()
    while todo:  # f and the functions of the file it calls, each as the file writes it
        name = todo.pop(0)
        if name in done:
            continue
        done.add(name)
        written, calls = _respelled(m, node, m.functions[name], constants, imports, spelled)
        texts.append(written)
        todo += sorted(calls - done)
    try:
        text, vjp_name = compiler(m, fname, wrt)
    except CompileError as exc:  # refused only where a derivative flows through the call (the rule raises it)
        where = f" (line {exc.line})" if exc.line is not None and exc.line != node.lineno else ""
        refusal = m.error(node, f"'{spelled}' integrates '{fname}', and its gradient needs the derivative of "
                                f"'{fname}', which gradgen cannot take: {exc.message}{where}")
        return OdeFunction(texts, None, refusal, constants, imports, (count, tfirst))
    vjp = next(d for d in ast.parse(text).body if isinstance(d, ast.FunctionDef) and d.name == vjp_name)
    constants |= {n.id for n in ast.walk(vjp) if isinstance(n, ast.Name) and n.id in m.constants}
    return OdeFunction(texts, ast.unparse(vjp), vjp_name, constants, imports, (count, tfirst))


def _respelled(m, node, fnode, constants, imports, spelled):
    """`fnode`'s text with NumPy, math and SciPy spelled as a generated module imports them,
    and the functions of the file it calls; a name it reads that the generated module cannot
    define is refused."""
    fnode = copy.deepcopy(fnode)
    fnode.decorator_list = []
    own = {a.arg for a in ast.walk(fnode.args) if isinstance(a, ast.arg)}
    own |= {n.id for n in ast.walk(fnode) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    own |= {n.name for n in ast.walk(fnode) if isinstance(n, (ast.FunctionDef, ast.Lambda)) and hasattr(n, "name")}
    calls = set()

    class Respell(ast.NodeTransformer):
        def visit_Attribute(self, n):
            qualified = m.qualified(n)
            if qualified is not None and not _own_root(n, own):
                return _canonical(qualified, imports) or n
            return self.generic_visit(n)

        def visit_Name(self, n):
            if not isinstance(n.ctx, ast.Load) or n.id in own:
                return n
            qualified = m.qualified(n)
            if qualified is not None:
                found = _canonical(qualified, imports)
                if found is None:
                    raise _refuse(m, node, f"'{fnode.name}', which '{spelled}' integrates, reads '{n.id}' "
                                           f"({qualified}): gradgen writes '{fnode.name}' into the generated "
                                           "module, which imports NumPy, math and SciPy only")
                return found
            if n.id in m.functions:
                calls.add(n.id)
            elif n.id in m.constants and n.id not in m.runtime:
                constants.add(n.id)
            elif not hasattr(builtins, n.id):
                raise _refuse(m, node, f"'{fnode.name}', which '{spelled}' integrates, reads '{n.id}', which "
                                       "gradgen cannot write into the generated module: pass it through args=")
            return n

    return ast.unparse(ast.fix_missing_locations(Respell().visit(fnode))), calls


def _own_root(node, own):
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in own


def _canonical(qualified, imports):
    """`np.dot` for numpy.dot, `scipy.special.expit` for scipy.special.expit (the module
    recorded in `imports`), or None for another library."""
    root, _, rest = qualified.partition(".")
    if root in _ROOTS:
        alias, module = _ROOTS[root]
        imports.add(module)
        text = f"{alias}.{rest}" if rest else alias
    elif root == "scipy" and rest:
        module = qualified.rsplit(".", 1)[0] if "." in rest else qualified
        imports.add(module)
        text = qualified
    else:
        return None
    return ast.parse(text, mode="eval").body
