"""Custom derivative rules (`@gradgen.custom_vjp` with `@f.defvjp`), read from the source and
inlined into the backward pass; `gradgen.stop_gradient` is a primitive of the table.

Reading: the file's top level is scanned (never run) for functions decorated
`@gradgen.custom_vjp` (or `@custom_vjp` imported from gradgen, or with `(estimator=True)`)
and the rule each gets from `@f.defvjp` (or a statement `f.defvjp(rule)`); both are checked
here, located at their lines: the rule takes `(g, out, *inputs)` and returns one
contribution per input (a tuple for several, None for one that gets no gradient).

Lowering: a call of a custom function is its own body inlined (the value; no derivative
flows into it) wrapped in a `custom_vjp` call whose arguments are that value and the
inputs, each in a variable. The rule's body is lowered right there, hygienically, as any
helper is (its locals get names of their own), with `g` and `out` as placeholders, and kept
on the call. The backward pass (gradgen/transform/reverse/custom.py) replaces the
placeholders by the adjoint of the call's result and its variable, writes the rule's
statements and adds each contribution to its input's adjoint. The generated module computes
the call's value as the function's own body does, and never imports gradgen.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from gradgen.frontend import local_imports
from gradgen.frontend.closures import own_nodes
from gradgen.ir.nodes import Call, Expr, Var, children, expressions, subexpressions, walk
from gradgen.rules.table import CUSTOM_CALLS

CALLS = CUSTOM_CALLS  # the primitives of a custom function's call (gradgen/rules/table.py)
QUALIFIED = "gradgen.custom_vjp"


@dataclass
class Custom:
    """A custom function of the file and its rule, as the source writes them."""

    node: ast.FunctionDef
    params: list
    estimator: bool = False
    rule: ast.FunctionDef | None = None
    marked_at: ast.AST | None = None  # the defvjp decorator or statement
    imported_from: str | None = None  # the user's other file it is defined in (None: the compiled file)

    @property
    def name(self):
        return self.node.name

    @property
    def rule_line(self):
        """Where the rule is, said in a message: `line 13`, or `rules.py, line 13`."""
        return f"{self.imported_from + ', ' if self.imported_from else ''}line {self.rule.lineno}"

    @property
    def rule_name(self):
        return self.rule.name


@dataclass
class Rules:
    """The custom functions of a file by name, and the names of their rules."""

    functions: dict = field(default_factory=dict)
    rules: dict = field(default_factory=dict)  # rule name -> the custom function's name


class LoweredRule:
    """A rule lowered at one call: statements and contributions over the placeholders `g`
    and `out`. Compared by identity (it sits in an IR call's static parameters)."""

    def __init__(self, custom, g, out, statements, contributions):
        self.custom, self.g, self.out = custom, g, out
        self.statements, self.contributions = statements, contributions

    def __repr__(self):
        return self.custom.rule_name


# ---- reading the file ----------------------------------------------------------------------

def read(module) -> Rules:
    """The custom functions and rules of `module`, checked (kept on the module: read once)."""
    found = getattr(module, "_custom_rules", None)
    if found is None:
        found = _read(module)
        module._custom_rules = found
    return found


def _read(module):
    rules = Rules()
    for stmt in module.tree.body:
        if isinstance(stmt, ast.FunctionDef):
            _read_def(module, stmt, rules)
        elif isinstance(stmt, ast.Expr) and _defvjp_target(stmt.value) is not None:
            call = stmt.value
            if len(call.args) != 1 or not isinstance(call.args[0], ast.Name) \
                    or call.args[0].id not in module.functions:
                raise module.error(call, f"'{ast.unparse(call.func)}(...)' takes the rule, a function defined in "
                                         "this file (and estimator=True for a deliberate estimator)")
            _attach(module, rules, _defvjp_target(call), module.functions[call.args[0].id], call, call)
    for custom in rules.functions.values():
        if custom.rule is None:
            inputs = ", ".join(["g", "out", *custom.params])
            raise module.error(custom.node, f"'{custom.name}' is a custom_vjp function without a rule: define one "
                                            f"with @{custom.name}.defvjp (def {custom.name}_vjp({inputs}): ...)")
    return rules


def _read_def(module, node, rules):
    for deco in node.decorator_list:
        if _is_custom_vjp(module, deco):
            if len(node.decorator_list) > 1:
                raise module.error(node, f"'{node.name}' is a custom_vjp function: it takes no other decorator")
            _check_function(module, node)
            params = [a.arg for a in node.args.args]
            rules.functions[node.name] = Custom(node, params, _estimator(module, deco),
                                                imported_from=module.filename if module.imported else None)
        elif _defvjp_target(deco) is not None:
            if len(node.decorator_list) > 1:
                raise module.error(node, f"'{node.name}' is a custom rule: it takes no other decorator")
            _attach(module, rules, _defvjp_target(deco), node, deco, deco)


def _is_custom_vjp(module, deco):
    func = deco.func if isinstance(deco, ast.Call) else deco
    return module.qualified(func) == QUALIFIED


def _defvjp_target(node):
    """`f` of `f.defvjp` or `f.defvjp(...)`, else None."""
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Attribute) and func.attr == "defvjp" and isinstance(func.value, ast.Name):
        return func.value
    return None


