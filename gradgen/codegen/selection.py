"""What a whole file compiles (`gradgen compile FILE`, no --function): which of its functions
are tried, and why each of the others has no gradient of its own (from its syntax, or, for
a few judgements, from its lowered IR: gradgen.api asks those below).

A scientific file holds more than losses: data builders, `init_params`, plots, training
loops, a `main`. Each is recognised here from its syntax alone, before anything is lowered,
so it costs nothing and says why in words (`takes no parameters`, `returns a dict, not one
number`); gradgen.api tries the rest and skips what it refuses. Module-level code (the
`if __name__ == "__main__":` block, a script's statements) is listed too: it runs as
written, and the user sees that gradgen left it so. With --function nothing here applies.
"""

from __future__ import annotations

import ast

from gradgen.analysis import arrays as array_facts
from gradgen.analysis.activity import NO_DERIVATIVE
from gradgen.frontend import local_imports, lower, odeint, records
from gradgen.frontend.closures import called_parameter, own_nodes

PLOTTING = ("matplotlib", "seaborn", "plotly")  # a function that uses one draws a plot
DRIVER = "a driver, such as a training loop"


def skipped_before_compiling(module):
    """{function: why it is not tried}, in file order, for the functions whose syntax shows
    they return no number or run the program: the rest are compiled, or refused, by gradgen.api.
    A call from one of those does not make a function a helper."""
    walked = {name: list(own_nodes(fnode.body)) for name, fnode in module.functions.items()}  # (walked once)
    runs = {name: why for name, fnode in module.functions.items()
            if (why := _runs(module, fnode, walked[name])) is not None}
    runs.update(_drivers(module, walked, runs))
    called = called_by(module, [name for name in module.functions if name not in runs], walked)
    returns = {name: why for name, fnode in module.functions.items()
               if name not in runs and (why := _returns(module, fnode, name in called, walked[name])) is not None}
    return {name: runs.get(name) or returns[name] for name in module.functions if name in runs or name in returns}


def called_by(module, names, walked=None):
    """{function: the first of `names` that calls it or passes it by name}: a helper of theirs
    (a local variable of the same name is not: `f, g = ...` in a helper never reads `def f`,
    fuzz seed 2011 #659 skipped the loss f for it). `walked`: {function: its own nodes}, if
    known already."""
    found = {}
    for caller in names:
        fnode = module.functions[caller]
        nodes = walked[caller] if walked is not None else list(own_nodes(fnode.body))
        local = _locals(fnode, nodes)
        handed = {id(name) for name, _ in _handed_to_libraries(module, nodes, local)}
        for node in nodes:
            if isinstance(node, ast.Name) and node.id in module.functions and node.id != caller \
                    and node.id not in local and id(node) not in handed:
                found.setdefault(node.id, caller)
    return found


def helpers_of(module, tried, skipped):
    """{function: the first of `tried` whose compiled code inlines it}: what those call or pass
    by name, and what the helpers among `skipped` call in turn (`misfit` unpacks `solve(params)`,
    which returns a tuple and calls `conductivity`: inlined into misfit too)."""
    found = called_by(module, tried)
    size = -1
    while size != len(found):
        size = len(found)
        for helper, caller in list(found.items()):
            if helper in skipped:
                for name in called_by(module, [helper]):
                    if name != caller:
                        found.setdefault(name, caller)
    return found


