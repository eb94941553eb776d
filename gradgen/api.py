"""The pipeline, end to end: source in, generated module text out.

    parse -> lower -> analyse -> reverse -> simplify -> emit

`compile_source` runs the stages for each selected function: the front end lowers it
(gradgen.frontend), the reverse driver makes its gradient's IR (gradgen.transform.reverse),
and the emitter writes it out (gradgen.codegen), with the other kinds `--emit` asks for.
gradgen/tools/files.py adds the file handling (`compile_file`).
"""

from __future__ import annotations

import ast
import copy
import functools
import types
from dataclasses import dataclass, field

from gradgen.analysis import activity
from gradgen.analysis import arrays as array_facts
from gradgen.codegen import array_api as backends
from gradgen.codegen import derivatives, emit, freshness, guards, numba_along, numba_index
from gradgen.codegen import module as generated
from gradgen.codegen import selection
from gradgen.codegen import numba_jit as jits
from gradgen.codegen import ode_functions, record_defaults
from gradgen.codegen.naming import ModuleNamer, identifiers, top_level_identifiers
from gradgen.errors import CompileError
from gradgen.frontend import closures, custom_calls, local_imports, lower, nested, odeint, parse, records
from gradgen.frontend.scopes import MAX_INLINED_NODES
from gradgen.frontend.structured import NeedsStructure, UsedWhole
from gradgen.ir import simplify
from gradgen.ir.nodes import Var, assigned, variables
from gradgen.transform.reverse import checkpoint as checkpointing
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
    notes: list = field(default_factory=list)  # (line, text): what --checkpoint left taped, and why


@dataclass
class CompiledModule:
    filename: str
    text: str
    functions: list = field(default_factory=list)
    module: object = None
    skipped: dict = field(default_factory=dict)  # function -> why it has no gradient (a whole file's, in order)
    top_level: list = field(default_factory=list)  # (what, [(first line, last line)], why) of the code left to run
    backend: str = "numpy"  # "array-api": the text respelled by gradgen/codegen/array_api.py
    jit: str = "none"  # "numba": the functions decorated for numba.njit by gradgen/codegen/numba_jit.py