def _estimator(module, node):
    """`estimator=True` of a `custom_vjp(...)` or `defvjp(...)` call (False when absent)."""
    if not isinstance(node, ast.Call):
        return False
    positional = node.args[1:] if _defvjp_target(node) is not None and node.args else node.args
    keywords = [k for k in node.keywords if k.arg == "estimator"]
    if positional or len(keywords) != len(node.keywords) or not all(
            isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool) for k in keywords):
        raise module.error(node, f"'{ast.unparse(node.func)}' takes one option, estimator=True or estimator=False")
    return any(k.value.value for k in keywords)


def _attach(module, rules, target, rule, where, options):
    """Rule `rule` for the custom function `target` names, checked against its inputs."""
    custom = rules.functions.get(target.id)
    imported = local_imports.function(module, module.imports.get(target.id))
    if custom is None and imported is not None:  # a rule given here to a function of the user's other file
        home = local_imports.home(module, imported)
        raise module.error(where, f"'{target.id}.defvjp': '{target.id}' is a function of {home.filename}: give it "
                                  "its rule there, where it is defined (@gradgen.custom_vjp on its def, "
                                  f"@{target.id}.defvjp on the rule)")
    if custom is None:
        raise module.error(where, f"'{target.id}.defvjp': '{target.id}' is not a @gradgen.custom_vjp function; "
                                  f"decorate its def with @gradgen.custom_vjp")
    if custom.rule is not None:
        raise module.error(where, f"'{target.id}' has a rule already ('{custom.rule_name}', line "
                                  f"{custom.rule.lineno}); give it one")
    custom.rule, custom.marked_at = rule, where
    custom.estimator = custom.estimator or _estimator(module, options)
    rules.rules[rule.name] = custom.name
    _check_rule(module, custom)


def _check_function(module, node):
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or not args.args:
        raise module.error(node, f"custom_vjp function '{node.name}' must take its inputs as plain parameters "
                                 f"(def {node.name}(x, y): ...): its rule gets one contribution per parameter")
    for ret in _returns(node):
        if isinstance(ret.value, ast.Tuple):
            raise module.error(ret, f"custom_vjp function '{node.name}' must return one value (a number or an "
                                    "array), not a tuple")


def _check_rule(module, custom):
    rule, n = custom.rule, len(custom.params)
    args = rule.args
    wanted = ", ".join(["g", "out", *custom.params])
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults \
            or len(args.args) != n + 2:
        raise module.error(rule, f"custom rule '{rule.name}' takes {len(args.args)} parameters; a rule for "
                                 f"'{custom.name}' takes {n + 2}: ({wanted})")
    inputs = ", ".join(custom.params)
    for ret in _returns(rule):
        got = _contributions_returned(ret.value, n)
        if got is not None:
            plural = "inputs" if n > 1 else "input"
            tail = ", as a tuple (None for an input that gets no gradient)" if n > 1 else ""
            raise module.error(ret, f"custom rule '{rule.name}' returns {got}; '{custom.name}' has {n} {plural} "
                                    f"({inputs}): return one contribution per input{tail}")


def _contributions_returned(value, n):
    """What a rule's `return value` gives, said in words, when it is not n contributions."""
    if value is None:
        return "nothing"
    if isinstance(value, ast.Tuple):
        k = len(value.elts)
        return None if k == n else f"{k} contribution{'s' if k != 1 else ''}"
    return None if n == 1 else "one value"


def _returns(node):
    return [n for n in own_nodes(node.body) if isinstance(n, ast.Return)]


def custom_of(module, node):
    """The Custom of function `node` of `module` (the file it is defined in), if it is a
    custom_vjp function."""
    found = read(module).functions.get(node.name)
    return found if found is not None and found.node is node else None


def not_compiled(module, name):
    """Why top-level function `name` gets no gradient of its own, if it is a custom function
    or a rule (None otherwise); reading the file's rules checks them all."""
    rules = read(module)
    if name in rules.rules:
        return f"no gradient: it is the custom rule of '{rules.rules[name]}', written where '{rules.rules[name]}' is called"
    if name in rules.functions:
        return "no gradient of its own: a custom_vjp function, differentiated by its rule where a loss calls it"
    return None


