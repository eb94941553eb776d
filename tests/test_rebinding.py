"""A variable rebound to an expression of its own old value inside a loop or a branch (issue 20,
case 9): `v = v[::-1]`, `h = np.tanh(h) + h[-1]`, `v = v[1:]`, `g = h + g[-1]`.

Inside control flow a variable keeps one name, and so does its adjoint. The backward pass of
`x = e(x)` must read the adjoint of the new x into every contribution (to x's old value
too) before it resets that adjoint for the old x, and where x's shape changes from trip to
trip, each trip's adjoint has that trip's shape. Every program below is checked against
finite differences of the original function: the gradient, forward mode (jvp = grad . t)
and forward over reverse (hvp = the gradient's derivative along t), in loops (`for`,
`while`, nested, with `break`/`continue`), in branches inside loops and in branches alone,
over index reads, slices, reversals, transposes, reshapes, concatenations and matmuls.
"""

from __future__ import annotations

import inspect
import textwrap

import numpy as np
import pytest

import gradgen
from gradgen import CompileError, compile_source, load_module
from gradgen.codegen import emit

_RNG = np.random.default_rng(20)
V = np.array([0.3, 0.6, 1.5, 2.1])
H = _RNG.normal(size=(3, 3)) * 0.7
H23 = _RNG.normal(size=(2, 3)) * 0.7
H4 = _RNG.normal(size=(4, 4)) * 0.5
WEIGHTS = "np.arange(1.0, 5.0)"
GRID = "np.arange(9.0).reshape(3, 3)"

