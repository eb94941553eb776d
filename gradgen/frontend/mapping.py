"""`map`, `functools.partial` and the builtins that consume an iterable, as the comprehensions
and calls they are (a mixin of gradgen.frontend.lower.Lowerer).

Each is rewritten, where it is met, into code gradgen already lowers:

    map(f, xs)                   [f(item) for item in xs]
    map(f, xs, ys)               [f(item, item_1) for item, item_1 in zip(xs, ys)]
    map(lambda x: e, xs)         [e for x in xs]
    partial(f, a, k=c)(x)        f(a, x, k=c)
    list(it), tuple(it)          [item for item in it]  (it: a map, a generator's call, ...)
    sum(map(...)), max(g(...))   sum([...]), max([...])
    for t in map(f, xs): body    for item in xs: t = f(item); body

`item` is a name the file never mentions, so the rewritten code reads nothing of the
user's. A partial's arguments are computed once, where the partial is made, as Python
computes them; `p = partial(f, a)` binds `p` to a function value whose calls are `f(a, ...)`.
"""

from __future__ import annotations

import ast

from gradgen.frontend.closures import FUNCTION_VALUES, FunctionValue, own_nodes
from gradgen.frontend.generators import CONSUMERS, is_generator
from gradgen.frontend.scopes import Scope, _lookup

# the builtins whose argument may be any iterable: a map or a generator's call there is its list
_ITERABLE_TAKERS = CONSUMERS + ("zip", "enumerate")


