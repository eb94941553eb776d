"""Issue 20, cases 5, 10 and 11: an adjoint exists only where its value does, every zero
keeps its value's shape and its parameter's structure, and an adjoint a branch or a loop
restarts is an array of its value's shape wherever a rule reads it.

Every gradient is compared with central differences of the original function, and its
structure with the parameter's (the same dict keys, list and tuple nesting, shapes, float
dtype), at points that take each branch.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.codegen import emit

A = np.array([[2.0, 0.5, 0.1], [0.3, 1.5, -0.2], [0.1, 0.2, 1.0]])
HEADER = "import numpy as np\n\nA = np.array([[2.0, 0.5, 0.1], [0.3, 1.5, -0.2], [0.1, 0.2, 1.0]])\n\n"


def _compiled(source, kinds=None, name="zeros_module"):
    """(generated module, the user's module, generated text) of `source`."""
    source = HEADER + textwrap.dedent(source)
    with emit.unformatted():
        text = compile_source(source, "zeros.py", emit_kinds=kinds or ("grad",), wrt="all").text
    user = {}
    exec(compile(source, "zeros.py", "exec"), user)
    return load_module(text, name), user, text


# ---- structures: leaves, finite differences, the same shape ---------------------------------

def _leaves(tree, path=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, path + (key,))
    elif isinstance(tree, (list, tuple)):
        for i, value in enumerate(tree):
            yield from _leaves(value, path + (i,))
    else:
        yield path, tree


def _replaced(tree, path, value):
    """`tree` with the leaf at `path` replaced (containers copied, kinds kept)."""
    if not path:
        return value
    if isinstance(tree, dict):
        return {k: _replaced(v, path[1:], value) if k == path[0] else v for k, v in tree.items()}
    parts = [_replaced(v, path[1:], value) if i == path[0] else v for i, v in enumerate(tree)]
    return tuple(parts) if isinstance(tree, tuple) else parts


def _central(f, args, i, h=1e-6):
    """d f / d args[i] by central differences, in args[i]'s structure."""
    grad = args[i]
    for path, leaf in list(_leaves(args[i])):
        leaf = np.asarray(leaf, dtype=float)
        g = np.zeros_like(leaf)
        for j in np.ndindex(leaf.shape):
            values = []
            for step in (h, -h):
                moved = leaf.copy()
                moved[j] += step
                moved = moved if moved.ndim else float(moved)
                values.append(f(*args[:i], _replaced(args[i], path, moved), *args[i + 1:]))
            g[j] = (values[0] - values[1]) / (2 * h)
        grad = _replaced(grad, path, g if g.ndim else float(g))
    return grad


def _same_structure(g, p):
    """The gradient has the parameter's containers, keys, lengths and shapes, and floats."""
    if isinstance(p, dict):
        return isinstance(g, dict) and list(g) == list(p) and all(_same_structure(g[k], p[k]) for k in p)
    if isinstance(p, (list, tuple)):
        return type(g) is type(p) and len(g) == len(p) and all(_same_structure(a, b) for a, b in zip(g, p))
    if np.ndim(p) == 0:
        return isinstance(g, float) or (isinstance(g, np.ndarray) and g.ndim == 0 and g.dtype == float)
    return isinstance(g, np.ndarray) and g.shape == np.shape(p) and g.dtype == float


def _agrees(f, grad_f, *args):
    grads = grad_f(*args)
    grads = grads if len(args) > 1 else (grads,)
    for i, (g, arg) in enumerate(zip(grads, args)):
        assert _same_structure(g, arg), (i, g, arg)
        want = _central(f, args, i)
        for (path, got), (_, expected) in zip(_leaves(g), _leaves(want)):
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=f"argument {i} at {path}")
    return grads


def _both(source, points, kinds=None):
    """Check f_grad and f_value_and_grad of `source` at every point."""
    m, user, text = _compiled(source, kinds)
    for args in points:
        grads = _agrees(user["f"], m.f_grad, *args)
        value, again = m.f_value_and_grad(*args)
        assert value == pytest.approx(user["f"](*args), rel=1e-12)
        for (_, a), (_, b) in zip(_leaves(again), _leaves(grads)):
            np.testing.assert_array_equal(a, b)
    return m, text


POINTS = [(np.array([0.7, -0.4, 1.3]),), (np.array([-0.5, 0.9, 0.2]),), (np.array([1.6, 0.9, -1.1]),)]


# ---- case 5: an array bound on one branch only -------------------------------------------------

