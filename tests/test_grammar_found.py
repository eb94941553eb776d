"""Classes the grammar fuzzer (tests/grammar_programs.py) found after issue 20's fixes, each
as a program of the class checked against central differences, with the parameter's shape."""

from __future__ import annotations

import numpy as np
import pytest

from differences import central
from gradgen import CompileError, compile_source, load_module

PROGRAMS = {
    # `r = r.T`'s backward reads the r it made (zeros of its shape) before its restore: a later
    # `r = m` in a branch must save it (soak seed 32000 #1719: shapes (2, 3) and (3, 2); #123)
    "made_value_read_before_its_restore": ("""
def f(W, b=0.0):
    r = W
    m = -W
    if np.sum(b) > -2.735:
        r = r.T
    if np.sum(np.tanh(m)) > 0.68:
        pass
    else:
        r = m
    return np.mean(r)
""", {"W": np.array([[0.3, -0.7, 1.1], [0.2, 0.5, -0.4]]), "b": 0.5}),
    "made_value_read_after_a_loop": ("""
def f(bias, X):
    X = X
    for t in range(1):
        X = X.mean(axis=0)
    for it in range(2):
        X = bias
    return X.sum()
""", {"bias": np.array([-0.06, 0.21]), "X": np.array([[-0.58, 0.55, -0.26], [0.04, 0.26, -0.74]])}),
    # a write of an array made from a list: the list's gradient was rows of a view of the
    # written part of the adjoint, which the write's backward then zeroed (seed 502 #164)
    "write_of_an_array_made_from_a_list": ("""
def f(W, h):
    buf = np.copy(W)
    buf[:-1] = np.array([h for i in range(2)])
    return buf.sum()
""", {"W": np.ones((3, 3)), "h": np.array([0.45, -0.95, 0.93])}),
    "write_of_an_array_made_from_a_literal_list": ("""
def f(W, h):
    buf = np.copy(W)
    items = [h * 2.0, h]
    buf[1:] = np.array(items)
    return np.sum(buf ** 2)
""", {"W": np.ones((3, 3)), "h": np.array([0.45, -0.95, 0.93])}),
    # a parameter rebound in a loop or branch: its gradient is made from the value passed
    "rebound_in_a_loop": ("""
def f(w, A):
    for t in range(2):
        A = w * 2.0
    return np.sum(A * w)
""", {"w": np.array([0.3, -0.7]), "A": np.ones((2, 2))}),
    "rebound_in_a_branch": ("""
def f(w, A):
    if np.sum(w) < 0:
        A = w * 2.0
    return np.sum(A * w)
""", {"w": np.array([0.3, -0.7]), "A": np.ones((3, 2))}),
    "unused_rebound_in_a_loop": ("""
def f(M, u):
    for t in range(3):
        M = M[1:] * 2.0
    return np.sum(u ** 2)
""", {"M": np.ones((4, 2)), "u": np.array([0.5, 1.5])}),
    # a rule that measured a conditional expression measures the arm taken
    "slice_of_a_conditional_expression": ("""
def f(h, u):
    r = (h if np.sum(u) > 0.0 else u)[:-1]
    return np.sum(r ** 2)
""", {"h": np.array([0.3, -0.7]), "u": np.array([-0.5, 1.0, -0.9])}),
    "slice_of_a_conditional_expression_other_arm": ("""
def f(h, u):
    r = (h if np.sum(u) > 0.0 else u)[:-1]
    return np.sum(r ** 2)
""", {"h": np.array([0.3, -0.7]), "u": np.array([0.5, 1.0, 0.9])}),
    # a number's transpose in a loop whose adjoint restarts at 0.0
    "transpose_of_a_number": ("""
def f(b=0.5):
    g = np.max(b)
    for row in b:
        g = np.cos(max(np.sum(b), 1.798))
        g = g.T
    return np.sum(g - np.sum(np.stack([b, b])))
""", {"b": np.array([0.9, 1.1, 0.4])}),
    # a list read whole, then appended to: the backward pass reads what it was then
    "list_read_then_appended": ("""
def f(w):
    hs = []
    hs.append(w)
    hs.append(np.array(hs) @ w)
    return sum(np.sum(item) for item in hs)
""", {"w": np.array([0.3, -0.7, 1.1])}),
    "list_length_then_appended": ("""
def f(h):
    parts = [h]
    if len(parts) > 1:
        y = h * 2
    else:
        y = h * 3
    parts.append(h * h)
    return np.sum(y * y) + np.sum(np.stack(parts))
""", {"h": np.array([1.0, 2.0])}),
    # a loop that scatters into an adjoint a later loop restarted at 0.0: an array first, once
    "loop_over_a_name_rebound_later": ("""
def f(M, w):
    m = w
    for row in m:
        e = row
    for t1 in range(2):
        m = np.linalg.norm(w)
    return e
""", {"M": np.ones(2), "w": np.array([0.3, -0.7, 1.2])}),
    "element_of_an_array_rebound_to_a_conditional": ("""
def f(W):
    W = np.array([0.0, np.sum(W)])
    k = W[1]
    k = W if k > 0.202 else k
    for it in range(3):
        hs1 = []
        hs1.append(np.array([0.0, np.sum(W), 0.0]))
    return np.sum(k)
""", {"W": np.array([0.05, 0.1])}),
    # an array written into, then rebound in a loop: its zeros are of the value written into
    "written_array_rebound_in_a_loop": ("""
def f(b=1.0):
    hs = [np.linalg.norm(b)]
    buf = np.zeros(2)
    buf[np.array([1, 0])] = b[1:]
    for t in range(2):
        buf = np.array(hs)
    return np.sum(buf) + np.sum(buf * 0.0)
""", {"b": np.array([0.4, 1.1, -0.6])}),
    # a parameter of unknown shape rebound to a number in a branch: its mean's count is measured
    "parameter_rebound_to_a_number_in_a_branch": ("""
def f(A):
    if np.sum(A) > 0.512:
        A = 2.0
    S = A
    g = S
    return np.mean(g)
""", {"A": np.full((2, 4), 0.05)}),
    # a number unpacked from a vector of numbers shares nothing: updating it in place is fine
    # (soak seed 2004 #235 was refused as a view of u)
    "number_unpacked_from_a_vector_updated": ("""
def f(u, P):
    u = np.array([1.0, np.sum(u)])
    a, c = u
    c += P
    return np.sum(c * u) + a
""", {"u": np.array([0.3, -0.7, 1.1]), "P": np.array([[0.5, 1.5], [-0.2, 0.4]])}),
    # a gradient that is a copy of an arm not taken (`np.copy(g if c else 0.0)`): A's zeros
    # (soak seed 2004 #2217 returned the number 0.0)
    "copy_of_an_arm_not_taken": ("""
def f(u, A):
    y = np.zeros((3, 2))
    y[:, 1] = 0.3 if np.sum(u) > 0.28 else A
    return y.sum() + np.sum(u ** 2)
""", {"u": np.array([0.3, 0.7]), "A": np.array([0.5, 1.5, -0.2])}),
    "numbers_unpacked_from_arithmetic_on_a_vector_updated": ("""
def f(u, P):
    u = np.array([1.0, np.sum(u)])
    a, c = u * u
    c += P
    return np.sum(c * u) + a
""", {"u": np.array([0.3, -0.7, 1.1]), "P": np.array([[0.5, 1.5], [-0.2, 0.4]])}),
    # the zeros an adjoint is made an array with before a loop are of the value the loop saw,
    # which a later loop rebinds (soak seed 2006 #7721: np.zeros_like(S) of S's last number)
    "zeros_before_a_loop_of_a_value_rebound_later": ("""
def f(W, x):
    S = x
    for t in range(2):
        q = S[t] + W
    for xi in x:
        S = xi
    return q
""", {"W": 0.7, "x": np.array([0.3, -0.7, 1.1])}),
    # a restarted (0.0) adjoint times a value, unbroadcast into an index of b: stretched first
    "restarted_adjoint_into_an_index": ("""
def f(xs: tuple, b=0.0):
    res = xs[1]
    out = b[..., None] * res
    for t in range(2):
        out = res
    return out.sum()
""", {"xs": (np.ones((3, 3)), np.array([0.3, -0.7, 1.1])), "b": np.array([0.5, 1.5, -0.2])}),
    # writes after a `return` whose test is always true (never run, so the backward pass has
    # no code for them) still save what they overwrite: their stack is made (soak 44008 #72:
    # KeyError), and the name is bound before the loop for the join after it
    "saves_after_a_return_that_always_leaves": ("""
def f(rest, params):
    while True:
        if max(min(0.5, 0.1), -0.3) > -0.9:
            return np.sum(rest * params[0])
        S2 = np.stack([rest, rest]) * 1.0
        for t2 in range(1):
            S2[t2 + 1] = np.tanh(S2[t2])
        break
    return np.sum(S2)
""", {"rest": np.array([0.3, -0.7]), "params": np.array([1.5, 0.5])}),
    # a loop over x makes it structured, so `x[1:]` is a run of its parts: measured in code kept
    # as written (`np.empty(np.shape(y))`), it is read by its path, and only for its shape
    # (soak 48003 #863: "no derivative rule for 'np.empty'")
    "run_of_parts_measured_in_kept_code": ("""
def f(x, w):
    y = x[1:]
    out = np.empty(np.shape(y))
    out[...] = 0.5
    scale = np.full(np.shape(y), 1.0) * np.sum(x)
    for j, col in enumerate(x):
        w = w + col
    return np.sum(w) + np.sum(out * w) + np.sum(scale * w)
""", {"x": np.array([0.3, -0.7, 0.9]), "w": 0.4}),
}

