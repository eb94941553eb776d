"""Stage 1, parse: source text -> a Module record, without running any of it.

`ast.parse` only. The module's top level is read for what functions may use: imports
(aliases resolved to qualified names such as "numpy.exp"), numeric constants (folded
here, from literals only), same-file functions and classes. Nothing is evaluated but
arithmetic on number literals.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import io
import math
import operator
import re
import sys
import tokenize
import warnings
from dataclasses import dataclass, field

import numpy as np

from gradgen.errors import CompileError, error_at
from gradgen.rules import table as primitives

_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.Pow: operator.pow, ast.FloorDiv: operator.floordiv,
          ast.Mod: operator.mod}
# named numbers of the libraries, wherever a constant may stand (inf is refused where a
# module constant must be finite, and allowed as a default or inside a function)
NAMED = {"math.pi": math.pi, "math.e": math.e, "math.tau": math.tau, "math.inf": math.inf,
         "numpy.pi": math.pi, "numpy.e": math.e, "numpy.inf": math.inf}

# Bounds on the work one input can cause (every stage is linear in the file, but the text of
# a gradient grows with the square of an expression's nesting, and Python's own recursion is
# finite): a file, an expression and a constant beyond these are refused with a located error.
MAX_SOURCE_BYTES = 2_000_000
MAX_NESTING = 50  # brackets, calls and operands nested inside one another in one expression
MAX_OPERATIONS = 200  # operations nested in one expression, long chains like a + b + c... included
MAX_INT_BITS = 13_000  # integer constants: about 3,900 digits (Python prints at most 4,300)
MAX_ARRAY_ELEMENTS = 1_000_000
# the calls that make a class at module level: `Params = namedtuple("Params", "W b")`
NAMEDTUPLE_MAKERS = {"collections.namedtuple", "typing.NamedTuple", "typing_extensions.NamedTuple"}


@dataclass
class Module:
    """What the compiler knows about the user's file."""

    filename: str
    source: str
    sha256: str
    tree: ast.Module
    imports: dict = field(default_factory=dict)  # local name -> qualified name
    # local name -> (its ast.ImportFrom, the name imported) of `from .model import predict`:
    # resolved against the file's package by gradgen.frontend.local_imports
    relative: dict = field(default_factory=dict)
    functions: dict = field(default_factory=dict)  # name -> ast.FunctionDef
    constants: dict = field(default_factory=dict)  # name -> number
    not_constants: dict = field(default_factory=dict)  # name -> (node, why)
    classes: dict = field(default_factory=dict)  # name -> ast.ClassDef, or the ast.Assign of a namedtuple(...)
    records: dict = field(default_factory=dict)  # name -> its gradgen.frontend.records.Record, once read
    redefined: dict = field(default_factory=dict)  # name -> (its ast.FunctionDef, the statement rebinding it)
    lines: list = field(default_factory=list)
    # the user's files it imports (gradgen.frontend.local_imports): dotted name -> Module, each
    # function of them -> the Module defining it, (path, sha256) of each file read; imported:
    # this Module is one of those files (its constants fold where its functions are inlined)
    local: dict = field(default_factory=dict)
    homes: dict = field(default_factory=dict)
    files_read: list = field(default_factory=list)
    imported: bool = False
    # module constants the running program gives (gradgen.live.outside): passed on every call,
    # never written into the generated text
    runtime: frozenset = frozenset()
    outside: object = None  # the gradgen.live.outside.Outside they came with (a nested derivative compiles with it)

    def line_text(self, lineno):
        if lineno is None or not 1 <= lineno <= len(self.lines):
            return None
        return self.lines[lineno - 1]

    def error(self, node, message):
        return error_at(node, message, self)

    def segment(self, node) -> str:
        """The user's text of `node` on one line (for provenance comments).

        Sliced from the lines split once (ast.get_source_segment re-splits the whole file on
        every call, which makes compiling quadratic); columns are UTF-8 byte offsets."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        if not (0 <= first <= last < len(self.lines)) or node.end_col_offset is None:
            return " ".join(ast.unparse(node).split())
        parts = [line.encode("utf-8") for line in self.lines[first:last + 1]]
        if first == last:
            parts[0] = parts[0][node.col_offset:node.end_col_offset]
        else:
            parts[0], parts[-1] = parts[0][node.col_offset:], parts[-1][:node.end_col_offset]
        text = b"\n".join(parts).decode("utf-8", "replace")
        return " ".join(text.split())

    def qualified(self, node):
        """"numpy.exp" for `np.exp` (given `import numpy as np`), or None if not an import."""
        if isinstance(node, ast.Name):
            return self.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return f"{base}.{node.attr}" if base else None
        return None


def python_lines(text):
    """`text` split where Python ends a line (\\n, \\r\\n or \\r), and nowhere else: a form
    feed or a U+2028 inside a comment does not shift the line numbers the AST counts."""
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


_NEWLINE = re.compile(r"\r\n|\r|\n")


def decode(data: bytes, filename: str) -> str:
    """UTF-8 text of `data`, or a CompileError at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = python_lines(data[: exc.start].decode("utf-8") + "|")  # valid up to there
        line, col = len(before), len(before[-1])  # characters before the bad byte, plus one for the bar
        text = python_lines(data.decode("utf-8", "replace"))[line - 1]
        raise CompileError(f"file is not UTF-8 (byte 0x{data[exc.start]:02x})",
                           filename, line, col, text) from None


