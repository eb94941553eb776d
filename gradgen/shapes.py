"""Analysis: which values may be NumPy arrays.

The backward pass must undo broadcasting: when `x * w` multiplies an array by a scalar,
`dL_dw` is a sum, not an array. Shapes are only known when the code runs, so the compiler
asks the weaker, static question "may this be an array?" and writes `np.sum(...)` or the
generated `unbroadcast(...)` helper only where the answer is yes. A purely scalar function
(numbers for defaults, parameters annotated `float`, or a file that never imports numpy)
gets none of it.
"""

from __future__ import annotations

from gradgen.ir import Assign, Call, Cond, Const, For, If, Var, While
from gradgen.primitives import TABLE

# primitives whose result is a plain number whatever their input
_SCALAR_RESULTS = {"len", "shape", "ndim", "size", "max", "min", "norm", "float", "int", "round", "sum_list",
                   "inner"}
_REDUCTIONS = {"sum", "mean", "prod", "amax", "amin"}
_ARRAY_RESULTS = {"zeros", "ones", "eye", "arange", "linspace", "full", "stack", "concatenate", "outer",
                  "expand_dims", "reshape", "broadcast_to", "cumsum"}  # arrays even of a number


def array_values(fn, module) -> set:
    """Names (parameters, constants, SSA values) that may hold arrays when `fn` runs."""
    arrays = arrays_on_entry(fn, module)
    size = -1
    while size != len(arrays):  # loops carry arrays from one iteration to the next
        size = len(arrays)
        _flow(fn.body, arrays)
    if isinstance(fn.result, Var):  # the function returns one number: that value is no array
        arrays.discard(fn.result.name)
    return arrays


def arrays_on_entry(fn, module) -> set:
    """The parameters and module constants that may be arrays when `fn` is called: array
    constants, and parameters with neither a number default nor a `float`/`int` annotation
    (in a file that imports numpy; keyword-only data even without)."""
    uses_numpy = any(q.split(".")[0] == "numpy" for q in module.imports.values())
    arrays = {c for c, v in module.constants.items() if _is_array_constant(v)}
    for p in fn.params:
        if not p.number and (p.keyword_only or (uses_numpy and not p.has_default)):
            arrays.add(p.name)
    return arrays


def _is_array_constant(value):
    return hasattr(value, "shape")


def _flow(stmts, arrays):
    for stmt in stmts:
        if isinstance(stmt, Assign):
            if may_be_array(stmt.expr, arrays):
                arrays.add(stmt.target)
        elif isinstance(stmt, If):
            _flow(stmt.body, arrays)
            _flow(stmt.orelse, arrays)
        elif isinstance(stmt, (For, While)):
            if isinstance(stmt, For) and isinstance(stmt.iter, Call) and stmt.iter.prim == "iterate" \
                    and may_be_array(stmt.iter.args[0], arrays):
                arrays.add(stmt.target)  # a row of an array
            _flow(stmt.body, arrays)


def may_be_array(expr, arrays) -> bool:
    if isinstance(expr, Var):
        return expr.name in arrays
    if isinstance(expr, Const):
        return False
    if isinstance(expr, Cond):
        return may_be_array(expr.body, arrays) or may_be_array(expr.orelse, arrays)
    if not isinstance(expr, Call):
        return False
    if expr.ns == "math" or expr.prim in _SCALAR_RESULTS or TABLE[expr.prim].kind == "integer":
        return False
    if expr.prim in _REDUCTIONS:
        params = dict(expr.params)
        kept = params.get("axis") is not None or params.get("keepdims")
        return bool(kept) and may_be_array(expr.args[0], arrays) or bool(params.get("keepdims"))
    if expr.prim in _ARRAY_RESULTS:
        return True
    return any(may_be_array(a, arrays) for a in expr.args)