@pytest.mark.parametrize("name", list(PROGRAMS))
def test_found_class(name):
    body, point = PROGRAMS[name]
    source = "import numpy as np\n\n" + body
    generated, original = load_module(compile_source(source, f"{name}.py", wrt="all").text), load_module(source)
    grads = generated.f_grad(**point)
    grads = grads if isinstance(grads, tuple) else (grads,)
    for param, grad in zip(point, grads):
        if isinstance(grad, tuple):
            assert len(grad) == len(point[param])
            for k, part in enumerate(grad):
                x = lambda v: original.f(**{**point, param: point[param][:k] + (v,) + point[param][k + 1:]})
                np.testing.assert_allclose(part, central(x, point[param][k]), rtol=1e-6, atol=1e-8)
            continue
        assert np.shape(grad) == np.shape(point[param]), (param, np.shape(grad))
        np.testing.assert_allclose(grad, central(lambda x: original.f(**{**point, param: x}), point[param]), rtol=1e-6, atol=1e-8, err_msg=param)


HVP_PROGRAMS = {
    # list entries' second-order tangents start as 0.0 and must take their entry's shape
    "entries_reshaped": ("""
def f(h):
    hs = [h.reshape(-1)]
    return sum(np.sum(item) for item in hs)
""", {"h": np.array([[0.3, -0.7], [1.1, 0.2]])}),
    # a pop whose value forward mode does not need still shortens the list (soak seed 2003 #512)
    "pops_kept": ("""
def f(layers: list, W):
    e = W
    parts = []
    parts.append(np.tanh(min(np.sum(e @ W.T), 14.079)))
    parts.append(layers[0][1].reshape(-1))
    parts.append(e)
    return np.sum(e) + sum(np.sum(item) for item in parts)
""", {"layers": [[np.ones((2, 3)), np.array([[0.3, -0.7, 1.1]])]], "W": np.array([[0.2, 0.1, -0.3]] * 3)}),
    # `W0[..., None]` of a NumPy scalar: the adjoint is written through `[..., None]` into zeros of
    # W0's shape, whose tangent `0.0 * x` is a NumPy scalar without item assignment (seed 2021 #1736)
    "scalar_written_through_ellipsis": ("""
def f(v):
    W0, second = v[:-1]
    W0 = W0[..., None]
    return np.sum(W0 ** 3) * second
""", {"v": np.array([0.34, 0.8, -0.9])}),
}


