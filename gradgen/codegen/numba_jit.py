"""Stage 7 (optional), jit: the generated NumPy module, made for numba.njit.

`gradgen compile --jit numba` writes the module the NumPy backend writes, with each function
decorated `@numba.njit(cache=False, boundscheck=True)` (every index checked, IndexError outside
the array, as NumPy raises) and the few spellings numba cannot compile respelled:

* a backward loop `for i in reversed(range(n))` runs over the explicit descending range
  `range(n - 1, -1, -1)` (numba has no `reversed`); a loop that stopped early,
  `reversed(range(n)[:iterations])`, over `range(iterations - 1, -1, -1)`; a module-level
  tuple backwards over `COEFFS[::-1]`;
* a name the forward pass binds before its loop as `x = None` (so that its stack can save
  the value the first iteration overwrites) starts at a zero of its own type, `0.0`, `0` or
  `False`: numba types a variable once, and a list of one type. The stacks themselves stay
  `[]`: numba types an empty list by what is appended to it;
* an adjoint reset to a bare `0.0` after it held an array restarts from zeros of its own
  value (`np.zeros_like(ds)[()]`), for the same reason.

The scalar code gradgen writes is otherwise what numba compiles as it is: numbers, `if`,
`for` over ranges and tuples, `while`, `math.*` and NumPy's functions of numbers, tuples.
Whatever else a module holds (arrays and the helpers that undo broadcasting, lists,
closures, Python objects, random draws) is refused, located at the line of the user's file
it came from: `--jit numba` covers scalar code. Like gradgen/codegen/array_api.py it works on the
generated text, so the comments stay where they were, and black formats each piece again.
"""

from __future__ import annotations

import ast
import re

from gradgen.codegen import emit, freshness, numba_along, numba_einsum, numba_index
from gradgen.codegen.numba_arrays import OVERLOADS, list_helper, list_names, overloads
from gradgen.codegen.numba_check import Checker, Refusal
from gradgen.codegen.numba_spell import (defaults, loops, placeholders, respellings, typed_placeholders, zero_resets,
                                         zero_starts)
from gradgen.codegen.rewrite import ModuleEdits
from gradgen.errors import CompileError
from gradgen.ir.nodes import Call

JITS = ("none", "numba")
NUMBA = "numba"
JIT_LINE = "Jit: numba (each function is compiled by numba.njit on its first call; needs numba)."
DECORATOR = "@numba.njit(cache=False, boundscheck=True)"  # (numba checks no index otherwise: one out of
# range read memory beside the array where NumPy raises IndexError; the check costs 0-2% on GradBench)
_RECORDED = re.compile(rb"# Jit: (?P<name>[\w-]+)")
TAIL = ("--jit numba compiles numbers, arrays, if/for/while and the NumPy functions numba has: compile this file "
        "without --jit")

def rewrite(compiled, jit):
    """The text of `compiled` (a gradgen.api.CompiledModule) for `jit` ("none": as it is)."""
    if jit == "none":
        return compiled.text
    if jit != NUMBA:
        raise CompileError(f"unknown jit '{jit}'; the choices are: {', '.join(JITS)}", compiled.filename)
    if compiled.backend != "numpy":
        raise CompileError(f"--jit numba compiles the NumPy backend's module, not --backend {compiled.backend}'s; "
                           "choose one of them (--jit none, or --backend numpy)", compiled.filename)
    head, body = freshness.split_header(compiled.text)
    body = _Module(body, compiled).text()
    return "".join(f"{line}\n" for line in freshness.respelled_header(head, body, "--jit numba", JIT_LINE)) + body


def recorded(path):
    """The jit the module at `path` was generated with: "numba" when its header says so,
    "none" for any other module gradgen wrote, None when there is none to read."""
    return freshness.recorded_option(path, _RECORDED, "none")


