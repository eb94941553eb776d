"""The pipeline, end to end: source in, generated module text out.

    parse -> lower -> analyse -> reverse -> simplify -> emit

`compile_source` runs the stages for each selected function: the front end lowers it
(gradgen.frontend), the reverse driver makes its gradient's IR (gradgen.transform.reverse),
and the emitter writes it out (gradgen.codegen), with the other kinds `--emit` asks for.
gradgen/tools/files.py adds the file handling (`compile_file`).
"""

from __future__ import annotations

import ast
import functools
import types
from dataclasses import dataclass, field

from gradgen.analysis import arrays as array_facts
from gradgen.codegen import array_api as backends
from gradgen.codegen import derivatives, emit, freshness, guards
from gradgen.codegen import module as generated
from gradgen.codegen import numba_jit as jits
from gradgen.codegen.naming import ModuleNamer, identifiers, top_level_identifiers
from gradgen.errors import CompileError
from gradgen.frontend import closures, custom_calls, lower, parse
from gradgen.frontend.structured import NeedsStructure, UsedWhole
from gradgen.ir import simplify
from gradgen.ir.nodes import Call, Var, assigned, expressions, subexpressions, variables, walk
from gradgen.transform.reverse.driver import reverse_parts

HEADER_MARK = freshness.HEADER_MARK
BACKWARD = "backward pass: upstream gradient times local gradient, last statement first"


@dataclass
class CompiledFunction:
    name: str
    params: list
    wrt: list
    grad_name: str
    value_and_grad_name: str
    ir: object = None
    left_out: dict = field(default_factory=dict)  # parameter -> why it is not differentiated
    reversed: object = None  # its Reversed parts (for the hvp)
    made: list = field(default_factory=list)  # derivatives.Made: the other functions --emit asked for


@dataclass
class CompiledModule:
    filename: str
    text: str
    functions: list = field(default_factory=list)
    module: object = None
    skipped: dict = field(default_factory=dict)  # function -> why it has no gradient
    backend: str = "numpy"  # "array-api": the text respelled by gradgen/codegen/array_api.py
    jit: str = "none"  # "numba": the functions decorated for numba.njit by gradgen/codegen/numba_jit.py


def compile_source(source, filename="<string>", functions=None, wrt=None, emit_kinds=("grad",),
                   backend="numpy", jit="none", shapes=None, shapes_from=None, constants=None) -> CompiledModule:
    """Compile every selected top-level function of `source` (str or bytes) to gradient code
    (and the other kinds `emit_kinds` names: see gradgen.codegen.derivatives); `backend="array-api"`
    respells the NumPy module for any Array API library (gradgen/codegen/array_api.py); `jit="numba"`
    decorates its functions for numba.njit (gradgen/codegen/numba_jit.py). `shapes` ({parameter: shape},
    from `--shapes FILE:FUNC`, named in the header as `shapes_from`) are the shapes the
    module assumes, as if each parameter were annotated with them (gradgen.analysis.stated).
    `constants` ({name: value}) replace the values the source gives its module constants
    (the Python API compiles again for a notebook that changed one gradgen folds)."""
    try:
        compiled = _compile_source(source, filename, functions, wrt, tuple(emit_kinds), shapes or {}, shapes_from,
                                   guarded=jit == "none", constants=constants)
        if backend != "numpy":
            compiled.text, compiled.backend = backends.rewrite(compiled, backend), backend
        if jit != "none":
            compiled.text, compiled.jit = jits.rewrite(compiled, jit), jit
        return compiled
    except RecursionError:
        raise CompileError("the file is nested too deeply for gradgen (Python's recursion limit); split "
                           "its deepest expressions or helper calls into several statements", filename) from None
    except MemoryError:
        raise CompileError("out of memory while compiling this file", filename) from None


