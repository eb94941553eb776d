"""Lists known when compiling (a mixin of gradgen.frontend.lower.Lowerer).

A factory is often called with constants (`make_nn_funs(layer_sizes=[1, 4, 1])`) and
computes its layout from them (`shapes = list(zip(sizes[:-1], sizes[1:]))`, `num_weights =
sum((m + 1) * n for m, n in shapes)`). Such a list is folded while compiling (gradgen.frontend.fold)
into a ConstList; a loop over it is unrolled, so each trip's numbers are constants
(`reshape((m, n))`) and a counter (`start += (m + 1) * n`) is an integer expression of them.
A list of tuples built in straight code (`layers.append((W, b))`) is kept while compiling
as the values it holds (a StaticList), so a loop over it (`for W, b in layers`) unrolls
too; so is a list or tuple of functions (`acts = [relu, m.soft, np.tanh]`, `for f in (relu,
np.tanh):`), each trip calling its own function. Neither reaches the generated code: only
the numbers and the arrays they lead to do.
"""

from __future__ import annotations

import ast
import keyword

from gradgen.frontend import local_imports
from gradgen.frontend.closures import FUNCTION_VALUES, FunctionValue, own_nodes
from gradgen.frontend.fold import NotConstant, fold, items_of, unpack
from gradgen.frontend.scopes import ArgsTuple, Scope, _exits, _lookup, _LoopVariable
from gradgen.ir.nodes import Const, Var
from gradgen.rules import table

MAX_UNROLLED = 10_000  # trips of the loops gradgen unrolls in one function


class ConstList:
    """A list (or tuple, or range) of constants, as Python would hold it."""

    def __init__(self, value):
        self.value = value


class StaticList:
    """A list of values and tuples of values built in straight code: its items, in order."""

    def __init__(self, items=()):
        self.items = list(items)


class StaticDict:
    """A dict with constant keys built in straight code (`params = {"beta": b, "gamma": g}`, to
    hand a helper named values): its values by key, in the order written. Indexed by a key
    known when compiling, it is the value; it never reaches the generated code."""

    def __init__(self, items=()):
        self.items = dict(items)


STATIC_VALUES = (ConstList, StaticList, StaticDict)