# ---- lowering a call -----------------------------------------------------------------------

def lower_call(lw, scope, node, custom, unpacked=None, named=True):
    """A call of custom function `custom` (lw: the gradgen.frontend.lower.Lowerer): the `custom_vjp`
    call of its value and inputs, in a variable of its own unless `named` is False (the
    caller binds it to a name as it is)."""
    m = lw.m
    if unpacked is not None:
        raise m.error(node, f"'{custom.name}' is a custom_vjp function: it returns one value, not {unpacked}")
    lw._inline_limits(node, custom.node)
    home = local_imports.home(m, custom.node)  # (a function of the user's other file: its value and rule read there)
    args = lw._bind_arguments(scope, node, custom.node, home)
    inputs = []
    for name, value in args.items():
        if not isinstance(value, Expr):
            raise m.error(node, f"'{custom.name}' is a custom_vjp function: its inputs are numbers and arrays, "
                                f"and '{name}' is not one here")
        inputs.append(lw._named(name, value, node))
    with lw._in_module(home):
        value = lw._inline_bound(node, custom.node, dict(zip(args, inputs)))
        rule = _lower_rule(lw, node, custom, inputs)
    prim = "custom_estimator" if custom.estimator else "custom_vjp"
    call = Call(prim, (value, *inputs), None, loc=(node.lineno, node.col_offset + 1), params=(("rule", rule),))
    if not named:
        return call
    ssa = lw.namer.define(custom.name)
    lw._emit(ssa, call, node, overwrites=lw.loop_depth > 0)
    return Var(ssa)


def called(lw, scope, node):
    """The Custom `node` calls, if it is a call of a custom function, else None."""
    callee = lw._helper_node(scope, node) if isinstance(node, ast.Call) else None
    if callee is None or not hasattr(callee, "node"):
        return None
    return custom_of(local_imports.home(lw.m, callee.node, callee.closure), callee.node)


def _lower_rule(lw, node, custom, inputs):
    """The rule's body, lowered as a helper's is but into a list of its own (the backward
    pass writes it), its parameters bound to placeholders for `g` and `out` and to the
    call's inputs. A None contribution is an exact zero (no gradient)."""
    rule = _nones_as_zeros(custom.rule)
    n = len(inputs)
    returns_tuple = any(isinstance(r.value, ast.Tuple) for r in _returns(rule))
    saved = lw.body, lw.depth, lw.loop_depth
    lw.body, lw.depth, lw.loop_depth = [], 0, 0
    try:
        g = Var(lw.namer.define(f"{custom.rule_name}_g"))
        out = Var(lw.namer.define(f"{custom.rule_name}_out"))
        params = [a.arg for a in rule.args.args]
        lw._inline_limits(node, custom.rule)
        result = lw._inline_bound(node, rule, dict(zip(params, [g, out, *inputs])),
                                  unpacked=n if returns_tuple else None)
        statements = lw.body
    finally:
        lw.body, lw.depth, lw.loop_depth = saved
    contributions = tuple(result) if returns_tuple else (result,)
    return LoweredRule(custom, g.name, out.name, statements, contributions)


def _nones_as_zeros(rule):
    """A copy of the rule whose `None` contributions are `0.0` (nothing is added)."""
    rule = copy.deepcopy(rule)
    for ret in _returns(rule):
        items = ret.value.elts if isinstance(ret.value, ast.Tuple) else [ret.value]
        for i, item in enumerate(items):
            if isinstance(item, ast.Constant) and item.value is None:
                zero = ast.copy_location(ast.Constant(0.0), item)
                if isinstance(ret.value, ast.Tuple):
                    ret.value.elts[i] = zero
                else:
                    ret.value = zero
    return rule


def calls_in(fn):
    """Every custom call and stop_gradient of IR function `fn` (for `gradgen check`)."""
    roots = [e for s in walk(fn.body) for e in expressions(s)] + [fn.result]
    for root in roots:
        for e in subexpressions(root, _into_rules):
            if isinstance(e, Call) and (e.prim in CALLS or e.prim == "stop_gradient"):
                yield e


def _into_rules(e):
    """Below a custom call: its arguments, and the expressions of its rule's statements."""
    if isinstance(e, Call) and e.prim in CALLS:
        return tuple(e.args) + tuple(x for s in dict(e.params)["rule"].statements for x in _own_expressions(s))
    return children(e)


def _own_expressions(stmt):
    return [e for s in walk([stmt]) for e in expressions(s)]