@pytest.mark.parametrize("name", list(HVP_PROGRAMS))
def test_found_hvp_class(name):
    """hvp along t is the central difference of the gradient along t."""
    body, point = HVP_PROGRAMS[name]
    source = "import numpy as np\n\n" + body
    generated = load_module(compile_source(source, f"{name}.py", emit_kinds=("grad", "hvp"), wrt="all").text)
    last = list(point)[-1]
    t = np.linspace(-0.5, 0.7, np.size(point[last])).reshape(np.shape(point[last]))
    tangents = {f"d{p}": (t if p == last else _zeros(point[p])) for p in point}
    product = generated.f_hvp(**point, **tangents)
    product = product[-1] if isinstance(product, tuple) else product
    grad_along = lambda s: _last(generated.f_grad(**{**point, last: point[last] + s * t}))
    np.testing.assert_allclose(product, (grad_along(1e-5) - grad_along(-1e-5)) / 2e-5, rtol=1e-5, atol=1e-7)


def _zeros(value):
    return [_zeros(v) for v in value] if isinstance(value, list) else np.zeros_like(value)


def _last(grads):
    return grads[-1] if isinstance(grads, tuple) else grads


def test_an_index_array_into_a_slice_of_a_part():
    """Soak seed 2003 #2263: `acc = layers[1][:2]; acc[np.array([-1, 0, -1])]` indexed a range."""
    source = "import numpy as np\n\n\ndef f(layers: tuple):\n    acc = layers[1][:2]\n" \
             "    acc = acc[np.array([-1, 0, -1])]\n    return np.sum(acc ** 2)\n"
    generated, original = load_module(compile_source(source, "parts.py", wrt="all").text), load_module(source)
    layers = (np.array([0.5, 1.0]), np.array([0.3, -0.7, 1.1]))
    grad = generated.f_grad(layers)
    assert isinstance(grad, tuple) and np.shape(grad[0]) == (2,)
    np.testing.assert_allclose(grad[1], central(lambda x: original.f((layers[0], x)), layers[1]), rtol=1e-6)