class StaticLowering:
    """Folding lists of constants; unrolling loops over lists known when compiling."""

    # ---- folding ---------------------------------------------------------------------------
    def _fold(self, scope, node):
        return fold(node, lambda name: self._fold_name(scope, name), lambda name: self._is_builtin(scope, name))

    def _fold_name(self, scope, name):
        value = _lookup(scope, name)
        if isinstance(value, ConstList):
            return value.value
        if isinstance(value, Const) and type(value.value) in (int, float, bool):
            return value.value
        if isinstance(value, ArgsTuple) and all(isinstance(v, Const) for v in value.items):
            return tuple(v.value for v in value.items)
        if value is None and not _local_anywhere(scope, name) and isinstance(self.m.constants.get(name),
                                                                               (int, float, tuple)):
            return self.m.constants[name]
        raise NotConstant

    def _is_builtin(self, scope, name):
        return _lookup(scope, name) is None and not _local_anywhere(scope, name) and name not in self.m.functions \
            and name not in self.m.imports and name not in self.m.constants

    def _mentions_static(self, scope, node):
        """Whether `node` reads a name bound to a list known when compiling (a module's
        sequence constant among them: `for m, n in SHAPES`, `zip(SIZES[:-1], SIZES[1:])`)."""
        names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
        named = self.m.constants.get(node.id) if isinstance(node, ast.Name) else None
        flat = isinstance(node, ast.Name) and not (isinstance(named, tuple) and any(isinstance(v, tuple) for v in named))
        if not flat and any(isinstance(self.m.constants.get(name), tuple) and _lookup(scope, name) is None
                            and not _local_anywhere(scope, name) for name in names):
            # (a loop over a flat sequence constant by name stays a loop, read by index: it may break)
            self.statics = True
            return True
        if not getattr(self, "statics", False):  # (none made yet: the common case costs nothing)
            return False
        return any(isinstance(_lookup(scope, name), STATIC_VALUES) for name in names)

    def _static_expr(self, scope, node):
        """The value of `node` when compiling, if it reads a list known then: a number (a
        Const), a list (a ConstList), or a StaticList, its length or an item; else None."""
        if not self._mentions_static(scope, node):
            return None
        if isinstance(node, ast.Name):
            return _lookup(scope, node.id)
        base = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else \
            node.value if isinstance(node, ast.Subscript) else None
        if isinstance(base, ast.Name) and isinstance(_lookup(scope, base.id), StaticDict):
            return self._static_item(scope, node)  # params["beta"], params.items()
        try:
            return self._known(self._fold(scope, node), node)
        except NotConstant:
            return self._static_item(scope, node)

    def _known(self, value, node):
        """A folded value as the lowering holds it."""
        if type(value) in (int, float, bool):
            return Const(value)
        if isinstance(value, (list, tuple, range)):
            self.statics = True
            return ConstList(value)
        raise self.m.error(node, f"'{self.m.segment(node)}' is an iterator, which gradgen folds only where it is "
                                 f"used up: loop over it, or write list({self.m.segment(node)})")

    def _static_item(self, scope, node):
        """`len(layers)`, `layers[k]`, `layers[1:]` of a StaticList (k and the bounds constants),
        `params["beta"]`, `len(params)` and `params.items()` (`.keys()`, `.values()`) of a
        StaticDict, else None."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" \
                and self._is_builtin(scope, "len") and len(node.args) == 1 and not node.keywords:
            value = self._static_expr(scope, node.args[0])
            if isinstance(value, (StaticList, StaticDict)):
                return Const(len(value.items))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args \
                and not node.keywords and node.func.attr in ("items", "keys", "values"):
            value = self._static_expr(scope, node.func.value)
            if isinstance(value, StaticDict):
                pairs = list(value.items.items())
                return StaticList(ArgsTuple((Const(k), v)) for k, v in pairs) if node.func.attr == "items" else \
                    StaticList(Const(k) for k, _ in pairs) if node.func.attr == "keys" else StaticList(v for _, v in pairs)
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice) \
                and isinstance(self._static_expr(scope, node.value), StaticDict):
            value = self._static_expr(scope, node.value)
            key = self._key(scope, node.slice)
            if key is None or isinstance(key, (list, dict)) or key not in value.items:
                keys = ", ".join(repr(k) for k in value.items)
                raise self.m.error(node, f"'{self.m.segment(node.value)}' is a dict gradgen keeps while compiling "
                                         f"(keys {keys}): index it by one of them, written as a constant")
            return value.items[key]
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            value = self._static_expr(scope, node.value)
            if isinstance(value, StaticList):  # `apply(x, layers[1:])`: the rest, as a list kept too
                try:
                    bounds = [None if p is None else self._fold(scope, p)
                              for p in (node.slice.lower, node.slice.upper, node.slice.step)]
                    return StaticList(value.items[slice(*bounds)])
                except (NotConstant, TypeError, ValueError):
                    return None
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            value = self._static_expr(scope, node.value)
            if isinstance(value, StaticList):
                try:
                    index = self._fold(scope, node.slice)
                except NotConstant:
                    index = None
                if type(index) is not int or not -len(value.items) <= index < len(value.items):
                    count = f"{len(value.items)} item{'s' if len(value.items) != 1 else ''}"
                    raise self.m.error(node, f"'{self.m.segment(node.value)}' is a list gradgen keeps while "
                                             f"compiling ({count}): index it by a constant from "
                                             f"{-len(value.items)} to {len(value.items) - 1}")
                return value.items[index]
        return None

    def _constant_numbers(self, scope, node):
        """The numbers of a list of constants `node` names (`np.array(sizes)`), else None."""
        value = self._static_expr(scope, node)
        if isinstance(value, ConstList) and isinstance(value.value, (list, tuple, range)) and len(value.value) \
                and all(type(v) in (int, float, bool) for v in value.value):
            return list(value.value)
        return None

    def _static_argument(self, scope, node):
        """A helper's argument written as a list or tuple of constants: a ConstList."""
        if isinstance(node, (ast.List, ast.Tuple)):
            try:
                value = self._fold(scope, node)
            except NotConstant:
                return None
            self.statics = True
            return ConstList(value)
        return None

    def _static_misuse(self, node, value):
        """What to say where a list known when compiling is used as a number or an array."""
        text = self.m.segment(node)
        if isinstance(value, ConstList):
            return self.m.error(node, f"'{text}' is a list of constants gradgen folds while compiling "
                                      f"({_short(value.value)}): use it in a loop (unrolled), len(...), an index "
                                      f"known when compiling, zip, a slice, sum(...) or np.array({text}), or pass it "
                                      "to a helper")
        if isinstance(value, StaticDict):
            return self.m.error(node, f"'{text}' is a dict gradgen keeps while compiling (keys "
                                      f"{', '.join(repr(k) for k in value.items)}): index it by a key written as a "
                                      "constant, loop over its .items(), take its len(...), or pass it to a helper")
        return self.m.error(node, f"'{text}' is a list gradgen keeps while compiling (it holds tuples or functions): "
                                  "loop over it, index it by a constant, take its len(...), or pass it to a helper")

    # ---- conditions known when compiling --------------------------------------------------------
    def _known_test(self, scope, node):
        """The truth of a condition known when compiling, from numbers and lists bound to the
        helper's names (`n == 0`, `len(sizes) > 1` of a call's constant arguments), else None.
        A module-level constant stays a value (the generated function takes it as a keyword)."""
        def lookup(name):
            value = _lookup(scope, name)
            if isinstance(value, Const) and type(value.value) in (int, float, bool, str):  # (a str: a dict's key)
                return value.value
            if isinstance(value, ConstList):
                return value.value
            if isinstance(value, (StaticList, StaticDict)):  # (only its length is known)
                return (None,) * len(value.items)
            raise NotConstant
        known = self._known_isinstance(scope, node)
        if known is not None:  # isinstance(data, list) of a parameter of a stated kind
            return known
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            sides = [n.value if isinstance(n, ast.Constant) else _known_name(scope, n.id) if isinstance(n, ast.Name)
                     else None for n in (node.left, node.comparators[0])]  # `key != "label"` of a dict's key
            if all(isinstance(v, str) for v in sides):
                return (sides[0] == sides[1]) == isinstance(node.ops[0], ast.Eq)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):  # `if not cs:` of a list
            inner = self._known_test(scope, node.operand)
            return None if inner is None else not inner
        try:
            return bool(fold(node, lookup, lambda name: self._is_builtin(scope, name)))
        except (NotConstant, ArithmeticError, TypeError, ValueError):
            return None

    def _key(self, scope, node):
        """A dict key written as a constant (a string, or a number folded while compiling), else None."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)):
            return node.value
        try:
            return None if node is None else self._fold(scope, node)
        except NotConstant:
            return None

    def _static_dict_made(self, scope, name, value, stmt):
        """`params = {"beta": np.exp(theta[0]), "gamma": ...}`: a StaticDict (keys constants,
        no `**`), bound in straight code; True if made."""
        if not isinstance(value, ast.Dict):
            return False
        keys = []
        for key in value.keys:
            folded = self._key(scope, key)
            if folded is None or isinstance(folded, (list, tuple, dict)):
                where = key if key is not None else value
                raise self.m.error(where, "a dict built in the function needs keys written as constants "
                                          "(`{\"beta\": b, \"gamma\": g}`), which gradgen reads while compiling")
            keys.append(folded)
        self.statics = True
        values = [self._static_element(scope, e) if isinstance(e, ast.Tuple) else
                  self._named(k if isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k) else "item",
                              self.expr(scope, e, function_ok=True), e)
                  for k, e in zip(keys, value.values)]  # (each in a variable named after its key)
        self._bind_static(scope, name, StaticDict(zip(keys, values)), stmt)
        return True

    def _bind_static(self, scope, name, value, stmt):
        """`shapes = list(zip(...))`, `pair = layers[0]`: the name holds the value while
        compiling; only in straight code, where it is bound exactly once per call."""
        if self.depth > scope.depth:
            what = "a dict" if isinstance(value, StaticDict) else "a list"
            raise self.m.error(stmt, f"'{name}' is bound to {what} known when compiling inside a loop or branch; "
                                     "bind it before the loop or branch")
        scope.env[name] = value

    # ---- lists of functions -------------------------------------------------------------------
    def _function_list(self, scope, node):
        """The StaticList of a list or tuple literal whose items all name functions (`[relu,
        m.soft, np.tanh, lambda v: v * v]`), or of a module-level tuple of them (`ACTS =
        (relu, np.tanh)`, read in the module), else None."""
        if isinstance(node, ast.Name) and _lookup(scope, node.id) is None and not _local_anywhere(scope, node.id):
            stmt = self.m.not_constants.get(node.id, (None,))[0]
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and isinstance(stmt.value, ast.Tuple):  # (a tuple: no function can change it)
                return self._function_list(Scope(self.fnode, {}, set()), stmt.value)
        if not isinstance(node, (ast.List, ast.Tuple)) or not node.elts \
                or not all(self._names_function(scope, e) for e in node.elts):
            return None
        self.statics = True
        return StaticList(self.expr(scope, e, function_ok=True) for e in node.elts)

    def _names_function(self, scope, node):
        """Whether `node` names a function value: a lambda, a name bound to one, a function of
        this file or of the user's other files, a library function with a rule."""
        if isinstance(node, ast.Lambda):
            return True
        if isinstance(node, ast.Name):
            value = _lookup(scope, node.id)
            if value is not None or _local_anywhere(scope, node.id):
                return isinstance(value, FUNCTION_VALUES)
            if node.id in self.m.functions:
                return node.id not in self.m.constants
        qualified = self.m.qualified(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if qualified is None:
            return False
        found = table.lookup(qualified)
        return (found is not None and table.TABLE[found[0]].kind != "attribute") \
            or local_imports.function(self.m, qualified) is not None

    # ---- lists of tuples ----------------------------------------------------------------------
    def _static_list_made(self, scope, name, value, stmt):
        """`shapes = [(m, n) for ...]` of constants folds; `layers = []` that will hold
        tuples (`layers.append((W, b))`) is a StaticList. True if either was made."""
        if self._mentions_static(scope, value):
            try:
                folded = self._fold(scope, value)
            except NotConstant:
                folded = None
            if folded is not None:
                self._bind_static(scope, name, self._known(folded, value), stmt)
                return True
        if not _holds_tuples(scope.node, name, value):
            return False
        if self.depth > scope.depth or isinstance(value, ast.ListComp):
            raise self.m.error(stmt, f"the list '{name}' holds tuples, which gradgen keeps while compiling: make it "
                                     "with a list literal outside loops and branches")
        self.statics = True
        self._bind_static(scope, name, StaticList(self._static_element(scope, e) for e in value.elts), stmt)
        return True

    def _static_element(self, scope, node):
        """An item of a StaticList: a value, or a tuple of values, each in a variable."""
        if isinstance(node, ast.Tuple):
            return ArgsTuple(tuple(self._named("item", self.expr(scope, e), e) for e in node.elts))
        return self._named("item", self.expr(scope, node, function_ok=True), node)

    def _static_append(self, scope, stmt):
        """`layers.append((W, b))` on a StaticList (or a ConstList, refused): True if done."""
        call = stmt.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name)):
            return False
        name = call.func.value.id
        value = _lookup(scope, name)
        if isinstance(value, ConstList):
            raise self.m.error(call, f"'{name}' is a list of constants gradgen folds while compiling, which does not "
                                     f"change: build the list it should become in one expression (a comprehension, "
                                     f"or {name} + [...])")
        if not isinstance(value, StaticList):
            return False
        if call.func.attr != "append" or len(call.args) != 1 or call.keywords:
            raise self.m.error(call, f"'{name}' holds tuples, which gradgen keeps while compiling: it grows by "
                                     f"{name}.append(x) only")
        if self.depth > scope.depth:
            raise self.m.error(call, f"'{name}' holds tuples, which gradgen keeps while compiling: append to it "
                                     "outside loops and branches, or in a loop over a list of constants (which "
                                     "gradgen unrolls)")
        value.items.append(self._static_element(scope, call.args[0]))
        return True

    # ---- loops over lists known when compiling: unrolled ---------------------------------------
    def _helper_iterable(self, scope, stmt):
        """`for W, b in unpack_layers(weights)`: the helper's value, computed first and named,
        so the loop runs over a name (unrolled if the value is known when compiling)."""
        node = stmt.iter
        if not (isinstance(node, ast.Call) and isinstance(self._helper_node(scope, node), FunctionValue)):
            return stmt
        value = self._argument(scope, node)
        name = f"{node.func.id}(...)"  # (no Python name: never the user's)
        scope.env[name] = value if isinstance(value, (Var, *STATIC_VALUES)) else self._named(
            f"{node.func.id}_values", value, node)
        iterable = ast.copy_location(ast.Name(name, ast.Load()), node)
        iterable.end_lineno, iterable.end_col_offset = node.end_lineno, node.end_col_offset
        return ast.copy_location(ast.For(stmt.target, iterable, stmt.body, stmt.orelse, None), stmt)

    def _unroll(self, scope, stmt):
        """A loop over a list known when compiling, lowered once per item, in straight code.
        True if `stmt` is such a loop (and now lowered)."""
        node = stmt.iter
        functions = self._function_list(scope, node)  # `for f in (relu, np.tanh):`
        if functions is None and not self._mentions_static(scope, node):
            return False
        value = functions or (_lookup(scope, node.id) if isinstance(node, ast.Name) else None)
        if value is None and isinstance(node, ast.Call):  # `for key, value in params.items():` of a StaticDict
            value = self._static_item(scope, node)
        if isinstance(value, StaticDict):  # `for key in params:`: its keys
            value = StaticList(Const(k) for k in value.items)
        try:
            items = value.items if isinstance(value, StaticList) else items_of(self._fold(scope, node))
        except NotConstant:
            known = next(n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                         and isinstance(_lookup(scope, n.id), STATIC_VALUES))
            raise self.m.error(node, f"the loop over '{self.m.segment(node)}' reads a list known when compiling "
                                     f"('{known}': gradgen unrolls a loop over it) and values known only when the "
                                     f"code runs: loop over range(len({known})) and index each sequence by the "
                                     "counter") from None
        if stmt.orelse:
            raise self.m.error(stmt, "'else' on a loop is not supported")
        if _exits(stmt.body):
            returns = [node for node in own_nodes(stmt.body) if getattr(node, "returns", False)]
            if returns:  # (a return made a break: gradgen.frontend.loop_returns)
                raise self.m.error(returns[0], "'return' inside a loop over a list known when compiling is not "
                                               "supported (gradgen unrolls it): return after the loop")
            raise self.m.error(stmt, "'break' and 'continue' are not supported in a loop over a list known when "
                                     "compiling (gradgen unrolls it)")
        self.unrolled = getattr(self, "unrolled", 0) + len(items)
        if self.unrolled > MAX_UNROLLED:
            raise self.m.error(stmt, f"the loops over lists known when compiling run more than {MAX_UNROLLED:,} trips "
                                     "here; gradgen unrolls each trip and stops there")
        for item in items:
            self._bind_item(scope, stmt.target, item, stmt)
            for inner in stmt.body:
                self._statement(scope, inner)
        if self.depth > scope.depth:  # inside a loop or branch: its target is not read after it
            for n in ast.walk(stmt.target):
                if isinstance(n, ast.Name):
                    scope.env[n.id] = _LoopVariable(n.id)
        return True

    def _static_unpacked(self, scope, target, value, stmt):
        """`m, n = shapes[0]`, `W, b = layers[-1]`: names bound to values known when compiling.
        True if `value` is such a value (and the names are now bound)."""
        known = self._static_expr(scope, value)
        if known is None or isinstance(known, (Var, Const)):
            return False
        self._bind_item(scope, target, known.value if isinstance(known, ConstList) else known, stmt, value)
        return True

    def _bind_item(self, scope, target, item, stmt, source=None):
        """`target` (a loop's, or an assignment's) bound to `item`, unpacked as Python does."""
        assigned, source = source is not None, stmt.iter if source is None else source

        def bind(name, part):
            if isinstance(part, (ArgsTuple, *STATIC_VALUES)):
                self._bind_static(scope, name, part, stmt)
            elif isinstance(part, FUNCTION_VALUES):  # an item of a list of functions
                if assigned:
                    self._bind(scope, name, part, stmt)
                else:
                    scope.env[name] = part
            elif isinstance(part, (Var, Const)) or type(part) in (int, float, bool):
                value = part if isinstance(part, (Var, Const)) else Const(part)  # (a dict's key: a Const)
                if assigned:  # as `name = value` would bind it
                    self._bind(scope, name, value, stmt)
                else:  # an unrolled trip's: what the body reads
                    scope.env[name] = value
            else:
                self._bind_static(scope, name, self._known(part, source), stmt)
        if isinstance(item, ArgsTuple):
            if not isinstance(target, (ast.Tuple, ast.List)):
                bind(target.id, item)
                return
            item = item.items
        try:
            unpack(target, item, bind)
        except NotConstant:
            raise self.m.error(target, f"'{self.m.segment(target)}' cannot unpack the items of "
                                       f"'{self.m.segment(source)}'") from None


def _local_anywhere(scope, name):
    """Whether `name` is a local of `scope` or of a scope it reads (bound or not yet)."""
    while scope is not None:
        if name in scope.env or name in scope.locals:
            return True
        scope = scope.closure
    return False


def _holds_tuples(fnode, name, value):
    """Whether the list `name = value` holds tuples: a literal with a tuple in it, or one the
    function appends tuples to."""
    if isinstance(value, ast.List) and any(isinstance(e, ast.Tuple) for e in value.elts):
        return True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append"
               and isinstance(n.func.value, ast.Name) and n.func.value.id == name and n.args
               and isinstance(n.args[0], ast.Tuple) for n in own_nodes(fnode.body))


def _short(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _known_name(scope, name):
    """The string a name holds when compiling (a dict's key in an unrolled loop), else None."""
    value = _lookup(scope, name)
    return value.value if isinstance(value, Const) and isinstance(value.value, str) else None
