"""Values known when compiling, folded as Python computes them: numbers, and lists and
tuples of them made by literals, `zip`, `range`, `enumerate`, `reversed`, slicing,
indexing, `len`, `sum`, `min`/`max`, arithmetic and comprehensions over them.

A factory's constant arguments (`make_nn_funs(layer_sizes=[1, 4, 1])`) and what its body
computes from them (`list(zip(sizes[:-1], sizes[1:]))`, `sum((m + 1) * n for m, n in
shapes)`) are such values (see gradgen.frontend.known_lists). The folding runs Python's own
operations on the values, so its results are Python's, list or tuple alike; nothing is
executed but arithmetic and these builtins, and every size is bounded.
"""

from __future__ import annotations

import ast
import operator

MAX_ITEMS = 100_000  # a folded sequence, or the trips of a folded comprehension, at most this long


class NotConstant(Exception):
    """The expression needs values known only when the code runs."""


class Iterator:
    """What `zip(...)`, `enumerate(...)`, `reversed(...)` or a generator expression gives:
    items that Python lets one consumer read once (a loop, `list(...)`, `sum(...)`)."""

    def __init__(self, items):
        self.items = tuple(items)
        if len(self.items) > MAX_ITEMS:
            raise NotConstant


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
BUILTINS = ("list", "tuple", "zip", "range", "len", "sum", "min", "max", "abs", "int", "float", "round",
            "enumerate", "reversed", "sorted")
_NUMBER = (int, float, bool)


def fold(node, lookup, builtin):
    """The value of expression `node` when compiling, else NotConstant. `lookup(name)` gives
    a name's value (or raises NotConstant); `builtin(name)` says whether a called name is
    Python's builtin there (not shadowed)."""
    if isinstance(node, ast.Constant) and type(node.value) in _NUMBER:
        return node.value
    if isinstance(node, ast.Name):
        return lookup(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(fold(e, lookup, builtin)) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _binary(node.op, fold(node.left, lookup, builtin), fold(node.right, lookup, builtin))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _apply(_UNARY[type(node.op)], _number(fold(node.operand, lookup, builtin)))
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _number(fold(node.left, lookup, builtin))
        for op, right_node in zip(node.ops, node.comparators):
            right = _number(fold(right_node, lookup, builtin))
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        value = None
        for operand in node.values:
            value = _value(fold(operand, lookup, builtin))
            if bool(value) == isinstance(node.op, ast.Or):
                return value
        return value
    if isinstance(node, ast.IfExp):
        chosen = node.body if fold(node.test, lookup, builtin) else node.orelse
        return fold(chosen, lookup, builtin)
    if isinstance(node, ast.Subscript):
        return _subscript(_value(fold(node.value, lookup, builtin)), _index(node.slice, lookup, builtin))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords \
            and node.func.id in BUILTINS and builtin(node.func.id):
        return _call(node.func.id, [fold(a, lookup, builtin) for a in node.args])
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        items = _comprehend(node.generators, node.elt, lookup, builtin)
        return list(items) if isinstance(node, ast.ListComp) else Iterator(items)
    raise NotConstant


def items_of(value):
    """The items a loop over `value` runs through."""
    if isinstance(value, Iterator):
        return value.items
    if isinstance(value, (list, tuple, range)) and len(value) <= MAX_ITEMS:
        return tuple(value)
    raise NotConstant


def unpack(target, item, bind):
    """Bind loop target `target` (a name, or names in parentheses) to `item` by `bind(name,
    value)`, as Python unpacks it."""
    if isinstance(target, ast.Name):
        bind(target.id, item)
        return
    if not isinstance(target, (ast.Tuple, ast.List)) or any(isinstance(t, ast.Starred) for t in target.elts):
        raise NotConstant
    if isinstance(item, Iterator) or not isinstance(item, (list, tuple, range)) or len(item) != len(target.elts):
        raise NotConstant
    for t, part in zip(target.elts, item):
        unpack(t, part, bind)


def _value(value):
    """A value one may hold on to: an iterator only where it is consumed."""
    if isinstance(value, Iterator):
        raise NotConstant
    return value


def _number(value):
    if type(value) not in _NUMBER:
        raise NotConstant
    return value


def _apply(function, *args):
    try:
        return function(*args)
    except (TypeError, ValueError, ArithmeticError, IndexError):
        raise NotConstant from None


def _binary(op, left, right):
    left, right = _value(left), _value(right)
    if isinstance(op, ast.Pow) and not (type(right) in _NUMBER and abs(right) <= 64):
        raise NotConstant  # (an exponent gradgen would wait for)
    if isinstance(op, ast.Mult):
        lengths = [len(v) * abs(w) for v, w in ((left, right), (right, left))
                   if isinstance(v, (list, tuple)) and type(w) is int]
        if lengths and lengths[0] > MAX_ITEMS:
            raise NotConstant
    result = _apply(_BINARY[type(op)], left, right)
    if isinstance(result, (list, tuple)) and len(result) > MAX_ITEMS:
        raise NotConstant
    return result


def _index(node, lookup, builtin):
    if isinstance(node, ast.Slice):
        parts = [None if p is None else _number(fold(p, lookup, builtin)) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)
    return _number(fold(node, lookup, builtin))


def _subscript(value, index):
    if not isinstance(value, (list, tuple, range)) or type(index) is float:
        raise NotConstant
    return _apply(operator.getitem, value, index)


def _call(name, args):
    if name in ("list", "tuple"):
        if len(args) > 1:
            raise NotConstant
        items = items_of(args[0]) if args else ()
        return list(items) if name == "list" else tuple(items)
    if name == "sorted" and len(args) == 1:
        return _apply(sorted, items_of(args[0]))
    if name == "zip":
        return Iterator(zip(*[items_of(a) for a in args]))
    if name == "enumerate":
        if not 1 <= len(args) <= 2:
            raise NotConstant
        start = _number(args[1]) if len(args) == 2 else 0
        return Iterator(enumerate(items_of(args[0]), start))
    if name == "reversed":
        if len(args) != 1 or isinstance(args[0], Iterator):
            raise NotConstant
        return Iterator(reversed(items_of(args[0])))
    if name == "range":
        if not 1 <= len(args) <= 3 or any(type(a) not in (int, bool) for a in args):
            raise NotConstant
        return _apply(range, *args)
    if name in ("sum", "min", "max") and len(args) == 1:
        return _apply({"sum": sum, "min": min, "max": max}[name], items_of(args[0]))
    if name == "len" and len(args) == 1:
        return _apply(len, _value(args[0]))
    return _apply({"sum": sum, "min": min, "max": max, "abs": abs, "int": int, "float": float,
                   "round": round}.get(name, _unknown), *[_number(a) for a in args])


def _unknown(*args):
    raise NotConstant


def _comprehend(generators, elt, lookup, builtin):
    """The items of a comprehension, its generators run as Python runs them."""
    out = []

    def run(k, local):
        if k == len(generators):
            out.append(_value(fold(elt, _chained(local, lookup), builtin)))
            if len(out) > MAX_ITEMS:
                raise NotConstant
            return
        generator = generators[k]
        if generator.is_async:
            raise NotConstant
        for item in items_of(fold(generator.iter, _chained(local, lookup), builtin)):
            inner = dict(local)
            unpack(generator.target, item, inner.__setitem__)
            if all(fold(test, _chained(inner, lookup), builtin) for test in generator.ifs):
                run(k + 1, inner)

    run(0, {})
    return out


def _chained(local, lookup):
    def find(name):
        return local[name] if name in local else lookup(name)
    return find
