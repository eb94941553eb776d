"""Analysis: which values may be NumPy arrays.

The backward pass must undo broadcasting: when `x * w` multiplies an array by a scalar,
`dL_dw` is a sum, not an array. Shapes are only known when the code runs, so the compiler
asks the weaker, static question "may this be an array?" and writes `np.sum(...)` or the
generated `unbroadcast(...)` helper only where the answer is yes. A purely scalar function
(numbers for defaults, parameters annotated `float`, or a file that never imports numpy)
gets none of it.
"""

from __future__ import annotations

from gradgen.ir.nodes import Assign, Call, Cond, Const, For, If, Var, While, expressions, subexpressions, walk
from gradgen.rules.lists import list_names
from gradgen.rules.table import TABLE

# primitives whose result is a plain number whatever their input
_SCALAR_RESULTS = {"len", "shape", "ndim", "size", "max", "min", "float", "int", "round", "sum_list",
                   "tree_len", "tree_keys", "range_slice"} | {name for name, p in TABLE.items() if p.result == "number"}
# reductions: a number unless axis= or keepdims= keep axes (the library's are marked in the table)
_REDUCTIONS = {"sum", "mean", "prod", "amax", "amin"} | {name for name, p in TABLE.items() if p.result == "reduction"}
# densities whose last axis is one point's coordinates: a number for one point, one per row for several
_POINT_DENSITIES = {"mvn_logpdf"}
# arrays even of numbers: np.array([np.sum(x) for x in X]) is a vector, never one number
_ARRAY_RESULTS = {"zeros", "ones", "eye", "arange", "linspace", "full", "stack", "concatenate", "outer",
                  "expand_dims", "reshape", "broadcast_to", "cumsum", "cumprod", "stack_list", "array_list",
                  "concatenate_list", "vstack_list", "hstack_list"}
# shaped like one of their arguments (its position): the helpers of a gradient differentiated
# again (gradgen.frontend.nested), `unbroadcast(g, like)` and `sum_to(v, a, b)`
_SHAPED_LIKE = {"unbroadcast_twin": 1, "sum_to": 2}


def array_values(fn, module, result_may_be_array=False, mutable=False, defaults_numbers=False) -> set:
    """Names (parameters, constants, SSA values) that may hold arrays when `fn` runs (a
    function with a gradient returns one number, so its result is a number; a vjp's may
    be an array). `mutable`: the names that may hold an array object, which an in-place
    update changes: a value the code shows is a number (see evident_numbers) may still be
    a 0-d array, so only annotations and defaults say it is not one."""
    arrays = _may_be_arrays(fn, module, not result_may_be_array, infer=not mutable, defaults_numbers=defaults_numbers)
    if isinstance(fn.result, Var) and not result_may_be_array:  # one number: that value is no array
        arrays.discard(fn.result.name)
    return arrays


def result_is_array(fn, module) -> bool:
    """Whether `fn`'s own code shows that the value it returns is an array: a value it
    reduces, multiplies as a matrix, slices or measures (`np.mean(x)`, `x @ W`, `x[1:]`,
    `len(x)`) is one, and so is what it computes elementwise from one. Such a function (a
    centring, a log-softmax, a layer) has no gradient of its own: a gradient needs one number.
    A parameter it only indexes with integers (`x[0]`) gives numbers."""
    evident = _array_constants(fn, module) | _evident(fn)
    size = -1
    while size != len(evident):
        size = len(evident)
        _flow(fn.body, evident, _rows_of_arrays)
    return _rows_of_arrays(fn.result, evident)


def _evident(fn):
    """Names `fn` uses as arrays: reduced, measured, multiplied as matrices or indexed."""
    evident = set()
    for stmt in walk(fn.body):
        for expr in expressions(stmt):
            evident |= _evidence(expr)
    return (evident | _evidence(fn.result)) - list_names(fn.body)  # (`len(hs)` of a list says nothing of its elements)


# Calls whose (first) argument is an array of at least one axis in any program that means
# them: nobody reduces, measures, multiplies as matrices or indexes a number (`.T` and
# `reshape` apply to the 0-d arrays np.where makes of numbers too: no evidence).
_NEEDS_ARRAY = {"sum", "mean", "prod", "amax", "amin", "cumsum", "norm", "matmul", "outer", "inner", "len"}


def _evidence(expr):
    """Names `expr` uses as arrays: reduced, transposed, measured, sliced or indexed."""
    found = set()
    for e in subexpressions(expr):
        if isinstance(e, Call) and (e.prim in _NEEDS_ARRAY or e.prim in ("getitem", "setitem")):
            found |= {a.name for a in map(_through_unary, e.args[:1 if e.prim != "matmul" else 2])
                      if isinstance(a, Var)}
    return found


def _through_unary(e):
    """`np.exp(z)` is an array exactly when z is: the value an elementwise function of one
    argument is applied to."""
    while isinstance(e, Call) and len(e.args) == 1 and TABLE[e.prim].elementwise:
        e = e.args[0]
    return e