def test_case5_an_array_bound_and_written_on_one_branch():
    """The else branch's backward pass ran np.zeros_like(R) of an R never bound."""
    m, text = _both('''
        def f(v):
            if v[0] > 0:
                R = np.zeros(2)
                R[0] = v[0]
                S = R
            else:
                S = v
            return np.sum(S ** 2)
        ''', [(np.array([-1.0, 2.0]),), (np.array([1.5, 2.0]),)])
    assert "zeros_like(R" not in text
    np.testing.assert_array_equal(m.f_grad(np.array([-1.0, 2.0])), [-2.0, 4.0])
    np.testing.assert_array_equal(m.f_grad(np.array([1.5, 2.0])), [3.0, 0.0])


ONE_ARM = {
    "elif": '''
        def f(v):
            if v[0] > 1.0:
                S = v * 2
            elif v[0] > 0:
                R = np.zeros(3)
                R[0] = v[0]
                S = R
            else:
                S = v
            return np.sum(S ** 2)
        ''',
    "else": '''
        def f(v):
            if v[0] > 0:
                S = v
            else:
                R = np.zeros(3)
                R[1] = v[1] * 3
                S = R + v
            return np.sum(S ** 2)
        ''',
    "nested": '''
        def f(v):
            if v[0] > 0:
                if v[1] > 0:
                    R = np.zeros(3)
                    R[0] = v[0]
                    S = R
                else:
                    S = v * 3
            else:
                S = v
            return np.sum(S ** 2)
        ''',
    "early return": '''
        def f(v):
            if v[0] < 0:
                return np.sum(v ** 2)
            R = np.zeros(3)
            R[0] = v[1]
            return np.sum(R * v)
        ''',
    "a list": '''
        def f(v):
            if v[0] > 0:
                L = []
                L.append(v[0] * 2)
                L.append(v[1])
                S = L[0] + L[1]
            else:
                S = v[1]
            return S ** 2
        ''',
    "after a break": '''
        def f(v):
            S = v
            for i in range(3):
                if S[0] > 3:
                    break
                R = np.zeros(3)
                R[0] = S[1]
                S = S + R
            return np.sum(S ** 2)
        ''',
    "after a continue": '''
        def f(v):
            S = v
            for i in range(3):
                if i == 1 and v[2] > 0:
                    continue
                R = np.zeros(3)
                R[1] = S[0]
                S = R * S + S
            return np.sum(S ** 2)
        ''',
    "first trip only": '''
        def f(v):
            S = v
            for i in range(3):
                if i == 0:
                    R = np.zeros(3)
                R[i] = S[0] * v[1]
                S = S + R
            return np.sum(S ** 2)
        ''',
    "in a while loop": '''
        def f(v):
            S = v
            k = 0
            while k < 2:
                if v[0] > 0:
                    R = np.zeros(3)
                    R[0] = S[1]
                    S = R + S
                k += 1
            return np.sum(S ** 2)
        ''',
}


@pytest.mark.parametrize("kind", sorted(ONE_ARM))
def test_case5_class_a_value_bound_in_one_arm_has_an_adjoint_only_there(kind):
    _both(ONE_ARM[kind], POINTS + [(np.array([0.4, 0.3, 0.8]),)])


# ---- case 10: zeros of the parameter's shape and structure --------------------------------------

def test_case10_a_parameter_read_only_in_the_untaken_arm_gets_zeros_of_its_shape():
    m, text = _both('''
        def f(h, X, Y):
            h = h if np.sum(h) > 0 else X @ Y
            return np.sum(h ** 2)
        ''', [(np.ones((2, 2)), np.eye(2) * 0.5, np.full((2, 2), 0.3)),
              (-np.ones((2, 2)), np.eye(2) * 0.5, np.full((2, 2), 0.3))])
    dh, dX, dY = m.f_grad(np.ones((2, 2)), np.eye(2), np.ones((2, 2)))
    np.testing.assert_array_equal(dX, np.zeros((2, 2)))
    np.testing.assert_array_equal(dY, np.zeros((2, 2)))
    assert "else np.zeros_like(X, dtype=float)" in text


def test_case10_max_of_a_statistic_and_a_constant_that_wins():
    m, _ = _both('''
        def f(W):
            return max(np.var(W), 0.5)
        ''', [(np.array([0.1, -0.2, 0.05]),), (np.array([2.0, -1.0, 0.5]),)])
    g = m.f_grad(np.array([0.1, -0.2, 0.05]))
    assert g.shape == (3,) and not g.any()