# (name, body of f, the point): half of them gave a wrong gradient (often zeros) or crashed
# (a broadcast error) before the fix; the others are their neighbours, kept right
PROGRAMS = [
    # ---- for loops: index reads, reversals, slices --------------------------------------
    ("reversal", f"""
def f(v):
    for t in range(2):
        v = v[::-1]
    return np.sum(v * {WEIGHTS})
""", V),
    ("reversal_scaled_three_trips", f"""
def f(v):
    for t in range(3):
        v = np.exp(v[::-1] * 0.3)
    return np.sum(v * {WEIGHTS})
""", V),
    ("last_row_read", """
def f(h):
    for t in range(2):
        h = np.tanh(h) + h[-1]
    return np.sum(h)
""", H),
    ("first_row_read", f"""
def f(h):
    for t in range(2):
        h = np.exp(h[::-1].T * 0.2) * h[0, :]
    return np.sum(h * {GRID})
""", H),
    ("column_slice_read", f"""
def f(h):
    for t in range(2):
        h = h[:, 1:2] * h + h[1:2, :]
    return np.sum(h * {GRID})
""", H),
    ("index_by_loop_variable", f"""
def f(v):
    for t in range(3):
        v = np.sqrt(v[::-1] + 1.0) + v[t]
    return np.sum(v * {WEIGHTS})
""", V),
    ("ellipsis_reversal", f"""
def f(h):
    for t in range(2):
        h = h[..., ::-1] * h[0, 0]
    return np.sum(h * {GRID})
""", H),
    ("conditional_expression", f"""
def f(v):
    for t in range(2):
        v = v[::-1] if v[0] > 0 else v[1:2] * v
    return np.sum(v * {WEIGHTS})
""", V),
    ("helper_inlined", f"""
def step(u):
    return np.tanh(u[::-1]) * u[-1]

def f(v):
    for t in range(2):
        v = step(v)
    return np.sum(v * {WEIGHTS})
""", V),
    ("loop_over_rows", """
def f(v):
    X = np.arange(12.0).reshape(3, 4) * 0.1
    for row in X:
        v = v[::-1] * row + v[0]
    return np.sum(v * v)
""", V),
    # ---- shapes that change from trip to trip ------------------------------------------
    ("shrinking_slice", """
def f(v):
    for t in range(2):
        v = v[1:]
    return np.sum(v * v)
""", V),
    ("shrinking_columns", """
def f(h):
    for t in range(2):
        h = h[:, 1:] * 2.0
    return np.sum(h * h)
""", H),
    ("shrinking_both_axes", """
def f(h):
    for t in range(2):
        h = h[1:, :-1] * h[0, 0]
    return np.sum(h * h)
""", H4),
    ("growing_concatenate", """
def f(v):
    for t in range(2):
        v = np.concatenate([v, v[:1] * 2.0])
    return np.sum(v * v)
""", V),
    ("reshape_and_transpose", f"""
def f(v):
    for t in range(2):
        v = v.reshape(2, -1)
        v = np.tanh(v.T).ravel()
    return np.sum(v * {WEIGHTS})
""", V),
    ("added_axis", f"""
def f(v):
    for t in range(2):
        v = v[:, None] * v[0]
        v = v[:, 0] * 2.0
    return np.sum(v * {WEIGHTS})
""", V),
    ("non_square_transpose", """
def f(h):
    for t in range(3):
        h = np.tanh(h.T)
    return np.sum(h * np.arange(6.0).reshape(3, 2))
""", H23),
    ("non_square_matmul", """
def f(h):
    for t in range(3):
        h = h.T @ (h @ h.T) * 0.5
    return np.sum(h * h)
""", H23),
    ("rank_falls_to_a_number", """
def f(h):
    for t in range(2):
        h = h[0] * h[-1]
    return np.sum(h)
""", H4),
    ("several_statements_per_trip", f"""
def f(v):
    for t in range(2):
        w = v[::-1]
        v = w * v[1]
        v = v[1:]
        v = np.concatenate([v, w[:1]])
    return np.sum(v * {WEIGHTS})
""", V),
    ("neighbour_fresh_value_of_changing_shape", """
def f(v):
    s = 0.0
    u = v
    for t in range(3):
        u = v[t:] * u[0]
        s = s + np.sum(u * u)
    return s
""", V),
    # ---- while loops, nested loops, break and continue ---------------------------------
    ("while_reversal", f"""
def f(v):
    k = 0
    while k < 3:
        v = np.sin(v[::-1]) + v[1]
        k = k + 1
    return np.sum(v * {WEIGHTS})
""", V),
    ("while_shrinking_until_short", """
def f(v):
    while v.shape[0] > 2:
        v = v[1:] * 2.0 + v[0]
    return np.sum(v * v)
""", V),
    ("while_true_break_shrinking", """
def f(v):
    while True:
        v = v[1:] * 1.5
        if v.shape[0] <= 2:
            break
    return np.sum(v * v)
""", V),
    ("break_after_reversal", f"""
def f(v):
    for t in range(4):
        v = v[::-1] * 1.5
        if np.sum(v) > 10.0:
            break
    return np.sum(v * {WEIGHTS})
""", V * 3.0),
    ("continue_before_reversal", f"""
def f(v):
    for t in range(4):
        if t == 1:
            continue
        v = v[::-1] * 1.5 + v[t]
    return np.sum(v * {WEIGHTS})
""", V),
    ("nested_row_read_and_transpose", """
def f(h):
    for i in range(2):
        for j in range(2):
            h = np.tanh(h) + h[0, :]
        h = h.T * h[:, 1]
    return np.sum(h * h)
""", H),
    ("nested_shrink_then_grow", """
def f(v):
    for i in range(2):
        for j in range(2):
            v = v[1:] * 2.0
        v = np.concatenate([v, v * v])
    return np.sum(v * v)
""", V),
    ("nested_while", f"""
def f(v):
    for i in range(2):
        k = 0
        while k < 2:
            v = v[::-1] * v + v[k]
            k = k + 1
    return np.sum(v * {WEIGHTS})
""", V),
    # ---- branches inside loops, and branches alone -------------------------------------
    ("branch_in_loop_reads_other", """
def f(h):
    g = h * 2.0
    for t in range(2):
        if h[0, 0] > 0:
            g = h + g[-1]
        else:
            g = g[::-1]
    return np.sum(g * g)
""", np.abs(H)),
    ("branch_in_nested_loops", f"""
def f(h):
    for i in range(2):
        for j in range(2):
            if (i + j) % 2 == 0:
                h = h[::-1].T * h[0]
            else:
                h = h + h[:, 1:2]
    return np.sum(h * {GRID})
""", H),
    ("branch_in_while", f"""
def f(v):
    k = 0
    while k < 2:
        if np.sum(v) > 0.0:
            v = np.abs(v[::-1] - 1.0)
        else:
            v = v * 1.1
        k = k + 1
    return np.sum(v * {WEIGHTS})
""", V),
    ("shape_chosen_by_branch_in_loop", """
def f(v):
    for t in range(3):
        if v.shape[0] > 2:
            v = v[1:] * v[0]
        else:
            v = np.concatenate([v, v[::-1]])
    return np.sum(v * v)
""", V),
    ("branch_last_row", """
def f(h):
    g = h * 2.0
    if h[0, 0] > 0:
        g = h + g[-1]
    return np.sum(g * g)
""", np.abs(H)),
    ("branch_reversal", f"""
def f(v):
    if v[0] > 0:
        v = v[::-1]
    return np.sum(v * {WEIGHTS})
""", V),
    ("branch_shapes_differ", """
def f(v):
    if v[0] > 0:
        v = v[1:]
    else:
        v = v[:-1] * v[0]
    return np.sum(v * v)
""", V),
    ("elif_chain", """
def f(v):
    if v[0] > 5:
        v = v[1:]
    elif v[1] > 0:
        v = v[::-1] * v[:1]
    else:
        v = v * 2.0
    return np.sum(v * v)
""", V),
    ("branch_transpose_row", f"""
def f(h):
    g = h * 1.5
    if h[0, 1] < 5.0:
        g = np.transpose(g)[::-1] * g[2, 1]
    return np.sum(g * {GRID}) + np.sum(h)
""", H),
    # ---- writes into the array itself --------------------------------------------------
    ("write_reads_own_column", f"""
def f(h):
    h = h * 1.0
    for t in range(2):
        h[:, 0] = h[:, 1] * h[:, 0]
    return np.sum(h * {GRID})
""", H),
    ("write_after_shrink", """
def f(v):
    x = v * 1.0
    for t in range(2):
        x = x[1:] * 1.0
        x[0] = x[0] * x[-1]
    return np.sum(x * x)
""", V),
]


