"""Stage 7 (optional), backend: the generated NumPy module, respelled for the Array API.

`gradgen compile --backend array-api` writes the module the NumPy backend writes (verified
by `check`, held byte for byte by the golden tests), with every NumPy call spelled as the
Array API standard spells it, so the same gradient runs on NumPy, CuPy, PyTorch, JAX and
Dask arrays. Each generated function starts with

    xp = array_namespace(W1, b1, W2, b2, X, Y)

(array-api-compat's: the library of its array arguments; Python numbers are skipped) and
calls `xp.exp`, `xp.sum(..., axis=1)`, ...; the helpers written into the module are the
Array API versions of gradgen/codegen/array_api_helpers.py, which never read an array's values, so
a Dask array stays a lazy, chunked graph until the caller computes it.

The rewrite works on the generated text: each statement that needs a new spelling is
parsed, rewritten as a syntax tree (gradgen/codegen/array_api_calls.py) and printed again in its
place; the comments between statements stay where they were, and black formats the result.
Whatever has no Array API spelling (SciPy, NumPy functions outside the standard and its
linalg extension, writing into an array in place, random draws, helpers with no Array API
version) is refused, located at the line of the user's file it came from.
"""

from __future__ import annotations

import ast
import re

from gradgen.analysis import arrays as array_facts
from gradgen.codegen import array_api_helpers as backend_helpers
from gradgen.codegen import emit, freshness
from gradgen.codegen.array_api_calls import Refusal, Respell, masks
from gradgen.codegen.naming import unused
from gradgen.codegen.rewrite import ModuleEdits
from gradgen.errors import CompileError
from gradgen.ir import nodes

BACKENDS = ("numpy", "array-api")
ARRAY_API = "array-api"
BACKEND_LINE = "Backend: array-api (the array library is taken from the arguments; needs array-api-compat)."
_RECORDED = re.compile(rb"# Backend: (?P<name>[\w-]+)")
_RESERVED = ("array_namespace", *[h for h in backend_helpers.HELPERS if h not in emit.HELPERS])


def rewrite(compiled, backend):
    """The text of `compiled` (a gradgen.api.CompiledModule) for `backend`."""
    if backend == "numpy":
        return compiled.text
    if backend != ARRAY_API:
        raise CompileError(f"unknown backend '{backend}'; the backends are: {', '.join(BACKENDS)}",
                           compiled.filename)
    text = compiled.text
    head, body = freshness.split_header(text)
    body = _ModuleRewriter(body, compiled).text()
    return "".join(f"{line}\n" for line in freshness.respelled_header(head, body, "--backend array-api", BACKEND_LINE)) + body


def recorded(path):
    """The backend the module at `path` was generated for: "array-api" when its header says
    so, "numpy" for any other module gradgen wrote, None when there is none to read."""
    return freshness.recorded_option(path, _RECORDED, "numpy")


