"""Repeated indices follow NumPy (issue 20, cases 4 and 13).

A write through an index that repeats an element keeps NumPy's last write
(`y[[0, 1, 1]] = v` keeps v[2] in y[1]), so only the element that survives gets a gradient,
in the reverse pass and in forward mode; `y[idx] += v` is `y[idx] = y[idx] + v`, the last
write again (np.add.at is the one that adds up). A read through such an index adds every
pick (`np.sum(W[0][idx])` with idx = [2, 0, 2]: d/dW[0, 2] = 2), in one subscript or in a
chain of them. A list of integers is a fancy index, as NumPy reads it.

Every program is checked against central differences of itself, and its forward mode
against the checked gradient (jvp = grad . t) and against differences of the gradient (hvp).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.codegen import emit
from gradgen.errors import CompileError

X5 = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
W34 = np.arange(12.0).reshape(3, 4) / 3 + 1
V43 = np.arange(12.0).reshape(4, 3) / 5 - 1
WEIGHTS = "np.array([1.0, 2.0, 3.0, 4.0, 5.0])"

# name -> (source of f, its arguments, the parameters to differentiate)
WRITES = {
    # case 4 as filed: NumPy keeps x[2] ** 2 in y[1], so x[1] gets nothing
    "list_variable": ("""
def f(x):
    y = np.zeros(5)
    idx = [0, 1, 1, 2]
    y[idx] = x[:4] ** 2
    return np.sum(y * np.array([1.0, 1.0, 1.0, 1.0, 1.0]))
""", (X5,), None),
    "array_constant": (f"""
def f(x):
    y = np.zeros(5)
    idx = np.array([0, 1, 1, 2])
    y[idx] = x[:4] ** 3
    return np.sum(y * {WEIGHTS})
""", (X5,), None),
    "list_literal": (f"""
def f(x):
    y = np.zeros(5)
    y[[0, 1, 1, 2]] = np.sin(x[:4])
    return np.sum(y * {WEIGHTS})
""", (X5,), None),
    "index_parameter": (f"""
def f(x, idx):
    y = np.zeros(5)
    y[idx] = x[:4] ** 3
    return np.sum(y * {WEIGHTS})
""", (X5, np.array([3, 1, 1, 3])), ["x"]),
    "negative_index_repeats": (f"""
def f(x):
    y = np.zeros(5)
    y[[4, 0, -1]] = x[:3] ** 2
    return np.sum(y * {WEIGHTS})
""", (X5,), None),
    "a_number_broadcast": (f"""
def f(x):
    y = x * 1.0
    y[[1, 3, 1]] = x[0] ** 2
    return np.sum(y ** 2 * {WEIGHTS})
""", (X5,), None),
    "rows_of_a_matrix": ("""
def f(V):
    M = np.zeros((3, 3))
    idx = [0, 2, 2, 1]
    M[idx] = V ** 2
    return np.sum(M * np.arange(9.0).reshape(3, 3))
""", (V43,), None),
    "row_and_column": ("""
def f(x):
    M = np.ones((3, 3))
    idx = np.array([0, 1, 1, 2])
    M[idx, 1] = x[:4] ** 2
    return np.sum(M ** 2 * np.arange(9.0).reshape(3, 3))
""", (X5,), None),
    "two_index_arrays": ("""
def f(x):
    M = np.zeros((3, 3))
    M[[0, 1, 1, 2, 1], [1, 2, 2, 0, 0]] = x ** 2
    return np.sum(np.tanh(M) * np.arange(9.0).reshape(3, 3))
""", (X5,), None),
    "columns_after_a_slice": ("""
def f(V):
    M = np.zeros((4, 4))
    M[:, [3, 0, 3]] = V * V
    return np.sum(M * np.arange(16.0).reshape(4, 4))
""", (V43,), None),
    "augmented_write": (f"""
def f(x):
    y = x * 1.0
    idx = np.array([0, 1, 1, 2])
    y[idx] += x[:4] ** 2
    return np.sum(y ** 2 * {WEIGHTS})
""", (X5,), None),
    "augmented_list_literal": (f"""
def f(x):
    y = x * 2.0
    y[[4, 4, 0]] *= x[1:4]
    return np.sum(y * {WEIGHTS})