def test_a_product_along_an_axis_until_a_number():
    """Soak seed 2003 #11783: np.prod(S, axis=0) in a loop reaches a number, which NumPy still
    takes with axis=0; prod_grad divided by its rank, 0."""
    source = "import numpy as np\n\n\ndef f(A):\n    S = A\n    for t in range(3):\n" \
             "        S = np.prod(S, axis=0)\n    return np.mean(S)\n"
    generated, original = load_module(compile_source(source, "prods.py", wrt="all").text), load_module(source)
    A = np.array([[0.5, 1.2], [0.9, -0.4]])
    np.testing.assert_allclose(generated.f_grad(A), central(original.f, A), rtol=1e-6)


@pytest.mark.parametrize("body", ["R = np.zeros(2)\n    R[[0, 0, 1]] = np.mean(np.cumsum(A), axis=0, keepdims=True)\n"
                                  "    return np.sum(R)",
                                  "return np.mean(np.sort(A, axis=None)[:4])"])
def test_a_flattening_reduction_under_stated_shapes(body):
    """Soak seed 2004 #3573: with A stated (a, a), np.cumsum(A) was taken for an (a, a) array,
    and the mean along its axis 0 counted a elements, not a * a (np.sort(axis=None) likewise)."""
    source = f"import numpy as np\n\n\ndef f(A):\n    {body}\n"
    generated = load_module(compile_source(source, "flat.py", shapes={"A": ("a", "a")}, wrt="all").text)
    A = np.arange(9.0).reshape(3, 3) / 10 - 0.35
    np.testing.assert_allclose(generated.f_grad(A), central(load_module(source).f, A), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("step", ["z = np.sum(z, axis=-1)", "z = np.tanh(np.sum(np.exp(np.tanh(z)), axis=-1))",
                                  "y = np.exp(z)\n        z = np.sum(y * y, axis=0) / 3.0"])
def test_a_loop_that_reduces_its_value_until_a_number(step):
    """Soak seed 2004 #6216: `z = np.sum(z, axis=-1)` twice takes a vector to a number, which
    NumPy still sums along axis -1; putting the axis back gave the gradient a (1, 3) shape
    (through names the loop computes too, and those its values are kept in)."""
    source = f"import numpy as np\n\n\ndef f(z):\n    for t in range(2):\n        {step}\n    return np.sum(z)\n"
    generated = load_module(compile_source(source, "shrink.py", wrt="all").text)
    z = np.array([0.8, 0.79, 0.03])
    grad = generated.f_grad(z)
    assert np.shape(grad) == (3,)
    np.testing.assert_allclose(grad, central(load_module(source).f, z), rtol=1e-5)  # (a gradient of 1e-5)


@pytest.mark.parametrize("loop", ["enumerate(p[1:])", "enumerate(p[::-1])", "enumerate(p[2][:2])"])
def test_enumerate_a_slice_of_a_structured_parameter(loop):
    """Soak seed 2006 #312: `for j, row in enumerate(S)` with S a slice of a part was refused;
    enumerate counts the slice's positions, the parts are read at its indices."""
    source = ("import numpy as np\n\n\ndef f(p: list, x):\n    total = 0.0\n"
              f"    for j, row in {loop}:\n        total = total + (j + 1) * np.sum(np.tanh(row * x))\n"
              "    return total\n")
    generated, original = load_module(compile_source(source, "slices.py", wrt="all").text), load_module(source)
    p = [np.array([0.3, -0.7]), np.array([1.1, 0.4]), np.array([[0.5, -0.2], [0.9, 0.1], [-0.6, 0.8]])]
    p = p[:2] + [p[2][0]] if "p[2]" not in loop else p
    x = np.array([0.25, -1.5])
    grads, grad_x = generated.f_grad(p, x)
    np.testing.assert_allclose(grad_x, central(lambda v: original.f(p, v), x), rtol=1e-6)
    for k, part in enumerate(p):
        expected = central(lambda v: original.f(p[:k] + [v] + p[k + 1:], x), part)
        np.testing.assert_allclose(grads[k], expected, rtol=1e-6, atol=1e-10)


def test_a_name_bound_to_parts_in_a_loop_then_carried_by_another_is_refused():
    """Soak seed 2006 #1004: `m = data` in one loop (data structured), then `m = m if c else
    part` in another: the second loop's variable started as None (nothing held the parts) and
    the gradient function failed; it is refused, located, with what to write."""
    source = ("import numpy as np\n\n\ndef f(params, *, data):\n    for step in range(2):\n        m = data\n"
              "    for key, part in params.items():\n        for col, ub in data:\n            buf = part\n"
              "        m = m if np.sum(params['c']) > 0.942 else part\n    return m.sum()\n")
    with pytest.raises(CompileError) as refused:
        compile_source(source, "parts.py", wrt="all")
    assert str(refused.value).startswith("parts.py:7:5: 'm' was bound to data inside a loop or branch")


def test_the_tangent_of_a_transpose_of_a_number():
    """Seed 2009 #1138: `c = c.T` of a number in a loop: the jvp wrote `dc = dc.T`, and the
    caller's tangent, a Python float, has no .T; it is np.transpose(dc)."""
    source = "import numpy as np\n\n\ndef f(c):\n    for step in range(2):\n        c = np.tanh(step) + c * c\n" \
             "        c = c.T\n    return c\n"
    generated = load_module(compile_source(source, "tr.py", emit_kinds=("grad", "jvp"), wrt="all").text)
    value, derivative = generated.f_jvp(0.3, dc=1.0)
    assert derivative == pytest.approx(generated.f_grad(0.3), rel=1e-12)
    assert derivative == pytest.approx(central(load_module(source).f, np.array(0.3)), rel=1e-6)


def test_the_gradient_of_a_result_that_is_a_reshape_is_a_float():
    """Seed 2012 #114: `return np.squeeze(b.T)` of a (1, 1) b: the gradient was
    np.reshape(1, ...), an array of integers; it is np.reshape(1.0, ...)."""
    generated = load_module(compile_source("import numpy as np\n\n\ndef f(b):\n    return np.squeeze(b.T)\n",
                                           "sq.py", wrt="all").text)
    grad = generated.f_grad(np.array([[1.25]]))
    assert grad.dtype == np.float64 and grad.shape == (1, 1) and grad[0, 0] == 1.0


def test_the_tangent_of_a_numpy_scalar_indexed_with_none_may_be_a_bare_zero():
    """Soak seed 32000 #857: `R = np.arctan(max(np.sum(b), 0.818))` then `R[..., None]`: R is a
    NumPy scalar, which takes the index; its tangent along a max that chose 0.818 is 0.0, which
    does not: the jvp raised. The tangent is made an array first."""
    source = ("import numpy as np\n\n\ndef f(b):\n    z = np.arctan(max(np.sum(b), 0.818))\n"
              "    return np.mean(z[..., None] ** 2)\n")
    module = load_module(compile_source(source, "t.py", emit_kinds=("grad", "jvp")).text)
    for b in (np.array([0.1, 0.2]), np.array([0.5, 0.6])):  # (max takes 0.818, then the sum)
        value, derivative = module.f_jvp(b, db=np.array([1.0, -0.5]))
        assert derivative == pytest.approx(float(np.dot(module.f_grad(b), [1.0, -0.5])), rel=1e-12, abs=1e-15)


def test_a_tangent_folded_to_zero_keeps_the_shape_a_stack_needs():
    """Soak seed 35000 #1676: `s = np.array([s * 0.0, s, s])` in a loop: the tangent of
    `s * 0.0` folded to the number 0, which `np.stack` cannot stack with the arrays `ds` is
    from the second trip: the jvp raised. A zero part is shaped like its value, in a stack and
    in a name of its own (`y = s * 0.0`)."""
    for body in ("        s = np.array([s * 0.0, s, s])\n",
                 "        y = s * 0.0\n        s = np.array([y, s, s])\n"):
        source = "import numpy as np\n\n\ndef f(s):\n    for i in range(2):\n" + body + "    return np.sum(s)\n"
        module = load_module(compile_source(source, "t.py", emit_kinds=("grad", "jvp", "hvp")).text)
        value, derivative = module.f_jvp(0.7, ds=1.0)
        assert value == pytest.approx(2.8) and derivative == pytest.approx(4.0) == module.f_grad(0.7)
        assert module.f_hvp(0.7, ds=1.0) == 0.0


def test_soak_38000_what_this_session_refused_and_should_not():
    """Soak seeds 38000-38004 on this session's merges: (1) a function whose parameters reach
    only floor or comparisons has an exact zero gradient, not "no parameter to differentiate"
    (that skip is for counts, sizes, seeds and data); (2) `[v for v in r]` inside `for col in
    v:` binds the comprehension's own v, not the sequence; (3) `acc[np.array([1, 0])]` of a
    slice of a structured part is a copy, which `sel *= ...` may change."""
    floor_only = "import math\n\n\ndef f(a, b):\n    return math.floor(a) + (1.0 if b > 0.5 else 0.0)\n"
    compiled = compile_source(floor_only, "f.py", wrt="all")
    assert [fn.name for fn in compiled.functions] == ["f"]
    shadowed = ("import numpy as np\n\n\ndef f(params, v, x):\n    for col in v:\n        r = v\n"
                "        z = np.array([v for v in r[:2]]).sum()\n        R = col * x + z\n    return R\n")
    module = load_module(compile_source(shadowed, "f.py", wrt="all").text)
    assert module.f_grad(0.0, np.array([1.0, 2.0]), 3.0)[2] == 2.0
    picked = ("import numpy as np\n\n\ndef f(params):\n    acc = params['layer']['W'][:-1]\n"
              "    sel = acc[np.array([1, 0])]\n    sel *= acc[1]\n    return acc.sum() + sel.sum()\n")
    module = load_module(compile_source(picked, "f.py").text)
    W = np.array([[0.5, -1.0], [2.0, 0.25], [1.5, 3.0]])
    grad = module.f_grad({"layer": {"W": W}})["layer"]["W"]
    h, numeric = 1e-6, np.zeros_like(W)
    ns = {}
    exec(picked, ns)
    for k in np.ndindex(W.shape):
        e = np.zeros_like(W)
        e[k] = h
        numeric[k] = (ns["f"]({"layer": {"W": W + e}}) - ns["f"]({"layer": {"W": W - e}})) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)