class _Module(ModuleEdits):
    """The module body, with its functions decorated and respelled for numba."""

    def __init__(self, body, compiled):
        super().__init__(body, compiled)
        self.defs = [s for s in self.tree.body if isinstance(s, ast.FunctionDef)]
        self.constants = _constants(self.tree)
        self.names = {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)}
        self.users = {}  # generated function -> the user's function it came from
        self.kinds = {}  # generated function -> the kind --emit asked for
        self.adjoint_of = {}  # generated gradient -> {adjoint: its variable} (gradgen.transform.reverse.driver)
        self.arrays = {}  # generated gradient -> the names that may hold arrays
        self.siblings = {}  # a gradient function -> its value-and-gradient function
        for f in compiled.functions:
            for name, kind in [(f.grad_name, "grad"), (f.value_and_grad_name, "grad")] + [(m.name, m.kind)
                                                                                         for m in f.made]:
                if name:
                    self.users[name], self.kinds[name] = f.name, kind
            for name in (f.grad_name, f.value_and_grad_name):
                if name and f.reversed is not None:
                    self.adjoint_of[name] = f.reversed.adjoint_of
                    self.arrays[name] = f.reversed.arrays
            if f.grad_name and f.value_and_grad_name:
                self.siblings[f.grad_name] = f.value_and_grad_name

    def text(self):
        self._refuse_reserved()
        for fdef in self.defs:
            if self.kinds.get(fdef.name) in ("hessian", "jacobian"):
                kind = self.kinds[fdef.name]
                raise self._refused(Refusal(f"--emit {kind} writes an array ({fdef.name})", fdef, advice=f"leave "
                                            f"{kind} out of --emit, or compile this file without --jit"), fdef)
        # the module's helpers first, to know which of them numba cannot compile (gradgen's for
        # arrays); then value-and-gradient functions: their forward pass holds the user's own
        # code, so a refusal names what the user wrote before anything its derivative makes
        plain = self._plain_helpers()
        helpers = [d for d in self.defs if d.name not in self.users and d.name not in plain]
        refused = {}
        for fdef in helpers:
            try:
                self._checker(set()).function(fdef)
            except Refusal as refusal:
                refused[fdef.name] = (refusal, fdef)
        for fdef in sorted(self.defs, key=lambda d: not d.name.endswith("value_and_grad")):
            if fdef.name not in refused and fdef.name not in plain:
                self._function(fdef, set(refused))
        if refused:  # a helper none of the functions calls
            raise self._refused(*next(iter(refused.values())))
        self._docstring()
        self._import()
        self._overloads(plain)
        self._along(plain)
        return "\n\n".join(self._pieces())

    # --- the module's parts -----------------------------------------------------------

    def _plain_helpers(self):
        """gradgen's helpers that numba calls through their typed overloads
        (gradgen/codegen/numba_arrays.py), and the helpers only they call: left as Python."""
        calls = {d.name: {ast.unparse(n.func) for n in ast.walk(d) if isinstance(n, ast.Call)} for d in self.defs}
        plain = {d.name for d in self.defs if d.name in OVERLOADS and d.name not in self.users}
        plain |= {d.name for d in self.defs if d.name == "einsum_matmul"}  # (called as loop nests: numba_einsum)
        for d in self.defs:
            callers = {name for name, called in calls.items() if d.name in called and name != d.name}
            if d.name in emit.HELPERS and d.name not in self.users and callers and callers <= plain:
                plain.add(d.name)
        return plain

    def _overloads(self, plain):
        """The typed overloads of the plain helpers, after the last of them."""
        texts = overloads(plain)
        if texts:
            last = max((d for d in self.defs if d.name in plain), key=lambda d: d.end_lineno)
            end = self._span(last)[1]
            self.edits.append((end, end, "\n\n\n" + "\n\n".join(texts).rstrip("\n")))

    def _along(self, plain):
        """The helpers numba_along and numba_einsum write for the calls numba lacks that the
        functions make (a reduction along an axis, np.add.at, an einsum), after the last
        function; refused where the user's file has a name one of them takes."""
        calls = [n for d in self.defs for n in ast.walk(d) if isinstance(n, ast.Call)]
        used = {numba_along.helper_name(ast.unparse(n.func)) for n in calls if numba_along.helper_name(ast.unparse(n.func))
                and numba_along.one_axis(n, {k.arg: k.value for k in n.keywords})}
        used |= {"add_at" for n in calls if ast.unparse(n.func) == "np.add.at"}
        used |= {"add_at" for d in self.defs if d.name in ("scatter", "index_add")}  # (their overloads: add_at)
        used |= {"lines_along" for d in self.defs if d.name == "prod_grad"}  # (its overload: lines along the axis)
        used |= {"gather_at" for d in self.defs if any(numba_index.gathers_by_arrays(n, self._arrays(d))
                                                        for n in ast.walk(d))}
        used |= {list_helper(n, list_names(d)) for d in self.defs for n in ast.walk(d) if isinstance(n, ast.Call)
                 and list_helper(n, list_names(d))}
        jitted = [d for d in self.defs if d.name not in plain]
        if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult) for d in jitted for n in ast.walk(d)) \
                or {"matmul_grad_a", "matmul_grad_b"} & plain:  # (numba's `@` of a stack of matrices: an overload)
            used.add("matmul_stacked")
            if "operator" not in self.names:
                self._import("operator")
        specs = {numba_einsum.subscripts(n) for n in calls} - {None}
        used |= {numba_einsum.helper_name(spec) for spec in specs}
        taken = sorted((used | ({"index_within"} if {"add_at", "gather_at"} & used else set())) & self.names)
        if taken:
            node = next((n for n in ast.walk(self.user.tree) if _binds(n, taken[0])), None)
            message = (f"--jit numba: the name '{taken[0]}' would hide the helper of that name the generated code "
                       "defines; rename it")
            raise self.user.error(node, message) if node is not None else CompileError(message, self.user.filename)
        texts = numba_along.helpers(used) + numba_index.helpers(used) + numba_einsum.helpers(specs)
        if texts:
            end = self._span(self.defs[-1])[1]
            self.edits.append((end, end, "\n\n\n" + "\n\n".join(texts).rstrip("\n")))

    def _arrays(self, fdef):
        """The names that may hold arrays in `fdef` (gradgen.analysis.arrays): a gradient's own,
        another function's those of the gradient of the user's function it came from (its
        forward values have the same names), a helper's none."""
        if fdef.name in self.arrays:
            return self.arrays[fdef.name]
        user = self.users.get(fdef.name)
        return next((self.arrays[name] for name, of in self.users.items() if of == user and name in self.arrays),
                    frozenset())

    def _checker(self, refused):
        return Checker(self.constants, {d.name for d in self.defs}, refused)

    def _function(self, fdef, refused):
        try:
            self._checker(refused).function(fdef)
        except Refusal as refusal:
            raise self._refused(refusal, fdef) from None
        start = self.starts[(fdef.decorator_list[0] if fdef.decorator_list else fdef).lineno - 1]
        self.edits.append((start, start, f"{DECORATOR}\n"))
        edits = loops(fdef, self.constants, set(self.names)) + placeholders(fdef, self.constants, self.arrays.get(
            fdef.name, frozenset())) + respellings(fdef, self._arrays(fdef))
        sibling = next((d for d in self.defs if d.name == self.siblings.get(fdef.name)), None)
        adjoints = self.adjoint_of.get(fdef.name)
        edits += zero_resets(fdef, adjoints) + zero_starts(fdef, adjoints, sibling)
        edits += typed_placeholders(fdef) + defaults(fdef)
        for node, text in edits:
            self._edit(node, text)

    def _docstring(self):
        self._docstring_ends("; each function is compiled by numba.njit on its first call.")

    def _import(self, module="numba"):
        """`import <module>` among the imports, in their sorted order."""
        imports = [s for s in self.tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        after = [s for s in imports if isinstance(s, ast.Import) and s.names[0].name < module]
        if after:
            end = self._span(after[-1])[1]
            self.edits.append((end, end, f"\nimport {module}"))
        elif imports:
            start = self._span(imports[0])[0]
            self.edits.append((start, start, f"import {module}\n"))
        else:
            end = self._span(self.tree.body[0])[1]
            self.edits.append((end, end, f"\n\nimport {module}"))

    def _pieces(self):
        """The module, formatted a top-level piece at a time (as gradgen/codegen/emit.py does): its
        docstring, imports and constants, then each function."""
        body = self._apply()
        tree = ast.parse(body)
        data = body.encode("utf-8")
        starts = [0]
        for line in data.split(b"\n"):
            starts.append(starts[-1] + len(line) + 1)
        functions = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
        first = _first_line(functions[0]) if functions else None
        head_end = starts[first - 1] if first is not None else len(data)
        pieces = [emit.format_source(data[:head_end].decode("utf-8").rstrip("\n") + "\n")]
        for f in functions:
            start, end = starts[_first_line(f) - 1], starts[f.end_lineno]
            pieces.append(emit.format_source(data[start:end].decode("utf-8")))
        return pieces

    def _refuse_reserved(self):
        if "numba" in self.names:
            node = next((n for n in ast.walk(self.user.tree) if _binds(n, "numba")), None)
            message = "--jit numba: the name 'numba' would hide the numba module the generated code imports; rename it"
            raise self.user.error(node, message) if node is not None else CompileError(message, self.user.filename)

    # --- where a refusal points -------------------------------------------------------

    def _refused(self, refusal, fdef):
        """A CompileError at the user's code a refusal came from: the first place its `match`
        accepts on the line the generated line cites (`# line 14: ...`), else in the user's
        function; else the cited line; else the first place in the file; else the user's def."""
        message = f"--jit numba: {refusal.what}; {refusal.advice or TAIL}"
        user_def = self.user.functions.get(self.users.get(fdef.name, fdef.name))
        cited = None if isinstance(refusal.node, ast.arg) else self._cited(refusal.node.lineno, fdef)
        if refusal.match is not None:
            everywhere = [n for n in ast.walk(self.user.tree) if hasattr(n, "lineno") and refusal.match(n)]
            own = [n for n in ast.walk(user_def) if refusal.match(n)] if user_def is not None else []
            # (elsewhere in the file only where no line is cited: lstm's `list(...)` is the gradient
            # of its np.stack, not the jax version's list(hidden) further down)
            hits = [n for n in everywhere if n.lineno == cited] or own or ([] if cited is not None else everywhere)
            if hits:
                return self.user.error(min(hits, key=_position), message)
        if cited is not None:
            text = self.user.line_text(cited) or ""
            return self.user.error(ast.Pass(lineno=cited, col_offset=len(text) - len(text.lstrip())), message)
        found = None if isinstance(refusal.node, ast.arg) else self._forward_source(refusal.node, fdef)
        if found is not None:  # (a forward-pass statement: no `# line N` comment cites it)
            return self.user.error(ast.Pass(lineno=found[0], col_offset=found[1] - 1),
                                   self._as_written(message, refusal.node, found))
        return self.user.error(user_def, message) if user_def is not None else CompileError(message,
                                                                                           self.user.filename)

    def _as_written(self, message, node, found):
        """The message naming the call as the user wrote it there (`np.array`), where gradgen
        spells it otherwise (`np.stack`)."""
        call = next((n for n in ast.walk(self.user.tree) if isinstance(n, ast.Call)
                     and (n.lineno, n.col_offset + 1) == tuple(found)), None)
        if call is None or not isinstance(node, ast.Call):
            return message
        theirs, ours = ast.unparse(call.func), ast.unparse(node.func)
        return message.replace(ours, f"{theirs} (written {ours} in the generated code)", 1) if theirs != ours \
            else message

    def _forward_source(self, node, fdef):
        """(line, col) of the user's code behind `node` of a forward-pass statement, from the
        lowered IR (whose calls know where the user wrote them): the call of the refused
        function on the line that assigns the statement's target, else that line's first
        call, else the line; for a name gradgen made (`stack_a = np.stack(...)`), the
        function's first call of the refused function. None when nothing is found."""
        user = next((f for f in self.compiled.functions if f.name == self.users.get(fdef.name)), None)
        stmt = _innermost(fdef, node)
        if user is None or stmt is None:
            return None
        targets = [t.id for t in (stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)])
                   if isinstance(t, ast.Name)]
        statements = [s for s in _ir_statements(user.ir.body) if getattr(s, "expr", None) is not None
                      and getattr(s, "line", None) is not None]
        refused = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None
        assigned = next((s for s in statements if targets and getattr(s, "target", None) == targets[0]), None)
        if assigned is not None:
            calls = [c for c in _ir_calls(assigned.expr) if c.loc is not None and c.loc[0] == assigned.line]
            chosen = next((c for c in calls if c.prim == refused), calls[0] if calls else None)
            return chosen.loc if chosen is not None else (assigned.line, assigned.col)
        same = (c for s in statements for c in _ir_calls(s.expr) if c.loc is not None and c.prim == refused)
        return next((c.loc for c in same), None) if refused is not None else None

    # --- text positions -----------------------------------------------------------------

    def _edit(self, node, text):
        if isinstance(node, tuple) and node[0] == "cut":  # ("cut", a parameter, its default): `=<default>` goes
            self.edits.append((self._span(node[1])[1], self._span(node[2])[1], text))
        elif isinstance(node, tuple):  # ("insert", a statement): a line of its own before it
            start = self.starts[node[1].lineno - 1]
            self.edits.append((start, start, f"{' ' * node[1].col_offset}{text}\n"))
        else:
            super()._edit(node, text)