""", (X5,), None),
    "inside_a_loop": (f"""
def f(x):
    y = x * 1.0
    idx = [0, 1, 1, 2]
    for t in range(3):
        y[idx] = np.tanh(y[1:]) * x[t]
    return np.sum(y * {WEIGHTS})
""", (X5 / 5,), None),
    "inside_a_loop_augmented": (f"""
def f(x):
    y = np.zeros(5)
    for t in range(2):
        y[[t, 2, 2]] += x[t:t + 3] * x[t]
    return np.sum(y ** 2 * {WEIGHTS})
""", (X5 / 5,), None),
    "under_a_branch": (f"""
def f(x, idx):
    y = x * 1.0
    if x[0] > 0:
        y[idx] = x[1:] ** 2
    return np.sum(y * y)
""", (X5, np.array([2, 2, 0, 2])), ["x"]),
    "into_a_parameter_copy": ("""
def f(W):
    Z = W.copy()
    Z[[0, 0], 1:] = W[1:, :3] * 2.0
    return np.sum(Z ** 2)
""", (W34,), None),
}

READS = {
    # case 13 as filed: W[0][idx] is W[0, idx], duplicates included
    "case_13": ("""
def f(W):
    idx = [2, 0, 2]
    return np.sum(W[0][idx])
""", (W34,), None),
    "row_then_array": ("""
def f(W):
    idx = np.array([2, 0, 2])
    return np.sum(W[0][idx] ** 2)
""", (W34,), None),
    "row_then_literal": ("""
def f(W):
    return np.sum(W[1][[3, 3, 0]] ** 3)
""", (W34,), None),
    "column_then_array": ("""
def f(W):
    idx = np.array([2, 0, 2])
    return np.sum(W[:, 1][idx] ** 2)
""", (W34,), None),
    "array_then_array": ("""
def f(W):
    idx = np.array([2, 0, 2])
    idx2 = np.array([1, 1, 0])
    return np.sum(W[idx][idx2] ** 2)
""", (W34,), None),
    "list_then_list": ("""
def f(x):
    idx = [4, 0, 4, 1]
    idx2 = [0, 2, 2]
    return np.sum(np.exp(x[idx][idx2]))
""", (X5 / 5,), None),
    "array_then_column": ("""
def f(W):
    idx = np.array([2, 0, 2])
    return np.sum(W[idx][:, 0] ** 2)
""", (W34,), None),
    "array_then_number": ("""
def f(W):
    idx = np.array([2, 0, 2])
    return np.sum(W[idx][0] ** 2)
""", (W34,), None),
    "row_then_parameter": ("""
def f(W, idx):
    return np.sum(W[0][idx] ** 2)
""", (W34, np.array([1, 1, 3])), ["W"]),
    "parameter_then_row": ("""
def f(W, idx):
    return np.sum(W[idx][1] ** 2)
""", (W34, np.array([2, 2, 0])), ["W"]),
    "mask_then_row_beside_a_whole_use": ("""
def f(W):
    mask = W[:, 0] > 1.5
    return np.sum(W[mask][0] ** 2)
""", (W34,), None),
    "a_local_array_row_then_list": ("""
def f(W):
    Z = np.tanh(W)
    idx = [3, 1, 3]
    return np.sum(Z[2][idx] * Z[0][idx])
""", (W34 / 3,), None),
    "rows_in_a_loop_then_array": ("""
def f(W):
    idx = np.array([0, 3, 3])
    s = 0.0
    for i in range(3):
        s = s + np.sum(W[i][idx] ** 2) * (i + 1)
    return s
""", (W34,), None),
    "a_part_of_a_list_parameter": ("""
def f(Ws):
    idx = np.array([1, 1, 0])
    return np.sum(Ws[1][idx] ** 2) + np.sum(Ws[0])