def _compiled(source, kinds=("grad", "jvp", "hvp"), shapes=None, name="rebinding_module"):
    with emit.unformatted():
        c = compile_source(source, "rebinding.py", None, None, kinds, shapes=shapes)
    return load_module(c.text, name)


def _differences(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[j] += eps
        down[j] -= eps
        g[j] = (f(up) - f(down)) / (2 * eps)
    return g


def _program(body):
    source = "import numpy as np\n" + textwrap.dedent(body)
    space = {}
    exec(compile(source, "rebinding.py", "exec"), space)
    return source, space["f"]


def _tangent(fn):
    return list(inspect.signature(fn).parameters)[-1]


@pytest.mark.parametrize("name,body,point", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_gradient_jvp_and_hvp_agree_with_finite_differences(name, body, point):
    source, f = _program(body)
    m = _compiled(source, name=f"rebinding_{name}")
    x = np.array(point, dtype=float)
    grad = m.f_grad(x.copy())
    np.testing.assert_allclose(grad, _differences(f, x), rtol=1e-6, atol=1e-6)
    t = np.random.default_rng(1).standard_normal(x.shape)
    value, derivative = m.f_jvp(x.copy(), **{_tangent(m.f_jvp): t})
    assert np.isclose(value, f(x.copy()), rtol=1e-12)
    assert np.isclose(derivative, np.sum(grad * t), rtol=1e-9, atol=1e-12)
    h = 1e-5
    along = (m.f_grad(x + h * t) - m.f_grad(x - h * t)) / (2 * h)
    np.testing.assert_allclose(m.f_hvp(x.copy(), **{_tangent(m.f_hvp): t}), along, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["reversal", "last_row_read", "shrinking_slice", "growing_concatenate",
                                  "non_square_matmul", "branch_shapes_differ", "write_after_shrink"])
def test_stated_shapes_change_nothing(name):
    """With the parameter's shape stated (as --shapes does), the sums and matmuls written out
    exactly must still follow the shape each trip has."""
    body, point = next((b, p) for n, b, p in PROGRAMS if n == name)
    source, f = _program(body)
    x = np.array(point, dtype=float)
    param = next(iter(inspect.signature(f).parameters))
    m = _compiled(source, ("grad",), shapes={param: x.shape}, name=f"rebinding_shaped_{name}")
    np.testing.assert_allclose(m.f_grad(x.copy()), _differences(f, x), rtol=1e-6, atol=1e-6)


# ---- the issue's four programs, with their exact answers --------------------------------

def reversed_twice(v):
    for t in range(2):
        v = v[::-1]
    return np.sum(v * np.array([1.0, 2.0, 3.0]))


def tanh_plus_last_row(h):
    for t in range(2):
        h = np.tanh(h) + h[-1]
    return np.sum(h)


def shrunk_twice(v):
    for t in range(2):
        v = v[1:]
    return np.sum(v * v)


def last_row_in_branch(h):
    g = h * 2.0
    if h[0, 0] > 0:
        g = h + g[-1]
    return np.sum(g * g)




def test_the_issues_programs_through_the_python_api(fresh_cache):
    np.testing.assert_allclose(gradgen.grad(reversed_twice)(np.array([1.0, 2.0, 5.0])), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(gradgen.grad(shrunk_twice)(np.array([1.0, 2.0, 5.0, 7.0])), [0.0, 0.0, 10.0, 14.0])
    h = np.array([[0.3, -0.8], [1.1, 0.4]])
    # h1 = tanh(h) + h[-1]; h2 = tanh(h1) + h1[-1]; f = sum(h2): row i of dh2 is ones, and
    # the last row of h1 also receives the column sums
    h1 = np.tanh(h) + h[-1]
    d1 = (1 - np.tanh(h1) ** 2) + np.array([[0.0, 0.0], [2.0, 2.0]])
    want = d1 * (1 - np.tanh(h) ** 2)
    want[-1] += d1.sum(axis=0)
    np.testing.assert_allclose(gradgen.grad(tanh_plus_last_row)(h), want, rtol=1e-12)
    # g = h + 2 h[-1] (row broadcast): df/dh = 2 g, and the last row gets 2 * (the column sums of 2 g)
    h = np.abs(h)
    g = h + 2.0 * h[-1]
    want = 2 * g
    want[-1] += 2.0 * (2 * g).sum(axis=0)
    np.testing.assert_allclose(gradgen.grad(last_row_in_branch)(h), want, rtol=1e-12)


def test_the_backward_trip_keeps_the_new_adjoint_before_making_the_old():
    source = "import numpy as np\n" + textwrap.dedent(PROGRAMS[2][1])
    with emit.unformatted():
        text = compile_source(source, "rebinding.py").text
    trip = text[text.index("for t in reversed(range(2)):"):text.index("return df_dh")]
    assert [line.strip() for line in trip.splitlines()[1:8]] == [
        "tanh_h = tanh_h_stack.pop()",  # (the value the trip made, popped as its backward sweep starts)
        "h = h_stack.pop()",
        "# line 5: h = np.tanh(h) + h[-1]",
        "df_dtanh_h = unbroadcast(df_dh, tanh_h)",
        "df_dh_new = df_dh",
        "df_dh = np.zeros_like(h, dtype=float)",
        "df_dh[-1] = unbroadcast(df_dh_new, h[-1])",
    ]


# ---- writing into a Python list: refused where it was an internal error -------------------

@pytest.mark.parametrize("where,write", [
    ("", "hs[1] = v * hs[0]"),
    ("if v[0] > 0:\n    ", "hs[1] = hs[1][::-1] * hs[0]"),
    ("for t in range(2):\n    ", "hs[1] += hs[0]"),
])
def test_writing_into_a_list_is_a_located_error(where, write):
    body = textwrap.indent(f"hs = [v, v * 2.0]\n{where}{write}\nreturn np.sum(hs[1])", "    ")
    source = f"import numpy as np\n\ndef f(v):\n{body}\n"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "bad.py")
    line = 6 if where else 5
    column = 9 if where else 5
    assert str(caught.value).splitlines()[0] == (
        f"bad.py:{line}:{column}: writing into the list 'hs' is not supported: append the new values to a list "
        "of their own, or write into np.stack(hs)")


def test_programs_cover_every_form_the_issue_names():
    """The list above keeps the forms issue 20 names (a guard against trimming it)."""
    names = {name for name, _, _ in PROGRAMS}
    bodies = "".join(body for _, body, _ in PROGRAMS)
    for needle in ("for ", "while ", "if ", "h[-1]", "h[0, :]", "[:, 1:", "[::-1]", ".T", "v[1:]",
                   "np.concatenate", ".reshape", "@", "break", "continue"):
        assert needle in bodies, needle
    assert len(names) == len(PROGRAMS)
