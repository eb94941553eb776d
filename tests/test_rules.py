"""The rule table checks itself: every smooth scalar rule against sympy.diff."""

import random

import pytest
import sympy

from gradgen.ir.nodes import Var
from gradgen.rules.table import TABLE, is_scalar_rule
from gradgen.verify.check import _Symbolic

RULES = [(name, arity) for name, prim in sorted(TABLE.items()) if is_scalar_rule(prim)
         for arity in ((prim.arity,) if prim.arity is not None else (2, 3))]


def _rule(prim, i):
    return prim.vjp[0](i) if prim.arity is None else prim.vjp[i]


def _zero_floor_derivatives(expr):
    """sympy leaves d floor(u)/du unevaluated; it is 0 almost everywhere (mod's rule)."""
    return expr.replace(lambda e: isinstance(e, (sympy.Subs, sympy.Derivative)) and e.has(sympy.floor),
                        lambda e: sympy.Integer(0)).doit()


@pytest.mark.parametrize("name,arity", RULES)
def test_rule_matches_sympy_diff(name, arity):
    prim = TABLE[name]
    xs = sympy.symbols(f"x0:{arity}", real=True)
    g = sympy.Symbol("g", real=True)
    out = prim.sympy(*xs)
    rng = random.Random(name)
    for _ in range(5):
        # inside every primitive's domain: (0.1, 0.9) suits log, sqrt, asin, acos, pow, mod
        numbers = {x: sympy.Float(rng.uniform(0.1, 0.9), 30) for x in xs}
        numbers[g] = sympy.Float(rng.uniform(-2, 2), 30)
        env = {"g": g, "out": out, **{f"x{i}": x for i, x in enumerate(xs)}}
        for i in range(arity):
            rule = _rule(prim, i)
            if rule is None:
                continue
            built = rule(Var("g"), Var("out"), *[Var(f"x{k}") for k in range(arity)])
            got = _Symbolic(env, numbers).expr(built)
            want = _zero_floor_derivatives(g * sympy.diff(out, xs[i]))
            got_n, want_n = (float(e.subs(numbers).evalf(30)) for e in (got, want))
            assert got_n == pytest.approx(want_n, rel=1e-12, abs=1e-12), (name, i)


def test_every_smooth_primitive_has_a_rule_per_input():
    for name, prim in TABLE.items():
        if prim.kind == "smooth":
            assert prim.vjp is not None, name
            if prim.arity is not None:
                assert len(prim.vjp) == prim.arity, name


def test_table_covers_the_issue_primitives():
    wanted = """exp log log2 log10 log1p expm1 sqrt sin cos tan asin acos atan atan2 sinh cosh
                tanh erf hypot pow abs min max sigmoid logb""".split()
    assert [w for w in wanted if not is_scalar_rule(TABLE[w])] == []