def _locals(fnode, nodes):
    """The names a function binds itself: its parameters and what it assigns."""
    args = fnode.args
    every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return {a.arg for a in every} | {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _handed_to_libraries(module, nodes, local):
    """(name node, the call's spelling) of each function of the file passed by name to a
    function of another library (`minimize(loss, x0, jac=grad_fn)`, `quad(f, 0, 1)`), which
    calls it when the program runs: no helper inlined where it is passed. A call of a function
    of this file (or of a local one, or gradgen.grad's nested derivative) inlines it instead."""
    for call in nodes:
        if not isinstance(call, ast.Call) or _inlines_its_arguments(module, call.func, local):
            continue
        for arg in list(call.args) + [k.value for k in call.keywords]:
            if isinstance(arg, ast.Starred):
                arg = arg.value
            if isinstance(arg, ast.Name) and arg.id in module.functions and arg.id not in local:
                yield arg, ast.unparse(call.func)


def _inlines_its_arguments(module, func, local):
    """Whether a call of `func` is lowered with the function values passed to it: a function
    of this file or of the user's other files, a local function, gradgen's own."""
    root = func
    while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if not isinstance(root, ast.Name) or root.id in local or root.id in module.functions:
        return True
    qualified = module.qualified(func)
    if qualified is None:
        return root.id in module.imports or root.id in module.constants  # (a builtin such as map: a library)
    return qualified.split(".")[0] == "gradgen" or local_imports.function(module, qualified) is not None \
        or qualified in odeint.SPELLINGS  # (its function is written into the generated module)


def _runs(module, fnode, nodes):
    """Why the function is part of the program around the losses, if it is: it takes nothing,
    yields, plots, or runs a gradient gradgen wrote."""
    args = fnode.args
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes):
        return "is a generator (it yields), not a function returning one number"
    if not (args.posonlyargs + args.args + args.kwonlyargs) and args.vararg is None and args.kwarg is None:
        return "takes no parameters"
    imported = _imported(module, nodes)
    library = _plotting(imported, nodes)
    if library is not None:
        return f"draws a plot (it uses {library})"
    generated = _generated_call(imported, nodes)
    if generated is not None:
        return f"calls '{generated[0]}' from {generated[1]} ({DRIVER})"
    handed = next(_handed_to_libraries(module, nodes, _locals(fnode, nodes)), None)
    if handed is not None:
        return f"passes '{handed[0].id}' to '{handed[1]}', which calls it ({DRIVER})"
    return None


def _returns(module, fnode, called, nodes):
    """Why the function returns no number of its own, if its syntax shows it: it is given a
    function to call (a driver), takes its callers' *args, or every `return` gives a dict,
    a tuple, a list, a string or nothing."""
    if fnode.args.vararg is not None and called:
        return "takes the *args its callers pass (it is inlined where a loss calls it)"
    return _returns_no_number(called, nodes, set(records.records(module)))


def _drivers(module, walked, runs):
    """{function: why} for the functions given a function to call (`grad_fn`) that no loss
    calls: a training loop, an optimiser, or one that passes its function on to such a one
    (`anneal(h, grad_energy)` calling `relax(theta, h, grad_energy)`). One called from a
    loss (`apply(f, x)` given np.tanh) is a helper: inlined there, with the function."""
    calling = _calling_parameters(module, walked)
    helpers = set(called_by(module, [f for f in module.functions if f not in runs and f not in calling], walked))
    size = -1
    while size != len(helpers):  # what a helper that is given a function calls with it is a helper too
        size = len(helpers)
        helpers |= set(called_by(module, [f for f in helpers if f in calling and f not in runs], walked))
    drivers = {}
    for name, (param, via) in calling.items():
        if name not in helpers and name not in runs:
            passes = f"passes it to '{via}', which calls it" if via is not None else "calls it"
            drivers[name] = f"takes a function, '{param}', and {passes} ({DRIVER})"
    return drivers


def _calling_parameters(module, walked):
    """{function: (parameter, None or the function of the file it passes it to)}: the first
    parameter without a function default each function calls, itself or through a function of
    the file it passes it to, which calls it in turn (to a fixed point)."""
    found = {name: (p, None) for name, fnode in module.functions.items()
             if (p := called_parameter(fnode)) is not None}
    size = -1
    while size != len(found):
        size = len(found)
        for name, fnode in module.functions.items():
            if name in found:
                continue
            own = set(_required(fnode))
            for call in walked[name]:
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in found \
                        and call.func.id != name:
                    arg = _argument_for(module.functions[call.func.id], call, found[call.func.id][0])
                    if isinstance(arg, ast.Name) and arg.id in own:
                        found[name] = (arg.id, call.func.id)
                        break
    return found


def _required(fnode):
    """The parameters with no default (a function default is compiled for, not a driver's)."""
    args = fnode.args
    positional = args.posonlyargs + args.args
    with_default = positional[len(positional) - len(args.defaults):] if args.defaults else []
    return [a.arg for a in positional if a not in with_default] + \
        [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]


def _argument_for(fnode, call, param):
    """The argument `call` passes to `fnode`'s parameter `param`, or None."""
    for keyword in call.keywords:
        if keyword.arg == param:
            return keyword.value
    positional = [a.arg for a in fnode.args.posonlyargs + fnode.args.args]
    if param in positional and positional.index(param) < len(call.args):
        arg = call.args[positional.index(param)]
        return None if isinstance(arg, ast.Starred) else arg
    return None