def test_a_parameter_rebound_to_data_gets_a_zero_tangent_of_the_new_shape():
    """`b = data if c else DECAY` rebinding a differentiated b (4,) to data (2,): its tangent is
    zeros of the new b, written after the statement; before it, `0.0 * b` had the old b's shape
    and `db * H` failed against H (2, 2) (soak 50000 #542, forward mode)."""
    source = """import numpy as np
DECAY = 0.01


def f(H, b=0.5, *, data):
    if np.sum(np.concatenate([data, b])) > -1.214:
        b = data if np.sum(b) > 0.036 else DECAY
    b = b * H
    return np.mean(b)
"""
    point = {"H": np.array([[-0.1, 0.5], [0.02, 0.09]]), "b": np.array([-0.35, 0.56, -0.91, 0.97])}
    data = np.array([1.04, -0.83])
    generated = load_module(compile_source(source, "rebound.py", wrt="all", emit_kinds=("grad", "jvp")).text)
    original = load_module(source)
    dH, db = np.array([[0.3, -0.2], [0.5, 0.1]]), np.ones(4)
    _, derivative = generated.f_jvp(**point, data=data, dH=dH, db=db)
    h = 1e-6
    moved = lambda s: original.f(point["H"] + s * dH, point["b"] + s * db, data=data)
    np.testing.assert_allclose(derivative, (moved(h) - moved(-h)) / (2 * h), rtol=1e-7)