def _compile_source(source, filename, functions, wrt, emit_kinds=("grad",), assumed=None, shapes_from=None,
                    guarded=True, constants=None):
    """`guarded`: constants as keyword arguments and shapes checked on entry (gradgen.codegen.guards);
    not for --jit numba, which compiles module globals as the constants they are."""
    module = parse.parse_module(source, filename)
    module.constants.update({k: v for k, v in (constants or {}).items() if k in module.constants})
    module.assumed_shapes = dict(assumed or {})
    selected = _select(module, functions)
    namer = ModuleNamer(identifiers(module.tree), list(module.constants), top_level_identifiers(module.tree))
    _check_wrt(module, selected, wrt)
    sigmoid_name = namer.helper(lower.sigmoid_helper_name(module))
    for name in emit.HELPERS:  # reserved, so that no local variable shadows them
        namer.taken.add(name)
    names = {f: (namer.grad_function(f), namer.value_and_grad_function(f)) for f in selected}
    emitter = emit.Emitter(_default_namespace(module), {})
    results, texts, constants, sigmoid_ns, skipped = [], [], set(), {}, {}
    for fname in selected:
        custom = custom_calls.not_compiled(module, fname)  # a custom_vjp function or its rule
        if custom is not None:
            if functions:
                raise module.error(module.functions[fname], f"'{fname}' has {custom}")
            skipped[fname] = custom
            continue
        if closures.returns_a_function(module.functions[fname], module):
            if functions:
                raise module.error(module.functions[fname], _FACTORY.format(name=fname))
            skipped[fname] = "no gradient: it returns a function (its closure is inlined where a loss calls it)"
            continue
        called = closures.called_parameter(module.functions[fname])
        if called is not None:
            if functions:
                raise module.error(module.functions[fname], _CALLS_PARAMETER.format(name=fname, param=called))
            skipped[fname] = f"no gradient: it calls its parameter '{called}' (it is inlined where a loss passes a function)"
            continue
        fn, fnamer = _lower(module, fname, namer, sigmoid_name)
        if guarded:
            emitter.constant_params, emitter.stated = guards.entry(module, fn, _constants_read(fn, module),
                                                                   _default_namespace(module) == "numpy")
            emitter.user_params = {p.name for p in fn.params}
        array_result = not lower.returns_a_number(module.functions[fname]) and array_facts.result_is_array(fn, module)
        if array_result and not set(emit_kinds) & derivatives.FOR_ARRAYS:
            if functions:
                raise module.error(module.functions[fname], _ARRAY_RESULT.format(name=fname))
            skipped[fname] = "no gradient: its result is an array (it is inlined where a loss calls it)"
            continue
        if emit_kinds == ("grad",):
            compiled, text = _compile_function(module, fn, fnamer, names[fname], wrt, emitter)
        else:
            compiled, text = _compile_kinds(module, fn, fnamer, namer, names[fname], wrt, emitter, emit_kinds,
                                            array_result)
        results.append(compiled)
        texts.extend(text)
        constants |= _constants_read(compiled.ir, module)
        emitter.constant_params, emitter.stated = [], {}
        sigmoid_ns.update(_sigmoid_namespaces(compiled.ir))
    if not results:
        raise CompileError("no function here returns a number, so none has a gradient: "
                           + "; ".join(f"{f} returns an array" for f in skipped)
                           + " (annotate '-> float' where a function returns a number)", module.filename)
    compiled_names = [f.name for f in results]
    shown = generated.display_name(filename)
    for prim, name in emitter.helpers.items():  # (a helper only a custom rule calls: the file's library)
        if prim == "sigmoid":
            sigmoid_ns.setdefault(prim, _default_namespace(module))
    helpers = [emit.sigmoid_helper(name, sigmoid_ns[prim], shown, lower.sigmoid_parameter(module))
               for prim, name in sorted(emitter.helpers.items()) if prim == "sigmoid"]
    helpers += emit.helper_sources(emitter.used_helpers)
    imports = set(emitter.imports) | {ns for ns in sigmoid_ns.values() if ns in ("math", "numpy")}
    if emitter.used_helpers or any(hasattr(module.constants[c], "shape") for c in constants):
        imports.add("numpy")
    carried = [(c, module.constants[c]) for c in module.constants if c in constants]
    defaults = [p.default for f in results for p in f.ir.params if p.has_default and not p.function]
    if any(generated.not_finite(v) for v in [v for _, v in carried] + defaults):
        imports.add("math")  # written math.inf / math.nan
    text = emit.module_text(
        functools.partial(freshness.header_lines, shown, str(filename), module.sha256,
                          options=generated.options(emit_kinds, shapes_from),
                          extra=[generated.shapes_line(assumed, shapes_from), guards.constants_line(carried, shown) if guarded else None,
                                 guards.folded_line(module, carried, selected)]),
        generated.module_docstring(compiled_names, shown, emit_kinds),
        carried, helpers, texts, imports)
    generated.check_generated(text, module, results, carried)
    return CompiledModule(filename, text, results, module, skipped)