def test_case10_an_unused_dict_gets_a_dict_of_zeros():
    m, text = _both('''
        def f(x, p):
            return np.sum(x ** 2)
        ''', [(np.array([1.0, 2.0]), {"V": np.ones(2), "c": np.ones(1)})])
    dx, dp = m.f_grad(np.array([1.0, 2.0]), {"V": np.ones(2), "c": np.ones(1)})
    assert list(dp) == ["V", "c"] and dp["V"].shape == (2,) and dp["c"].shape == (1,)
    assert "return df_dx, zero_gradient(p)" in text


def test_unused_parameters_of_every_kind_keep_their_structure():
    """A number stays 0.0, an array gets zeros of its shape, a tuple stays a tuple, nested."""
    m, _ = _both('''
        def f(x, p, q, n, w):
            return np.sum(x ** 2)
        ''', [(np.array([1.0, 2.0]), {"V": [np.ones(2), (np.ones(1), 2.0)], "c": 1.0}, (np.ones(2), [np.ones((1, 2))]),
               3.0, np.ones((2, 3)))])
    _, dp, dq, dn, dw = m.f_grad(np.array([1.0, 2.0]), {"V": [np.ones(2), (np.ones(1), 2.0)]}, (np.ones(2),), 3.0,
                                 np.ones((2, 3)))
    assert isinstance(dp["V"][1], tuple) and dp["V"][1][1] == 0.0 and isinstance(dp["V"][1][1], float)
    assert isinstance(dq, tuple) and dn == 0.0 and isinstance(dn, float) and dw.shape == (2, 3)


def test_partly_used_and_branch_used_structured_parameters():
    _both('''
        def f(x, p):
            if np.sum(x) > 0:
                return np.sum(p["V"] ** 2) + np.sum(x * p["a"][0])
            return np.sum(x ** 2)
        ''', [(np.array([0.5, 1.0, -0.2]), {"V": np.ones(2), "a": [np.ones(3), (np.ones(2), 1.0)]}),
              (np.array([-0.5, -1.0, 0.2]), {"V": np.ones(2), "a": [np.ones(3), (np.ones(2), 1.0)]})])


def test_jvp_and_hvp_have_the_gradients_structure_whichever_arm_ran():
    """The hvp of an untaken arm is zeros of the parameter's shape, of an unused dict a dict."""
    m, _, _ = _compiled('''
        def f(h, X, Y, p):
            h = h if np.sum(h) > 0 else X @ Y
            return np.sum(h ** 2)
        ''', ("grad", "jvp", "hvp"), "zeros_kinds")
    rng = np.random.default_rng(5)
    p = {"V": np.ones(2), "c": (1.0, np.ones(3))}
    for h in (np.ones((2, 2)), -np.ones((2, 2))):
        X, Y = rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
        t = [rng.standard_normal((2, 2)) for _ in range(3)]
        dp = {"V": np.ones(2), "c": (1.0, np.ones(3))}
        hvp = m.f_hvp(h, X, Y, p, dh=t[0], dX=t[1], dY=t[2], dp=dp)
        eps = 1e-6
        up = m.f_grad(h + eps * t[0], X + eps * t[1], Y + eps * t[2], p)
        down = m.f_grad(h - eps * t[0], X - eps * t[1], Y - eps * t[2], p)
        for k in range(3):
            assert hvp[k].shape == (2, 2)
            np.testing.assert_allclose(hvp[k], (up[k] - down[k]) / (2 * eps), rtol=1e-6, atol=1e-8)
        assert _same_structure(hvp[3], p) and not any(np.any(leaf) for _, leaf in _leaves(hvp[3]))
        value, tangent = m.f_jvp(h, X, Y, p, dh=t[0], dX=t[1], dY=t[2], dp=dp)
        grads = m.f_grad(h, X, Y, p)
        assert tangent == pytest.approx(sum(np.sum(g * d) for g, d in zip(grads, t)), rel=1e-12)


def test_an_unused_parameter_in_the_array_api_backend():
    """(array_namespace takes arrays and numbers: a dict is refused there before any helper.)"""
    source = HEADER + "def f(x, p):\n    return np.sum(x ** 2)\n"
    compiled = compile_source(source, "zeros.py", backend="array-api", wrt="all")
    assert "zero_gradient(xp, p)" in compiled.text
    pytest.importorskip("array_api_compat")
    m = load_module(compiled.text, "zeros_api")
    dx, dp = m.f_grad(np.array([1.0, 2.0]), np.ones((2, 3)))
    assert dp.shape == (2, 3) and dp.dtype == float and not dp.any()
    dx, dp = m.f_grad(np.array([1.0, 2.0]), 3.0)
    assert dp == 0.0 and isinstance(dp, float)


