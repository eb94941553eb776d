"""What a live function reads that its file's text does not give, read from the running program.

`gradgen.grad(f)` compiles `f` from its source, but autograd- and JAX-style code makes its
losses at run time: a closure a factory returns (`_, predict, logprob = make_nn_funs(...)`),
a lambda over data loaded in `__main__` (`objective = lambda p: -logprob(p, X, y)`), a
module global computed when the file ran (`X = rs.randn(20, 3)`). The text says what those
names are; only the running program knows their values. `gather(f, module)` walks them:

- a function of the same file (a nested `def`, a lambda, a top-level function under another
  name) is read from its source and given to the compiler as a top-level helper, under its
  own name where that is free (a name the file binds to something else is renamed in the
  copy that reads it), and walked in turn;
- a function of NumPy, SciPy or `math` (`nonlinearity=np.tanh`) is that library's function;
- a number, an array, or a tuple or list of them is a module constant of the compiled code,
  whose value the generated function takes as a keyword argument on every call (read again
  from the cell or global then), or folds when compiling (a loop bound, a list of sizes):
  then a changed value compiles again (gradgen.live).

Anything else (a RandomState, a dict, an object) is refused at the function that reads it,
naming the value and what to write instead. Nothing here runs the user's code: cells and
globals are read, never called.
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
import types
from dataclasses import dataclass, field

import numpy as np

from gradgen.errors import CompileError

# libraries whose functions gradgen knows by their qualified names (a function value found in
# one of them is spelled that way: `nonlinearity=np.tanh` is "numpy.tanh")
LIBRARIES = ("numpy", "numpy.linalg", "numpy.fft", "math", "scipy.special", "scipy.linalg", "scipy.stats",
             "scipy.signal")


@dataclass
class Outside:
    """The values of the names a live function reads beyond its file's text.

    `target`: the name the compiler knows the function by; `functions`: {name: ast.FunctionDef}
    of the same-file functions made into top-level helpers; `constants`: {name: value};
    `aliases`: {name: "numpy.tanh"}; `read`: {name: a function of no arguments that reads the
    current value (a cell, a global)}; `objects`: {name: the function object a helper was
    read from} (a cell rebound to another function compiles again)."""

    target: str
    functions: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)
    read: dict = field(default_factory=dict)
    objects: dict = field(default_factory=dict)
    places: dict = field(default_factory=dict)  # name -> ("cell", id) or ("global", id(namespace), name)
    fixed: list = field(default_factory=list)  # (reader, the function it gave): the same object on every call
    states: set = field(default_factory=set)  # names of random states, parameters of the compiled function
    needs: dict = field(default_factory=dict)  # hoisted name -> the random states it draws from
    stripped: dict = field(default_factory=dict)  # hoisted name -> (positional kept, parameters read as defaults)
    homes: dict = field(default_factory=dict)  # hoisted name -> the Module of its own file (another file's)

    def signature(self):
        """What the compiled text depends on, for the cache key: each constant's kind and shape
        (a number's and a sequence's value too: gradgen may fold them), each helper's origin."""
        parts = [self.target, sorted(self.aliases.items())]
        parts += [(name, _described(value)) for name, value in sorted(self.constants.items())]
        parts += sorted(self.states)
        parts += [(name, _origin(fn)) for name, fn in sorted(self.objects.items())]
        return repr(parts)


def gather(f, source, filename):
    """The Outside of live function `f`, whose file's text is `source`, read as the compiler
    reads it (what the text makes a constant, a function or an import stays the text's)."""
    from gradgen.frontend import parse  # (start-up: a function cached on disk loads without it)

    walker = _Walker(parse.parse_module(source, filename), filename, parse)
    outside = walker.outside
    outside.target = walker.function(f)
    _thread_states(outside, walker)
    return outside


