"""Generator functions, inlined where a loop consumes them (a mixin of
gradgen.frontend.lower.Lowerer).

`for W, b in unpack_layers(weights): body` runs the generator's own code, in a scope of its
own (its parameters bound as a helper's, its closure read as a nested def's), and at each
`yield v` the loop's body, in the loop's scope, with the target bound to `v`: Python's
order of evaluation exactly, the generator's locals continuing between yields. Its loops
drive (a loop over a list known when compiling unrolls; another loop of it holds the body
in the generated loop), a `return` in it ends it, several yields each run the body.
`list(g(...))`, `sum(g(...))`, `tuple(...)`, `min`/`max` of a generator's call and a
comprehension over one are loops that consume it too. What cannot be read so is refused
where it is written: `x = yield v` (a value sent in), a generator kept as a value
(`it = g(x)`, `next(it)`), `break` or `return` inside the consuming loop.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from gradgen.frontend import inactive, loop_returns
from gradgen.frontend.closures import FunctionValue, own_nodes
from gradgen.frontend.scopes import ArgsTuple, _always_returns, _exits, _skip_docstring

# the builtins that consume an iterable whole: a generator's call there is the list it yields
CONSUMERS = ("list", "tuple", "sum", "min", "max", "sorted")


def is_generator(fnode) -> bool:
    """Whether `fnode` is a generator function (a `yield` of its own, not a nested def's)."""
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(fnode.body))


def yields_in(stmts) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(stmts))


def as_list(node, name="item"):
    """`[name for name in node]`: the list a consumer of the iterable `node` reads (a name no
    source spells, so it reads nothing of the caller's)."""
    target = ast.copy_location(ast.Name(name, ast.Store()), node)
    elt = ast.copy_location(ast.Name(name, ast.Load()), node)
    comp = ast.copy_location(ast.ListComp(elt, [ast.comprehension(target, node, [], 0)]), node)
    return ast.fix_missing_locations(comp)


@dataclass
class _Consumer:
    """A loop over a generator's call being lowered: its scope, target and body (run at each
    yield of the generator's scope), and what was being inlined where the loop is."""

    scope: object
    stmt: ast.For
    generator: object  # the generator's Scope
    module: object  # the file the loop is in (the generator may be another file's)
    stack: list = field(default_factory=list)
    activations: list = field(default_factory=list)
    forward: bool = False  # `yield from g(...)`: g's yields are the yields of the generator `scope` is

    @property
    def stmts(self):
        """The loop's body with its target's binding first: what a yield runs."""
        bind = ast.copy_location(ast.Assign([self.stmt.target], ast.Constant(None)), self.stmt)
        return [bind, *self.stmt.body]