""", ([X5[:3], X5[2:]],), None),
}


def _compiled(source, kinds, name):
    with emit.unformatted():
        c = compile_source("import numpy as np\n" + source, "repeated.py", None, None, kinds)
    return c, load_module(c.text, name)


def _flat(value):
    if isinstance(value, (list, tuple)):
        return np.concatenate([_flat(v) for v in value])
    return np.ravel(np.asarray(value, float))


def _axpy(x, t, h):
    if isinstance(x, (list, tuple)):
        return type(x)(_axpy(a, b, h) for a, b in zip(x, t))
    return x + h * t


def _like(x, rng):
    if isinstance(x, (list, tuple)):
        return type(x)(_like(v, rng) for v in x)
    return rng.standard_normal(np.shape(x))


def _numeric_grad(f, args, i, h=1e-6):
    """Central differences of f in argument i (an array, or a list of arrays)."""
    flat = _flat(args[i])
    out = np.zeros_like(flat)
    for k in range(flat.size):
        e = np.zeros_like(flat)
        e[k] = h
        step = _unflat(e, args[i])
        plus, minus = list(args), list(args)
        plus[i], minus[i] = _axpy(args[i], step, 1.0), _axpy(args[i], step, -1.0)
        out[k] = (f(*plus) - f(*minus)) / (2 * h)
    return out


def _unflat(flat, like):
    if isinstance(like, (list, tuple)):
        parts, at = [], 0
        for item in like:
            parts.append(_unflat(flat[at:at + np.size(item)], item))
            at += np.size(item)
        return type(like)(parts)
    return flat.reshape(np.shape(like))


def _original(source):
    namespace = {}
    exec("import numpy as np\n" + source, namespace)
    return namespace["f"]


def _check(name, source, args, wrt):
    f = _original(source)
    c, m = _compiled(source if wrt is None else source, ("grad", "jvp", "hvp"), f"repeated_{name}")
    params = [p.name for p in c.functions[0].ir.params]
    wrt = wrt or params
    chosen = [params.index(p) for p in wrt]
    g = m.f_grad(*copy.deepcopy(args))
    g = g if len(c.functions[0].wrt) > 1 else (g,)
    g = [gi for gi, p in zip(g, c.functions[0].wrt) if p in wrt]
    for gi, i in zip(g, chosen):  # the gradient: against differences of the user's own f
        np.testing.assert_allclose(_flat(gi), _numeric_grad(f, args, i), rtol=1e-6, atol=1e-6)
    rng = np.random.default_rng(5)
    t = {p: _like(args[params.index(p)], rng) if p in wrt else 0.0 * np.asarray(args[params.index(p)])
         for p in c.functions[0].wrt}
    tangents = {f"d{p}": t[p] for p in c.functions[0].wrt}
    _, derivative = m.f_jvp(*copy.deepcopy(args), **tangents)
    want = sum(float(np.dot(_flat(gi), _flat(t[p]))) for gi, p in zip(g, wrt))
    np.testing.assert_allclose(derivative, want, rtol=1e-9, atol=1e-9)  # jvp = grad . t
    h = 1e-5
    moved = [[_axpy(a, t[p], s * h) if p in wrt else a for a, p in zip(args, params)] for s in (1, -1)]
    plus, minus = (m.f_grad(*copy.deepcopy(a)) for a in moved)
    product = m.f_hvp(*copy.deepcopy(args), **tangents)
    np.testing.assert_allclose(_flat(product), (_flat(plus) - _flat(minus)) / (2 * h), rtol=1e-4, atol=1e-6)
    return c.text


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_write_through_a_repeated_index_credits_only_the_last_write(name):
    _check(name, *WRITES[name])


@pytest.mark.parametrize("name", sorted(READS))
def test_a_read_through_a_repeated_index_adds_every_pick(name):
    _check(name, *READS[name])


# ---- the cases as filed, through the Python API ---------------------------------------------

def _module(tmp_path, monkeypatch, source, name):
    (tmp_path / f"{name}.py").write_text("import numpy as np\n" + source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    return __import__(name)


def test_case_4_the_overwritten_write_gets_no_gradient(tmp_path, monkeypatch):
    import gradgen

    user = _module(tmp_path, monkeypatch, WRITES["list_variable"][0], "case_4_writes")
    np.testing.assert_array_equal(gradgen.grad(user.f)(X5), [2.0, 0.0, 6.0, 8.0, 0.0])


def test_case_13_a_chained_subscript_adds_both_picks(tmp_path, monkeypatch):
    import gradgen

    user = _module(tmp_path, monkeypatch, READS["case_13"][0], "case_13_reads")
    W = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(gradgen.grad(user.f)(W), [[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])


# ---- an index that cannot repeat keeps the plain output ---------------------------------------

UNIQUE = f"""
def f(x):
    y = x * 1.0
    idx = [0, 2, 3]
    y[idx] = x[2:] ** 2
    y[[-1, -2]] = x[:2] ** 3
    y[1:3] = x[:2] * 2.0
    mask = x > 2.5
    y[mask] = x[mask] * 3.0
    return np.sum(y * {WEIGHTS})
