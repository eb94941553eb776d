"""Running the user's own code, the one thing `gradgen check` does that `compile` never
does: the original module's top level, its function at the check points, and the
`--inputs` builder.

Whatever that code raises is the user's to fix, not a bug in gradgen: it is reported as a
located error (`loss.py:3:8: your file raised FileNotFoundError: ...`, the line of the
user's file where it was raised, status 1), never as an internal error. Each run of the
function starts from a fresh copy of the point's arrays, so a function that updates a
parameter in place cannot move the point under the next run.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import os
import sys
import types

import numpy as np

from gradgen.errors import CompileError
from gradgen.frontend.local_imports import package_of
from gradgen.frontend.source import read_source
from gradgen.rules.records import runtime as record_runtime

fields_of, _ = record_runtime()  # a NamedTuple's or dataclass's fields, as the generated helpers read them
MESSAGE_CHARS = 300  # an exception's message is cut here (some repeat a whole array)


def fresh(point):
    """The point with every array and random state copied: a function that updates a
    parameter in place (`a += e`) or draws from a random state changes its argument, and
    each run must start from the same point (the same numbers drawn). Inside
    `same_global_draws()`, NumPy's global random state is also put back as it was."""
    if _global_state is not None:
        np.random.set_state(_global_state)
    return {k: v.copy() if isinstance(v, np.ndarray) else copy.deepcopy(v)
            if _is_random_state(v) or isinstance(v, (list, tuple, dict)) or dataclasses.is_dataclass(v) else v
            for k, v in point.items()}


def _is_random_state(value):
    return isinstance(value, (np.random.RandomState, np.random.Generator))


_global_state = None  # NumPy's global random state when the check began (see fresh)


@contextlib.contextmanager
def same_global_draws():
    """Every run started with `fresh(point)` inside the block draws the same numbers from
    NumPy's global random state (np.random.normal(...) in the checked function); the state
    is left as the block found it."""
    global _global_state
    outer, _global_state = _global_state, np.random.get_state()
    try:
        yield
    finally:
        np.random.set_state(_global_state)
        _global_state = outer


def run_original(source, filename):
    """The user's module, executed from its source: its top level runs here, so a missing
    import or a data file that is not there is reported at its line of the user's file."""
    return run_module(source, filename, "gradgen_check_original")


def run_module(source, filename, name):
    """Execute `source` as module `name`, beside its own folder on `sys.path` as
    `python FILE` would have it (so `import helpers` finds helpers.py next to it); a file of
    a package (an `__init__.py` beside it) runs in its package, as `python -m pkg.loss` would
    have it, so its relative imports (`from .model import predict`) find their files."""
    with _paths_of(filename):
        return _executed(source, filename, name)


def _executed(source, filename, name):
    """`source` executed as module `name` (sys.path as the caller set it)."""
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise syntax_error(exc, filename, source) from None
    module = types.ModuleType(name)
    module.__file__ = filename
    root, package = package_of(filename)
    if package:
        module.__package__ = ".".join(package)
    with users_code(filename, source):
        exec(code, module.__dict__)  # noqa: S102 - `check` runs the user's file, by design
    return module


@contextlib.contextmanager
def _paths_of(filename):
    """The folders `python FILE` (or `python -m pkg.module` for a file of a package) puts
    first on sys.path, there meanwhile."""
    root, package = package_of(filename)
    with _on_path(os.path.dirname(os.path.abspath(filename))), _on_path(root if package else None):
        yield


def call(f, point, filename, source, where):
    """`f(**point)`, with what it raises reported at the user's line; `where` says which
    call it was ("f at x=0.5") and ends the message."""
    arguments = fresh(point)
    with users_code(filename, source, f" ({where})"), np.errstate(all="ignore"):
        return f(**arguments)