# ---- case 11: a list of pairs, a dict's keys ----------------------------------------------------

LAYERS = [(np.array([[0.5, -0.2], [0.3, 0.8]]), np.array([0.1, -0.3])),
          (np.array([[0.2, 0.4], [-0.6, 0.1], [0.3, 0.3]]), np.array([0.0, 0.2, -0.1]))]


@pytest.mark.parametrize("body", [
    "W0, c0 = layers[0]\n    return np.sum(np.tanh(W0 @ x + c0))",
    "first = layers[0]\n    W0, c0 = first\n    return np.sum(np.tanh(W0 @ x + c0))",
    "h = x\n    for i in range(len(layers)):\n        W, c = layers[i]\n        h = np.tanh(W @ h + c)\n"
    "    return np.sum(h)",
])
def test_case11_a_part_unpacked_from_a_list_of_pairs(body):
    m, text = _both(f"def f(layers, x):\n    {body}\n", [(LAYERS, np.array([0.7, -1.2]))])
    assert "np.zeros_like(layers" not in text


def test_a_part_unpacked_from_an_array_used_whole_stays_an_array():
    _both('''
        def f(P, x):
            a, b = P[0]
            return np.sum(P ** 2) * a + np.sum(b * x)
        ''', [(np.array([[0.5, -0.2], [0.3, 0.8]]), np.array([0.7, -1.2]))])


KEYS = {
    "for key in p": "s = 0.0\n    for key in p:\n        s = s + np.sum(p[key] ** 2)\n    return s",
    "for key in p.keys()": "s = 0.0\n    for key in p.keys():\n        s = s + np.sum(p[key] ** 3)\n    return s",
    "a generator": "return sum(np.sum(p[k] ** 2) for k in p)",
    "a list comprehension": "return np.sum(np.array([np.sum(p[k] * 3.0) for k in p]))",
    "a nested dict": "s = 0.0\n    for key in p['layers']:\n        s = s + np.sum(p['layers'][key] ** 2) * p['scale']\n"
                     "    return s",
}


@pytest.mark.parametrize("kind", sorted(KEYS))
def test_case11_a_loop_over_a_dict_runs_over_its_keys(kind):
    p = {"a": np.array([0.5, -1.0]), "b": np.array([[0.2, 0.3, -0.4]])}
    if kind == "a nested dict":
        p = {"layers": p, "scale": 1.5}
    m, text = _both(f"def f(p):\n    {KEYS[kind]}\n", [(p,)])
    assert "p[0]" not in text and "list(p" in text


RESTARTED = {
    "index": "y[0] * y[2]",
    "einsum": "np.sum(np.einsum('ij,j->i', A, y) ** 2)",
    "cumsum": "np.sum(np.cumsum(y) ** 2)",
    "matmul": "np.sum((A @ y) ** 2)",
    "solve": "np.sum(np.linalg.solve(A + 3.0 * np.eye(3), y) ** 2)",
    "sum along an axis": "np.sum(np.mean(np.outer(y, y), axis=0) ** 2)",
}
DEFINED = {
    "index": "v[::-1] * 2.0",
    "einsum": "np.einsum('ij,j->i', A, v)",
    "cumsum": "np.cumsum(v)",
    "matmul": "A @ v",
    "solve": "np.linalg.solve(A + 3.0 * np.eye(3), v)",
    "sum along an axis": "np.sum(np.outer(v, v), axis=0)",
}


@pytest.mark.parametrize("read", sorted(RESTARTED))
def test_case11_a_value_read_then_overwritten_in_the_taken_branch(read):
    """y's adjoint restarts at 0.0 in the branch that overwrites it; the rules that read it
    before (y[0], einsum, cumsum, A @ y, solve, a sum along an axis) need its shape."""
    _both(f'''
        def f(v):
            y = {DEFINED[read]}
            s = {RESTARTED[read]}
            if v[0] > 0:
                y = v * 3.0 + 1.0
            return s + np.sum(y ** 2)
        ''', POINTS)


@pytest.mark.parametrize("read", sorted(RESTARTED))
def test_case11_a_value_overwritten_in_the_taken_branch_gets_zeros_at_its_definition(read):
    """The rule that made y (an index, einsum, cumsum, matmul, solve, a sum along an axis)
    reads the adjoint the branch restarted, with nothing added to it."""
    _both(f'''
        def f(v):
            y = {DEFINED[read]}
            if v[0] > 0:
                y = v * 3.0 + 1.0
            return {RESTARTED[read]}
        ''', POINTS)