def parse_module(source, filename="<string>") -> Module:
    """Parse `source` (str or bytes) and read its top level.

    Anything Python itself would refuse to compile is a CompileError at its place, found
    without running a line of it: `ast.parse`, then `compile` of the tree to bytecode (never
    executed) for the errors only the compiler reports (a repeated parameter name, `return`
    outside a function, `nonlocal` at the top level, ...).
    """
    size = len(source)
    if size > MAX_SOURCE_BYTES:
        raise CompileError(f"file too large ({size:,} {'bytes' if isinstance(source, bytes) else 'characters'}); "
                           f"gradgen reads at most {MAX_SOURCE_BYTES:,}", filename)
    if isinstance(source, bytes):
        source = decode(source, filename)
    else:
        decode(source.encode("utf-8", "surrogatepass"), filename)  # a lone surrogate is no text
    if source.startswith("\ufeff"):
        source = source[1:]
    lines = python_lines(source)
    _refuse_null_byte(source, filename, lines)
    tree = _python_parse(source, filename, lines)
    sha = hashlib.sha256(source.encode("utf-8")).hexdigest()
    module = Module(filename, source, sha, tree, lines=lines)
    _check_nesting(module)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            raise module.error(node, f"'from {'.' * node.level}{node.module or ''} import *' is not "
                                     "supported: gradgen must know every name; import the names you use")
    for stmt in tree.body:
        _read_top_level(module, stmt)
    _forget_globals(module)
    return module


def _refuse_null_byte(source, filename, lines):
    at = source.find("\x00")
    if at >= 0:
        line = source.count("\n", 0, at) + 1
        col = at - (source.rfind("\n", 0, at) + 1) + 1
        text = lines[line - 1].replace("\x00", " ") if line <= len(lines) else None
        raise CompileError("the file contains a null byte", filename, line, col, text)