def _thread_states(outside, walker):
    """A random state a function draws from is a keyword-only parameter of it and of every
    function that calls it, down from the compiled one (`mixture_elbo(params, t)` becomes
    `mixture_elbo(params, t, rs=rs)`): the generated function takes it, and
    gradgen.live passes it on every call (a draw has no derivative)."""
    needs = outside.needs
    changed = True
    while changed:
        changed = False
        for name, node in outside.functions.items():
            for call in _calls_of(node, needs):
                missing = needs[call.func.id] - needs.setdefault(name, set())
                if missing:
                    needs[name] |= missing
                    changed = True
    for name, node in outside.functions.items():
        for use in ast.walk(node):
            if isinstance(use, ast.Name) and needs.get(use.id) and not any(use is c.func for c in _calls_of(node, needs)):
                f = outside.objects[name]
                raise walker._error(f, use, f"'{use.id}' draws from the random state "
                                            f"'{sorted(needs[use.id])[0]}' and is used here as a value; gradgen.grad "
                                            "passes a random state only to functions it sees called: call it here, "
                                            "or pass the state as a parameter")
        for state in sorted(needs.get(name, ())):
            node.args.kwonlyargs.append(ast.copy_location(ast.arg(arg=state), node))
            node.args.kw_defaults.append(None)
        for call in _calls_of(node, needs):
            call.keywords += [ast.keyword(arg=state, value=ast.Name(id=state, ctx=ast.Load()))
                              for state in sorted(needs[call.func.id])]
    outside.states = set().union(*needs.values()) if needs else set()
    _check_stripped(outside, walker)


def _check_stripped(outside, walker):
    """A call that passes a parameter _captured_defaults made a name read from the running
    program is refused there (its value would be ignored)."""
    for name, node in outside.functions.items():
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in outside.stripped:
                kept, gone = outside.stripped[call.func.id]
                passed = [k.arg for k in call.keywords if k.arg in gone]
                if len(call.args) > kept or passed:
                    which = f"'{passed[0]}'" if passed else "a value for a parameter"
                    raise walker._error(outside.objects[name], call,
                                        f"this call passes {which} to '{call.func.id}', whose default captured a "
                                        "value of the running program that gradgen.grad reads as that value: pass "
                                        "it the same way everywhere, or give the default as a constant")


def _calls_of(node, needs):
    """The calls in `node` of hoisted functions that draw from random states."""
    return [c for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
            and needs.get(c.func.id)]


