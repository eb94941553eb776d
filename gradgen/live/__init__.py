"""`gradgen.grad(f)` and friends: the compiler, called on a live function's source.

Each takes a function defined in a file or a notebook cell and returns the generated
function, the one `gradgen compile --emit KIND` writes for it. The function is never run:
its source is read (the whole file, so module constants, helpers and imports are seen; a
notebook cell's text from linecache), compiled with `gradgen.api.compile_source`, and the
generated module executed. The result carries the generated module as `.source`, and
`help()` shows it, and a notebook cell whose value it is shows that module highlighted
(gradgen/live/display.py).

Compiled modules are cached in memory and on disk (GRADGEN_CACHE_DIR, else
$XDG_CACHE_HOME/gradgen, else ~/.cache/gradgen; GRADGEN_CACHE_DIR= turns the disk cache
off), keyed by a hash of the source, the function, `wrt`, the kind and gradgen's own
files: a second call is a dictionary lookup, a new process reads the text back without
importing the compiler, and an edited function is compiled again.

A closure, a lambda, or a function that reads module globals the running program computed
(autograd's and JAX's way: `_, predict, logprob = make_nn_funs(...)`, `objective = lambda p:
-logprob(p, X, y)`) compiles too: `outside` reads those values from the function's cells and
globals (never running anything), and the generated function takes the numbers and arrays
among them as keyword arguments, passed again on every call.

autograd's names for these (`elementwise_grad`, `hessian_vector_product`, `argnum=`) are in
`aliases`; a NumPy or math function itself (`gradgen.grad(np.tanh)`) is the one-line function
calling it (`library`); a derivative of a derivative compiles the module gradgen generated (`again`); the
derivatives of a function `gradgen.flatten_func` made are `f`'s, flattened (`flat`).
Where the module for any shapes cannot tell a number from an array, the function handed out
compiles again for the shapes of its calls, one module per signature (`ranks`).

Nothing heavy is imported here: the compiler (and NumPy, through the generated code) are
imported when a function is first compiled or loaded.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import linecache
import os
import tempfile
import textwrap
import types
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import gradgen
from gradgen.errors import CompileError
from gradgen.live import again, aliases, display, flat, library, ranks, second, values
from gradgen.live import outside as outside_values

CACHE_FORMAT = 1
MEMORY_LIMIT = 512  # compiled modules kept per process; the oldest goes first
GENERATED = "<gradgen "  # how the file name of a module gradgen generated and loaded begins


def grad(f, wrt=None, checkpoint=None, memory=None, *, argnum=None, jit=None):
    """The gradient of `f`: `f_grad(<f's params>)` returns df/dp for each differentiated
    parameter (a tuple for several). `wrt`: the parameters to differentiate ("a,b" or a
    list; "all" for every one that can carry a derivative); by default the first parameter,
    or all of them when every parameter has a number default (as `gradgen compile`).
    `argnum` (autograd's spelling): their positions, a number or a tuple. `checkpoint`: K,
    or "auto" within `memory` ("256MB"): long loops in bounded memory, as
    `gradgen compile --checkpoint`. `jit="numba"`: the module `gradgen compile --jit numba`
    writes, its functions compiled by numba.njit for the types of each call."""
    return _public(f, _chosen(f, wrt, argnum), "grad", "grad", (checkpoint, memory), jit)


def value_and_grad(f, wrt=None, checkpoint=None, memory=None, *, argnum=None, jit=None):
    """`f_value_and_grad(<f's params>)` returns (f's value, its gradient), from one forward pass;
    `argnum`, `checkpoint`, `memory`, `jit`: as for grad."""
    return _public(f, _chosen(f, wrt, argnum), "grad", "value_and_grad", (checkpoint, memory), jit)


def elementwise_grad(f, wrt=None, *, argnum=None):
    """autograd's elementwise_grad: the gradient of `np.sum(f(x))`, shaped like x; for an
    `f` that acts elementwise, the derivative of each element at its point. The result is
    the generated `sum_of_f_grad`, which may be differentiated again (gradgen/live/aliases.py)."""
    return _public(f, _chosen(f, wrt, argnum), "grad", "elementwise_grad")


def hessian_vector_product(f, argnum=0):
    """autograd's hessian_vector_product: a function of `(*args, vector)` returning the
    Hessian of `f` with respect to its parameter at `argnum`, times `vector`: gradgen.hvp
    called as scipy.optimize.minimize(hessp=) calls it."""
    (name,) = aliases.positions(f, [argnum])
    return aliases.vector_last(hvp(f, wrt=[name]), f, name)


def jvp(f, wrt=None):
    """Forward mode: `f_jvp(<f's params>, *, d<p>...)` returns (value, the derivative of the
    value along the tangents d<p>, one per differentiated parameter)."""
    return _public(f, wrt, "jvp", "jvp")


def hvp(f, wrt=None):
    """`f_hvp(<f's params>, *, d<p>...)` returns the Hessian of `f` times the direction
    (d<p>...), in the gradient's structure: forward mode over the gradient."""
    return _public(f, wrt, "hvp", "hvp")


def grad_and_hvp(f, wrt=None):
    """`f_grad_and_hvp(<f's params>, *, d<p>...)` returns (the gradient of `f`, the Hessian
    times the direction d<p>...) from one pass, as jax.jvp(jax.grad(f)) gives both: what a
    Newton step along the gradient needs, for about the cost of hvp alone."""
    return _public(f, wrt, "grad_and_hvp", "grad_and_hvp")


def hessian(f, wrt=None):
    """`f_hessian(<f's params>)` returns the (N, N) Hessian, N the number of elements of the
    differentiated parameters, each flattened in C order: what scipy.optimize takes as hess=."""
    return _public(f, wrt, "hessian", "hessian")


def vjp(f, wrt=None):
    """For `f` whose result is an array: `f_vjp(<f's params>, *, cotangent)` returns the
    cotangent (shaped like the result) times the Jacobian, in the gradient's structure."""
    return _public(f, wrt, "vjp", "vjp")


def jacobian(f, wrt=None):
    """For `f` whose result is an array: `f_jacobian(<f's params>)` returns the Jacobian,
    shaped result.shape + parameter.shape (a tuple for several parameters), as jax.jacrev."""
    return _public(f, wrt, "jacobian", "jacobian")


def clear_cache(disk=False):
    """Forget the compiled modules of this process (and, with `disk`, the ones on disk)."""
    _MEMORY.clear()
    _AGAIN.clear()
    folder = cache_dir()
    if disk and folder is not None and folder.is_dir():
        for path in folder.glob("*.json"):
            path.unlink(missing_ok=True)


def _public(f, wrt, kind, role, checkpoint=(None, None), jit=None):
    """The generated function; a CompileError is raised from here, without the frames of
    the compiler (its message already says where the problem is in the user's source)."""
    __tracebackhide__ = True  # (IPython and pytest leave this frame out of a traceback)
    wrt = _wrt(wrt)
    if not isinstance(f, types.FunctionType):  # np.sqrt: the one-line function calling it (gradgen/live/library.py)
        f = library.as_function(f)
    if flat.made(f) is not None:  # a function flatten_func made: f's derivative, flattened (gradgen/live/flat.py)
        return flat.derivative(f, wrt, role, lambda func, inner: _public(func, inner, kind, role, checkpoint, jit))
    if jit not in (None, "none"):  # (numba specialises on the types of each call itself: no shapes)
        kind = (kind, *checkpoint, None, None, jit)
    elif checkpoint != (None, None):  # (a derivative with checkpointed loops: `kind` says so)
        kind = (kind, *checkpoint)
    again = _again(f, wrt, kind, role)
    if again is not None:
        return again
    try:
        made = _derivative(f, wrt, kind, role)
        if role in ("grad", "value_and_grad") and jit in (None, "none") and ranks.helps(getattr(made, "source", "")):  # (gradgen/live/ranks.py)
            made = _specialising(made, f, wrt, kind, role)
    except CompileError as exc:
        error = exc
        if ranks.kinds_help(exc.message):  # recursion on a list: compiled for the kinds of the first call
            return ranks.by_kinds(f, exc, lambda kinds: _derivative(f, wrt, _with_kinds(kind, kinds), role))
        if role in ("grad", "value_and_grad") and kind == "grad" and second.made_from(f) is not None:
            made = second.through_hvp(f, wrt, role, hvp)  # its tape read again: forward over it (live/second.py)
            _remember(f, wrt, kind, role, made)
            return made
    else:
        if role == "grad" and kind == "grad":  # (a gradient of it may go through f's hvp: gradgen/live/second.py)
            made.derivative_of = (f, wrt)
        _remember(f, wrt, kind, role, made)
        return made
    raise error.with_traceback(None)


# gradgen.grad(f) asked again for the same function object, its file unchanged: the function
# handed out before (it reads the running program's values itself on every call), without
# reading and hashing the file again (GradBench's particle asks inside its loop: 2.7 ms a call)
_AGAIN: dict = {}


def _again(f, wrt, kind, role):
    found = _AGAIN.get((id(f), wrt, kind, role))
    if found is None or found[0] is not f:
        return None
    _, path, stamp, made = found
    return made if _stamp(path) == stamp else None


def _remember(f, wrt, kind, role, made):
    path = getattr(getattr(inspect.unwrap(f), "__code__", None), "co_filename", None)
    stamp = _stamp(path)
    if stamp is not None:
        while len(_AGAIN) >= MEMORY_LIMIT:
            del _AGAIN[next(iter(_AGAIN))]
        _AGAIN[(id(f), wrt, kind, role)] = (f, path, stamp, made)


def _stamp(path):
    """(size, modification time) of a source file; None for a notebook cell or no file."""
    try:
        info = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return info.st_size, info.st_mtime_ns


@dataclass
class Origin:
    """Where a live function's source is: the text gradgen compiles for it."""

    function: object
    name: str
    filename: str
    source: object  # bytes from a file, str from linecache (a notebook cell)
    in_file: bool
    outside: object = None  # gradgen.live.outside.Outside: what the running program gives it
    summed: bool = False  # compiled as np.sum of its result (elementwise_grad, gradgen/live/aliases.py)


@dataclass
class Entry:
    """One compiled module: its text and the generated function for each role it serves."""

    text: str
    functions: dict
    live: dict = field(default_factory=dict)  # role -> the function handed out (gradgen.live._live)


_MEMORY: dict = {}


def _with_kinds(kind, kinds):
    base, checkpoint, memory, _, _, jit = (kind + (None,) * 3)[:6] if isinstance(kind, tuple) else (kind,) + (None,) * 5
    return base, checkpoint, memory, None, kinds, jit


def _specialising(made, f, wrt, kind, role):
    kind, checkpoint, memory = kind[:3] if isinstance(kind, tuple) else (kind, None, None)
    names = [p.name for p in inspect.signature(made).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return ranks.specialising(made, names, lambda shapes: _derivative(f, wrt, (kind, checkpoint, memory, shapes), role))


def _derivative(f, wrt, kind, role, constants=None):
    origin = source_of(f, role)
    origin.outside = _outside(origin.function, origin)
    if role == "elementwise_grad":
        origin.outside = aliases.summed(f, origin, origin.outside, outside_values.Outside)
        origin.summed = True
    key = _key(origin, wrt, kind, constants)
    entry = _MEMORY.get(key)
    if entry is None:
        entry = _from_disk(key, origin, kind) or _compile(key, origin, wrt, kind, constants)
        while len(_MEMORY) >= MEMORY_LIMIT:
            del _MEMORY[next(iter(_MEMORY))]
        _MEMORY[key] = entry
    if role not in entry.functions:
        raise CompileError(f"gradgen wrote no {role} for '{origin.name}'", origin.filename)
    if role not in entry.live:  # (one function per role: a second call returns the very same one)
        g = _live(entry.functions[role], f, wrt, kind, role, origin, constants)
        if origin.outside is not None:
            g = _given(g, entry.functions[role], f, wrt, kind, role, origin, constants)
        entry.live[role] = g
    return again.passed_on(entry.live[role], f)


def _outside(f, origin):
    """What `f` reads from the running program (gradgen/live/outside.py), or None for a
    top-level function that reads only what its file's text says."""
    found = outside_values.gather(f, origin.source, origin.filename)
    plain = not (found.functions or found.constants or found.aliases) and found.target == origin.name
    return None if plain else found


# --- values of the running program, passed or checked on every call -----------------------

def _given(g, generated, f, wrt, kind, role, origin, constants):
    """`g`, given on every call the values `f` reads from the running program that the
    generated function takes (its keyword parameters); a value the code folded (a number, a
    list of sizes), an array of another shape, or a cell rebound to another function
    compiles again for the values of now."""
    outside = origin.outside
    code = generated.__code__
    keywords = set(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
    given = [name for name in outside.read if name in keywords]
    folded = {name: values.snapshot(outside.constants[name]) for name in outside.read if name not in keywords}
    shapes = {name: values.shape_of(outside.constants[name]) for name in given if name in outside.constants}
    fixed = list(outside.fixed)
    for name in folded:
        value = outside.constants[name]
        if isinstance(value, np.ndarray) and value.nbytes > outside_values.SMALL:
            raise CompileError(f"'{name}', an array of shape {value.shape} that '{origin.name}' reads from the running "
                               "program, was folded into the generated code, which a new array would not change: "
                               f"pass '{name}' to the function as a parameter", origin.filename)

    @functools.wraps(g)
    def live(*args, **kwargs):
        now = {name: outside.read[name]() for name in outside.read}
        if any(reader() is not value for reader, value in fixed) \
                or any(not values.same_value(now[name], then) for name, then in folded.items()) \
                or any(values.shape_of(now[name]) != shape for name, shape in shapes.items()):
            return _derivative(f, wrt, kind, role, constants)(*args, **kwargs)
        for name in given:
            kwargs.setdefault(name, now[name])
        return g(*args, **kwargs)

    live.source, live.given = g.source, {name: outside.read[name] for name in given}
    return live


# --- module constants, read when the function is called ----------------------------------

def _live(g, f, wrt, kind, role, origin, constants):
    """`g`, reading `f`'s module constants when it is called, not when it was compiled: a
    constant the generated function takes as a keyword argument is passed its current
    value; one gradgen folded into the code (a loop bound, a list of sizes) that changed
    since compiles `f` again for the new value. A value passed by the caller wins."""
    # the copied constants: keyword-only parameters defaulting to the module global of their name
    keywords = [name for name, value in (g.__kwdefaults__ or {}).items() if g.__globals__.get(name, g) is value]
    folded = {name: value for name, value in _source_constants(origin).items() if name not in keywords}
    if not keywords and not folded:
        return g
    seen = {}  # name -> the object last compared with the compiled value (compared again only when replaced)

    @functools.wraps(g)
    def live(*args, **kwargs):
        namespace = f.__globals__
        for name in keywords:
            if name not in kwargs and name in namespace:
                kwargs[name] = namespace[name]
        changed = {name: namespace[name] for name, value in folded.items()
                   if name in namespace and not values.same(seen, name, namespace[name], (constants or {}).get(name, value))}
        if changed:
            return _derivative(f, wrt, kind, role, {**(constants or {}), **changed})(*args, **kwargs)
        return g(*args, **kwargs)

    live.source = g.source
    return live



def _source_constants(origin):
    """{name: value} of the module constants the source file gives literally (`SCALE = 0.3`,
    `SIZES = (4, 8)`): what a notebook may change after compiling."""
    try:
        tree = ast.parse(origin.source)
    except (SyntaxError, ValueError):
        return {}
    found, counts = {}, {}
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        for t in targets:
            if isinstance(t, ast.Name):
                counts[t.id] = counts.get(t.id, 0) + 1
                try:
                    found[t.id] = ast.literal_eval(stmt.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    pass
    return {name: value for name, value in found.items() if counts[name] == 1
            and isinstance(value, (int, float, tuple, list)) and not isinstance(value, bool)}


def _chosen(f, wrt, argnum):
    if argnum is not None and wrt is not None:
        raise TypeError("give wrt= (parameter names) or argnum= (their positions), not both")
    return aliases.positions(f, argnum if argnum is not None else wrt)


def _wrt(wrt):
    if wrt is None:
        return None
    names = wrt.split(",") if isinstance(wrt, str) else list(wrt)
    return tuple(n.strip() for n in names if n.strip()) or None


# --- the source of a live function -------------------------------------------------------

def source_of(f, role="grad"):
    """The source to compile for `f`, read without running it; a clear error when there is
    none gradgen can compile (a builtin, a method, a function made by exec). A lambda or a
    nested function is compiled from its file too (gradgen/live/outside.py)."""
    call = f"gradgen.{role}({getattr(f, '__qualname__', None) or type(f).__name__})"
    f = inspect.unwrap(f) if callable(f) else f
    if isinstance(f, types.MethodType):
        raise CompileError("a method has no gradient of its own; write the loss as a top-level function of "
                           "its parameters (a 'def' at the top level of a file or notebook cell)", call)
    if not isinstance(f, types.FunctionType):
        raise CompileError(f"{_kind_of(f)} is not a Python function written with 'def'; gradgen compiles a "
                           "function from its source", call)
    try:
        path = inspect.getsourcefile(f)
    except TypeError:
        path = None
    if path is not None and os.path.isfile(path):
        return Origin(f, f.__name__, path, Path(path).read_bytes(), True)
    filename = f.__code__.co_filename
    lines = linecache.getlines(filename, f.__globals__)
    if filename.startswith(GENERATED) and lines:  # a derivative of a derivative gradgen wrote
        lines = again.unguarded(lines)
    if not lines:
        raise CompileError(f"the source of '{f.__name__}' cannot be found: it was made by exec or compile (its "
                           f"file is {filename}, neither a file nor a notebook cell); define it in a .py file or "
                           "a notebook cell, or compile its text with gradgen.compile_source", call)
    return Origin(f, f.__name__, filename, "".join(lines), False)


def _at(f, word, message):
    """A CompileError at `word` on the first line of `f` (its column when the line is found)."""
    filename, line = f.__code__.co_filename, f.__code__.co_firstlineno
    text = linecache.getline(filename, line) or None
    col = text.find(word) + 1 if text and word in text else 1
    return CompileError(message, filename, line, col, text)


def _kind_of(f):
    if isinstance(f, types.BuiltinFunctionType):
        return f"the builtin '{f.__name__}'"
    return f"a {type(f).__name__}"


# --- compiling and loading ---------------------------------------------------------------

def _compile(key, origin, wrt, kind, constants=None):
    from gradgen import api  # (start-up: a module the disk cache holds loads without the compiler)

    try:
        name = origin.outside.target if origin.outside is not None else origin.name
        kind, checkpoint, memory, shapes, kinds, jit = (kind + (None,) * 3)[:6] if isinstance(kind, tuple) \
            else (kind, None, None, None, None, None)
        compiled = api.compile_source(origin.source, origin.filename, functions=[name], wrt=wrt,
                                      emit_kinds=(kind,), constants=constants, outside=origin.outside, jit=jit or "none",
                                      checkpoint=checkpoint, memory=memory, shapes=dict(shapes or ()),
                                      shapes_from="the shapes of its first call" if shapes else None,
                                      kinds=dict(kinds or ()))
    except CompileError as exc:
        raise _with_cell_hint(exc, origin) from None
    fn = compiled.functions[0]
    names = {m.kind: m.name for m in fn.made}
    if kind == "grad":
        names = {"grad": fn.grad_name, "value_and_grad": fn.value_and_grad_name}
        names = {"elementwise_grad": fn.grad_name} if origin.summed else names
    names = {role: name for role, name in names.items() if name}
    _to_disk(key, compiled.text, names)
    return _load(key, origin, kind, compiled.text, names)


def _with_cell_hint(exc, origin):
    """A notebook cell is compiled alone: a name from another cell is unknown to it."""
    if origin.in_file or not exc.message.startswith("unknown name"):
        return exc
    hint = (f"; a notebook cell is compiled on its own: define it (constants and imports too) in the "
            f"cell that defines '{origin.name}'")
    return CompileError(exc.message + hint, exc.filename, exc.line, exc.col, exc.source_line)


def _load(key, origin, kind, text, names):
    """Execute the generated text as a fresh module; its functions carry `.source`, their
    docstring shows the module, and tracebacks and inspect.getsource find its lines."""
    filename = f"{GENERATED}{kind} of {origin.name} {key[:8]}>"
    module = types.ModuleType(f"gradgen_live_{key[:12]}")
    module.__file__ = filename
    module.__package__ = origin.function.__globals__.get("__package__")
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec", dont_inherit=True), module.__dict__)
    functions = {}
    for role, name in names.items():
        g = getattr(module, name)
        if not isinstance(g, types.FunctionType):  # a numba dispatcher (jit="numba"): a function in front of it
            g = _in_front(g)
        g.source = text
        g.__doc__ = _doc(g.__doc__, role, origin, text)
        display.attach(g, text, f"gradgen.{role}({origin.name})")  # (a notebook cell shows it: gradgen/live/display.py)
        functions[role] = g
    return Entry(text, functions)


def _in_front(dispatcher):
    """A Python function calling `dispatcher` (numba's), with the generated function's name,
    signature and docstring; `.dispatcher` is numba's."""
    @functools.wraps(dispatcher.py_func)
    def jitted(*args, **kwargs):
        return dispatcher(*args, **kwargs)

    jitted.dispatcher = dispatcher
    return jitted


def _doc(generated, role, origin, text):
    head = inspect.cleandoc(generated or "")
    return (f"{head}\n\nCompiled by gradgen.{role}({origin.name}) from {origin.filename}.\n"
            f"The generated module (also in .source):\n\n{textwrap.indent(text, '    ')}")


# --- the caches --------------------------------------------------------------------------

def _key(origin, wrt, kind, constants=None):
    source = origin.source if isinstance(origin.source, bytes) else origin.source.encode("utf-8", "surrogatepass")
    parts = [CACHE_FORMAT, _fingerprint(), origin.filename, hashlib.sha256(source).hexdigest(), origin.name,
             list(wrt) if wrt else None, kind] + ([repr(sorted(constants.items()))] if constants else [])
    if origin.outside is not None:
        parts.append(origin.outside.signature())
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


_FINGERPRINT = []


def _fingerprint():
    """gradgen's version and its own files (size, time): a changed compiler misses the disk cache."""
    if not _FINGERPRINT:
        package = Path(gradgen.__file__).parent
        stamps = sorted((str(p.relative_to(package)), p.stat().st_size, p.stat().st_mtime_ns)
                        for p in package.rglob("*.py"))  # (the stage subpackages too)
        _FINGERPRINT.append(hashlib.sha256(json.dumps([gradgen.__version__, stamps]).encode()).hexdigest())
    return _FINGERPRINT[0]


def cache_dir():
    """The disk cache's folder, or None when GRADGEN_CACHE_DIR is set empty (no disk cache)."""
    chosen = os.environ.get("GRADGEN_CACHE_DIR")
    if chosen is not None:
        return Path(chosen).expanduser() if chosen else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "gradgen"


def _from_disk(key, origin, kind):
    folder = cache_dir()
    if folder is None:
        return None
    try:
        stored = json.loads((folder / f"{key}.json").read_text(encoding="utf-8"))
        if stored.get("format") != CACHE_FORMAT or stored.get("key") != key:
            return None
        text, names = stored["text"], stored["names"]
        if not isinstance(text, str) or not all(isinstance(n, str) for n in dict(names).values()):
            return None
        return _load(key, origin, kind, text, names)
    except (OSError, ValueError, KeyError, AttributeError, TypeError, SyntaxError):
        return None  # absent, unreadable or damaged: compiled again (and rewritten)


def _to_disk(key, text, names):
    """Written to a temporary file in the same folder, then renamed over the entry: a reader
    sees the old entry or the new one, never half of one. A cache that cannot be written
    (read-only home, full disk) is silently skipped."""
    folder = cache_dir()
    if folder is None:
        return
    data = json.dumps({"format": CACHE_FORMAT, "key": key, "names": names, "text": text})
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key[:12]}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(data)
            os.replace(tmp, folder / f"{key}.json")
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