def _imported(module, nodes):
    """{local name: qualified name} of the module's imports and the function's own (`nodes`)."""
    names = dict(module.imports)
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update({a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                          for a in node.names})
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    return names


def _plotting(imported, nodes):
    """The plotting library the function (its own `nodes`) uses, if any."""
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in imported:
            top = imported[node.id].split(".")[0]
            if top in PLOTTING:
                return top
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            tops = [(getattr(node, "module", None) or a.name).split(".")[0] for a in node.names]
            if any(t in PLOTTING for t in tops):
                return next(t for t in tops if t in PLOTTING)
    return None


def _generated_call(imported, nodes):
    """(name called, module) of a call into a generated module (`*_grad`): `loss_grad(...)`
    imported from it, or `grads.loss_grad(...)` through the module itself."""
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in imported:
            name, source = func.id, imported[func.id].rpartition(".")[0]
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in imported:
            name, source = f"{func.value.id}.{func.attr}", imported[func.value.id]
        else:
            continue
        if source.rpartition(".")[2].endswith("_grad"):
            return name, source
    return None


def _returns_no_number(called, nodes, classes):
    """Why every `return` of the function (its own `nodes`) gives something other than a
    number, if they all do (an instance of one of the file's NamedTuples or dataclasses, `classes`, is no
    number)."""
    values = [n.value for n in nodes if isinstance(n, ast.Return)]
    if all(v is None or (isinstance(v, ast.Constant) and v.value is None) for v in values):
        return "returns nothing, not one number"
    bound = _bound(nodes)
    kinds = {_kind(v, bound, classes) for v in values}
    if len(kinds) != 1 or None in kinds:
        return None
    kind = kinds.pop()
    if kind == "a tuple" and called:
        return "returns a tuple, not one number (it is inlined where a loss unpacks its call)"
    return f"returns {kind}, not one number"