def compile_source(source, filename="<string>", functions=None, wrt=None, emit_kinds=("grad",),
                   backend="numpy", jit="none", shapes=None, shapes_from=None, constants=None,
                   keep=(), outside=None, checkpoint=None, memory=None, kinds=None) -> CompiledModule:
    """Compile every selected top-level function of `source` (str or bytes) to gradient code
    (and the other kinds `emit_kinds` names: see gradgen.codegen.derivatives); `backend="array-api"`
    respells the NumPy module for any Array API library (gradgen/codegen/array_api.py); `jit="numba"`
    decorates its functions for numba.njit (gradgen/codegen/numba_jit.py). `shapes` ({parameter: shape},
    from `--shapes FILE:FUNC`, named in the header as `shapes_from`) are the shapes the
    module assumes, as if each parameter were annotated with them (gradgen.analysis.stated).
    `kinds` ({parameter: ("list", "ndarray")}: a list of arrays) are the kinds of parameters and
    their items the module assumes, as an annotation states them (gradgen.frontend.recursion).
    `constants` ({name: value}) replace the values the source gives its module constants
    (the Python API compiles again for a notebook that changed one gradgen folds).

    Without `functions`, the whole file: the functions that have a gradient are compiled, and
    each of the others is skipped (`skipped` says why; gradgen/codegen/selection.py). `keep`
    names functions that must compile again (the module this one replaces has them): a
    refusal of one is an error, as with `functions`. `outside` (gradgen.live.outside.Outside):
    what the running program gives a live function beyond the file's text. `wrt`: the
    parameters to differentiate (names, or "a,b"; "all" for every one that can be), None for
    the default (gradgen.analysis.activity.DEFAULT_WRT). `checkpoint` (K, or "auto" with a
    `memory` budget such as "256MB"): every loop that keeps a tape is checkpointed
    (gradgen/transform/reverse/checkpoint.py)."""
    if isinstance(wrt, str):  # "a,b" or "all", as the command line and gradgen.grad take it
        wrt = [name.strip() for name in wrt.split(",") if name.strip()] or None
    try:
        snapshots = checkpointing.snapshots_option(checkpoint, memory, filename)
        if snapshots is not None and jit != "none":
            raise CompileError("--checkpoint and --jit numba do not go together yet: numba compiles no generator "
                               "(the checkpoint schedule is one); choose one", filename)
        compiled = _compile_source(source, filename, functions, wrt, tuple(emit_kinds), shapes or {}, shapes_from,
                                   guarded=jit == "none", constants=constants, keep=frozenset(keep or ()),
                                   outside=outside, snapshots=snapshots, kinds=kinds)
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
                    guarded=True, constants=None, keep=(), outside=None, snapshots=None, kinds=None, excluded=None):
    """`guarded`: constants as keyword arguments and shapes checked on entry (gradgen.codegen.guards);
    not for --jit numba, which compiles module globals as the constants they are. `keep`: see
    compile_source. `excluded`: {function: why} a whole file skips (its generated text was refused)."""
    again = functools.partial(_compile_source, source, filename, functions, wrt, emit_kinds, assumed, shapes_from,
                              guarded, constants, keep, outside, snapshots, kinds)  # (the same compile, a function less)
    module = local_imports.read_imports(parse.parse_module(source, filename))
    module.constants.update({k: v for k, v in (constants or {}).items() if k in module.constants})
    if outside is not None:
        _take_outside(module, outside)
    module.assumed_shapes = dict(assumed or {})
    module.assumed_kinds = dict(kinds or {})
    module.snapshots = snapshots  # --checkpoint: K, or ("auto", bytes)
    selected = _select(module, functions)
    whole = not functions  # the whole file: what compiles, and a line for each function skipped
    before = {f: why for f, why in selection.skipped_before_compiling(module).items() if f not in keep} if whole else {}
    before.update(excluded or {})
    tried = [f for f in selected if f not in before]
    helper_of = selection.helpers_of(module, tried, before) if whole else {}
    namer = ModuleNamer(identifiers(module.tree), list(module.constants), top_level_identifiers(module.tree))
    _check_wrt(module, selected, wrt)
    sigmoid_name = namer.helper(lower.sigmoid_helper_name(module))
    for name in [*emit.HELPERS, *numba_along.NAMES, *numba_index.NAMES]:  # reserved, so that no local variable shadows them
        namer.taken.add(name)  # (nor the helpers --jit numba writes: `stack_rows` for np.stack(rows) hid its own)
    names = {f: (namer.grad_function(f), namer.value_and_grad_function(f)) for f in tried}
    emitter = emit.Emitter(_default_namespace(module), {})
    results, texts_of, constants, sigmoid_ns, refusals = [], {}, set(), {}, []
    skipped = dict(before)
    budget = _Budget()
    waiting = {}  # a helper skipped for its caller, which inlines it -> that caller
    named_by_others = set(selection.called_by(module, list(module.functions))) if whole else set()

    def attempt(fname, caller):
        """Compile `fname` (inlined into `caller`, if not None, so skipped where its result may
        be an array) into results, or note in `skipped` why not."""
        strict = not whole or fname in keep
        if not strict and budget.spent > FILE_INLINED_NODES:
            skipped[fname] = _NOT_TRIED.format(bound=FILE_INLINED_NODES, name=fname)
            return
        kept = _named_so_far(namer, emitter)  # (a function skipped leaves nothing it named)
        try:
            compiled, text = _compile_selected(module, fname, namer, names[fname], sigmoid_name, wrt, emitter,
                                               emit_kinds, guarded, strict, caller, budget)
        except _Skipped as skip:
            _named_so_far(namer, emitter, kept)
            skipped[fname] = skip.reason
            if skip.inlined_by is not None:
                waiting[fname] = skip.inlined_by
            return
        except CompileError as exc:
            if fname in keep:
                exc.message += _KEPT.format(name=fname)
                exc.args = (exc.message,)
            if strict:  # `--function NAME`, or a function the module this compile replaces has
                raise
            _named_so_far(namer, emitter, kept)
            skipped[fname] = _refused_here(exc, module.functions[fname], caller)
            refusals.append((fname, caller, exc))
            return
        finally:
            emitter.constant_params, emitter.stated = [], {}
        skipped.pop(fname, None)
        results.append(compiled)
        texts_of[fname] = text
        constants.update(_constants_read(compiled.ir, module))
        sigmoid_ns.update(generated.sigmoid_namespaces(compiled.ir))

    for fname in tried:
        attempt(fname, helper_of.get(fname))
    # a helper whose callers were all skipped (`jax_objective`, a factory, calls the loss) is
    # inlined nowhere: it is tried on its own, as a loss (not where a caller was refused: the
    # refusal is what to fix), callers first (a loss compiled inlines its own helpers again)
    while orphan := next((f for f in waiting if selection.orphan(module, f, [r.name for r in results], waiting,
                                                                  skipped, refusals)), None):
        del waiting[orphan]
        attempt(orphan, None)
    order = {fname: k for k, fname in enumerate(tried)}  # (the file's order, as a recompile keeping them writes it)
    results.sort(key=lambda compiled: order[compiled.name])
    texts = [text for compiled in results for text in texts_of[compiled.name]]
    if not results:  # the refusal of the likeliest loss, located (see selection.likeliest); else why none has a gradient
        if refusals:
            raise min(refusals, key=functools.partial(selection.likeliest, module, skipped, named_by_others))[2]
        raise _nothing_compiled(module, skipped)
    skipped = {f: skipped[f] for f in selected if f in skipped}  # in file order
    compiled_names = [f.name for f in results]
    shown = generated.display_name(filename)
    for prim, name in emitter.helpers.items():  # (a helper only a custom rule calls: the file's library)
        if prim == "sigmoid":
            sigmoid_ns.setdefault(prim, _default_namespace(module))
    helpers = [emit.sigmoid_helper(name, sigmoid_ns[prim], shown, lower.sigmoid_parameter(module))
               for prim, name in sorted(emitter.helpers.items()) if prim == "sigmoid"]
    declares_classes = bool(records.records(module))  # (NamedTuples, dataclasses: gradgen.rules.records)
    integrated, ode_constants, ode_imports, ode_helpers = ode_functions.used(results, module)
    constants |= ode_constants
    helpers += emit.helper_sources(emitter.used_helpers | ode_helpers, declares_classes) + integrated
    imports = set(emitter.imports) | {ns for ns in sigmoid_ns.values() if ns in ("math", "numpy")} | ode_imports
    imports |= emit.record_imports(emitter.used_helpers, declares_classes)
    if emitter.used_helpers or any(hasattr(module.constants[c], "shape") for c in constants):
        imports.add("numpy")
    carried = [(c, module.constants[c]) for c in module.constants if c in constants and c not in module.runtime]
    given = [c for c in module.constants if c in constants and c in module.runtime]
    declared, needs = record_defaults.declarations(module, record_defaults.used(results, module), emit.literal)
    imports |= needs | ({"numpy"} if any("np." in text for text in declared) else set())
    defaults = [p.default for f in results for p in f.ir.params if p.has_default and not p.function]
    if any(generated.not_finite(v) for v in [v for _, v in carried] + defaults):
        imports.add("math")  # written math.inf / math.nan
    text = emit.module_text(
        functools.partial(freshness.header_lines, shown, str(filename), module.sha256,
                          options=generated.options(emit_kinds, shapes_from, functions, wrt, snapshots), imported=module.files_read,
                          extra=[generated.shapes_line(assumed, shapes_from), guards.constants_line(carried, shown) if guarded else None,
                                 guards.given_line(given),
                                 guards.folded_line(module, carried + [(c, None) for c in given], compiled_names),
                                 generated.functions_line(module, compiled_names, skipped),
                                 generated.differentiated_line(results, wrt)]),
        generated.module_docstring(compiled_names, shown, emit_kinds),
        carried, helpers, texts, imports, declared)
    try:
        generated.check_generated(text, module, results, carried)
    except CompileError as exc:
        culprit = getattr(exc, "function", None)
        if not whole or culprit is None or culprit in keep or len(results) == 1:
            raise
        # a whole file: that function is skipped (its reason located), and the file compiled without it
        skip = {**(excluded or {}), culprit: _refused_here(exc, module.functions[culprit], None)}
        return again(skip)
    top_level = selection.top_level_code(module) if whole else []
    return CompiledModule(filename, text, results, module, skipped, top_level=top_level)