def expect_number(value, module, name, where):
    """The user's function must return a number (a gradient is of a number): anything else
    is the user's to fix, located at the function's `def`."""
    if isinstance(value, (int, float, np.integer, np.floating)) or \
            (isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf"):
        return
    what = f"an array of shape {np.shape(value)}" if np.ndim(value) else f"a {type(value).__name__}"
    node = next((n for n in module.tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    line = node.lineno if node is not None else None
    source_line = _line(module.source, line) if line is not None else None
    raise CompileError(f"'{name}' returned {what}, not a number ({where}); gradgen differentiates a function "
                       "that returns a number", module.filename, line, _column(source_line, None), source_line)


@contextlib.contextmanager
def users_code(filename, source, suffix=""):
    """Whatever the block raises (SystemExit too: a script's `sys.exit()`) is the user's:
    a CompileError at the last line of `filename` in its traceback."""
    try:
        yield
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code may raise anything
        raise raised(exc, filename, source, suffix) from None


def raised(exc, filename, source, suffix=""):
    """`file:line:col: your file raised Type: message`, at the last frame of the traceback
    that runs `filename` (deeper frames are NumPy's or a library's), the caret under the
    expression that raised where Python records it."""
    message = " ".join(str(exc).split())
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS] + "..."
    text = f"your file raised {type(exc).__name__}" + (f": {message}" if message else "") + suffix
    place = _last_place(exc.__traceback__, filename)
    if place is None:
        return CompileError(text, filename)
    line, byte_col = place
    source_line = _line(source, line)
    return CompileError(text, filename, line, _column(source_line, byte_col), source_line)


def syntax_error(exc, filename, source):
    """A syntax error in a file gradgen executes but did not compile (the inputs file),
    reported as `compile` reports one in the differentiated file."""
    line = exc.lineno or 1
    col = exc.offset if exc.offset and exc.offset > 0 else 1
    return CompileError(f"syntax error: {exc.msg}", filename, line, col, _line(source, line))


def load_inputs(spec, beside=None):
    """The dict FUNC() returns, for `--inputs FILE:FUNC` (the user's own input builder):
    FILE is read like the differentiated file, and what it raises is the user's. FUNC runs
    with the same folders on sys.path as FILE's top level (an import inside FUNC finds what
    one at the top finds), and so does the folder of `beside`, the file checked or compiled
    (the builder of its inputs may import from it, wherever the inputs file is)."""
    path, sep, func = spec.rpartition(":")
    if not sep or not path or not func:
        raise CompileError(f"--inputs needs FILE:FUNC, got '{spec}'", "--inputs")
    source = read_source(path)
    with _on_path(os.path.dirname(os.path.abspath(beside)) if beside else None), _paths_of(path):
        module = _executed(source, path, "gradgen_inputs")
        builder = getattr(module, func, None)
        if not callable(builder):
            raise CompileError(f"no function '{func}' in {path} (from --inputs)", path)
        with users_code(path, source):
            inputs = builder()
    if not isinstance(inputs, dict):
        raise CompileError(f"{func}() must return a dict of parameter values, not {type(inputs).__name__}", path)
    return inputs


def describe(point):
    """`x=0.5, a=array(3,)`: a point as the messages name it."""
    return ", ".join(f"{k}={_shown(v)}" for k, v in point.items())


def _shown(value):
    """An array by its shape, a number by its value, a list, tuple, dict, NamedTuple or
    dataclass by its parts."""
    names = fields_of(value)
    if names is not None:
        return f"{type(value).__name__}(" + ", ".join(f"{n}={_shown(getattr(value, n))}" for n in names) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inside = ", ".join(_shown(v) for v in value)
        return f"[{inside}]" if isinstance(value, list) else f"({inside}{',' if len(value) == 1 else ''})"
    return f"array{np.shape(value)}" if isinstance(value, np.ndarray) and np.ndim(value) else _number(value)


def _number(value):
    try:
        return f"{float(value):.10g}"
    except (TypeError, ValueError):
        return repr(value)


def _last_place(tb, filename):
    """(line, byte column or None) of the last traceback entry in `filename`."""
    place = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == filename:
            place = (tb.tb_lineno, _byte_column(code, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    return place


def _byte_column(code, lasti, line):
    """Where on `line` the instruction that raised starts (Python 3.11 records it)."""
    positions = getattr(code, "co_positions", None)
    if positions is None or lasti < 0:
        return None
    for k, (start, _, col, _) in enumerate(positions()):
        if k == lasti // 2:
            return col if start == line else None
    return None


def _column(source_line, byte_col):
    """1-based character column: the recorded one, else the statement's first character."""
    if source_line is None:
        return 1
    if byte_col is None:
        return len(source_line) - len(source_line.lstrip()) + 1
    encoded = source_line.encode("utf-8", "surrogatepass")
    return len(encoded[:byte_col].decode("utf-8", "replace")) + 1


def _line(source, line):
    if isinstance(source, bytes):
        source = source.decode("utf-8", "replace")
    lines = source.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


@contextlib.contextmanager
def _on_path(folder):
    """`folder` first on sys.path meanwhile (None: nothing)."""
    if folder is None:
        yield
        return
    folder = os.path.abspath(folder)
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