class _Walker:
    """Walks the functions a live function reaches, from its own node outwards."""

    def __init__(self, module, filename, parse):
        self.m = module
        self.filename = filename
        self.parse = parse
        self.files = {filename: module}  # filename -> its parsed Module (another file's, read once)
        self.outside = Outside("")
        self.done = {}  # id(function object) -> the name the compiler knows it by
        self.target = None

    def function(self, f):
        """The name the compiler knows function `f` by: its own, for a top-level function of
        the compiled file whose every outside name keeps its name; else a hoisted copy's."""
        if id(f) in self.done:
            return self.done[id(f)]
        if self.target is None:
            self.target = f
        home = self._file_of(f)
        node = _node_of(f, home, home.filename)
        if home is self.m and f.__qualname__ == f.__name__ and self.m.functions.get(f.__name__) is node:
            self.done[id(f)] = f.__name__  # a top-level function the compiler reads anyway
            renames, params = {}, []
            self._names_read(f, node, renames, params)
            if not renames and not params and not _calls_of(node, self.outside.needs):
                return f.__name__
            del self.done[id(f)]  # (a name it reads means another value here: a renamed copy)
        name = self._free_name(_own_name(f, node, home), ("function", f))
        self.done[id(f)] = name
        if isinstance(node, ast.Lambda):
            from gradgen.frontend.closures import lambda_as_def  # (start-up: as gather's reader)

            node = lambda_as_def(node, name)
        else:
            node = copy.deepcopy(node)
            node.name = name
            node.decorator_list = []
        self.outside.functions[name] = node
        self.outside.objects[name] = f
        if home is not self.m:
            self.outside.homes[name] = home
        renames, params = {}, []
        self._captured_defaults(f, node, name, renames)
        self._names_read(f, node, renames, params)
        if renames:
            _Rename(renames).visit(node)
        self.outside.needs[name] = set(params)  # random states it draws from (_thread_states)
        return name

    def _captured_defaults(self, f, node, name, renames):
        """`def predict(x, model=model, X=X)` inside a loop: defaults that capture values of the
        enclosing function when the def ran. A helper the compiled code calls without them reads
        them as the values they are (the parameter becomes a name read from the running
        program); one the body assigns stays a parameter, and a call that passes one is
        refused (_check_stripped). Of the compiled function itself, the generated function
        takes them as keyword arguments that gradgen.live passes unless the caller does.
        Trailing positional defaults and keyword-only ones only."""
        args = node.args
        assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}

        def capturable(arg, default):
            return not isinstance(default, ast.Constant) and arg.arg not in assigned

        stripped = []
        while args.defaults and capturable(args.args[-1], args.defaults[-1]):
            arg, k = args.args.pop(), len(args.defaults) - 1
            args.defaults.pop()
            self._bind(f, node, arg.arg, f.__defaults__[k], ("default", id(f), k),
                       lambda k=k: f.__defaults__[k], renames)
            stripped.append(arg.arg)
        for arg, default in list(zip(args.kwonlyargs, args.kw_defaults)):
            if default is not None and capturable(arg, default):
                index = args.kwonlyargs.index(arg)
                del args.kwonlyargs[index], args.kw_defaults[index]
                self._bind(f, node, arg.arg, f.__kwdefaults__[arg.arg], ("default", id(f), arg.arg),
                           lambda k=arg.arg: f.__kwdefaults__[k], renames)
                stripped.append(arg.arg)
        if stripped:
            self.outside.stripped[name] = (len(args.args), set(stripped))

    def _file_of(self, f):
        """The parsed Module of the file `f` was written in (the compiled one, or another)."""
        path = f.__code__.co_filename
        if path not in self.files:
            import linecache  # (start-up: another file's text, read once)

            lines = linecache.getlines(path, f.__globals__)
            if not lines:
                raise CompileError(f"gradgen.grad: the source of '{f.__qualname__}' cannot be found (its file is "
                                   f"{path})", self.filename)
            self.files[path] = self.parse.parse_module("".join(lines), path)
        return self.files[path]

    def _names_read(self, f, node, renames, params):
        """Give each name `node` reads from outside itself a meaning: a cell's or a global's
        value, or (the compiled file's own imports, functions and constants) nothing to do.
        A function of another file reads everything from the running program."""
        cells = dict(zip(f.__code__.co_freevars, f.__closure__ or ()))
        own_file = _same_file(f, self.filename)
        for name in _free_names(node):
            if name in cells:
                try:
                    value = cells[name].cell_contents
                except ValueError:
                    raise self._error(f, node, f"'{name}' is not assigned yet where '{_shown(f)}' reads it "
                                               "(a closure's variable bound later)") from None
                where, reader = ("cell", id(cells[name])), _reader_of_cell(cells[name])
            elif own_file and self._known_by_the_text(name):
                continue
            elif name in f.__globals__:
                value = f.__globals__[name]
                where, reader = ("global", id(f.__globals__), name), _reader_of_global(f.__globals__, name)
            else:
                continue  # a builtin, or a name Python itself would not find (the compile says so)
            if isinstance(value, (np.random.RandomState, np.random.Generator)):
                self._state(name, where, reader, renames, params)
                continue
            self._bind(f, node, name, value, where, reader, renames)

    def _state(self, name, where, reader, renames, params):
        """A random state the compiled function draws from: passed on every call, as a
        parameter would be (a draw has no derivative)."""
        bound = self._free_name(name, ("value", where))
        self.outside.read[bound] = reader
        self.outside.places[bound] = where
        params.append(bound)
        if bound != name:
            renames[name] = bound

    def _known_by_the_text(self, name):
        m = self.m
        if name in m.imports or name in m.functions or name in m.constants or name in m.classes:
            return True
        return name not in m.not_constants and hasattr(builtins, name)

    def _bind(self, f, node, name, value, where, reader, renames):
        out = self.outside
        if callable(value) or isinstance(value, types.ModuleType):
            out.fixed.append((reader, value))
        if isinstance(value, types.FunctionType) and not _library_name(value):
            bound = self.function(value)
            if bound != name:
                renames[name] = bound
            return
        qualified = _library_name(value)
        if qualified is not None:
            bound = self._free_name(name, ("alias", qualified))
            out.aliases[bound] = qualified
        elif _is_data(value):
            bound = self._free_name(name, ("value", where))
            out.constants[bound] = value
            out.read[bound] = reader
            out.places[bound] = where
        else:
            state = isinstance(value, (np.random.RandomState, np.random.Generator))
            advice = (f"draw in '{_shown(self.target)}' itself, or pass '{name}' to it as a parameter" if state
                      else f"pass '{name}' as a parameter")
            raise self._error(f, node, f"'{_shown(f)}' reads '{name}', {_kind(value)} from the running program; "
                                       "gradgen.grad reads numbers, arrays, tuples and lists of them, and functions "
                                       f"of Python files or of NumPy/SciPy there: {advice}")
        if bound != name:
            renames[name] = bound

    def _free_name(self, name, owner):
        """`name`, or `name_2`, ... : the first the file and the other values leave free."""
        taken = self.outside
        for k in range(1, 1000):
            candidate = name if k == 1 else f"{name}_{k}"
            clash = (candidate in self.m.functions or candidate in self.m.imports or candidate in self.m.constants
                     or candidate in self.m.classes or hasattr(builtins, candidate))
            mine = [x for x in (taken.functions, taken.constants, taken.aliases) if candidate in x]
            if not clash and not mine:
                return candidate
            if mine and _owns(taken, candidate, owner):
                return candidate
        raise CompileError(f"too many values named '{name}'", self.filename)

    def _error(self, f, node, message):
        return self._file_of(f).error(node, message)


