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


def test_a_placeholder_is_bound_before_its_loop_to_its_first_value_where_that_is_plain():
    """numba_spell.typed_placeholders: `x = None` saved before its loop's first value is bound
    to that value before the loop where it is plain arithmetic or zeros of a known shape
    (particle's inner gradient `dpotential_dx = np.zeros_like(x, dtype=float)`, respelled for
    numba; lstm's `x = current * extra_params[0]`); not where it calls anything else, or
    reads a name the loop binds first."""
    from gradgen.codegen.numba_spell import typed_placeholders

    fdef = ast.parse(textwrap.dedent('''
        def g(x, e, rows):
            d = None
            h = None
            s = None
            y = None
            x_stack = []
            while True:
                x_stack.append(d)
                d = np.zeros_like(x, dtype=float)
                h = e * 0.5 - rows[0]
                t = e + 1.0
                s = t * 2.0
                y = np.tanh(e)
                break
    ''')).body[0]
    edits = typed_placeholders(fdef)
    assert [(kind, statement.lineno, text) for (kind, statement), text in edits] == [
        ("insert", 8, "d = np.zeros_like(x, dtype=np.float64)[()]"), ("insert", 8, "h = e * 0.5 - rows[0]")]
