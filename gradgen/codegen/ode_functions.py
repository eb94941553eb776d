"""The functions `scipy.integrate.odeint` calls in a generated module: each function of the
user's file a compiled function integrates, as the file writes it, and its vector-Jacobian
product, which the gradient's adjoint solve calls (gradgen.frontend.odeint read them;
gradgen.rules.integrate is the rule)."""

from __future__ import annotations

import ast

from gradgen.codegen.emit import HELPERS
from gradgen.ir.nodes import Call, expressions, subexpressions, walk


def used(results, module):
    """(function texts, constants they read, modules they import, generated helpers they call)
    for the odeint calls of `results`' functions, each function once, in the order met."""
    known = getattr(module, "ode_functions", {})
    names = []
    for compiled in results:
        for stmt in walk(compiled.ir.body):
            for expr in expressions(stmt):
                for node in subexpressions(expr):
                    if isinstance(node, Call) and node.prim == "odeint":
                        name = dict(node.params)["func"].text
                        if name not in names:
                            names.append(name)
    texts, constants, imports, helpers = [], set(), set(), set()
    for name in names:
        made = known[name]
        texts += [t for t in made.texts if t not in texts] + ([made.vjp_text] if made.vjp_text else [])
        constants |= made.constants
        imports |= made.imports
        helpers |= _helpers_called(made.vjp_text) if made.vjp_text else set()
    return texts, constants, imports, helpers


def _helpers_called(text):
    """The generated helpers (unbroadcast, matmul_grad_a, ...) a vjp's text calls."""
    return {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name) and n.id in HELPERS}