class GeneratorLowering:
    """A `for` loop over a generator's call: the generator inlined, the loop's body at its yields."""

    def _generator_call(self, scope, node):
        """The generator function `node` calls (a FunctionValue), else None."""
        if not isinstance(node, ast.Call):
            return None
        callee = self._helper_node(scope, node)
        return callee if isinstance(callee, FunctionValue) and is_generator(callee.node) else None

    def _generator_for(self, scope, stmt):
        """`for target in g(...)`, g a generator function: lowered, True; else False."""
        callee = self._generator_call(scope, stmt.iter)
        if callee is None:
            return False
        name = callee.node.name
        if stmt.orelse:
            raise self.m.error(stmt, "'else' on a loop is not supported")
        if _exits(stmt.body):
            leave = next(n for n in own_nodes(stmt.body) if isinstance(n, (ast.Break, ast.Continue))
                         and _exits([n]))
            what = "'return'" if getattr(leave, "returns", False) else f"'{type(leave).__name__.lower()}'"
            raise self.m.error(leave, f"{what} inside a loop over the generator '{name}' is not supported: "
                                      f"gradgen runs the loop's body at each 'yield' of '{name}'; end the "
                                      f"generator itself (a 'return' in '{name}'), or test inside the body")
        consumer = _Consumer(scope, stmt, None, self.m, list(self.stack), list(self.activations))
        self._inline(scope, stmt.iter, callee.node, closure=callee.closure, consumer=consumer)
        return True

    def _generator_body(self, gen_scope, fnode, consumer):
        """The generator's statements, lowered with `consumer`'s body at each yield. A
        `return` ends it: the code after it runs only where the generator did not return."""
        consumer.generator = gen_scope
        gen_scope.generator = True
        stmts = _skip_docstring(fnode.body)
        self._refuse_unsupported(stmts)
        returns = [n for n in own_nodes(stmts) if isinstance(n, ast.Return)]
        for ret in returns:
            if ret.value is not None and not (isinstance(ret.value, ast.Constant) and ret.value.value is None):
                raise self.m.error(ret.value, f"a generator's 'return <value>' is not supported (a loop over "
                                              f"'{fnode.name}' never reads it): write 'return'")
        if returns:  # `return` as `return None`, lifted out of loops, the rest of the body after an `if` that returns
            stmts = [_ReturnsNone().visit(copy.deepcopy(s)) for s in stmts]
            if not _always_returns(stmts):
                stmts.append(ast.copy_location(ast.Return(ast.Constant(None)), stmts[-1]))
            stmts = self._close_returns(loop_returns.lift(stmts, fnode, self.m.error))
        self.consumers.append(consumer)
        try:
            for stmt in stmts:
                self._statement(gen_scope, stmt)
        finally:
            self.consumers.pop()
        return None, fnode.name

    def _yield(self, scope, stmt):
        """`yield v` of the generator being inlined: the consuming loop's body, its target
        bound to v (every part of v computed first, in the generator's scope)."""
        consumer = self._consumer_of(scope)
        node = stmt.value.value
        target = consumer.stmt.target
        if node is None:
            node = ast.copy_location(ast.Constant(None), stmt)
        hidden = f"yield at {stmt.lineno}:{stmt.col_offset + 1}"
        cscope = consumer.scope
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(node, ast.Tuple) \
                and len(node.elts) == len(target.elts) and not any(isinstance(e, ast.Starred) for e in node.elts):
            values = [self._argument(scope, e) for e in node.elts]
            names = []
            for k, value in enumerate(values):
                cscope.env[f"{hidden} #{k}"] = value
                names.append(ast.copy_location(ast.Name(f"{hidden} #{k}", ast.Load()), e := node.elts[k]))
                names[-1].end_lineno, names[-1].end_col_offset = e.end_lineno, e.end_col_offset
            value_node = ast.copy_location(ast.Tuple(names, ast.Load()), node)
        elif isinstance(node, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elts):
            # `yield a, b` to one name (`for pair in g()`, `yield from g()`): a tuple of values
            cscope.env[hidden] = ArgsTuple(tuple(self._named("item", self._argument(scope, e), stmt)
                                                 for e in node.elts))
            value_node = ast.copy_location(ast.Name(hidden, ast.Load()), node)
            if isinstance(target, ast.Name):
                self._yield_body(consumer, lambda: cscope.env.__setitem__(target.id, cscope.env[hidden]))
                return
        else:
            cscope.env[hidden] = self._argument(scope, node)
            value_node = ast.copy_location(ast.Name(hidden, ast.Load()), node)
            value_node.end_lineno, value_node.end_col_offset = node.end_lineno, node.end_col_offset
        self._yield_body(consumer, lambda: self._assign(cscope, target, value_node, stmt))

    def _consumer_of(self, scope):
        """The loop that consumes the yields of the generator `scope` is (through `yield from`s)."""
        consumer = next(c for c in reversed(self.consumers) if c.generator is scope)
        return self._consumer_of(consumer.scope) if consumer.forward else consumer

    def _yield_from(self, scope, stmt):
        """`yield from g(...)` of a generator g: g inlined, its yields this generator's; `yield
        from xs` of anything else: `for item in xs: yield item`."""
        node = stmt.value.value
        callee = self._generator_call(scope, node)
        if callee is None:
            taken = {n.id for n in ast.walk(scope.node) if isinstance(n, ast.Name)}
            self._statement(scope, _yields_from(stmt, loop_returns.fresh("item", taken)))
            return
        consumer = _Consumer(scope, None, None, self.m, list(self.stack), list(self.activations), forward=True)
        self._inline(scope, node, callee.node, closure=callee.closure, consumer=consumer)

    def _yield_body(self, consumer, bind):
        """The consuming loop's body, after `bind()` binds its target, as the loop's own code:
        in its file, with what was being inlined where the loop is."""
        stack, activations = self.stack, self.activations
        self.stack, self.activations = list(consumer.stack), list(consumer.activations)
        try:
            with self._in_module(consumer.module):
                bind()
                for inner in consumer.stmt.body:
                    self._statement(consumer.scope, inner)
        finally:
            self.stack, self.activations = stack, activations

    def _prebind_consumers(self, scope, stmts, stmt):
        """Before a loop or branch of a generator that yields inside it: the names the
        consuming loop's body assigns are given theirs too (they are written there)."""
        if yields_in(stmts):
            self._prebind_consumer_of(scope, stmt)

    def _prebind_consumer_of(self, scope, stmt):
        for consumer in list(self.consumers):
            if consumer.generator is scope and consumer.forward:
                self._prebind_consumer_of(consumer.scope, stmt)
            elif consumer.generator is scope:
                self._prebind(consumer.scope, consumer.stmts, stmt)

    def _refuse_generator(self, node, hnode):
        """A generator function called anywhere but where a loop consumes it."""
        name = hnode.name
        raise inactive.final(self.m.error(node, f"'{name}' is a generator function: gradgen inlines one where a loop consumes it "
                                 f"(for x in {name}(...), list({name}(...)), sum({name}(...)), a comprehension); "
                                 "a generator kept as a value (next(), send()) is not supported"))


def _yields_from(stmt, name):
    """`yield from xs` (a statement) as `for name in xs: yield name` (`name` one the
    generator never mentions)."""
    item = ast.copy_location(ast.Name(name, ast.Load()), stmt.value)
    inner = ast.copy_location(ast.Expr(ast.copy_location(ast.Yield(item), stmt.value)), stmt)
    loop = ast.For(ast.copy_location(ast.Name(name, ast.Store()), stmt.value), stmt.value.value, [inner], [])
    return ast.fix_missing_locations(ast.copy_location(loop, stmt))


class _ReturnsNone(ast.NodeTransformer):
    """`return` as `return None` (gradgen.frontend.loop_returns lifts a return with a value)."""

    def visit_Return(self, node):
        if node.value is None:
            node.value = ast.copy_location(ast.Constant(None), node)
        return node

    def visit_FunctionDef(self, node):  # a nested def's returns are its own
        return node

    visit_Lambda = visit_AsyncFunctionDef = visit_FunctionDef