def _contracted(expr):
    """An einsum whose output subscript is empty (`np.einsum('i,i->', a, b)`): one number."""
    return expr.prim == "einsum" and str(dict(expr.params).get("subscripts", "")).endswith("->")


def _rows_of_arrays(expr, arrays):
    """may_be_array, except where a value of arrays may still be a number: indexing with
    integers only (`x[0]`, `x[i, j]`), a matrix product (`u @ v` of vectors), and a
    reduction along an axis (`np.prod(x, axis=0)` of a vector) unless it keeps its dims."""
    if isinstance(expr, Call) and expr.prim == "getitem" and all(k == "i" for k in dict(expr.params)["index"]):
        return False
    if isinstance(expr, Call) and expr.prim == "verbatim":  # may be an array, as a parameter may: no evidence
        return False
    if isinstance(expr, Call) and expr.prim in _SHAPED_LIKE:
        return _rows_of_arrays(expr.args[_SHAPED_LIKE[expr.prim]], arrays)
    if isinstance(expr, Call) and expr.prim in ("matmul", "dot", "inner", "squeeze"):  # (squeeze of (1, 1): a number)
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


def _may_be_arrays(fn, module, result_number=True, infer=True, defaults_numbers=False):
    evident = _evident(fn)  # `state[0]`, `len(xs)`: arrays, numpy imported or not
    numbers = evident_numbers(fn, result_number) - evident if infer else set()
    arrays = (arrays_on_entry(fn, module, defaults_numbers) | evident) - numbers
    size = -1
    while size != len(arrays):  # loops carry arrays from one iteration to the next
        size = len(arrays)
        _flow(fn.body, arrays, numbers=numbers)
    return arrays


def evident_numbers(fn, result_number=True, constants=()) -> set:
    """Names the code itself shows are numbers, whatever the file imports: the result, what
    a `math` function is applied to (`math.exp(-z1)`: z1), and every name an elementwise operation
    combined into such a number (`z1 = w1 * x1 + b1`: broadcasting never shrinks, so w1,
    x1 and b1 are numbers too). Only names bound once (parameters never reassigned, values
    assigned by one statement outside loops), so the fact holds wherever they are read."""
    defs, counts = {}, {}
    for stmt in walk(fn.body):
        target = stmt.target if isinstance(stmt, (Assign, For)) else None
        if target is not None:
            counts[target] = counts.get(target, 0) + 1
            if isinstance(stmt, Assign) and not stmt.overwrites:
                defs[target] = stmt.expr
    once = {p.name for p in fn.params if p.name not in counts and not p.structured}
    once |= {c for c in constants if c not in counts}  # module constants it reads (gradgen.codegen.guards)
    once |= {name for name, n in counts.items() if n == 1 and name in defs}
    roots = [fn.result] if result_number else []  # (a gradient's result is one number)
    for stmt in _outside_branches(fn.body):  # (`math.exp(x) if np.ndim(x) == 0 else ...` proves nothing)
        for expr in expressions(stmt):
            roots += [a for call in _calls_in(expr) if call.ns == "math" for a in call.args]
    numbers = set()

    def into(e):  # a number's definition, and what an elementwise operation combined into it
        if isinstance(e, Var) and e.name in once and e.name not in numbers:
            numbers.add(e.name)
            return (defs[e.name],) if e.name in defs else ()
        if isinstance(e, Call) and e.prim in _SHAPED_LIKE:  # (a number shaped like `like`: like is one)
            return (e.args[_SHAPED_LIKE[e.prim]],)
        return e.args if isinstance(e, Call) and TABLE[e.prim].elementwise else ()

    for root in roots:
        for _ in subexpressions(root, into):
            pass
    return numbers  # (not into `a if c else b`: only the arm taken is the number)


def _outside_branches(stmts):
    """The statements that run whichever way every `if` goes (loop bodies included)."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, (For, While)):
            yield from _outside_branches(stmt.body)


def _calls_in(expr):
    """The calls `expr` surely makes: not those inside a branch of a conditional expression."""
    return (e for e in subexpressions(expr, _surely_run) if isinstance(e, Call))


def _surely_run(e):
    """What runs whenever `e` does: not an arm of `a if c else b`, nor what `and`/`or` may skip."""
    if isinstance(e, Call):
        return e.args if e.prim not in ("and", "or") else e.args[:1]
    return (e.test,) if isinstance(e, Cond) else ()


def arrays_on_entry(fn, module, defaults_numbers=False) -> set:
    """The parameters and module constants that may be arrays when `fn` is called: array
    constants, and parameters without a `float`/`int` annotation (in a file that imports
    numpy; keyword-only data even without). A number default proves nothing: `b=0.0` may be
    called with `b=np.zeros(3)`, so only the code (evident_numbers) or an annotation makes b
    a number."""
    uses_numpy = any(q.split(".")[0] == "numpy" for q in module.imports.values())
    arrays = _array_constants(fn, module)
    for p in fn.params:
        if defaults_numbers and number_default(p):  # (the sharing analysis's fallback: checked on entry)
            continue
        if not p.number and p.function is None and (p.keyword_only or uses_numpy):
            arrays.add(p.name)
    return arrays


def number_default(p):
    """Whether parameter `p` has a default that is a number (`b=0.0`), which proves nothing of
    what a caller passes."""
    return p.has_default and p.function is None and type(p.default) in (int, float)


def _array_constants(fn, module):
    """The module's array constants `fn` can read: not those its parameters shadow."""
    own = {p.name for p in fn.params}
    return {c for c, v in module.constants.items() if _is_array_constant(v) and c not in own}