class MapLowering:
    """map(...), partial(...) and list(...) of iterables, rewritten where they are lowered."""

    def _builtin(self, scope, func, name):
        """Whether `func` names Python's builtin `name` here (no local, helper or import shadows it)."""
        return isinstance(func, ast.Name) and func.id == name and _lookup(scope, name) is None \
            and name not in self.m.functions and name not in self.m.imports

    def _is_partial(self, func):
        return isinstance(func, (ast.Name, ast.Attribute)) and self.m.qualified(func) == "functools.partial"

    def _fresh_names(self, count):
        """`count` names the file never mentions: item, item_1, ..."""
        taken = getattr(self.m, "mentioned", None)
        if taken is None:
            taken = {n.id for n in ast.walk(self.m.tree) if isinstance(n, ast.Name)}
            taken |= {n.arg for n in ast.walk(self.m.tree) if isinstance(n, ast.arg)}
            self.m.mentioned = taken
        out, k = [], 0
        while len(out) < count:
            name = "item" if k == 0 else f"item_{k}"
            if name not in taken:
                out.append(name)
            k += 1
        return out

    def _desugared(self, scope, node):
        """The call `node` as code gradgen lowers (see the module docstring), or `node`."""
        func = node.func
        if isinstance(func, ast.Call) and self._is_partial(func.func):  # partial(f, a)(x): f(a, x)
            return self._desugared(scope, self._partial_call(scope, func, node.args, node.keywords, node))
        if self._builtin(scope, func, "map"):
            return self._map_list(scope, node)
        if any(self._builtin(scope, func, name) for name in ("list", "tuple")) and len(node.args) == 1 \
                and not node.keywords and self._lazy_iterable(scope, node.args[0]):
            arg = node.args[0]
            if self._builtin(scope, getattr(arg, "func", None), "map"):
                return self._map_list(scope, arg)
            return self._listed(arg)
        if any(self._builtin(scope, func, name) for name in _ITERABLE_TAKERS) and node.args \
                and any(self._lazy_iterable(scope, a) for a in node.args):
            args = [self._listed(a) if self._lazy_iterable(scope, a) else a for a in node.args]
            return ast.copy_location(ast.Call(func, args, node.keywords), node)
        return node

    def _lazy_iterable(self, scope, node):
        """Whether `node` is an iterable that is no list: a map(...), a generator's call, a
        generator expression."""
        if isinstance(node, ast.GeneratorExp):
            return True
        if not isinstance(node, ast.Call):
            return False
        if self._builtin(scope, node.func, "map"):
            return True
        callee = self._helper_node(scope, node)
        return isinstance(callee, FunctionValue) and is_generator(callee.node)

    def _listed(self, node):
        """`node` (an iterable) as the list comprehension that lists it."""
        if isinstance(node, ast.GeneratorExp):
            return ast.copy_location(ast.ListComp(node.elt, node.generators), node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "map":
            return self._map_list(None, node)
        (name,) = self._fresh_names(1)
        target = ast.copy_location(ast.Name(name, ast.Store()), node)
        elt = ast.copy_location(ast.Name(name, ast.Load()), node)
        return ast.copy_location(ast.ListComp(elt, [ast.comprehension(target, node, [], 0)]), node)

    def _map_parts(self, node):
        """(the loop target, what it runs over, the element) of map(f, *xs)."""
        if len(node.args) < 2 or node.keywords:
            raise self.m.error(node, "map() takes a function and one or more sequences here (map(f, xs))")
        f, sequences = node.args[0], node.args[1:]
        if isinstance(f, ast.Lambda) and _plain_lambda(f) and len(f.args.args) == len(sequences):
            names, elt = [a.arg for a in f.args.args], f.body  # map(lambda x: e, xs): [e for x in xs]
        else:
            names = self._fresh_names(len(sequences))
            reads = [ast.copy_location(ast.Name(n, ast.Load()), node) for n in names]
            elt = ast.copy_location(ast.Call(f, reads, []), f)  # (said at the function mapped)
            elt.end_lineno, elt.end_col_offset = f.end_lineno, f.end_col_offset
        stores = [ast.copy_location(ast.Name(n, ast.Store()), node) for n in names]
        if len(sequences) == 1:
            return stores[0], sequences[0], elt
        target = ast.copy_location(ast.Tuple(stores, ast.Store()), node)
        return target, ast.copy_location(ast.Call(ast.Name("zip", ast.Load()), list(sequences), []), node), elt

    def _map_list(self, scope, node):
        target, over, elt = self._map_parts(node)
        comp = ast.ListComp(elt, [ast.comprehension(target, over, [], 0)])
        return ast.fix_missing_locations(ast.copy_location(comp, node))

    def _map_for(self, scope, stmt):
        """`for t in map(f, xs): body` as `for item in xs: t = f(item); body`; any other
        loop as it is."""
        node = stmt.iter
        if not (isinstance(node, ast.Call) and self._builtin(scope, node.func, "map")):
            return stmt
        target, over, elt = self._map_parts(node)
        bind = ast.copy_location(ast.Assign([stmt.target], elt), node)
        bind.end_lineno, bind.end_col_offset = node.end_lineno, node.end_col_offset
        loop = ast.copy_location(ast.For(target, over, [bind, *stmt.body], [], None), stmt)
        return ast.fix_missing_locations(loop)

    def _listed_for(self, scope, stmt):
        """`for t in list(g(...))` (list(map(...)), ...): over the list, made first under a
        name no source spells; any other loop as it is."""
        node = stmt.iter
        listed = self._desugared(scope, node) if isinstance(node, ast.Call) else node
        if not isinstance(listed, ast.ListComp):
            return stmt
        hidden = f"list at {node.lineno}:{node.col_offset + 1}"
        scope.env[hidden] = self._comprehension(scope, listed)
        iterable = ast.copy_location(ast.Name(hidden, ast.Load()), node)
        iterable.end_lineno, iterable.end_col_offset = node.end_lineno, node.end_col_offset
        return ast.copy_location(ast.For(stmt.target, iterable, stmt.body, stmt.orelse, None), stmt)

    def _partial_call(self, scope, made, args, keywords, at):
        """`partial(f, a, k=c)` called with `args`, `keywords`: `f(a, *args, k=c, ...)`, its
        own arguments computed once, where it is made (named by their place)."""
        if not made.args:
            raise self.m.error(made, "partial() needs the function it fixes arguments of")
        f, fixed = made.args[0], [self._once(scope, a) for a in made.args[1:]]
        fixed_kw = [ast.copy_location(ast.keyword(k.arg, self._once(scope, k.value)), k) for k in made.keywords]
        call = ast.Call(f, fixed + list(args), fixed_kw + list(keywords))
        return ast.fix_missing_locations(ast.copy_location(call, at))

    def _once(self, scope, node):
        """`node`, or (where it computes anything) a name no source spells that holds its value."""
        if isinstance(node, (ast.Name, ast.Constant, ast.Lambda)) or (
                isinstance(node, ast.Attribute) and self.m.qualified(node) is not None):
            return node
        if isinstance(node, ast.Starred):
            raise self.m.error(node, "a starred argument to partial() is not supported")
        hidden = f"partial argument at {node.lineno}:{node.col_offset + 1}"
        scope.env[hidden] = self._argument(scope, node)
        name = ast.copy_location(ast.Name(hidden, ast.Load()), node)
        name.end_lineno, name.end_col_offset = node.end_lineno, node.end_col_offset
        return name

    def _partial_value(self, scope, node):
        """`p = partial(f, a)`: a function value whose calls are `f(a, ...)` (f a function of
        the user's; a library function's partial is called where it is made, or mapped)."""
        if not (isinstance(node, ast.Call) and self._is_partial(node.func)):
            return None
        hidden = f"partial function at {node.lineno}:{node.col_offset + 1}"
        f = self.expr(scope, node.args[0], function_ok=True) if node.args else None
        if not isinstance(f, FunctionValue):
            what = "a function" if isinstance(f, FUNCTION_VALUES) else "no function"
            raise self.m.error(node, f"partial() of {what} of this file is supported only where it is called "
                                     "(partial(f, a)(x)) or mapped (map(partial(f, a), xs))")
        home = Scope(node, {hidden: f}, set(), "partial", owned=set(), closure=scope, depth=scope.depth)
        fixed = [self._once(home, a) for a in node.args[1:]]
        stored = ast.copy_location(ast.Name(hidden, ast.Load()), node)
        made = ast.copy_location(ast.Call(stored, fixed, [ast.keyword(k.arg, self._once(home, k.value))
                                                          for k in node.keywords]), node)
        rest = ast.arg(self._fresh_names(1)[0])  # (the rest of the call's arguments: a name no source spells)
        call = ast.Call(stored, [*fixed, ast.Starred(ast.Name(rest.arg, ast.Load()), ast.Load())], made.keywords)
        fnode = ast.FunctionDef(name=f"partial({f.node.name})", args=ast.arguments([], [], rest, [], [], None, []),
                                body=[ast.Return(ast.copy_location(call, node))], decorator_list=[], returns=None)
        if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
            fnode.type_params = []
        return FunctionValue(ast.fix_missing_locations(ast.copy_location(fnode, node)), home)


def _plain_lambda(f):
    """A lambda of plain positional parameters (no defaults, *args or keywords)."""
    a = f.args
    return not (a.defaults or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs) and not any(
        isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes([f.body]))
