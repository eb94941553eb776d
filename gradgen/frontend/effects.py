"""Lowering what runs for its effect: `print`, `logging` and `warnings` calls, `assert`,
and random draws.

Such code does nothing to the derivative, yet the author wrote it to run: a print reports
progress, an assert guards an assumption, and a draw (`rs.randn(n)`, `np.random.normal()`)
advances a random state, so that the next draw differs. The generated forward pass keeps
each of them as the source wrote it, in its place, with the function's variables renamed
to the generated ones; the backward pass never runs them again. A draw is data: no
derivative flows into it, and it is always kept, even where its value is not needed, so
the generated code makes exactly the original's draws, in the same order.
"""

from __future__ import annotations

import ast
import builtins
import copy

from gradgen.errors import Final
from gradgen.frontend.closures import FUNCTION_VALUES
from gradgen.frontend.scopes import PartsOfAPath, _LoopVariable
from gradgen.frontend.structured import TreeRef
from gradgen.ir import nodes
from gradgen.ir.nodes import Const, Spelled, Var
from gradgen.rules.table import primitive

# A draw in the rule table: piecewise (no derivative flows into it, its result is data); the
# emitter writes it as its text (`params`: text=, modules=).
primitive("draw", None, kind="piecewise", min_args=0)

# methods of np.random.RandomState / np.random.Generator (and functions of np.random) that draw
RANDOM_DRAWS = {"randn", "rand", "normal", "uniform", "standard_normal", "random", "random_sample", "choice",
                "permutation", "shuffle", "integers", "randint", "binomial", "poisson", "exponential", "gamma",
                "beta", "multivariate_normal", "laplace", "logistic", "lognormal", "standard_t", "dirichlet",
                "multinomial", "standard_gamma", "standard_exponential", "chisquare", "geometric", "ranf",
                "sample", "bytes", "seed"}
_LOGGING = ("logging.", "warnings.warn")
_STATEMENT_CALLS = {"print"}
_CANONICAL = {"numpy": "np", "math": "math"}  # how the generated module spells these imports


def drawn_in_source(fnode, params) -> frozenset:
    """The parameters a draw in the function's text calls a method of (`rs` of
    `rs.uniform(-0.5, 0.5)`), also in a branch lowering folds away (`if 2 >= 0.1: ... else:
    <draws>`: soak 60008 #269 took rs, never read after folding, for a parameter to
    differentiate, and check refused the RandomState it was given)."""
    return frozenset(n.func.value.id for n in ast.walk(fnode) if isinstance(n, ast.Call)
                     and isinstance(n.func, ast.Attribute) and n.func.attr in RANDOM_DRAWS
                     and isinstance(n.func.value, ast.Name) and n.func.value.id in params)


def random_states(fn) -> set:
    """The parameters of lowered `fn` a draw calls a method of (`rs` of `rs.randn(n)`):
    random states, which `check` samples as fresh seeded `np.random.RandomState`s; and those
    a draw of the source calls that lowering folded away (`drawn_from`), never read."""
    params = {p.name for p in fn.params}
    used = {v.name for s in nodes.walk(fn.body) for e in nodes.expressions(s) for v in nodes.variables(e)}
    used |= {v.name for v in nodes.variables(fn.result)}
    found = {n for n in fn.drawn_from if n not in used}
    for s in nodes.walk(fn.body):
        if isinstance(s, nodes.Assign) and nodes.is_draw(s.expr):
            call = ast.parse(dict(s.expr.params)["text"], mode="eval").body
            receiver = getattr(call.func, "value", None)
            if isinstance(receiver, ast.Name) and receiver.id in params:
                found.add(receiver.id)
    return found


def is_effect_call(module, node) -> bool:
    """`print(...)`, `logging.info(...)`, `warnings.warn(...)`: run for what they show."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name) and func.id in _STATEMENT_CALLS and func.id not in module.functions \
            and func.id not in module.imports:
        return True
    qualified = module.qualified(func)
    return qualified is not None and qualified.startswith(_LOGGING)


def is_draw(module, node, lookup) -> bool:
    """A random draw: `np.random.<draw>(...)`, or `<name>.<draw>(...)` on a random state the
    function was given (a parameter or variable: never a number it differentiates)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    qualified = module.qualified(node.func)
    if qualified is not None:
        return qualified.startswith("numpy.random.") and node.func.attr in RANDOM_DRAWS
    receiver = node.func.value
    return node.func.attr in RANDOM_DRAWS and isinstance(receiver, ast.Name) and isinstance(lookup(receiver.id), Var)


class Renamed:
    """A source fragment written with the generated names: its text, the variables it reads
    (kept alive and computed before it), and the library modules it needs imported."""

    def __init__(self, text, reads, modules):
        self.text, self.reads, self.modules = text, reads, modules