_FACTORY = ("'{name}' returns a function: a factory has no gradient of its own; write the loss as a function "
            "that calls it (`objective = {name}(...)`, then `return objective(params)`): the closure is inlined there")
_CALLS_PARAMETER = ("'{name}' calls its parameter '{param}', a function known only where '{name}' is called: "
                    "compile the loss that calls '{name}' with a function (or give '{param}' a default such as "
                    "{param}=np.tanh)")
_ARRAY_RESULT = ("'{name}' returns an array, and a gradient needs one number: return one (np.sum(...), "
                 "np.mean(...)), or annotate 'def {name}(...) -> float' if it is one; a function whose result is "
                 "an array is inlined where a loss calls it")


def _select(module, functions):
    for name, (fnode, rebound) in module.redefined.items():
        # a def replaced by something unrelated is dead code (skipped unless asked for by
        # name); one rebound to something made from it (`f = wrap(f)`) is refused
        wrapped = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(rebound))
        if name in (functions or ()) or (not functions and wrapped):
            raise module.error(rebound, f"'{name}' (the 'def' at line {fnode.lineno}) is rebound here: gradgen "
                                        "compiles a function only as its 'def' wrote it")
    if not module.functions:
        raise CompileError("no functions found: gradgen compiles top-level 'def' functions", module.filename)
    if not functions:
        # a helper that returns a tuple, takes the *args its callers pass, or calls itself (unrolled where a
        # caller fixes its depth: on its own, the depth is its argument's) has no gradient of its own
        calls = {f: {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
                 for f, node in module.functions.items()}
        called = set().union(*calls.values())
        recursive = {f for f in calls if f in _reached(f, calls) and any(f in calls[g] for g in calls if g != f)}
        scalar = [f for f, node in module.functions.items()
                  if not _returns_tuples(node) and not (node.args.vararg is not None and f in called)
                  and f not in recursive]
        return scalar or list(module.functions)
    for f in functions:
        if f not in module.functions:
            available = ", ".join(module.functions)
            raise CompileError(f"no function named '{f}' (from --function); the file defines: {available}",
                               module.filename)
    return list(dict.fromkeys(functions))


def _reached(name, calls):
    """The functions of the file a call of `name` may reach (calls of calls too)."""
    seen, todo = set(), [name]
    while todo:
        for callee in calls.get(todo.pop(), ()):
            if callee in calls and callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return seen


def _returns_tuples(fnode):
    """Every `return` of `fnode` returns a tuple (a helper whose call is unpacked)."""
    returns = [n for n in ast.walk(fnode) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(r.value, ast.Tuple) for r in returns)


def _check_wrt(module, selected, wrt):
    """Every --wrt name must be a parameter of some selected function."""
    params = {name for f in selected for name in lower.parameter_names(module.functions[f])}
    for w in wrt or ():
        if w not in params:
            owners = " or ".join(f"'{f}'" for f in selected)
            listed = ", ".join(sorted(params)) or "none"
            raise CompileError(f"no parameter '{w}' (from --wrt) in {owners}; the parameters are: {listed}",
                               module.filename)


def _default_namespace(module):
    """Library for calls a rule adds to operators (`log` for `x ** y`): numpy if imported."""
    return "numpy" if any(q.split(".")[0] == "numpy" for q in module.imports.values()) else "math"


def _lower(module, fname, namer, sigmoid_name):
    """Function `fname` lowered to IR, with the names of its generated functions' locals."""
    structured, soft, arrays_only = set(), set(), set()
    while True:  # again, with a parameter structured, each time a use needs a container
        fnamer = namer.function_namer(lower.parameter_names(module.functions[fname]))
        try:
            return lower.lower_function(module, fname, fnamer, sigmoid_name, frozenset(structured),
                                        frozenset(arrays_only)), fnamer
        except NeedsStructure as need:
            assert need.param not in structured, need.param
            structured.add(need.param)
            if need.soft:
                soft.add(need.param)
        except UsedWhole as whole:
            if whole.param not in soft - arrays_only:
                raise whole.error from None
            structured.discard(whole.param)  # only looped over, and used whole: an array after all
            arrays_only.add(whole.param)


def _compile_function(module, fn, fnamer, names, wrt, emitter):
    fname = fn.name
    parts = reverse_parts(module, fn, fnamer, wrt)
    _written_out(parts, fn, emitter)
    chosen, left_out, forward_grad, forward_value, backward, grads = (
        parts.chosen, parts.left_out, parts.forward_grad, parts.forward_value, parts.backward, parts.grads)
    grad_text = _grads_text(grads, emitter)
    value = emit.expr_text(parts.value, emitter)
    of = fn.result_name
    described = ", ".join(chosen) if chosen else "no parameters"
    returns = ", ".join(f"d{of}/d{p}" for p in chosen)
    returns = f"({returns})" if len(chosen) != 1 else returns
    where = f"{generated.display_name(module.filename)}, line {fn.line}"
    doc_grad = (f"Gradient of {fname} with respect to {described}.\n\n"
                f"Returns {returns}, where {of} is the value {fname} returns ({where}).")
    doc_value = (f"Value and gradient of {fname} with respect to {described}, from one forward pass.\n\n"
                 f"Returns ({of}, {returns}), where {of} is the value {fname} returns ({where}).")
    if parts.shapes:
        assumed = (f"\n\nIt is written for the shapes {generated.listed(parts.shapes)} ({parts.shapes_from}), each "
                   "letter one length, and checks its arguments' shapes on entry (a ValueError names the "
                   "one that differs).")
        doc_grad, doc_value = doc_grad + assumed, doc_value + assumed
    sections_grad = [("forward pass", forward_grad), (BACKWARD, backward)]
    sections_value = [("forward pass", forward_value), (BACKWARD, backward)]
    texts = [
        emit.function_text(names[0], fn.params, doc_grad, _nonempty(sections_grad), grad_text, emitter),
        emit.function_text(names[1], fn.params, doc_value, _nonempty(sections_value),
                           f"{value}, {_parenthesised(grad_text, len(chosen))}", emitter),
    ]
    compiled = CompiledFunction(fname, [p.name for p in fn.params], chosen, names[0], names[1], fn, left_out)
    compiled.reversed = parts
    return compiled, texts


def _written_out(parts, fn, emitter):
    """What the emitter must know of a reversed function: its helpers, and the parameters
    its entry check must find numbers."""
    emitter.helpers.update(fn.helpers)
    emitter.stated.update(parts.numbers_checked)


def _compile_kinds(module, fn, fnamer, namer, names, wrt, emitter, emit_kinds, array_result):
    """The functions `--emit` asks for (gradgen.codegen.derivatives): the gradient pair for a number, and
    jvp, hvp, hessian, vjp, jacobian; a kind that needs another writes it too."""
    wanted = set(emit_kinds) | {derivatives.NEEDS[k] for k in emit_kinds if k in derivatives.NEEDS}
    if array_result:
        wanted &= derivatives.FOR_ARRAYS
    where = functools.partial(_located_at, module)
    display = f"{generated.display_name(module.filename)}, line {fn.line}"
    made, texts = [], []
    if array_result or "vjp" in wanted:
        cotangent = fnamer.define("cotangent")
        parts = reverse_parts(module, fn, fnamer, wrt, Var(cotangent))
        _written_out(parts, fn, emitter)
        if "vjp" in wanted:
            made.append(derivatives.vjp(fn, parts, fnamer, namer.kind_function(fn.name, "vjp"), cotangent, emitter,
                                  display))
        compiled = CompiledFunction(fn.name, [p.name for p in fn.params], parts.chosen, None, None, fn,
                                    parts.left_out)
        if not array_result:
            fn, fnamer = _lower(module, fn.name, namer, lower.sigmoid_helper_name(module))
    if not array_result:
        compiled, grad_texts = _compile_function(module, fn, fnamer, names, wrt, emitter)
        if "grad" in emit_kinds:
            texts += grad_texts
        else:
            compiled.grad_name = compiled.value_and_grad_name = None
    chosen = compiled.wrt
    arrays = array_facts.array_values(fn, module)
    if "jvp" in wanted:
        made.append(derivatives.jvp(fn, fn.body, chosen, fnamer, namer.kind_function(fn.name, "jvp"), emitter, where,
                              display, arrays))
    if "hvp" in wanted:
        parts = compiled.reversed
        made.append(derivatives.hvp(fn, (parts.forward_grad + parts.backward, parts.grads), chosen, fnamer,
                              namer.kind_function(fn.name, "hvp"), emitter, where, display, arrays | parts.arrays))
    named = {m.kind: m.name for m in made}
    if "hessian" in wanted:
        made.append(derivatives.hessian(fn, chosen, fnamer, namer.kind_function(fn.name, "hessian"), named["hvp"],
                                  emitter, display, where))
    if "jacobian" in wanted:
        made.append(derivatives.jacobian(fn, chosen, fnamer, namer.kind_function(fn.name, "jacobian"), named["jvp"],
                                   emitter, display, where))
    order = {k: i for i, k in enumerate(derivatives.KINDS)}
    made.sort(key=lambda m: order[m.kind])
    compiled.made = made
    return compiled, texts + [m.text for m in made]


def _located_at(module, loc, message):
    """A CompileError at (line, col) of the user's file, or at the file when unknown."""
    if loc is None:
        return CompileError(message, module.filename)
    node = ast.Pass(lineno=loc[0], col_offset=max(loc[1] - 1, 0))
    return module.error(node, message)


def _grads_text(grads, emitter):
    if not grads:
        return "()"
    return ", ".join(emit.expr_text(g, emitter) for g in grads)


def _parenthesised(text, count):
    return text if count == 1 or text == "()" else f"({text})"


def _nonempty(sections):
    return [(header, stmts) for header, stmts in sections if stmts]


def _constants_read(fn, module):
    """The module constants `fn` reads: not a name its parameter or its own assignment
    shadows (`def f(w=0.5)` beside a constant `w` reads its parameter)."""
    read = simplify.names_read(fn.body) | {v.name for v in variables(fn.result)}
    own = {p.name for p in fn.params} | assigned(fn.body)
    return {name for name in read if name in module.constants and name not in own}


def _sigmoid_namespaces(fn):
    found = {}
    for stmt in walk(fn.body):
        for expr in expressions(stmt):
            for node in _calls(expr):
                if node.prim == "sigmoid":
                    found["sigmoid"] = node.ns
    return found


def _calls(expr):
    return (e for e in subexpressions(expr) if isinstance(e, Call))


def load_module(text, name="gradgen_generated"):
    """Execute generated `text` as a fresh module (it imports only numpy and math)."""
    mod = types.ModuleType(name)
    mod.__file__ = f"<{name}>"
    exec(compile(text, mod.__file__, "exec"), mod.__dict__)
    return mod