_FACTORY = ("'{name}' returns a function: a factory has no gradient of its own; write the loss as a function "
            "that calls it (`objective = {name}(...)`, then `return objective(params)`): the closure is inlined there")
_CALLS_PARAMETER = ("'{name}' calls its parameter '{param}', a function known only where '{name}' is called: "
                    "compile the loss that calls '{name}' with a function (or give '{param}' a default such as "
                    "{param}=np.tanh)")
_ARRAY_RESULT = ("'{name}' returns an array, and a gradient needs one number: return one (np.sum(...), "
                 "np.mean(...)), or annotate 'def {name}(...) -> float' if it is one; a function whose result is "
                 "an array is inlined where a loss calls it")
# helpers inlined into one function copy at most MAX_INLINED_NODES syntax nodes; the functions
# of a whole file together, about as many (each is tried: shared helpers would multiply the work)
FILE_INLINED_NODES = MAX_INLINED_NODES
_NOT_TRIED = ("not tried: the functions before it inlined helpers of more than {bound:,} syntax nodes in all, "
              "gradgen's bound for one file; compile it alone (--function {name})")
_KEPT = (" ('{name}' has a gradient in the module compiled from this file before: fix this, or delete that "
         "module to compile the file without it)")


class _Skipped(Exception):
    """A function of the file that has no gradient of its own (`reason` says why; `inlined_by`:
    the caller it is left to, if that is why)."""

    def __init__(self, reason, inlined_by=None):
        super().__init__(reason)
        self.reason, self.inlined_by = reason, inlined_by