"""


def test_distinct_constants_slices_and_masks_read_the_gradient_plainly():
    text = _check("unique", UNIQUE, (X5,), None)
    grad = text[text.index("def f_grad"):text.index("def f_value_and_grad")]
    assert "last_writes" not in grad and "np.add.at" not in grad
    assert "unbroadcast(df_dy[idx] * 2 * x[2:], x[2:])" in grad


def test_an_index_that_may_repeat_asks_numpy_which_write_survives():
    text = _check("array_constant", *WRITES["array_constant"])
    assert "df_dx[:4] = unbroadcast(last_writes(df_dy, idx) * 3 * x[:4] ** 2, x[:4])" in text
    # the forward mode of the Hessian-vector product carries the same choice
    hvp = text[text.index("def f_hvp"):]
    assert "last_writes(ddf_dy, idx)" in hvp


def test_last_writes_agrees_with_numpy_on_every_layout():
    """The helper's answer is the write NumPy keeps, whatever the index's layout."""
    namespace = {"np": np}
    exec(emit.HELPERS["last_writes"][1], namespace)
    last_writes = namespace["last_writes"]
    rng = np.random.default_rng(0)
    rows, cols = np.array([0, 2, 2, 1, 0]), np.array([1, 3, 3, 0, 1])
    for index in ([1, 1, 3], (rows, cols), (slice(None), [3, 0, 3]), ([[0, 0], [2, 0]], 1), rows[:4] % 2 == 0):
        g = rng.standard_normal((4, 4))
        v = rng.standard_normal(np.shape(g[index]))
        kept = np.zeros((4, 4))
        kept[index] = v
        # the sum of g over the result is the sum of g at what survived: v's gradient is last_writes
        assert np.sum(g * kept) == pytest.approx(np.sum(last_writes(g, index) * v))


# ---- what is refused says what to write ---------------------------------------------------------

def test_np_add_at_is_refused_with_the_loop_that_adds_every_repeat():
    source = "import numpy as np\n\ndef f(x):\n    y = np.zeros(5)\n    np.add.at(y, [0, 1, 1], x[:3])\n" \
             "    return np.sum(y)\n"
    with pytest.raises(CompileError) as err:
        compile_source(source, "adds.py")
    assert err.value.message == (
        "np.add.at changes its array in place, which gradgen does not follow; add each element in a loop "
        "(for k in range(len(idx)): y[idx[k]] += v[k]), which adds every repeat as np.add.at does "
        "(y[idx] += v keeps only the last)")


def test_the_loop_np_add_at_suggests_adds_every_repeat():
    _check("add_at_loop", """
def f(x):
    y = np.zeros(5)
    idx = [0, 1, 1]
    v = x[:3] ** 2
    for k in range(len(idx)):
        y[idx[k]] += v[k]
    return np.sum(y * np.arange(5.0))
""", (X5,), None)


def test_a_list_index_the_function_appends_to_is_read_as_it_was():
    """The backward pass reads the index again: an append after the write must not change it."""
    _check("growing", """
def f(x):
    idx = [0]
    y = np.zeros(5)
    for t in range(3):
        idx.append(t)
        y[idx] = y[idx] * x[t] + x[t + 1]
    return np.sum(y * np.arange(5.0))
""", (X5,), None)


def test_check_with_forward_kinds_and_no_point_says_so_without_an_internal_error(tmp_path, monkeypatch):
    from gradgen.tools import cli

    (tmp_path / "writes.py").write_text("import numpy as np\n" + WRITES["list_variable"][0])
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "writes.py", "--emit", "grad,jvp"]) == 1
