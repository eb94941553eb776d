"""Code no derivative flows through, run as written.

Most of a real loss is not mathematics gradgen must understand: a buffer from `np.empty`,
`dtype=bool`, a `None` default and its `is None` test, `[0] * (n + 1)`, a function of a
library gradgen has never heard of applied to data. Where the lowering meets an expression
outside its subset, it keeps the expression as the source wrote it, in generated names (a
"verbatim" value, spelled and emitted as a random draw is), and goes on. Whether that was
right is decided once the whole function is lowered, by the activity analysis
(gradgen.analysis.activity): a verbatim value that a differentiated parameter reaches and
that the result depends on is an error there, located at the expression and naming the
call, the value and the parameter ("no derivative rule for 'np.cumprod' on the value of 'w'
(which depends on 'w')"). Everything else runs as written, computed once in the forward pass
and read back, never recomputed, by the backward pass.

A call may also change its arguments in place (`x.sort()`, `np.copyto(a, b)`, a function of
another library): `mutated` names what it may change, so that the analysis refuses where the
gradient still reads the old value.
"""

from __future__ import annotations

import ast
import builtins

from gradgen.errors import Final, NoRule
from gradgen.frontend import effects
from gradgen.frontend.scopes import _lookup
from gradgen.frontend.structured import SliceStep, TreeRef
from gradgen.ir.nodes import Call, Var
from gradgen.rules.table import primitive

# An expression kept as written (params: text=, modules=, what=, why=, mutated=): no rule, no
# derivative; the activity analysis lets a derivative flow into it only to refuse it there.
primitive("verbatim", None, kind="opaque", min_args=0)

def final(error):
    """`error` (a located CompileError) as one the lowering must not keep as written."""
    return _as(Final, error)


def no_rule(error):
    """`error` (a located CompileError) as the lowering's "no rule for this call"."""
    return _as(NoRule, error)


def _as(kind, error):
    out = kind(*error.args)
    out.__dict__.update(error.__dict__)
    return out


# The expressions worth keeping as written (a name or a lambda that failed is an error as it is).
_KEPT = (ast.Call, ast.Attribute, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.JoinedStr, ast.Subscript,
         ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.IfExp)

# Library functions that change an argument in place (and any call passed out= or inplace=).
_MUTATING_FUNCTIONS = {"numpy.copyto", "numpy.put", "numpy.place", "numpy.putmask", "numpy.fill_diagonal",
                       "numpy.put_along_axis", "numpy.random.shuffle"}
_MUTATING_KEYWORDS = {"out", "inplace", "overwrite_a", "overwrite_b", "overwrite_x"}
# Methods that change their object (of arrays, lists, dicts and sets).
_MUTATING_METHODS = {"sort", "fill", "resize", "put", "itemset", "partition", "setflags", "append", "extend",
                     "insert", "pop", "remove", "clear", "update", "setdefault", "reverse", "popitem", "add",
                     "discard", "shuffle", "at"}
# Libraries whose functions leave their arguments alone (but for the ones above).
_PURE_LIBRARIES = ("numpy.", "math.", "scipy.", "builtins.")
_PURE_BUILTINS = set(dir(builtins)) - {
    "exec", "eval", "setattr", "delattr", "next", "open", "input", "__import__"}


def keepable(node) -> bool:
    """Whether a failed `node` may be kept as written (a draw from Python's `random` may not:
    the generated code and `check` could not draw the same numbers)."""
    if not isinstance(node, _KEPT):
        return False
    return not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and isinstance(n.func.value, ast.Name) and n.func.value.id == "random" for n in ast.walk(node))


def as_written(lowerer, scope, node, refusal):
    """`node` kept as the source wrote it: a verbatim Call reading the variables it uses, or
    `refusal` (the lowering's own error) raised where it cannot be (a helper of this file,
    a part of a structured parameter it cannot name, a lambda)."""
    if not keepable(node):
        raise refusal
    m = lowerer.m
    try:
        renamed = effects.rename(m, node, lambda n: _lookup(scope, n), m.error, "an expression kept as written")
    except Final:  # what a name holds there (fuzz soak seed 2017 #1578: "'S' was bound to parts of 'data' ...")
        raise
    except Exception:  # noqa: BLE001 - whatever else the renaming says, the lowering's own error says it better
        raise refusal from None
    params = (("text", renamed.text), ("modules", tuple(sorted(renamed.modules))),
              ("names", tuple(v.name for v in renamed.reads)), ("what", _what(m, node)),
              ("measured", _measured_only(node, scope)),
              ("refusal", refusal),
              ("mutated", tuple(sorted({v.name for v in mutated(m, node, scope)}))))
    return Call("verbatim", renamed.reads, "numpy", loc=(node.lineno, node.col_offset + 1), params=params)