@pytest.mark.parametrize("read", sorted(RESTARTED))
def test_case11_an_adjoint_a_loop_trip_restarts(read):
    """Each trip ends with y's adjoint at 0.0 (y is set afresh); the trip before it reads it
    only when its branch ran: the rule defining y meets the 0.0 then."""
    _both(f'''
        def f(v):
            y = {DEFINED[read]}
            s = 0.0
            for i in range(3):
                y = ({DEFINED[read]}) * (i + 1.0)
                if v[1] > 0:
                    s = s + {RESTARTED[read]}
            return s + np.sum(y)
        ''', POINTS)


def test_an_element_of_a_list_no_gradient_reached():
    """hs[0] and hs[2] get no gradient: their 0.0 reaches cumsum's and einsum's rules."""
    _both('''
        def f(v):
            hs = []
            for i in range(3):
                hs.append(np.cumsum(v) * i + np.einsum('i,i->i', v, v))
            return np.sum(hs[1] ** 2)
        ''', POINTS)


def test_a_custom_rule_reads_its_gradient_as_an_array():
    source = '''
        import gradgen


        @gradgen.custom_vjp
        def rev(x):
            return x[::-1] * 1.0


        @rev.defvjp
        def rev_vjp(g, out, x):
            return g[::-1]


        def f(v):
            y = rev(v)
            s = y[0] * y[1]
            if v[0] > 0:
                y = v * 2.0
            return s + np.sum(y ** 2)
        '''
    _both(source, POINTS)


def test_no_array_made_where_the_rules_take_the_zero():
    """Elementwise rules, matmul's helpers and writes at an index take the 0.0 as it is: an
    RNN over a list of states gets no extra lines (generated/rnn_grad.py is unchanged)."""
    _, text = _both('''
        def f(v):
            y = v * 2.0
            s = np.sum(np.tanh(y) * v)
            if v[0] > 0:
                y = v * 3.0
            return s + np.sum(y)
        ''', POINTS)
    assert "np.zeros_like(y" not in text


def test_check_takes_a_container_for_a_parameter_the_function_never_reads():
    """`check` refused a dict for an unused parameter ("uses it only as a number or an
    array"); its gradient is now a dict of zeros, checked leaf by leaf."""
    from gradgen.verify.check import check_source

    source = HEADER + "def f(x, p):\n    return np.sum(x ** 2)\n"
    point = {"x": np.array([1.0, 2.0]), "p": {"V": np.ones(2), "c": (1.0, np.ones(3))}}
    [report] = check_source(source, "zeros.py", ["f"], at=point, n_points=1, wrt="all")
    assert report.ok
    assert [row.param for row in report.points[0].rows if row.param.startswith("p[")][:2] == ["p['V'].v1", "p['V'].v2"]


SHARED_ZERO_D = '''
import numpy as np


def f(a: float, c: float, d: float, k: float):
    if k < 0.0:
        noise = 0.5 * a
    else:
        noise = a
    return np.where(d >= np.arcsin(0.9 * np.tanh(c)), d, a + c) + noise
'''


@pytest.mark.parametrize("k", [1.0, -1.0], ids=["else", "then"])
@pytest.mark.parametrize("d", [0.9, -0.9], ids=["d_taken", "sum_taken"])
def test_a_branch_never_writes_into_a_0d_adjoint_another_shares(k, d):
    """np.where of numbers is a 0-d array, and a and c share it as their gradient (`df_dc =
    df_da`); the then branch's `df_da = df_da + 0.5` made the else branch take df_da for a
    number it owns and write `df_da += 1.0` into the array df_dc holds too: c's gradient 1,
    not 0 (soak 54006 #788). Each branch starts from what may be a 0-d array at the `if`."""
    text = compile_source(SHARED_ZERO_D, "shared.py", wrt=["a", "c", "d"]).text
    assert "df_da +=" not in text
    module = load_module(text, f"shared_zero_d_{k > 0}_{d > 0}")
    namespace = {}
    exec(SHARED_ZERO_D, namespace)  # noqa: S102 - the test's own source
    point = [-1.0, 0.468, d, k]
    got = module.f_grad(*point)
    for i, g in enumerate(got):
        h = 1e-6
        up, down = list(point), list(point)
        up[i] += h
        down[i] -= h
        assert float(g) == pytest.approx((namespace["f"](*up) - namespace["f"](*down)) / (2 * h), abs=1e-6)