def _python_parse(source, filename, lines):
    """`ast.parse`, then `compile` of the tree (bytecode that is never run), warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning, DeprecationWarning: gradgen reports errors only
        try:
            tree = ast.parse(source, filename=filename)
            compile(tree, filename, "exec", dont_inherit=True)
        except SyntaxError as exc:
            line = exc.lineno or 1
            text = lines[line - 1] if 0 < line <= len(lines) else None
            col = exc.offset if exc.offset and exc.offset > 0 else 1
            message = str(exc.msg)
            if "integer string conversion" in message:
                message = f"an integer literal longer than {sys.get_int_max_str_digits()} digits"
            raise CompileError(f"syntax error: {message}", filename, line, col, text) from None
        except (ValueError, RecursionError, MemoryError) as exc:
            where = _longest_statement(source)
            what = "too long or nested too deeply" if isinstance(exc, (RecursionError, MemoryError)) else "invalid"
            message = f"this statement is {what} for Python's parser ({type(exc).__name__})"
            if where is None:
                raise CompileError(message, filename) from None
            line, col = where
            raise CompileError(message + "; split it into several statements", filename, line, col,
                               lines[line - 1] if line <= len(lines) else None) from None
    return tree


def _longest_statement(source):
    """(line, col) of the logical line with the most tokens, or None (best effort, no parse)."""
    best, count, start = None, 0, None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if start is None:
                start = tok.start
            count += 1
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if best is None or count > best[0]:
                    best = (count, start)
                count, start = 0, None
    except Exception:  # noqa: BLE001 - only a hint for the message
        pass
    if count and (best is None or count > best[0]) and start is not None:
        best = (count, start)
    return (best[1][0], best[1][1] + 1) if best else None


# children that continue a chain written without brackets: `a + b + c`, `a < b < c`, `x.y.z`,
# `f(x)` (the callee), `a if c else b if d else e`
_CHAIN = {(ast.BinOp, "left"), (ast.BoolOp, "values"), (ast.Compare, "left"), (ast.Attribute, "value"),
          (ast.Call, "func"), (ast.IfExp, "orelse"), (ast.Subscript, "value")}


def _check_nesting(module):
    """Refuse an expression nested more than MAX_NESTING deep (the text of its gradient
    grows with the square of the nesting, and black's time faster) or holding more than
    MAX_OPERATIONS nested operations (each stage recurses over them)."""
    stack = [(module.tree, 0, 0, None)]
    while stack:
        node, depth, nesting, outermost = stack.pop()
        if not isinstance(node, (ast.stmt, ast.mod)) and hasattr(node, "lineno"):
            if nesting > MAX_NESTING:
                raise module.error(node, f"expression nested more than {MAX_NESTING} levels deep; "
                                         "split it into several assignments")
            if depth > MAX_OPERATIONS:
                raise module.error(outermost, f"expression too long: more than {MAX_OPERATIONS} operations "
                                              "in one expression; split it into several assignments")
        for name, value in ast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.stmt):
                    stack.append((child, 0, 0, None))
                elif isinstance(child, ast.AST):
                    chained = (type(node), name) in _CHAIN and (
                        name != "left" or not isinstance(node, ast.BinOp) or _same_level(node, child))
                    top = outermost if outermost is not None or not hasattr(child, "lineno") else child
                    stack.append((child, depth + 1, nesting + (0 if chained else 1), top))


def _same_level(node, child):
    """`a + b` on the left of `+ c`: the chain goes on without brackets."""
    if not isinstance(child, ast.BinOp):
        return False
    levels = ({ast.Add, ast.Sub}, {ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.MatMult})
    return any(type(node.op) in level and type(child.op) in level for level in levels)


def _read_top_level(module: Module, stmt):
    """Record what `stmt` binds. A name means what its last binding made it, as when Python
    runs the file: a later `def`, import or assignment replaces an earlier one of any kind."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                _rebind(module, alias.asname, stmt)
                module.imports[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                _rebind(module, top, stmt)
                module.imports[top] = top
    elif isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            name = alias.asname or alias.name
            _rebind(module, name, stmt)
            if stmt.level == 0:
                module.imports[name] = f"{stmt.module}.{alias.name}"
            else:  # until local_imports finds the file (a source not read from a file: never)
                module.relative[name] = (stmt, alias.name)
                module.not_constants[name] = (stmt, f"is imported from '{'.' * stmt.level}{stmt.module or ''}', "
                                                    "which gradgen does not read; copy it into this file")
    elif isinstance(stmt, ast.FunctionDef):
        _rebind(module, stmt.name, stmt)
        module.functions[stmt.name] = stmt
    elif isinstance(stmt, ast.AsyncFunctionDef):
        _rebind(module, stmt.name, stmt)
        module.not_constants[stmt.name] = (stmt, "is an async function")
    elif isinstance(stmt, ast.ClassDef):
        _rebind(module, stmt.name, stmt)
        module.classes[stmt.name] = stmt
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        _read_assignment(module, stmt)
    else:
        _forget_assigned(module, stmt)


def _rebind(module, name, stmt):
    """`name` is bound again by `stmt`: forget what it was (a function rebound after its
    `def` is remembered, so that compiling it can be refused: its `def` is not what runs)."""
    if isinstance(stmt, ast.FunctionDef):
        module.redefined.pop(name, None)  # `def f` again: the new `def` is what runs
    elif name in module.functions:
        module.redefined[name] = (module.functions[name], stmt)
    for table in (module.functions, module.imports, module.relative, module.constants, module.not_constants,
                  module.classes):
        table.pop(name, None)


def _read_assignment(module, stmt):
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    value = stmt.value
    if len(targets) == 1 and isinstance(targets[0], ast.Tuple) and isinstance(value, ast.Tuple) \
            and len(targets[0].elts) == len(value.elts) and all(isinstance(t, ast.Name) for t in targets[0].elts):
        for target, part in zip(targets[0].elts, value.elts):  # `x1, x2 = 1.0, 2.0`
            _read_assignment(module, ast.copy_location(ast.Assign(targets=[target], value=part), stmt))
        return
    for target in targets:
        if isinstance(target, ast.Name) and value is not None:
            if target.id in module.constants or target.id in module.not_constants:
                _rebind(module, target.id, stmt)
                module.not_constants[target.id] = (stmt, "is assigned more than once at module level")
                continue
            _rebind(module, target.id, stmt)
            if isinstance(value, ast.Call) and module.qualified(value.func) in NAMEDTUPLE_MAKERS:
                module.classes[target.id] = stmt  # Params = namedtuple("Params", "W b") (gradgen.frontend.records)
                continue
            if isinstance(value, ast.Lambda):
                module.not_constants[target.id] = (stmt, "is a lambda, which gradgen does not inline yet; "
                                                         "write it as a 'def' in this file")
                continue
            try:
                module.constants[target.id] = _dict_of_numbers(value, module) if isinstance(value, ast.Dict) \
                    else constant_value(value, module)
            except ValueError as exc:
                why = f"is {exc}" if str(exc).startswith(("too large", "not finite", "not a real")) \
                    else _not_numeric(value, module)
                module.not_constants[target.id] = (stmt, why)
        else:
            _forget_assigned(module, target)


def _not_numeric(value, module):
    """Why a module-level value is no constant gradgen copies: an instance of a class of the
    file is said so (a record of arrays, `DEFAULT_ARM = Arm(lengths=...)`)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in module.classes:
        return (f"is an instance of {value.func.id}, which gradgen does not copy into the generated module "
                "(it copies numbers and arrays)")
    return "is not a numeric constant"


def _forget_assigned(module, node):
    """Names bound by other top-level statements (`for`, `with`, `if`, `try`, `del`,
    `:=`, ...) are not constants, functions or imports gradgen can trust."""
    for name in _bound_names(node):
        _rebind(module, name, node)
        module.not_constants[name] = (node, "is assigned by a statement gradgen does not read")


def _bound_names(node):
    """Every module-level name `node` binds or unbinds, nested statements included (but not
    the bodies of functions and classes it defines, which have scopes of their own)."""
    stack = [node]
    while stack:
        sub = stack.pop()
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            yield sub.id
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield sub.name
            stack.extend(sub.decorator_list)
            continue
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            yield from ((a.asname or a.name).split(".")[0] for a in sub.names if a.name != "*")
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            yield sub.name
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            yield sub.name
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            yield sub.rest
        elif isinstance(sub, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue  # their names are their own (a := inside one binds at module level: see below)
        stack.extend(ast.iter_child_nodes(sub))
    for sub in ast.walk(node):
        if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
            yield sub.target.id


def _forget_globals(module):
    """A name some function declares `global` can be rebound whenever that function runs:
    it is no constant, function or import gradgen can trust."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Global):
            for name in node.names:
                _rebind(module, name, node)
                module.not_constants[name] = (node, f"is rebound through 'global' (line {node.lineno})")


_ARRAY_BUILDERS = {"numpy.array", "numpy.asarray", "numpy.eye", "numpy.identity", "numpy.linspace",
                   "numpy.zeros", "numpy.ones", "numpy.arange", "numpy.full"}


def _array_constant(node, module):
    """`np.array([[1, 2], [3, 4]])`, `np.eye(3)`, `np.linspace(0, 1, 5)`: NumPy builds it from
    literal numbers only (nothing of the user's runs); anything else is not a constant."""
    if module.qualified(node.func) not in _ARRAY_BUILDERS:
        raise ValueError("not an array constructor")
    args = [_nested(constant_value_or_list(a, module)) for a in node.args]
    kwargs = {}
    for kw in node.keywords:
        if kw.arg != "dtype" or ast.unparse(kw.value) not in ("float", "int", "np.float64", "numpy.float64"):
            raise ValueError("unsupported keyword")
        kwargs["dtype"] = float if "float" in ast.unparse(kw.value) else int
    name = module.qualified(node.func).split(".")[1]
    if _planned_size(name, args) > MAX_ARRAY_ELEMENTS:  # known before NumPy allocates anything
        raise ValueError(f"too large: more than {MAX_ARRAY_ELEMENTS:,} elements")
    try:
        value = getattr(np, name)(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - NumPy refusing literal arguments, whatever its reason
        raise ValueError(str(exc)) from None
    if value.size > MAX_ARRAY_ELEMENTS or value.dtype.kind not in "biuf":
        raise ValueError("too large or not numeric")
    if value.dtype.kind == "f" and not np.isfinite(value).all():
        raise ValueError("not finite")
    return value


def _library_call(node, module):
    """`math.log(2 * math.pi)`, `np.sqrt(2.0)`: a function of the rule table (from math or
    NumPy) applied to constants, folded now. It is the library's own function on numbers,
    never the user's code; the result must be a finite number (or a small array)."""
    qualified = module.qualified(node.func) or (node.func.id if isinstance(node.func, ast.Name) else None)
    found = primitives.lookup(qualified) if qualified else None
    if found is None or node.keywords or not node.args:
        raise ValueError("not a numeric constant")
    library, _, name = qualified.rpartition(".")
    if library not in ("math", "numpy", ""):
        raise ValueError("not a numeric constant")

    function = getattr({"math": math, "numpy": np, "": builtins}[library], name, None)
    args = [constant_value(a, module) for a in node.args]
    if function is None or any(isinstance(a, tuple) for a in args):
        raise ValueError("not a numeric constant")
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("ignore")
            value = function(*args)
    except (ArithmeticError, ValueError, TypeError, FloatingPointError):
        raise ValueError("arithmetic error") from None
    if isinstance(value, np.ndarray) and value.ndim == 0 or isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("not finite")
    if hasattr(value, "dtype") and (value.dtype.kind not in "biuf" or not np.isfinite(value).all()):
        raise ValueError("not finite")
    if type(value) not in (int, float, bool) and not hasattr(value, "dtype"):
        raise ValueError("not a numeric constant")
    return _bounded(value)


def _planned_size(name, args):
    """How many elements np.<name>(*args) will have, from its arguments alone."""
    def count(shape):
        dims = shape if isinstance(shape, (list, tuple)) else [shape]
        if not all(type(d) is int and d >= 0 for d in dims) or len(dims) > 32:
            raise ValueError("not a shape")
        return math.prod(dims)

    def number(i, default=None):
        value = args[i] if i < len(args) else default
        if type(value) not in (int, float) or not math.isfinite(value):
            raise ValueError("not a number")
        return value

    if name in ("array", "asarray"):
        return 0  # literal numbers written out in the file: as many as the file holds
    if name in ("zeros", "ones", "full"):
        return count(args[0] if args else None)
    if name == "identity":
        return count(args[0] if args else None) ** 2
    if name == "eye":
        return count(args[0] if args else None) * count(args[1] if len(args) > 1 else args[0] if args else None)
    if name == "linspace":
        return count(args[2] if len(args) > 2 else 50)
    if name == "arange":
        start, stop = (0, number(0)) if len(args) == 1 else (number(0), number(1))
        step = number(2, 1)
        if step == 0:
            raise ValueError("zero step")
        return max(0, math.ceil((stop - start) / step))
    raise ValueError("unknown array builder")


def _bounded(value):
    """`value`, unless it is too large to write out (an integer of thousands of digits, an
    array of millions of elements) or not a real number."""
    if isinstance(value, complex):
        raise ValueError("not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueError(f"too large: an integer of more than {MAX_INT_BITS * 3 // 10:,} digits")
    if getattr(value, "size", 0) > MAX_ARRAY_ELEMENTS:
        raise ValueError(f"too large: more than {MAX_ARRAY_ELEMENTS:,} elements")
    return value


def _check_operands(op, left, right):
    """Refuse arithmetic whose result would be too large, before computing it."""
    if hasattr(left, "shape") or hasattr(right, "shape"):
        try:
            shape = np.broadcast_shapes(np.shape(left), np.shape(right))
        except ValueError:
            raise ValueError("shapes do not broadcast") from None
        if math.prod(shape) > MAX_ARRAY_ELEMENTS:
            raise ValueError(f"too large: more than {MAX_ARRAY_ELEMENTS:,} elements")
        if isinstance(op, ast.Pow) and np.any(np.abs(right) > 1024):
            raise ValueError("exponent too large")
        return
    if isinstance(op, ast.Pow) and abs(right) > 1024:
        raise ValueError("exponent too large")
    if isinstance(left, int) and isinstance(right, int):
        bits = left.bit_length()
        if isinstance(op, ast.Pow) and right > 0 and bits > 1 and (bits - 1) * right > MAX_INT_BITS:
            raise ValueError(f"too large: an integer of more than {MAX_INT_BITS * 3 // 10:,} digits")
        if isinstance(op, ast.Mult) and bits + right.bit_length() > MAX_INT_BITS + 1:
            raise ValueError(f"too large: an integer of more than {MAX_INT_BITS * 3 // 10:,} digits")


def constant_value_or_list(node, module):
    if isinstance(node, (ast.List, ast.Tuple)):
        return [constant_value_or_list(e, module) for e in node.elts]
    return constant_value(node, module)


def _nested(value):
    return list(value) if isinstance(value, tuple) else value


def _dict_of_numbers(node, module):
    """`HYPERPARAMS = {"l2": 1e-2, "temperature": 1.5}`: string keys, numbers; a function
    reads its numbers by key (gradgen.frontend.lower folds `HYPERPARAMS["l2"]` to the number)."""
    if not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
        raise ValueError("not a numeric constant")
    values = [constant_value(v, module) for v in node.values]
    if any(isinstance(v, tuple) or hasattr(v, "shape") for v in values):
        raise ValueError("not a numeric constant")
    return {k.value: v for k, v in zip(node.keys, values)}


def constant_value(node, module):
    """The number (or tuple of numbers) a constant expression denotes: literals, named
    constants, + - * / ** on them, and tuples or lists of those.

    Raises ValueError for anything else. Nothing is executed.
    """
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
        return _bounded(node.value)
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts and len(node.elts) <= 100_000:
        values = tuple(constant_value(e, module) for e in node.elts)
        if any(isinstance(v, tuple) for v in values):
            raise ValueError("nested sequences are not numeric constants")
        return values
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = constant_value(node.operand, module)
        if isinstance(value, tuple):
            raise ValueError("a sign on a sequence")
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = constant_value(node.left, module), constant_value(node.right, module)
        if isinstance(left, tuple) or isinstance(right, tuple):
            raise ValueError("arithmetic on sequences")
        _check_operands(node.op, left, right)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NumPy's overflow warnings: the result is checked below
                result = _ARITH[type(node.op)](left, right)
        except (ArithmeticError, ValueError, TypeError):
            raise ValueError("arithmetic error") from None
        if hasattr(result, "dtype") and result.dtype.kind == "f":
            if not np.isfinite(result).all():
                raise ValueError("not finite")
        return _bounded(result)
    if isinstance(node, ast.Name) and node.id in module.constants:
        return module.constants[node.id]
    if isinstance(node, ast.Call):
        if module.qualified(node.func) in _ARRAY_BUILDERS:
            return _array_constant(node, module)
        return _library_call(node, module)
    qualified = module.qualified(node)
    if qualified in NAMED:
        return NAMED[qualified]
    raise ValueError("not a numeric constant")