def _bound(nodes):
    """{local name: the values assigned to it, None for a binding of another form}: what a
    returned name may hold (`params = {}`, then `return params`)."""
    simple, bound = set(), {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target = node.target
        else:
            continue
        if isinstance(target, ast.Name):
            simple.add(target)
            bound.setdefault(target.id, []).append(node.value)
    for node in nodes:  # a loop variable, `+=`, unpacking, `with ... as`: any value
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node not in simple:
            bound.setdefault(node.id, []).append(None)
    return bound


def _kind(value, bound, classes):
    if isinstance(value, ast.Name) and value.id in bound:
        kinds = {_kind(v, {}, classes) if v is not None else None for v in bound[value.id]}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in classes:
        name = value.func.id  # a record of the file: a NamedTuple, a dataclass
        return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"
    if isinstance(value, (ast.Dict, ast.DictComp)) or _calls(value, "dict"):
        return "a dict"
    if isinstance(value, ast.Tuple) or _calls(value, "tuple"):
        return "a tuple"
    if isinstance(value, (ast.List, ast.ListComp)) or _calls(value, "list"):
        return "a list"
    if isinstance(value, ast.JoinedStr) or (isinstance(value, ast.Constant) and isinstance(value.value, (str, bytes))):
        return "a string"
    return None


def _calls(value, name):
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == name


# ---- what is judged once a function is lowered ------------------------------------------

def builds_data(fnode):
    """Whether a function looks like a data builder rather than a loss: every parameter has a
    default that is a count, a seed, a flag, a string or None (`load_market(n_assets=4,
    seed=11)`); a loss takes what it differentiates (`frontier(market, grad_obj)` is likelier
    the one the user meant than it). Of the refusals of a file where nothing compiled, a
    loss's is said, the first in the file of those no other function calls."""
    args = fnode.args
    positional = args.posonlyargs + args.args
    defaults = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
    if len(defaults) != len(positional) + len(args.kwonlyargs):
        return False
    return all(isinstance(d, ast.Constant) and (d.value is None or isinstance(d.value, (int, bool, str)))
               for d in defaults)


def number_defaults_relied_on(module, fn, fnode):
    """The parameters with a number default (`sigma=0.1`) without which the result of `fn`
    could be an array (`np.sum(r ** 2) / sigma ** 2`): a helper of a loss that is judged a loss
    in its own right for them has a gradient right only where they are numbers, so its
    generated function checks that they are."""
    if lower.returns_a_number(fnode) or not any(array_facts.number_default(p) for p in fn.params):
        return []

    def may_be_array(defaults_numbers):
        arrays = array_facts.array_values(fn, module, result_may_be_array=True, defaults_numbers=defaults_numbers)
        return array_facts.may_be_array(fn.result, arrays)

    if not may_be_array(False) or may_be_array(True):
        return []
    return [p.name for p in fn.params if array_facts.number_default(p)]


def nothing_differentiated(compiled):
    """Why no parameter of the function is differentiated (each, why); None if one is."""
    if compiled.wrt:
        return None
    if not compiled.left_out:
        return "it takes none"
    if NO_DERIVATIVE in compiled.left_out.values():  # (`floor(a)`: its derivative is an exact zero, not nothing)
        return None
    return "; ".join(f"{p} ({why})" for p, why in compiled.left_out.items())


# ---- module-level code ---------------------------------------------------------------------

MAIN_BLOCK = 'the if __name__ == "__main__" block'
RUNS = "it runs when the file runs; gradgen compiles the functions it calls"
MAIN_RUNS = "it runs the file as a script; gradgen compiles the functions it calls"
CLASS = "gradgen compiles top-level functions, not classes"


def top_level_code(module):
    """(what, [(first line, last line), ...], why) for what does something when the file
    runs: the main block, each class, and the module-level statements (one entry for all)."""
    found, script = [], []
    for stmt in module.tree.body:
        first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
        if _is_main_block(stmt):
            found.append((MAIN_BLOCK, [(first, first)], MAIN_RUNS))
        elif isinstance(stmt, ast.ClassDef):
            found.append((f"class {stmt.name}", [(first, first)], CLASS))
        elif isinstance(stmt, ast.AsyncFunctionDef):
            found.append((f"async def {stmt.name}", [(first, first)], "gradgen compiles plain functions, not "
                                                                     "coroutines"))
        elif _runs_the_program(module, stmt):
            if script and script[-1][1] == first - 1:
                script[-1] = (script[-1][0], last)  # on the next line: one stretch
            else:
                script.append((first, last))
    if script:
        found.append(("module-level code", script, RUNS))
    return sorted(found, key=lambda entry: entry[1][0])


def _is_main_block(stmt):
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare) or len(stmt.test.ops) != 1:
        return False
    sides = [stmt.test.left, stmt.test.comparators[0]]
    return isinstance(stmt.test.ops[0], ast.Eq) and \
        any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and \
        any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def _runs_the_program(module, stmt):
    """A statement that does something when the file runs (not a def, an import, a docstring
    or a value a function may read): an assignment counts when it calls the file's functions."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Import, ast.ImportFrom, ast.Pass)):
        return False
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return False  # a docstring, or `...`
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in module.functions
                   for n in ast.walk(stmt))
    return True


def orphan(module, fname, compiled_names, waiting, skipped, refusals):
    """Whether `fname`, skipped as a helper, is inlined nowhere: no compiled function reaches it
    (through skipped helpers too), no function still waiting does, and none that calls it was
    refused (then that refusal is what to fix)."""
    compiled = helpers_of(module, compiled_names, skipped)
    pending = helpers_of(module, [w for w in waiting if w != fname], skipped)
    refused = {r[0] for r in refusals}
    return fname not in compiled and fname not in pending and not refused & set(_callers(module, fname))


def _callers(module, fname):
    """The functions of the file that call `fname`, or integrate it (odeint(fname, ...)); not
    those that only pass it on to a driver."""
    return [name for name, fnode in module.functions.items() if name != fname and any(
        isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id == fname or odeint.called(module, n)
                                     and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == fname)
        for n in own_nodes(fnode.body))]


def likeliest(module, skipped, named_by_others, refusal):
    """How unlikely the refused function is the file's loss (the least is reported): a refusal
    located in another file, a helper of a function that compiled, one that builds data
    (builds_data), one no other function names (drivers name the loss)."""
    fname, caller, exc = refusal
    return (exc.filename != module.filename, caller is not None and caller not in skipped,
            builds_data(module.functions[fname]), fname not in named_by_others)