def _named_so_far(namer, emitter, restored=None):
    """What the functions compiled so far have named (and the helpers and imports they use),
    or, given that, the namer and emitter put back to it."""
    if restored is not None:
        namer.taken, namer.helpers, emitter.helpers, emitter.imports, emitter.used_helpers = restored
    return (set(namer.taken), dict(namer.helpers), dict(emitter.helpers), set(emitter.imports),
            set(emitter.used_helpers))


@dataclass
class _Budget:
    """The syntax nodes inlining has copied into the functions of one file so far."""
    spent: int = 0


def _skip(strict, module, fnode, message, reason):
    """`--function NAME` asked for it: a located error; else the function is skipped."""
    if strict:
        raise module.error(fnode, message)
    raise _Skipped(reason)


def _all_defaulted(fn):
    return all(p.has_default or p.keyword_only for p in fn.params)


def _refused_here(exc, fnode, caller):
    """Why a function of a whole file was skipped: gradgen's refusal, where it is."""
    where = f" (line {exc.line})" if exc.line is not None and exc.line != fnode.lineno else ""
    return f"inlined where '{caller}' calls it; alone: {exc.message}{where}" if caller else f"{exc.message}{where}"


def _nothing_compiled(module, skipped):
    """No function of the file has a gradient, and none was refused: each is skipped, why."""
    listed = "; ".join(f"{f} (line {module.functions[f].lineno}): {why}" for f, why in skipped.items())
    hint = "; annotate '-> float' where a function returns a number" if "array" in listed else ""
    message = f"no function here has a gradient of its own: {listed}{hint}"
    if len(skipped) == 1:  # at its def
        return module.error(module.functions[next(iter(skipped))], message)
    return CompileError(message, module.filename)


