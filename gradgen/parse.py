"""Stage 1, parse: source text -> a Module record, without running any of it.

`ast.parse` only. The module's top level is read for what functions may use: imports
(aliases resolved to qualified names such as "numpy.exp"), numeric constants (folded
here, from literals only), same-file functions and classes. Nothing is evaluated but
arithmetic on number literals.
"""

from __future__ import annotations

import ast
import hashlib
import math
import operator
from dataclasses import dataclass, field

from gradgen.errors import CompileError, error_at

_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.Pow: operator.pow, ast.FloorDiv: operator.floordiv,
          ast.Mod: operator.mod}
_NAMED = {"math.pi": math.pi, "math.e": math.e, "math.tau": math.tau,
          "numpy.pi": math.pi, "numpy.e": math.e}


@dataclass
class Module:
    """What the compiler knows about the user's file."""

    filename: str
    source: str
    sha256: str
    tree: ast.Module
    imports: dict = field(default_factory=dict)  # local name -> qualified name
    functions: dict = field(default_factory=dict)  # name -> ast.FunctionDef
    constants: dict = field(default_factory=dict)  # name -> number
    not_constants: dict = field(default_factory=dict)  # name -> (node, why)
    classes: dict = field(default_factory=dict)  # name -> ast.ClassDef
    lines: list = field(default_factory=list)

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


def decode(data: bytes, filename: str) -> str:
    """UTF-8 text of `data`, or a CompileError at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        text = data.split(b"\n")[line - 1].decode("utf-8", "replace")
        raise CompileError(f"file is not UTF-8 (byte 0x{data[exc.start]:02x})",
                           filename, line, col, text) from None


def parse_module(source, filename="<string>") -> Module:
    """Parse `source` (str or bytes) and read its top level."""
    if isinstance(source, bytes):
        source = decode(source, filename)
    if source.startswith("\ufeff"):
        source = source[1:]
    lines = source.splitlines()
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        line = exc.lineno or 1
        text = lines[line - 1] if 0 < line <= len(lines) else None
        raise CompileError(f"syntax error: {exc.msg}", filename, line, exc.offset or 1, text) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise CompileError(f"cannot parse: {exc}", filename) from None
    sha = hashlib.sha256(source.encode("utf-8")).hexdigest()
    module = Module(filename, source, sha, tree, lines=lines)
    for stmt in tree.body:
        _read_top_level(module, stmt)
    return module


def _read_top_level(module: Module, stmt):
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                module.imports[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                module.imports[top] = top
    elif isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            if stmt.level == 0 and alias.name != "*":
                module.imports[alias.asname or alias.name] = f"{stmt.module}.{alias.name}"
    elif isinstance(stmt, ast.FunctionDef):
        module.functions[stmt.name] = stmt
    elif isinstance(stmt, ast.AsyncFunctionDef):
        module.not_constants[stmt.name] = (stmt, "is an async function")
    elif isinstance(stmt, ast.ClassDef):
        module.classes[stmt.name] = stmt
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        _read_assignment(module, stmt)
    else:
        _forget_assigned(module, stmt)


def _read_assignment(module, stmt):
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    value = stmt.value
    for target in targets:
        if isinstance(target, ast.Name) and value is not None:
            if target.id in module.constants or target.id in module.not_constants:
                module.constants.pop(target.id, None)
                module.not_constants[target.id] = (stmt, "is assigned more than once at module level")
                continue
            try:
                module.constants[target.id] = constant_value(value, module)
            except ValueError:
                module.not_constants[target.id] = (stmt, "is not a numeric constant")
        else:
            _forget_assigned(module, target)


def _forget_assigned(module, node):
    """Names bound by other top-level statements are not constants gradgen can trust."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            module.constants.pop(sub.id, None)
            module.not_constants[sub.id] = (node, "is assigned by a statement gradgen does not read")


_ARRAY_BUILDERS = {"numpy.array", "numpy.asarray", "numpy.eye", "numpy.identity", "numpy.linspace",
                   "numpy.zeros", "numpy.ones", "numpy.arange", "numpy.full"}


def _array_constant(node, module):
    """`np.array([[1, 2], [3, 4]])`, `np.eye(3)`, `np.linspace(0, 1, 5)`: NumPy builds it from
    literal numbers only (nothing of the user's runs); anything else is not a constant."""
    import numpy as np

    if module.qualified(node.func) not in _ARRAY_BUILDERS:
        raise ValueError("not an array constructor")
    args = [_nested(constant_value_or_list(a, module)) for a in node.args]
    kwargs = {}
    for kw in node.keywords:
        if kw.arg != "dtype" or ast.unparse(kw.value) not in ("float", "int", "np.float64", "numpy.float64"):
            raise ValueError("unsupported keyword")
        kwargs["dtype"] = float if "float" in ast.unparse(kw.value) else int
    name = module.qualified(node.func).split(".")[1]
    try:
        value = getattr(np, name)(*args, **kwargs)
    except (TypeError, ValueError, MemoryError) as exc:
        raise ValueError(str(exc)) from None
    if value.size > 1_000_000 or value.dtype.kind not in "biuf":
        raise ValueError("too large or not numeric")
    return value


def constant_value_or_list(node, module):
    if isinstance(node, (ast.List, ast.Tuple)):
        return [constant_value_or_list(e, module) for e in node.elts]
    return constant_value(node, module)


def _nested(value):
    return list(value) if isinstance(value, tuple) else value


def constant_value(node, module):
    """The number (or tuple of numbers) a constant expression denotes: literals, named
    constants, + - * / ** on them, and tuples or lists of those.

    Raises ValueError for anything else. Nothing is executed.
    """
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
        return node.value
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
        if isinstance(node.op, ast.Pow) and abs(right) > 1024:
            raise ValueError("exponent too large")
        try:
            return _ARITH[type(node.op)](left, right)
        except (ArithmeticError, ValueError):
            raise ValueError("arithmetic error") from None
    if isinstance(node, ast.Name) and node.id in module.constants:
        return module.constants[node.id]
    if isinstance(node, ast.Call):
        return _array_constant(node, module)
    qualified = module.qualified(node)
    if qualified in _NAMED:
        return _NAMED[qualified]
    raise ValueError("not a numeric constant")