class _ModuleRewriter(ModuleEdits):
    """The module body, with each statement that needs a new spelling printed again."""

    def __init__(self, body, compiled):
        super().__init__(body, compiled)
        self.generated = {}
        for f in compiled.functions:
            for name in [f.grad_name, f.value_and_grad_name] + [m.name for m in f.made]:
                if name:
                    self.generated[name] = f
        self.names = _identifiers(self.tree)
        self.xp = unused("xp", self.names)
        self.takes_xp = set(backend_helpers.TAKE_XP)
        self.helpers_used = set()
        self.uses_math = False
        self.uses_xp = False  # some function calls array_namespace
        self.uses_numpy = False  # a function of numbers keeps np.* (see _function)

    def text(self):
        self._refuse_reserved()
        defs = [s for s in self.tree.body if isinstance(s, ast.FunctionDef)]
        helpers = [d for d in defs if d.name in emit.HELPERS]
        own = [d for d in defs if d.name not in emit.HELPERS and d.name not in self.generated]  # sigmoid
        for d in own:
            self._function(d, namespace_param=True)
        # value-and-gradient functions first: their forward pass holds the user's own calls, so
        # a refusal names the call the user wrote before any its derivative makes
        ordered = sorted((d for d in defs if d.name in self.generated),
                         key=lambda d: d.name != self.generated[d.name].value_and_grad_name)
        for d in ordered:
            self._function(d)
        for stmt in self.tree.body:
            if isinstance(stmt, ast.Assign):
                self._constant(stmt)
        self._docstring()
        self._imports()
        pieces = self._pieces(helpers)
        return "\n\n".join(pieces)

    # --- the module's parts -----------------------------------------------------------

    def _pieces(self, helpers):
        """The module, formatted a top-level piece at a time (as gradgen/codegen/emit.py does): its
        docstring, imports and constants; the helpers; the functions."""
        body = self._apply()
        tree = ast.parse(body)
        starts = [0]
        for line in body.encode("utf-8").split(b"\n"):
            starts.append(starts[-1] + len(line) + 1)
        data = body.encode("utf-8")
        functions = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
        helper_names = {h.name for h in helpers}
        first = functions[0] if functions else None
        head_end = starts[first.lineno - 1] if first is not None else len(data)
        pieces = [emit.format_source(data[:head_end].decode("utf-8").rstrip("\n") + "\n")]
        pieces += [emit.format_source(source) for source in backend_helpers.sources(self.helpers_used)]
        for f in functions:
            if f.name in helper_names:
                continue  # replaced by their Array API versions above
            start, end = starts[f.lineno - 1], starts[f.end_lineno]
            pieces.append(emit.format_source(data[start:end].decode("utf-8")))
        return pieces

    def _docstring(self):
        self._docstring_ends(", for the Array API: NumPy, CuPy, PyTorch, JAX or Dask arrays, the library taken "
                             "from the arguments.")

    def _imports(self):
        imports = [s for s in self.tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        kept = [ast.unparse(s) for s in imports if self.uses_numpy or not _imports_numpy(s)]
        lines = sorted(set(kept) | ({"import math"} if self.uses_math else set()))
        if self.uses_xp:
            lines.append("\nfrom array_api_compat import array_namespace")
        if imports:
            start = self._span(imports[0])[0]
            self.edits.append((start, self._span(imports[-1])[1], "\n".join(lines)))
        elif lines:
            self.edits.append((self._span(self.tree.body[0])[1], self._span(self.tree.body[0])[1],
                               "\n\n" + "\n".join(lines)))

    def _constant(self, stmt):
        """A module-level constant: a number stays; a NumPy array would mix libraries."""
        if any(isinstance(n, ast.Name) and n.id == "np" for n in ast.walk(stmt.value)):
            name = stmt.targets[0].id if isinstance(stmt.targets[0], ast.Name) else ast.unparse(stmt.targets[0])
            raise self._user_constant_error(name)

    # --- functions ----------------------------------------------------------------------

    def _function(self, fdef, namespace_param=False):
        """Rewrite the statements of a generated function (or of the sigmoid helper, which
        then takes the namespace as its first parameter), and give it its namespace. A
        function whose parameters are all numbers keeps NumPy's spelling, as the NumPy
        backend writes it: numbers need no array library (a helper gets `np` as namespace)."""
        arrays = None if namespace_param else self._array_params(fdef)
        numbers = arrays == []
        respell = Respell("np" if numbers else "xp" if namespace_param else self.xp, self.takes_xp,
                          _imported(self.tree), self._lists(fdef), masks(fdef), numbers,
                          set() if namespace_param else self._number_names(fdef))
        self._refuse_defaults(fdef)
        body = fdef.body
        self._statements(body[1:] if _is_docstring(body[0]) else body, respell, fdef)
        self.helpers_used |= respell.helpers
        self.uses_math |= respell.uses_math
        self.uses_numpy |= numbers and (respell.uses_numpy or "np" in _identifiers(fdef))
        if not respell.uses_xp or numbers:
            return
        if namespace_param:
            self.takes_xp.add(fdef.name)
            first = fdef.args.args[0]
            start = self._span(first)[0]
            self.edits.append((start, start, "xp, "))
            return
        indent = " " * body[1 if _is_docstring(body[0]) else 0].col_offset
        end = self._span(body[0])[1] if _is_docstring(body[0]) else self._span(body[0])[0]
        self.uses_xp = True  # array_namespace is imported
        line = f"{self.xp} = array_namespace({', '.join(arrays)})"
        self.edits.append((end, end, f"\n{indent}{line}" if _is_docstring(body[0]) else f"{line}\n{indent}"))

    def _statements(self, stmts, respell, fdef):
        for stmt in stmts:
            if isinstance(stmt, (ast.For, ast.While, ast.If)):
                for field in ("iter", "test", "target"):
                    if hasattr(stmt, field):
                        self._rewrite(getattr(stmt, field), respell, fdef, expression=True)
                self._statements(stmt.body, respell, fdef)
                self._statements(stmt.orelse, respell, fdef)
            else:
                self._rewrite(stmt, respell, fdef)

    def _rewrite(self, node, respell, fdef, expression=False):
        span = self._span(node)
        try:
            new = respell.statement(node)
        except Refusal as refusal:
            raise self._refused(refusal, node, fdef) from None
        if new is not None:
            self.edits.append((*span, ast.unparse(new)))

    def _array_params(self, fdef):
        """The parameters that may hold arrays (gradgen/analysis/arrays.py's answer for the user's
        function; a tangent or cotangent parameter of another kind counts too)."""
        compiled = self.generated[fdef.name]
        params = [a.arg for a in fdef.args.args + fdef.args.kwonlyargs]
        user = {p.name: p for p in compiled.ir.params}
        try:
            arrays = array_facts.array_values(compiled.ir, self.user)
        except Exception:  # noqa: BLE001 - an analysis that cannot answer: every parameter may be one
            arrays = set(params)
        numbers = {c for c, v in self.user.constants.items() if not hasattr(v, "shape")}  # (gradgen.codegen.guards)
        return [p for p in params if (p not in user and p not in numbers) or
                (p in user and p in arrays and not user[p].number and not user[p].function and not user[p].structured)]

    def _number_names(self, fdef):
        """The names of the user's function that hold numbers, never arrays (gradgen/analysis/arrays.py):
        comparing them gives a Python bool, which needs no cast to be used as a number."""
        compiled = self.generated[fdef.name]
        names = {p.name for p in compiled.ir.params}
        names |= {s.target for s in nodes.walk(compiled.ir.body) if isinstance(getattr(s, "target", None), str)}
        try:
            return names - array_facts.array_values(compiled.ir, self.user)
        except Exception:  # noqa: BLE001 - an analysis that cannot answer: any of them may be an array
            return set()

    def _lists(self, fdef):
        """The names `fdef` binds to Python lists (`dhs = [0.0] * len(hs)`): writing into one
        is no write into an array."""
        found = set()
        for node in ast.walk(fdef):
            if isinstance(node, ast.Assign) and _is_list(node.value):
                found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        return found

    def _refuse_defaults(self, fdef):
        for default in fdef.args.defaults + [d for d in fdef.args.kw_defaults if d is not None]:
            if any(isinstance(n, ast.Name) and n.id == "np" for n in ast.walk(default)):
                raise self._located(fdef, fdef.lineno, f"--backend array-api: the function default "
                                    f"{ast.unparse(default)} is NumPy's; pass the function at the call instead, "
                                    "or compile with --backend numpy")

    def _refuse_reserved(self):
        for name in _RESERVED:
            if name in self.names:
                node = next((n for n in ast.walk(self.user.tree) if _binds(n, name)), None)
                message = (f"--backend array-api: the name '{name}' is one the array-api backend writes into the "
                           "generated module; rename it")
                raise self.user.error(node, message) if node is not None else CompileError(message,
                                                                                         self.user.filename)
        if "math" in self.names and not any(s.names[0].name == "math" for s in self.tree.body
                                            if isinstance(s, ast.Import)):
            node = next((n for n in ast.walk(self.user.tree) if _binds(n, "math")), None)
            if node is not None:
                raise self.user.error(node, "--backend array-api: the name 'math' would hide the math module the "
                                            "array-api backend imports (math.prod for sizes); rename it")

    # --- where a refusal points -------------------------------------------------------

    def _refused(self, refusal, node, fdef):
        return self._located(fdef, node.lineno, f"--backend array-api: {refusal.message}", refusal.match,
                             refusal.derived and f"--backend array-api: {refusal.derived}")

    def _located(self, fdef, generated_line, message, match=None, derived=None):
        """A CompileError at the line of the user's file the generated line came from: the
        line its backward block cites (`# line 14: ...`), else the first place in the user's
        file that `match` accepts (the call or write it refuses), else the function's def."""
        cited = self._cited(generated_line, fdef)
        candidates = [n for n in ast.walk(self.user.tree) if hasattr(n, "lineno")]
        if cited is not None:
            candidates = [n for n in candidates if n.lineno == cited]
        if match is not None:
            hit = min((n for n in candidates if match(n, self.user)), key=_position, default=None)
            if hit is not None:
                return self.user.error(hit, message)
        message = derived or message  # no such call in the user's file: the derivative's own
        if cited is not None:
            text = self.user.line_text(cited) or ""
            return self.user.error(ast.Pass(lineno=cited, col_offset=len(text) - len(text.lstrip())), message)
        compiled = self.generated.get(fdef.name)
        user_def = self.user.functions.get(compiled.name) if compiled is not None else None
        return self.user.error(user_def, message) if user_def is not None else CompileError(message,
                                                                                           self.user.filename)

    def _user_constant_error(self, name):
        node = next((s for s in self.user.tree.body if isinstance(s, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)), None)
        message = (f"--backend array-api: the module-level array '{name}' is a NumPy array, and the generated code "
                   "takes every array's library from the arguments; pass it as a parameter, or compile with "
                   "--backend numpy")
        return self.user.error(node, message) if node is not None else CompileError(message, self.user.filename)

    def _user_name(self, fdef):
        return self.generated[fdef.name].name if fdef.name in self.generated else fdef.name



def _position(node):
    return node.lineno, node.col_offset


def _is_docstring(stmt):
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _is_list(value):
    if isinstance(value, (ast.List, ast.ListComp)):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        return _is_list(value.left) or _is_list(value.right)
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "list"


def _imports_numpy(stmt):
    return isinstance(stmt, ast.Import) and any(a.name == "numpy" for a in stmt.names)


def _imported(tree):
    """The module names the generated module imports (as it spells them), numpy aside."""
    names = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return names - {"np"}


def _identifiers(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
    return names


def _binds(node, name):
    if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
        return True
    if isinstance(node, ast.arg) and node.arg == name:
        return True
    return isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name