def _owns(outside, name, owner):
    """Whether `name` already stands for `owner` (one value read twice keeps one name)."""
    kind = owner[0]
    if kind == "alias":
        return outside.aliases.get(name) == owner[1]
    if kind == "value":
        return outside.places.get(name) == owner[1]  # (one cell or global, read by two functions)
    return outside.objects.get(name) is owner[1]


def _reader_of_cell(cell):
    return lambda: cell.cell_contents


def _reader_of_global(namespace, name):
    return lambda: namespace[name]


def _same_file(fn, filename):
    return fn.__code__.co_filename == filename


def _shown(f):
    return "lambda" if f.__name__ == "<lambda>" else f.__name__


def _own_name(f, node, module):
    """A hoisted function's name: its own, or for a lambda the name it is assigned to."""
    if f.__name__ != "<lambda>":
        return f.__name__
    for stmt in ast.walk(module.tree):
        if isinstance(stmt, ast.Assign) and stmt.value is node and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            return stmt.targets[0].id
    return f"lambda_{node.lineno}"


def _node_of(f, module, filename):
    """The syntax node (a def or a lambda) that made `f`, found by its first line."""
    line = f.__code__.co_firstlineno
    if f.__name__ == "<lambda>":
        found = [n for n in ast.walk(module.tree) if isinstance(n, ast.Lambda) and n.lineno == line]
        if len(found) > 1:
            found = [n for n in found if _lambda_matches(f, n)]
    else:
        found = [n for n in ast.walk(module.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == f.__name__ and line in (n.lineno, *(d.lineno for d in n.decorator_list))]
    if len(found) != 1:
        what = "lambda" if f.__name__ == "<lambda>" else f"def {f.__name__}"
        many = "several" if found else "no"
        raise CompileError(f"gradgen.grad: {many} '{what}' found on line {line} of the source; give the function "
                           "a line of its own (a lambda: a 'def')", filename, line)
    return found[0]


def _lambda_matches(f, node):
    """Whether lambda `node` made `f` (its parameters' names; then its body's first column)."""
    if [a.arg for a in node.args.args] != list(f.__code__.co_varnames[:f.__code__.co_argcount]):
        return False
    positions = getattr(f.__code__, "co_positions", None)  # (Python 3.11+)
    if positions is None:
        return True
    cols = {p[2] for p in positions() if p[0] == node.lineno and p[2] is not None}
    return not cols or min(cols) >= node.body.col_offset and node.body.end_col_offset >= min(cols)


def _free_names(node):
    """The names `node` (a def or a lambda) reads that it does not bind anywhere inside, in
    the order they are first read."""
    bound = set()
    for n in ast.walk(node):
        if isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            bound.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in n.names}
    body = node.body if isinstance(node.body, list) else [node.body]
    defaults = [d for d in node.args.defaults + node.args.kw_defaults if d is not None]
    read = [n.id for part in body + defaults for n in ast.walk(part)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return [name for name in dict.fromkeys(read) if name not in bound]


class _Rename(ast.NodeTransformer):
    """Every read of a renamed free name, in a hoisted copy."""

    def __init__(self, renames):
        self.renames = renames

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.renames:
            return ast.copy_location(ast.Name(id=self.renames[node.id], ctx=ast.Load()), node)
        return node


def _library_name(value):
    """"numpy.tanh" for np.tanh, "numpy.random" for the module, "scipy.stats.multivariate_normal"
    for that object: a value of a library gradgen knows, by its qualified name; else None."""
    import importlib  # (start-up: only a live function's library values need it)

    if isinstance(value, types.ModuleType):
        known = value.__name__ in LIBRARIES or value.__name__ in ("numpy.random", "scipy", "scipy.optimize")
        return value.__name__ if known else None
    if isinstance(value, type) or not callable(value) and not hasattr(value, "logpdf"):
        return None
    name = getattr(value, "__name__", None)
    for library in LIBRARIES:
        try:
            mod = importlib.import_module(library)
        except ImportError:
            continue
        if isinstance(name, str) and getattr(mod, name, None) is value:
            return f"{library}.{name}"
        if not isinstance(name, str):  # an object (scipy.stats.norm): found by what it is
            found = next((k for k, v in vars(mod).items() if v is value and not k.startswith("_")), None)
            if found is not None:
                return f"{library}.{found}"
    return None


def _is_data(value):
    """A number, an array of numbers, or a tuple or list of them (nested)."""
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "biuf"
    if isinstance(value, (tuple, list)) and len(value) <= 10_000:
        return all(_is_data(v) for v in value)
    return False


SMALL = 1 << 20  # bytes: an array this small is keyed by its numbers too (gradgen may fold them)


def _described(value):
    if isinstance(value, np.ndarray):
        if value.nbytes <= SMALL:
            import hashlib  # (start-up: only a live function with array values needs it)

            return ("array", value.shape, str(value.dtype), hashlib.sha1(np.ascontiguousarray(value)).hexdigest())
        return ("array", value.shape, str(value.dtype))
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [_described(v) for v in value])
    return (type(value).__name__, repr(value))


def _origin(fn):
    code = fn.__code__
    return (code.co_filename, code.co_firstlineno, fn.__qualname__)


def _kind(value):
    if value is None:
        return "None"
    article = "an" if type(value).__name__[:1].lower() in "aeiou" else "a"
    return f"{article} {type(value).__name__}"
