"""Analysis: which values may be NumPy arrays.

The backward pass must undo broadcasting: when `x * w` multiplies an array by a scalar,
`dL_dw` is a sum, not an array. Shapes are only known when the code runs, so the compiler
asks the weaker, static question "may this be an array?" and writes `np.sum(...)` or the
generated `unbroadcast(...)` helper only where the answer is yes. A purely scalar function
(numbers for defaults, parameters annotated `float`, or a file that never imports numpy)
gets none of it.
"""

from __future__ import annotations

from gradgen.ir import Assign, Call, Cond, Const, For, If, Var, While, expressions, walk
from gradgen.primitives import TABLE

# primitives whose result is a plain number whatever their input
_SCALAR_RESULTS = {"len", "shape", "ndim", "size", "max", "min", "norm", "float", "int", "round", "sum_list",
                   "tree_len", "tree_keys", "range_slice",
                   "inner"} | {name for name, p in TABLE.items() if p.result == "number"}
# reductions: a number unless axis= or keepdims= keep axes (the library's are marked in the table)
_REDUCTIONS = {"sum", "mean", "prod", "amax", "amin"} | {name for name, p in TABLE.items() if p.result == "reduction"}
# densities whose last axis is one point's coordinates: a number for one point, one per row for several
_POINT_DENSITIES = {"mvn_logpdf"}
_ARRAY_RESULTS = {"zeros", "ones", "eye", "arange", "linspace", "full", "stack", "concatenate", "outer",
                  "expand_dims", "reshape", "broadcast_to", "cumsum"}  # arrays even of a number


def array_values(fn, module) -> set:
    """Names (parameters, constants, SSA values) that may hold arrays when `fn` runs (a
    function whose result may be an array has no gradient, so its result is a number)."""
    arrays = _may_be_arrays(fn, module)
    if isinstance(fn.result, Var):  # the function returns one number: that value is no array
        arrays.discard(fn.result.name)
    return arrays


def result_is_array(fn, module) -> bool:
    """Whether `fn`'s own code shows that the value it returns is an array: a value it
    reduces, multiplies as a matrix, slices or measures (`np.mean(x)`, `x @ W`, `x[1:]`,
    `len(x)`) is one, and so is what it computes elementwise from one. Such a function (a
    centring, a log-softmax, a layer) has no gradient of its own: a gradient needs one number.
    A parameter it only indexes with integers (`x[0]`) gives numbers."""
    evident = {c for c, v in module.constants.items() if _is_array_constant(v)} | _evident(fn)
    size = -1
    while size != len(evident):
        size = len(evident)
        _flow(fn.body, evident, _rows_of_arrays)
    return _rows_of_arrays(fn.result, evident)


def _evident(fn):
    """Names `fn` uses as arrays: reduced, measured, multiplied as matrices or indexed."""
    evident, lists = set(), set()
    for stmt in walk(fn.body):
        for expr in expressions(stmt):
            evident |= _evidence(expr)
        if isinstance(stmt, Assign) and isinstance(stmt.expr, Call) and stmt.expr.prim in ("list", "append"):
            lists.add(stmt.target)  # (`len(hs)` of a list says nothing of its elements)
    return (evident | _evidence(fn.result)) - lists


# Calls whose (first) argument is an array of at least one axis in any program that means
# them: nobody reduces, measures, multiplies as matrices or indexes a number (`.T` and
# `reshape` apply to the 0-d arrays np.where makes of numbers too: no evidence).
_NEEDS_ARRAY = {"sum", "mean", "prod", "amax", "amin", "cumsum", "norm", "matmul", "outer", "inner", "len"}


def _evidence(expr):
    """Names `expr` uses as arrays: reduced, transposed, measured, sliced or indexed."""
    found, stack = set(), [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Call):
            if e.prim in _NEEDS_ARRAY or e.prim in ("getitem", "setitem"):
                found |= {a.name for a in map(_through_unary, e.args[:1 if e.prim != "matmul" else 2])
                          if isinstance(a, Var)}
            stack.extend(e.args)
        elif isinstance(e, Cond):
            stack.extend((e.test, e.body, e.orelse))
    return found


def _through_unary(e):
    """`np.exp(z)` is an array exactly when z is: the value an elementwise function of one
    argument is applied to."""
    while isinstance(e, Call) and len(e.args) == 1 and TABLE[e.prim].elementwise:
        e = e.args[0]
    return e


def _rows_of_arrays(expr, arrays):
    """may_be_array, except where a value of arrays may still be a number: indexing with
    integers only (`x[0]`, `x[i, j]`), a matrix product (`u @ v` of vectors), and a
    reduction along an axis (`np.prod(x, axis=0)` of a vector) unless it keeps its dims."""
    if isinstance(expr, Call) and expr.prim == "getitem" and all(k == "i" for k in dict(expr.params)["index"]):
        return False
    if isinstance(expr, Call) and expr.prim in ("matmul", "dot", "squeeze"):  # squeeze: of a (1, 1) array, a number
        return False
    if isinstance(expr, Call) and expr.prim in _REDUCTIONS:  # along an axis of a vector: a number
        return bool(dict(expr.params).get("keepdims"))
    if isinstance(expr, Call) and expr.prim in _POINT_DENSITIES:  # of one point (a vector): a number
        return False
    if isinstance(expr, Call) and not (expr.prim in _REDUCTIONS or expr.prim in _ARRAY_RESULTS
                                       or expr.prim in _SCALAR_RESULTS):
        return may_be_array(expr, arrays) and (not expr.args or any(_rows_of_arrays(a, arrays) for a in expr.args))
    if isinstance(expr, Cond):
        return _rows_of_arrays(expr.body, arrays) or _rows_of_arrays(expr.orelse, arrays)
    return may_be_array(expr, arrays)


def _may_be_arrays(fn, module):
    arrays = arrays_on_entry(fn, module) | _evident(fn)  # `state[0]`, `len(xs)`: arrays, numpy imported or not
    size = -1
    while size != len(arrays):  # loops carry arrays from one iteration to the next
        size = len(arrays)
        _flow(fn.body, arrays)
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


def _flow(stmts, arrays, may=None):
    may = may or may_be_array
    for stmt in stmts:
        if isinstance(stmt, Assign):
            if not stmt.number and may(stmt.expr, arrays):  # `u: float = ...` is your word it is a number
                arrays.add(stmt.target)
        elif isinstance(stmt, If):
            _flow(stmt.body, arrays, may)
            _flow(stmt.orelse, arrays, may)
        elif isinstance(stmt, (For, While)):
            _flow(stmt.body, arrays, may)


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
