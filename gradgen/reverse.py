"""Stage 4, reverse: the backward pass, statement by statement in reverse.

For each forward statement `z = expr` whose adjoint is nonzero, the upstream gradient
`dL_dz` is pushed down `expr`'s tree: at each primitive the table's rule turns the
gradient of the output into the gradient of each input, and every active variable reached
receives a contribution. The first contribution to a variable defines its adjoint (`=`),
later ones accumulate (`+=`): the multivariable chain rule's sum over paths. The result's
own adjoint is the symbolic one, so `dL_dyhat = 2 * (yhat - y)` has no `1 *`.

Only the branch a conditional expression took receives a gradient: its contributions are
guarded by the same test (`dL_dx = ... if test else 0.0`), which also keeps a guarded
contribution from being evaluated where its branch would have failed.
"""

from __future__ import annotations

from gradgen import simplify
from gradgen.ir import Assign, Call, Comment, Cond, Const, Var
from gradgen.primitives import TABLE


class Adjoints:
    """The adjoint of every variable so far: absent (zero), a named variable, or the seed 1."""

    def __init__(self, namer, of):
        self.namer = namer
        self.of = of
        self.of_var = {}
        self.statements = []

    def seed(self, name):
        self.of_var[name] = Const(1)

    def get(self, name):
        return self.of_var.get(name)

    def add(self, name, contribution, stmt):
        if simplify.is_zero(contribution):
            return
        contribution = as_float(contribution)
        current = self.of_var.get(name)
        if isinstance(contribution, Const) and (current is None or isinstance(current, Const)):
            # a constant adjoint stays symbolic (`dL_da = 1` is never written; `1 *` folds away)
            self.of_var[name] = contribution if current is None else simplify.add(current, contribution)
            return
        if current is None:
            adj = self.namer.adjoint(self.of, name)
            self.statements.append(Assign(adj, contribution, stmt.line))
            self.of_var[name] = Var(adj)
        elif isinstance(current, Var):
            self.statements.append(Assign(current.name, contribution, stmt.line, accumulate=True))
        else:  # a constant so far (the seed, or a constant path): now it becomes a variable
            adj = self.namer.adjoint(self.of, name)
            self.statements.append(Assign(adj, simplify.add(current, contribution), stmt.line))
            self.of_var[name] = Var(adj)


def backward(fn, activity, namer, of):
    """The backward statements of `fn`, and the adjoints they leave for each variable."""
    adjoints = Adjoints(namer, of)
    result = fn.result
    if isinstance(result, Var) and result.name in activity.active:
        adjoints.seed(result.name)
    elif not isinstance(result, Var):
        pass  # a constant result: every gradient is zero
    cited = None
    for stmt in reversed(fn.body):
        g = adjoints.get(stmt.target)
        if g is None:
            continue
        before = len(adjoints.statements)
        push_into(stmt.expr, g, (), activity.active, adjoints, stmt, out=Var(stmt.target))
        if len(adjoints.statements) > before and provenance(stmt) != cited:
            cited = provenance(stmt)  # one comment for the statements a tuple assignment made
            adjoints.statements.insert(before, Comment(cited))
    return adjoints


def provenance(stmt):
    """The comment citing the source statement a backward block undoes."""
    return f"line {stmt.line}: {stmt.source}"


def push_into(expr, g, guards, active, adjoints, stmt, out=None):
    """Send gradient `g` of `expr` (whose value is `out`) to the active variables inside it."""
    if isinstance(expr, Var):
        if expr.name in active:
            adjoints.add(expr.name, _guarded(guards, g), stmt)
        return
    if isinstance(expr, Cond):
        push_into(expr.body, g, guards + (expr.test,), active, adjoints, stmt)
        push_into(expr.orelse, g, guards + (simplify.negate(expr.test),), active, adjoints, stmt)
        return
    if not isinstance(expr, Call):
        return
    prim = TABLE[expr.prim]
    if prim.kind != "smooth" or prim.vjp is None:
        return
    out = expr if out is None else out
    for i, arg in enumerate(expr.args):
        if not _reaches(arg, active):
            continue
        rule = prim.vjp[0](i) if prim.arity is None else prim.vjp[i]
        if rule is None:
            continue
        gi = _in_namespace(rule(g, out, *expr.args), expr.ns)
        arg_guards = guards
        while isinstance(gi, Cond) and simplify.is_zero(gi.orelse):  # a rule's own test (max, min)
            arg_guards, gi = arg_guards + (gi.test,), gi.body
        push_into(arg, gi, arg_guards, active, adjoints, stmt)


def _reaches(expr, active):
    from gradgen.ir import variables

    return any(v.name in active for v in variables(expr))


def _guarded(guards, g):
    if not guards:
        return g
    test = guards[0] if len(guards) == 1 else Call("and", tuple(guards), "op")
    return Cond(test, as_float(g), Const(0.0))


def as_float(expr):
    """A gradient that is a bare constant is written as a float (`1.0`, never `1`)."""
    if isinstance(expr, Const) and type(expr.value) is int:
        return Const(float(expr.value))
    if isinstance(expr, Cond):
        return Cond(expr.test, as_float(expr.body), as_float(expr.orelse))
    return expr


def _in_namespace(expr, ns):
    """Give the calls a rule created the namespace of the call they differentiate."""
    if ns not in ("math", "numpy"):
        return expr
    if isinstance(expr, Call):
        args = tuple(_in_namespace(a, ns) for a in expr.args)
        return Call(expr.prim, args, expr.ns or ns, expr.loc)
    if isinstance(expr, Cond):
        return Cond(_in_namespace(expr.test, ns), _in_namespace(expr.body, ns),
                    _in_namespace(expr.orelse, ns))
    return expr