def _is_array_constant(value):
    return hasattr(value, "shape")


def through(stmts, arrays) -> frozenset:
    """`arrays` and every value `stmts` compute from one (loops carried round): forward mode
    over a gradient's statements needs to know which adjoints may be arrays too (`df_ditem =
    np.ones_like(item)` of a list's element is one, and `df_dhs[i] + df_ditem` with it)."""
    arrays, size = set(arrays), -1
    while size != len(arrays):
        size = len(arrays)
        _flow(stmts, arrays)
    return frozenset(arrays)


def _flow(stmts, arrays, may=None, numbers=frozenset()):
    may = may or may_be_array
    for stmt in stmts:
        if isinstance(stmt, Assign):
            # `u: float = ...` is your word it is a number; `math.exp(u)` the code's
            if not stmt.number and stmt.target not in numbers and may(stmt.expr, arrays):
                arrays.add(stmt.target)
        elif isinstance(stmt, If):
            _flow(stmt.body, arrays, may, numbers)
            _flow(stmt.orelse, arrays, may, numbers)
        elif isinstance(stmt, (For, While)):
            _flow(stmt.body, arrays, may, numbers)


def may_be_array(expr, arrays) -> bool:
    if isinstance(expr, Var):
        return expr.name in arrays
    if isinstance(expr, Const):
        return False
    if isinstance(expr, Cond):
        return may_be_array(expr.body, arrays) or may_be_array(expr.orelse, arrays)
    if not isinstance(expr, Call):
        return False
    if expr.prim == "verbatim":  # the user's own text (gradgen.frontend.inactive): anything
        return True
    if expr.ns == "math" or expr.prim in _SCALAR_RESULTS or TABLE[expr.prim].kind == "integer" or _contracted(expr):
        return False
    if expr.prim in _REDUCTIONS:
        params = dict(expr.params)
        kept = params.get("axis") is not None or params.get("keepdims")
        return bool(kept) and may_be_array(expr.args[0], arrays) or bool(params.get("keepdims"))
    if expr.prim in _ARRAY_RESULTS:
        return True
    if expr.prim in _SHAPED_LIKE:
        return may_be_array(expr.args[_SHAPED_LIKE[expr.prim]], arrays)
    return any(may_be_array(a, arrays) for a in expr.args)


# ---- indices that may pick one element twice --------------------------------------------
_MASKS = {"lt", "le", "gt", "ge", "eq", "ne", "logical_and"}  # booleans: each element picked once at most
_SEQUENCES = {"list", "stack", "array", "array_list", "stack_list"}  # `[0, 1, 1]`, `np.array([0, 1, 1])`


def may_repeat(layout, index, arrays) -> bool:
    """Whether the index of `x[index]` (its layout and expressions, gradgen.frontend.lower) may pick
    one element twice, which a gradient must follow (a read adds up every pick; a write
    keeps NumPy's last one): an integer array or a list may (`[0, 1, 1]`); numbers, slices
    and boolean masks never do, nor a list of distinct constants (`[0, 2, 3]`)."""
    exprs = list(index)
    items = []
    for kind in layout:
        if kind == "i":
            items.append(exprs.pop(0))
        elif kind.startswith("s"):
            del exprs[:kind.count("1")]
    return any(_may_repeat(e, arrays) for e in items)


def _may_repeat(e, arrays):
    same = getattr(arrays, "same", None)
    while same is not None and isinstance(e, Var) and e.name in same.once and e.name in same.defs:
        e = same.defs[e.name]  # a name bound once: what it was bound to
    if isinstance(e, Call) and e.prim in _MASKS:
        return False
    if isinstance(e, Call) and e.prim in _SEQUENCES:
        numbers = _constants(e)
        if numbers is not None:
            return len(set(numbers)) < len(numbers) or min(numbers) < 0 <= max(numbers)
        return True
    if isinstance(e, Var):
        return e.name in arrays or e.name in getattr(arrays, "sequences", ())
    return may_be_array(e, arrays)


def _constants(e):
    """The integers of `[0, 2, 3]` (or of np.array of it), else None."""
    if len(e.args) == 1 and isinstance(e.args[0], Call) and e.args[0].prim in _SEQUENCES:
        e = e.args[0]
    numbers = [_integer(a) for a in e.args]
    return numbers if numbers and None not in numbers else None


def _integer(e):
    """The int `e` writes (`2`, `-1`), else None."""
    if isinstance(e, Call) and e.prim == "neg" and len(e.args) == 1:
        inner = _integer(e.args[0])
        return None if inner is None else -inner
    return e.value if isinstance(e, Const) and type(e.value) is int else None