def rename(module, node, lookup, refuse, what):
    """`node` with each of the function's names replaced by the variable that holds its value
    now (`lookup(name)`: the value the function's scopes bind it to, or None), library names
    spelled as the generated module imports them. `refuse(node, message)`
    makes the located error for a name the generated code cannot see (a helper, a loop
    variable read after its loop)."""
    reads, modules = [], set()

    class _Renamer(ast.NodeTransformer):
        local: tuple = ()  # names a lambda or comprehension inside binds (`key=lambda i: -abs(x[i])`)

        def visit_Attribute(self, node):
            qualified = module.qualified(node)
            if qualified is not None:
                return _library_name(qualified, modules)
            return self.generic_visit(node)

        def visit_Name(self, node):
            name = node.id
            if name in self.local:  # its own variable, as written
                return node
            value = lookup(name)
            if isinstance(value, Var):
                reads.append(value)
                return ast.Name(value.name, ast.Load())
            if isinstance(value, Const) and isinstance(value.value, Spelled):  # a helper's `dtype=np.float64`
                if value.value.text.startswith("np."):
                    modules.add("numpy")
                return ast.parse(value.value.text, mode="eval").body
            if isinstance(value, Const):
                return ast.Constant(value.value)
            if isinstance(value, TreeRef):  # (a part of) a structured parameter: read by its path
                if value.leaf is not None:
                    reads.append(value.leaf)
                    return ast.Name(value.leaf.name, ast.Load())
                if not value.spelled():  # (a run of parts, `x[1:]`, is read by its path too: soak 48003 #863)
                    raise refuse(node, f"a slice of the structured parameter '{value.root.name}' in {what} is not "
                                       "supported: name the parts you print")
                steps = [p for step in value.path
                         for p in ((step.lower, step.upper, step.step) if hasattr(step, "lower") else (step,))]
                reads.extend([value.root] + [step for step in steps if isinstance(step, Var)])
                return ast.parse(value.text(), mode="eval").body
            if isinstance(value, PartsOfAPath):  # parts of a structured parameter whose path no longer holds
                raise _about_a_name(refuse(node, value.message()))
            if isinstance(value, _LoopVariable):
                raise _about_a_name(refuse(node, f"'{name}' is read after its loop; gradgen does not support that"))
            if value is not None and not isinstance(value, FUNCTION_VALUES):  # a list kept while compiling, ...
                raise refuse(node, f"'{name}' holds a value gradgen keeps while compiling, which {what} cannot read")
            if name in module.constants and not isinstance(module.constants[name], (tuple, dict)):
                reads.append(Var(name))
                return node
            qualified = module.qualified(node)
            if qualified is not None:
                return _library_name(qualified, modules)
            if name in _BUILTINS:
                return node
            raise refuse(node, f"{what} may use the function's variables, module constants and library "
                               f"functions; '{name}' is none of these here")

        def visit_Lambda(self, node):
            args = node.args
            args.defaults = [self.visit(d) for d in args.defaults]  # (evaluated where the lambda is made)
            args.kw_defaults = [d if d is None else self.visit(d) for d in args.kw_defaults]
            every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
            node.body = self._inside(node.body, {a.arg for a in every})
            return node

        def _comprehension(self, node):
            first = node.generators[0]
            first.iter = self.visit(first.iter)  # (evaluated outside the comprehension)
            bound = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            for g in node.generators:
                g.ifs = [self._inside(c, bound) for c in g.ifs]
                if g is not first:
                    g.iter = self._inside(g.iter, bound)
            for field in ("elt", "key", "value"):
                if getattr(node, field, None) is not None:
                    setattr(node, field, self._inside(getattr(node, field), bound))
            return node

        visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

        def _inside(self, node, bound):
            """`node` visited where `bound` (a lambda's or comprehension's own variables) stay
            as written."""
            saved, self.local = self.local, self.local + tuple(bound)
            try:
                return self.visit(node)
            finally:
                self.local = saved

    renamed = _Renamer().visit(copy.deepcopy(node))
    unique = list(dict.fromkeys(reads))
    return Renamed(ast.unparse(renamed), tuple(unique), modules)


def spelling(qualified):
    """(text, module to import): `np.random.normal` and numpy for numpy.random.normal (as the
    generated module imports numpy), `logging.info` and logging for logging.info."""
    top, _, rest = qualified.partition(".")
    if top in _CANONICAL:
        return _CANONICAL[top] + ("." + rest if rest else ""), top
    return qualified, qualified.rpartition(".")[0] or top


def _library_name(qualified, modules):
    text, module = spelling(qualified)
    modules.add(module)
    return ast.parse(text, mode="eval").body


# Python's builtins code kept as written may name (`slice(a, b)`, `sorted(keys)`, `divmod`): all
# but the ones that run text as code, read input or reach the caller's frame
_BUILTINS = set(dir(builtins)) - {"exec", "eval", "compile", "open", "input", "__import__", "globals", "locals",
                                  "vars", "exit", "quit", "breakpoint", "help", "copyright", "credits", "license"}


def _about_a_name(error):
    """A refusal of what a name holds where it is read: said as it is, never replaced by what
    the lowering said of the whole expression (gradgen.frontend.inactive keeps Final ones)."""
    out = Final(*error.args)
    out.__dict__.update(error.__dict__)
    return out