def _compile_selected(module, fname, namer, names, sigmoid_name, wrt, emitter, emit_kinds, guarded, strict,
                      caller=None, budget=None):
    """One selected function's compiled record and texts; `_Skipped` (or, `strict`, an error)
    where it has no gradient of its own: a custom rule, a factory, a function that calls its
    parameter, one whose result is an array, a helper of `caller` whose result may be one."""
    fnode = module.functions[fname]
    custom = custom_calls.not_compiled(module, fname)  # a custom_vjp function or its rule
    if custom is not None:
        _skip(strict, module, fnode, f"'{fname}' has {custom}", _reason(custom))
    if closures.returns_a_function(fnode, module):
        _skip(strict, module, fnode, _FACTORY.format(name=fname),
              "returns a function (its closure is inlined where a loss calls it)")
    called = closures.called_parameter(fnode)
    if called is not None:
        _skip(strict, module, fnode, _CALLS_PARAMETER.format(name=fname, param=called),
              f"calls its parameter '{called}' (it is inlined where a loss passes a function)")
    fn, fnamer = _lower(module, fname, namer, sigmoid_name, budget)
    if guarded:
        emitter.constant_params, emitter.stated = guards.entry(module, fn, _constants_read(fn, module),
                                                               _default_namespace(module) == "numpy")
        emitter.user_params = {p.name for p in fn.params}
    array_result = not lower.returns_a_number(fnode) and array_facts.result_is_array(fn, module)
    if array_result and not set(emit_kinds) & derivatives.FOR_ARRAYS:
        _skip(strict, module, fnode, _ARRAY_RESULT.format(name=fname),
              "its result is an array (it is inlined where a loss calls it)")
    # a helper whose result may be an array is inlined where it is called (one whose every parameter
    # has a default runs alone: a loss too); a number default is a number for this judgement
    relied = selection.number_defaults_relied_on(module, fn, fnode) if not strict and caller is not None else []
    if guarded and relied:  # (a helper compiled as a loss too: its code checks that they are numbers, on entry)
        emitter.stated.update({name: () for name in relied})
    if not strict and caller is not None and not lower.returns_a_number(fnode) and not _all_defaulted(fn) \
            and array_facts.may_be_array(fn.result, array_facts.array_values(fn, module, result_may_be_array=True,
                                                                             defaults_numbers=True)):
        raise _Skipped(f"its result may be an array, and '{caller}' calls it: it is inlined there (annotate "
                       "'-> float' if it is a loss too)", inlined_by=caller)
    if emit_kinds == ("grad",):
        compiled, texts = _compile_function(module, fn, fnamer, names, wrt, emitter)
    else:
        compiled, texts = _compile_kinds(module, fn, fnamer, namer, names, wrt, emitter, emit_kinds, array_result)
    nothing = selection.nothing_differentiated(compiled)
    if nothing is not None and (wrt is None or tuple(wrt) == activity.ALL):  # (--wrt names what it asks for)
        _skip(strict, module, fnode, f"'{fname}' has no parameter to differentiate: {nothing}",
              f"has no parameter to differentiate: {nothing}")
    return compiled, texts


def _take_outside(module, outside):
    """What gradgen.live read from the running program (gradgen/live/outside.py), as if the
    file gave it: the same-file functions it reached as top-level helpers, library functions
    under the names the code reads them by, numbers and arrays as module constants that the
    generated function takes on every call."""
    module.functions.update(outside.functions)
    module.imports.update(outside.aliases)
    module.constants.update({name: _as_tuples(value) for name, value in outside.constants.items()})
    for name in [*outside.functions, *outside.aliases, *outside.constants]:
        module.not_constants.pop(name, None)
        module.redefined.pop(name, None)
    module.runtime = frozenset(outside.constants)
    module.outside = outside
    for name, home in outside.homes.items():  # another file's function: its errors and lines are that file's
        place = copy.copy(module)
        place.filename, place.lines = home.filename, home.lines
        module.homes[id(outside.functions[name])] = place