def _constants(tree):
    """The module-level constants of the generated module: name -> value."""
    found = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                found[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except ValueError:
                found[stmt.targets[0].id] = None  # not a literal: an array, say
    return found


def _innermost(fdef, node):
    """The innermost statement of `fdef` that holds `node` (by position)."""
    where = (node.lineno, node.col_offset)
    found = None
    for stmt in ast.walk(fdef):
        if isinstance(stmt, ast.stmt) and stmt is not fdef and (stmt.lineno, stmt.col_offset) <= where \
                <= (stmt.end_lineno, stmt.end_col_offset):
            if found is None or (stmt.lineno, stmt.col_offset) >= (found.lineno, found.col_offset):
                found = stmt
    return found


def _ir_statements(body):
    """The IR statements of a body, those of loops and branches too, in order."""
    for stmt in body:
        yield stmt
        for part in ("body", "orelse"):
            yield from _ir_statements(getattr(stmt, part, None) or [])


def _ir_calls(expr):
    """The IR calls of an expression, outermost first."""
    if isinstance(expr, Call):
        yield expr
    for child in getattr(expr, "args", ()) if isinstance(expr, Call) else \
            (getattr(expr, part, None) for part in ("test", "body", "orelse")):
        if child is not None and not isinstance(child, (str, int, float)):
            yield from _ir_calls(child)


def _first_line(fdef):
    return (fdef.decorator_list[0] if fdef.decorator_list else fdef).lineno


def _position(node):
    return node.lineno, node.col_offset


def _binds(node, name):
    if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
        return True
    if isinstance(node, ast.arg) and node.arg == name:
        return True
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    return isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name

