"""Stage 1, parse: source text -> a Module record, without running any of it.

`ast.parse` only. The module's top level is read for what functions may use: imports
(aliases resolved to qualified names such as "numpy.exp"), numeric constants (folded by
gradgen.frontend.constants, from literals only), same-file functions and classes. Nothing
is evaluated but arithmetic on number literals and library functions of them.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import sys
import tokenize
import warnings
from dataclasses import dataclass, field


from gradgen.errors import CompileError, error_at
from gradgen.frontend.constants import _dict_of_numbers, constant_value

# Bounds on the work one input can cause (every stage is linear in the file, but the text of
# a gradient grows with the square of an expression's nesting, and Python's own recursion is
# finite): a file, an expression and a constant beyond these are refused with a located error.
MAX_SOURCE_BYTES = 2_000_000
MAX_NESTING = 50  # brackets, calls and operands nested inside one another in one expression
MAX_OPERATIONS = 200  # operations nested in one expression, long chains like a + b + c... included
# the calls that make a class at module level: `Params = namedtuple("Params", "W b")`
NAMEDTUPLE_MAKERS = {"collections.namedtuple", "typing.NamedTuple", "typing_extensions.NamedTuple"}


@dataclass(frozen=True)
class RecordConstant:
    """`DEFAULT_ARM = Arm(lengths=np.array([1.0, 0.8]), lower=np.deg2rad([-170.0, -150.0]))`: an
    instance of a NamedTuple or dataclass of the file whose arguments are constants (folded
    here, as a module constant is). A default may name it: the generated module declares the
    class and the instance again (gradgen.codegen.record_defaults), from these values."""

    cls: str
    args: tuple  # positional arguments' values
    keywords: tuple  # ((field, value), ...)
    node: ast.AST


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
    # name -> RecordConstant: `DEFAULT_ARM = Arm(lengths=np.array([...]), ...)`, a record of constants
    record_constants: dict = field(default_factory=dict)
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
                  module.classes, module.record_constants):
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
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in module.classes:
                made = _record_constant(value, module)
                if made is not None:
                    module.record_constants[target.id] = made
                module.not_constants[target.id] = (stmt, _not_numeric(value, module))
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


def _record_constant(call, module):
    """The RecordConstant `call` makes, if each argument is a constant (a number, a tuple of
    numbers, an array built from literals); else None."""
    try:
        args = tuple(_field_constant(a, module) for a in call.args)
        keywords = tuple((k.arg, _field_constant(k.value, module)) for k in call.keywords)
    except ValueError:
        return None
    if any(k is None for k, _ in keywords):  # `**options`
        return None
    return RecordConstant(call.func.id, args, keywords, call)


def _field_constant(node, module):
    value = constant_value(node, module)
    if isinstance(value, tuple) and any(isinstance(v, tuple) for v in value):
        raise ValueError("nested")
    return value


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
