"""gradgen/codegen/numba_bound.py: the names certainly bound where each statement of a
generated function starts (the rule an adjoint's zeros under numba need: a value bound there)."""

import ast
import textwrap

from gradgen.codegen.numba_bound import bound_before

SOURCE = textwrap.dedent('''
    def g(a, *rest, k=1, **more):
        x = a
        if a > 0:
            y = 1
            z = 2
        else:
            y = 3
            return y
        first = 0
        for i in range(a):
            inside = i
            after_inside = inside
            if i:
                break
            tail = 1
        while True:
            w = 1
            break
        last = 0
''')


def _at(tree):
    fdef = tree.body[0]
    found = bound_before(fdef)
    return {ast.unparse(s).splitlines()[0]: set(found[id(s)]) for s in ast.walk(fdef) if id(s) in found}


def test_names_bound_where_each_statement_starts():
    at = _at(ast.parse(SOURCE))
    params = {"a", "rest", "k", "more"}
    assert at["x = a"] == params
    assert at["z = 2"] == params | {"x", "y"}
    assert at["return y"] == params | {"x", "y"}
    # (the else returns: after the if, what the if-branch bound)
    assert at["first = 0"] == params | {"x", "y", "z"}
    assert at["inside = i"] == params | {"x", "y", "z", "first", "i"}
    assert at["tail = 1"] == params | {"x", "y", "z", "first", "i", "inside", "after_inside"}
    # (a loop may run no trip: nothing it binds is certain after it)
    assert at["while True:"] == params | {"x", "y", "z", "first"}
    assert at["last = 0"] == params | {"x", "y", "z", "first"}


def test_an_if_whose_branches_both_bind_a_name_binds_it():
    fdef = ast.parse("def g(a):\n    if a:\n        b = 1\n    else:\n        b, c = 2, 3\n    d = b\n").body[0]
    assert bound_before(fdef)[id(fdef.body[1])] == {"a", "b"}