def base_name(node):
    """The variable a kept expression inside a larger one goes into: `cumprod` for
    `np.cumprod(c)`, `value` for anything else."""
    func = node.func if isinstance(node, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "value")
    return name if name.isidentifier() and not name.startswith("_") else "value"


_FACTS = {"shape", "dtype", "ndim", "size"}
_MEASURES = {"len", "shape", "ndim", "size"}  # len(x), np.shape(x), ...
_LIKE = {"empty_like", "zeros_like", "ones_like", "full_like"}  # np.empty_like(y, ...): y's shape and dtype


def _measured_only(node, scope):
    """The variables `node` reads only for their shape or dtype (`X.shape[0]`, `dtype=w.dtype`,
    `len(xs)`, `np.shape(np.diff(x))`): no derivative flows from them, whatever the expression
    does with the answer."""
    measured, other = set(), set()

    def visit(n, inside):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            (measured if inside else other).add(n.id)
            return
        fact = isinstance(n, ast.Attribute) and n.attr in _FACTS
        called = getattr(n.func, "id", None) or getattr(n.func, "attr", None) if isinstance(n, ast.Call) else None
        measure = isinstance(n, ast.Call) and n.args and (
            called in _MEASURES and len(n.args) == 1 and not n.keywords or called in _LIKE)
        for child in ast.iter_child_nodes(n):
            visit(child, inside or fact or (measure and child is n.args[0]))

    visit(node, False)
    read = {v for name in other for v in _variables(_lookup(scope, name))}
    return tuple(sorted({v for name in measured - other for v in _variables(_lookup(scope, name))} - read))


def _variable(value):
    """The variable a name's value is read from: itself, or the leaf of a structured part."""
    if isinstance(value, TreeRef):
        value = value.leaf
    return value if isinstance(value, Var) else None


def _variables(value):
    """The variables a name's value is read from: itself, the leaf of a structured part, or
    the parameter and the index variables of a part or a run of parts read by its path
    (`y = x[1:]`: np.shape(y) measures x, soak 48003 #863)."""
    if isinstance(value, TreeRef):
        if value.leaf is None and value.path and isinstance(value.path[-1], SliceStep):  # (a record's `.size`
            steps = [p for step in value.path  # may be its own property: only a run of parts is measured)
                     for p in ((step.lower, step.upper, step.step) if isinstance(step, SliceStep) else (step,))]
            return [v.name for v in [value.root, *steps] if isinstance(v, Var)]
        value = value.leaf
    return [value.name] if isinstance(value, Var) else []


def _what(m, node):
    """The name the error gives the kept expression: the function it calls, else its text."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and m.qualified(node.func) is None:
            return f".{node.func.attr}()"
        return ast.unparse(node.func)
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 40 else text[:37] + "..."


def keepable_statement(m, node) -> bool:
    """A call standing as a statement that may be kept as written (not np.add.at, whose
    message says what to write instead)."""
    return isinstance(node, ast.Call) and keepable(node) and m.qualified(node.func) != "numpy.add.at"


def mutated(m, node, scope):
    """The variables a call in `node` may change in place: the object of a mutating method,
    every array passed to a library's function that writes (or to a function gradgen knows
    nothing of), any argument beside out= or inplace=."""
    out = []
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        func = call.func
        qualified = m.qualified(func)
        if isinstance(func, ast.Attribute) and qualified is None:  # a method: x.sort()
            if func.attr in _MUTATING_METHODS:
                out += _names(func.value, scope)
            continue
        writes = any(k.arg in _MUTATING_KEYWORDS for k in call.keywords)
        known = qualified is not None and (qualified.startswith(_PURE_LIBRARIES) or qualified in _PURE_BUILTINS)
        if qualified is None and isinstance(func, ast.Name) and func.id in _PURE_BUILTINS:
            known = True
        if writes or not known or qualified in _MUTATING_FUNCTIONS:
            for arg in list(call.args) + [k.value for k in call.keywords]:
                out += _names(arg, scope)
    return out


def _names(node, scope):
    """The variable `node` is, if it is a bare name of one (a copy `x.copy()` is not)."""
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Name):
        value = _variable(_lookup(scope, node.id))
        return [value] if value is not None else []
    return []