def _as_tuples(value):
    """A list of the running program as the parser holds a written one: a tuple (nested too)."""
    return tuple(_as_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def _reason(why):
    """A reason as a skip line gives it (`skipped f (line 3): <reason>`): no 'no gradient' before it."""
    for lead in ("no gradient of its own: ", "no gradient: "):
        if why.startswith(lead):
            return why[len(lead):]
    return why


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
    if not functions:  # the whole file (gradgen/codegen/selection.py: which are tried)
        return list(module.functions)
    for f in functions:
        if f not in module.functions:
            available = ", ".join(module.functions)
            raise CompileError(f"no function named '{f}' (from --function); the file defines: {available}",
                               module.filename)
    return list(dict.fromkeys(functions))


def _check_wrt(module, selected, wrt):
    """Every --wrt name must be a parameter of some selected function."""
    params = {name for f in selected for name in lower.parameter_names(module.functions[f])}
    for w in () if tuple(wrt or ()) == activity.ALL else wrt or ():
        if w not in params:
            owners = " or ".join(f"'{f}'" for f in selected)
            listed = ", ".join(sorted(params)) or "none"
            raise CompileError(f"no parameter '{w}' (from --wrt) in {owners}; the parameters are: {listed}",
                               module.filename)


def _default_namespace(module):
    """Library for calls a rule adds to operators (`log` for `x ** y`): numpy if imported."""
    return "numpy" if any(q.split(".")[0] == "numpy" for q in module.imports.values()) else "math"


def _lower(module, fname, namer, sigmoid_name, budget=None):
    """Function `fname` lowered to IR, with the names of its generated functions' locals; the
    syntax nodes inlining copied are added to `budget` (a whole file's)."""
    structured, soft, arrays_only = set(), set(), set()
    while True:  # again, with a parameter structured, each time a use needs a container
        fnamer = namer.function_namer(lower.parameter_names(module.functions[fname]))
        lowerer = lower.Lowerer(module, module.functions[fname], fnamer, sigmoid_name, frozenset(structured),
                                frozenset(arrays_only))
        try:
            return lowerer.lower(), fnamer
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
        finally:
            if budget is not None:  # (the count gradgen/frontend/lower_calls.py bounds for one function)
                budget.spent += getattr(lowerer, "inlined", 0)


def _compile_function(module, fn, fnamer, names, wrt, emitter):
    fname = fn.name
    parts = reverse_parts(module, fn, fnamer, wrt)
    _written_out(parts, fn, emitter)
    chosen, left_out, forward_grad, forward_value, backward, grads = (
        parts.chosen, parts.left_out, parts.forward_grad, parts.forward_value, parts.backward, parts.grads)
    result, notes = parts.value, []
    if getattr(module, "snapshots", None) is not None:  # (the hvp keeps the tape: compiled.reversed is unchanged)
        forward_grad, forward_value, backward, result, notes = checkpointing.checkpoint(
            parts, module.snapshots, fnamer, module, [p.name for p in fn.params])
    grad_text = _grads_text(grads, emitter)
    value = emit.expr_text(result, emitter)
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
    compiled.reversed, compiled.notes = parts, notes
    return compiled, texts


def _written_out(parts, fn, emitter):
    """What the emitter must know of a reversed function: its helpers, and the parameters
    its entry check must find numbers."""
    emitter.helpers.update(fn.helpers)
    emitter.stated.update(parts.numbers_checked)


def _compile_kinds(module, fn, fnamer, namer, names, wrt, emitter, emit_kinds, array_result):
    """The functions `--emit` asks for (gradgen.codegen.derivatives): the gradient pair for a number, and
    jvp, hvp, grad_and_hvp, hessian, vjp, jacobian; a kind that needs another writes it too."""
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
    if "grad_and_hvp" in wanted:
        parts = compiled.reversed
        made.append(derivatives.hvp(fn, (parts.forward_grad + parts.backward, parts.grads), chosen, fnamer,
                                    namer.kind_function(fn.name, "grad_and_hvp"), emitter, where, display,
                                    arrays | parts.arrays, with_grad=True))
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


def nested_derivative(module, fname, wrt, kind, role):
    """The module text gradgen writes for `fname`'s derivative (`kind` as --emit names it) and
    the name of its `role` function, for a call `gradgen.grad(fname)` inside a function being
    compiled (gradgen.frontend.nested): unguarded, so its body reads the file's constants."""
    compiled = _compile_source(module.source, module.filename, [fname], wrt, (kind,), guarded=False,
                               constants=dict(module.constants), outside=module.outside)
    made = compiled.functions[0]
    names = {"grad": made.grad_name, "value_and_grad": made.value_and_grad_name, **{m.kind: m.name for m in made.made}}
    return compiled.text, names[role]


nested.compiler = nested_derivative  # (the front end may not import this driver: it is handed the compiler)

# odeint(f, ...) inside a compiled function: f's vjp (gradgen.frontend.odeint)
odeint.compiler = lambda module, fname, wrt: nested_derivative(module, fname, wrt, "vjp", "vjp")


def load_module(text, name="gradgen_generated"):
    """Execute generated `text` as a fresh module (it imports only numpy and math)."""
    mod = types.ModuleType(name)
    mod.__file__ = f"<{name}>"
    exec(compile(text, mod.__file__, "exec", dont_inherit=True), mod.__dict__)
    return mod
