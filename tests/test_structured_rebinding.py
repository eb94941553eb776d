"""Parts of structured parameters rebound inside loops and branches, slices and unpacking
of array parts, and arrays returned by helpers unpacked (issue 20, found by the grammar
fuzzer inside the supported subset).

Python's rules, which gradgen now follows: rebinding a name never changes the parameter, so
a helper's parameter bound to a part (`smooth(p['W'])`, whose loop rebinds `h`) or a name
bound to a part is an ordinary local read from the part; a slice of a part is the slice of
that value where it is bound (`alpha = bk[1:]` in a loop), and unpacking it takes its rows
(`rest, top = layers[1][1:]`); after a loop or branch a name bound to a part there is the
value read (which part it was depends on the path taken); and `a, b = helper(x)` of a helper
returning an array takes the array's rows. Every program is checked against central
differences of the original function, leaf by leaf, in the gradient, value_and_grad, and
(for most) forward mode and forward over reverse.
"""

from __future__ import annotations

import copy
import inspect
import textwrap

import fuzz
import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.codegen import emit

_RNG = np.random.default_rng(2020)


def _a(*shape):
    return _RNG.normal(size=shape) * 0.6


W2, C2, M2, V3 = _a(2, 2), _a(2), _a(2, 2), _a(3)
SMOOTH = """
def smooth(h, steps=2):
    for _ in range(steps):
        h = np.tanh(h) + 0.5 * h
    return h
"""
ACT = """
def act(z, slope=0.1):
    return np.tanh(z) + slope * z
"""

# (name, source, point): each was refused, or gave a wrong value, before the fix (or is a
# neighbour of one, kept right)
PROGRAMS = [
    # ---- 1. a helper's parameter bound to a part, rebound in the helper's loop or branch ----
    ("helper_loop_dict_part", SMOOTH + """
def f(p, x):
    return np.sum(smooth(p['W']) * x) + np.sum(smooth(p['c'], 3))
""", {"p": {"W": W2, "c": C2}, "x": V3[:2]}),
    ("helper_loop_list_item", SMOOTH + """
def f(pair: list, w):
    return np.sum(smooth(pair[0]) * w) + np.sum(pair[1])
""", {"pair": [C2, _a(2)], "w": _a(2)}),
    ("helper_loop_nested_tuple_part", SMOOTH + """
def f(pair: list, layers: tuple):
    r = pair[0][-1]
    k = smooth(pair[0][0])
    return np.sum(k * r) + np.sum(layers[0] @ layers[1])
""", {"pair": [(M2, C2)], "layers": (W2, C2)}),
    ("helper_branch_part", """
def clip(h):
    if np.sum(h) > 0.0:
        h = h * 0.5
    else:
        h = h * h
    return h

def f(p):
    return np.sum(clip(p['W']) + clip(p['c']))
""", {"p": {"W": np.abs(W2), "c": -np.abs(C2)}}),
    ("helper_on_each_layer", SMOOTH + """
def f(layers):
    s = 0.0
    for i in range(len(layers)):
        s = s + np.sum(smooth(layers[i][0]) @ layers[i][1])
    return s
""", {"layers": [(W2, C2), (M2, _a(2))]}),
    ("helper_on_loop_target", SMOOTH + """
def f(layers, x):
    for W, b in layers:
        x = smooth(x @ W + b, 1) + smooth(b)
    return np.sum(x)
""", {"layers": [(W2, C2), (M2, _a(2))], "x": _a(2)}),
    ("helper_on_slice_of_part", SMOOTH + """
def f(p):
    return np.sum(smooth(p['c'][::-1]) * np.array([1.0, 2.0]))
""", {"p": {"W": W2, "c": C2}}),
    ("helper_updates_part_in_place_in_loop", """
def g(h):
    for _ in range(2):
        h += np.sin(h)
    return h

def f(p):
    return np.sum(g(p['c']) * 2.0)
""", {"p": {"W": W2, "c": C2}}),
    ("helper_augmented_in_loop", """
def grow(h):
    for _ in range(2):
        h = h + np.sin(h)
    return h

def f(p):
    return np.sum(grow(p['c']) * p['c'])
""", {"p": {"W": W2, "c": C2}}),
    # ---- ... or in the loss itself ----------------------------------------------------------
    ("name_for_part_rebound_in_loop", """
def f(p):
    W = p['W']
    for t in range(2):
        W = np.tanh(W) @ p['W']
    return np.sum(W)
""", {"p": {"W": W2, "c": C2}}),
    ("unpacked_part_rebound_in_branch", """
def f(layers):
    W0, c0 = layers[0]
    if np.sum(c0) > -5.0:
        c0 = c0 * 2.0 + W0[0]
    return np.sum(W0 @ c0)
""", {"layers": [(W2, C2)]}),
    ("loop_target_rebound", """
def f(layers):
    s = 0.0
    for W, b in layers:
        W = W * b
        b = np.tanh(b)
        s = s + np.sum(W) + np.sum(b)
    return s
""", {"layers": [(W2, C2), (M2, _a(2))]}),
    ("rebound_to_an_array_parameter", """
def f(H):
    q = H
    for col in H:
        q = q + H[-1]
        m = q - col
    return q.sum() + np.sum(m)
""", {"H": _a(3, 3)}),
    ("name_for_array_looped_over_bound_in_loop", """
def f(theta, w):
    for row, xb in zip(w, w):
        for it in range(3):
            acc = xb
    for t in range(1):
        for part in theta.values():
            parts = []
            parts.append(part @ part)
        r = w
    return r.sum() + np.sum(acc)
""", {"theta": {"W": W2, "c": C2}, "w": V3}),
    ("helper_on_an_array_looped_over", SMOOTH + """
def f(M):
    s = 0.0
    for row in M:
        s = s + np.sum(row)
    return s + np.sum(smooth(M))
""", {"M": M2}),
    # ---- a name bound to a part in one branch or trip is that value after it ---------------
    ("part_in_one_branch", """
def f(params, c):
    W = params[0]
    if c > 0:
        W = params[1]
    return np.sum(W[0] * W)
""", {"params": [C2, _a(2)], "c": -1.0}),
    ("part_in_one_branch_read_by_the_other", """
def f(params, c):
    W = params[0]
    if c > 0:
        W = params[1]
    else:
        x = W[0]
        W = W * x
    return np.sum(W)
""", {"params": [C2, _a(2)], "c": -1.0}),
    ("part_by_index_changed_later", """
def f(params):
    k = 0
    s = 0.0
    for t in range(2):
        x = params[k]
        k = k + 1
        s = s + x[0] * x[1]
    return s
""", {"params": [C2, _a(2), _a(2)]}),
    ("part_of_each_trip_read_after", """
def f(params):
    for i in range(3):
        x = params[i]
    return np.sum(x[1] * x)
""", {"params": [C2, _a(2), _a(2)]}),
    ("run_of_parts_in_loop_used_there", """
def f(params: list, x):
    s = 0.0
    for t in range(2):
        rest = params[1:]
        for W, b in rest:
            s = s + np.sum(np.tanh(W @ x + b)) * (t + 1)
    return s
""", {"params": [(W2, C2), (M2, _a(2)), (_a(2, 2), _a(2))], "x": _a(2)}),
    # ---- a loop over parts whose index its body changes runs over the parts named first ----
    ("loop_over_slice_whose_start_changes", """
def f(params: list):
    k = 1
    s = 0.0
    for x in params[k:]:
        k = k + 1
        s = s + np.sum(x * x) * k
    return s
""", {"params": [C2, _a(2), _a(2), _a(2)]}),
    ("loop_over_part_whose_index_changes", """
def f(params: list):
    k = 0
    s = 0.0
    for i in range(2):
        for x in params[k][::-1]:
            k = k + 1
            s = s + x * k
    return s
""", {"params": [C2, _a(2), _a(2), _a(2)]}),
    # ---- 2. a slice of an array part is array code ------------------------------------------
    ("slice_of_part_in_loop", SMOOTH + """
def f(layers, alpha, s, p, offset=1.0):
    for Wk, bk in layers:
        for it in range(1):
            offset = offset + bk[-1]
            s = offset * bk
            offset = np.tanh(np.sum(p['W'] * (it + 1)) + alpha * offset)
        alpha = bk[1:]
    return np.mean(s) + np.mean(offset) + np.sum(alpha)
""", {"layers": [(W2, _a(2)), (M2, _a(2))], "alpha": -0.76, "s": 0.05, "p": {"W": _a(2, 2), "c": C2},
      "offset": 1.15}),
    ("slice_of_part_in_branch", """
def f(p, w):
    top, c0 = p
    out = np.array([0.0, np.sum(w)])
    if np.sum(c0) > -5.0:
        if np.sum(top) > 5.0:
            out = c0[1:]
        R = out
    return top.sum() + np.sum(out)
""", {"p": (W2, _a(2)), "w": _a(3)}),
    ("slice_of_part_each_branch", """
def f(p, c):
    if c > 0:
        a = p['c'][1:]
    else:
        a = p['c'][:-1] * 2.0
    return np.sum(a * a)
""", {"p": {"W": W2, "c": V3}, "c": -1.0}),
    ("slice_of_part_by_a_name", """
def f(p):
    k = 1
    rest = p['c'][k:]
    return np.sum(rest ** 2) + rest[0]
""", {"p": {"W": W2, "c": V3}}),
    ("unpack_slice_of_list_item", """
def f(alpha, layers: list, M, offset=0.0):
    M = (np.array([offset * 0.0, offset, 0.0]) + alpha) * M
    if np.sum(M) > -100.0:
        rest, top = layers[1][1:]
        M = M * rest + top
    return np.mean(M) + np.mean(offset)
""", {"alpha": 1.1, "layers": [V3, _a(3)], "M": _a(3, 3), "offset": -0.65}),
    ("unpack_reversed_nested_part", """
def f(pair, A):
    for step in range(3):
        W0, second = pair['layer']['b'][::-1]
        second = np.log1p(W0 * W0) + second
        acc = np.array([pair['scale'] * W0 for el in A]) + second
    return np.sum(W0) + np.sum(second) + np.sum(acc)
""", {"pair": {"layer": {"W": W2, "b": C2}, "scale": -0.82}, "A": _a(3, 2)}),
    ("unpack_rows_of_sliced_matrix_part", """
def f(p):
    a, b = p['W'][::-1]
    return np.sum(a * np.exp(b))
""", {"p": {"W": W2, "c": C2}}),
    ("loop_over_slice_of_array_part", """
def f(p):
    s = 0.0
    for x in p['c'][1:]:
        s = s + x * x
    return s
""", {"p": {"W": W2, "c": V3}}),
    ("loop_over_slice_of_list_part", """
def f(params, x):
    for W, b in params['layers'][1:]:
        x = np.tanh(W @ x + b)
    return np.sum(x) + np.sum(params['layers'][0][1])
""", {"params": {"layers": [(W2, C2), (M2, _a(2)), (_a(2, 2), _a(2))]}, "x": _a(2)}),
    ("unpack_slice_of_list_part", """
def f(params, x):
    (W1, b1), (W2, b2) = params['layers'][1:]
    return np.sum(np.tanh(W1 @ x + b1) @ W2 + b2)
""", {"params": {"layers": [(W2, C2), (M2, _a(2)), (_a(2, 2), _a(2))]}, "x": _a(2)}),
    # ---- 3. a helper returning an array, unpacked into names --------------------------------
    ("helper_array_unpacked", ACT + """
def f(M):
    W0, top = act(M, slope=0.2)
    return np.sum(W0 * top) + np.sum(top ** 2)
""", {"M": M2}),
    ("helper_array_unpacked_in_branch", ACT + """
def f(M, offset=0.5):
    offset = np.abs(offset)
    top = M[0]
    if max(offset, 1.041) > 0.741:
        acc = offset
        W0, top = act(M, slope=acc)
    return np.mean(M) + np.mean(top * offset)
""", {"M": M2, "offset": -0.64}),
    ("helper_array_unpacked_through_helper", ACT + """
def twice(z):
    return act(z * 2.0)

def f(M):
    a, b, c = twice(M)
    return np.sum(a * b - c)
""", {"M": _a(3, 2)}),
    ("helper_array_unpacked_in_loop", ACT + """
def f(M):
    for t in range(2):
        a, b = act(M)
        M = np.stack([b, a]) * 0.9
    return np.sum(M * np.arange(1.0, 5.0).reshape(2, 2))
""", {"M": M2}),
    ("helper_list_unpacked", """
def h(x):
    return [x * (k + 1.0) for k in range(2)]

def f(x):
    a, b = h(x)
    return np.sum(a * b * x)
""", {"x": C2}),
    ("array_unpacked_into_itself_in_loop", """
def f(M):
    a = M
    for t in range(1):
        a, b = a
    return np.sum(a * 3.0 + b)
""", {"M": M2}),
]

# forward mode and forward over reverse as well (the rest: gradient and value_and_grad)
FORWARD = {"helper_loop_dict_part", "helper_on_each_layer", "name_for_part_rebound_in_loop", "slice_of_part_in_loop",
           "unpack_slice_of_list_item", "unpack_reversed_nested_part", "helper_array_unpacked",
           "helper_array_unpacked_in_loop", "part_by_index_changed_later", "loop_over_slice_of_list_part"}


# ---- trees of arrays -------------------------------------------------------------------------

def _rebuilt(value, leaves):
    if isinstance(value, dict):
        return {key: _rebuilt(part, leaves) for key, part in value.items()}
    if isinstance(value, (list, tuple)):
        parts = [_rebuilt(part, leaves) for part in value]
        return tuple(parts) if isinstance(value, tuple) else parts
    leaf = leaves.pop(0)
    return leaf if np.ndim(leaf) else float(leaf)


def _moved(point, direction, h):
    """point + h * direction, leaf by leaf, in every parameter."""
    return {name: _rebuilt(value, [np.asarray(x, dtype=float) + h * np.asarray(t)
                                   for x, t in zip(fuzz._leaves(value), fuzz._leaves(direction[name]))])
            for name, value in point.items()}


def _fresh(point):
    """A copy of every array of the point (a program may change its argument in place, as
    `h += ...` on a part does in Python)."""
    return copy.deepcopy(point)


def _differences(f, point, name, eps=1e-6):
    """d f / d every element of every leaf of point[name], by central differences."""
    out = []
    for k, leaf in enumerate(fuzz._leaves(point[name])):
        grad = np.zeros(np.shape(leaf))
        for index in np.ndindex(grad.shape):
            values = []
            for sign in (1, -1):
                leaves = [np.array(x, dtype=float) for x in fuzz._leaves(point[name])]
                leaves[k][index] += sign * eps
                values.append(f(**_fresh({**point, name: _rebuilt(point[name], leaves)})))
            grad[index] = (values[0] - values[1]) / (2 * eps)
        out.append(grad)
    return out


def _compiled(name, body, kinds):
    source = "import numpy as np\n" + textwrap.dedent(body)
    with emit.unformatted():
        text = compile_source(source, "structured_rebinding.py", ["f"], None, kinds).text
    space = {}
    exec(compile(source, "structured_rebinding.py", "exec"), space)  # noqa: S102 - the test's own program
    return load_module(text, f"structured_rebinding_{name}"), space["f"]


def _by_parameter(module, result, point):
    """The gradient as {parameter: gradient}, for the parameters it is taken with respect to."""
    doc = " ".join(module.f_grad.__doc__.split())
    wrt = doc.split("with respect to ")[1].split(".")[0].split(", ")
    assert set(wrt) <= set(point), wrt
    return dict(zip(wrt, result if len(wrt) > 1 else (result,), strict=True))


@pytest.mark.parametrize("name,body,point", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_gradient_agrees_with_finite_differences(name, body, point):
    kinds = ("grad", "jvp", "hvp") if name in FORWARD else ("grad",)
    m, f = _compiled(name, body, kinds)
    value, grads = m.f_value_and_grad(**_fresh(point))
    assert value == pytest.approx(f(**_fresh(point)), rel=1e-12, abs=1e-12)
    grad = _by_parameter(m, m.f_grad(**_fresh(point)), point)
    assert set(grad) == set(_by_parameter(m, grads, point))
    assert grad, "no parameter differentiated"
    for param, g in grad.items():
        for got, want in zip(fuzz._leaves(g), _differences(f, point, param), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"d{name}/d{param}")
        for a, b in zip(fuzz._leaves(g), fuzz._leaves(_by_parameter(m, grads, point)[param]), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    if name in FORWARD:
        _check_forward(m, f, point, grad)


def _check_forward(m, f, point, grad):
    """jvp along t is grad . t; hvp along t is the gradient's central difference along t."""
    rng = np.random.default_rng(7)
    t = {p: _rebuilt(point[p], [rng.standard_normal(np.shape(x)) for x in fuzz._leaves(point[p])]) for p in point}
    tangents = list(inspect.signature(m.f_jvp).parameters)[-len(grad):]
    along = {tangent: t[param] for tangent, param in zip(tangents, grad)}
    moved = {p: (point[p] if p not in grad else t[p]) for p in point}
    value, derivative = m.f_jvp(**_fresh(point), **along)
    assert value == pytest.approx(f(**_fresh(point)), rel=1e-12, abs=1e-12)
    want = sum(float(np.sum(g * np.asarray(x))) for p in grad for g, x in zip(fuzz._leaves(grad[p]), fuzz._leaves(t[p])))
    assert derivative == pytest.approx(want, rel=1e-9, abs=1e-9)
    zero = {p: _rebuilt(point[p], [np.zeros(np.shape(x)) for x in fuzz._leaves(point[p])]) for p in point}
    step = {**zero, **{p: moved[p] for p in grad}}
    h = 1e-5
    up = _by_parameter(m, m.f_grad(**_moved(point, step, h)), point)
    down = _by_parameter(m, m.f_grad(**_moved(point, step, -h)), point)
    hvp = _by_parameter(m, m.f_hvp(**_fresh(point), **along), point)
    for p in grad:
        for got, a, b in zip(fuzz._leaves(hvp[p]), fuzz._leaves(up[p]), fuzz._leaves(down[p]), strict=True):
            np.testing.assert_allclose(got, (np.asarray(a) - np.asarray(b)) / (2 * h), rtol=1e-5, atol=1e-5)


def test_every_class_has_programs():
    names = {p[0] for p in PROGRAMS}
    assert len(names) == len(PROGRAMS)
    for prefix in ("helper_", "slice_of_part", "unpack_", "helper_array_unpacked", "part_"):
        assert any(n.startswith(prefix) for n in names), prefix
    assert FORWARD <= names


# ---- what stays refused, with its place and what to write instead --------------------------
ERRORS = [
    ("parameter_rebound_in_branch", """
def f(params: list, x):
    q = params
    if x > 0:
        q = params[0] * 2.0
    return np.sum(q)
""", "bad.py:5:5: 'q' (a structured parameter) is assigned inside a loop or branch: give the new value another "
        "name\n        if x > 0:\n        ^"),
    ("run_of_parts_read_after_loop", """
def f(params: list, x):
    for t in range(2):
        rest = params[1:]
    s = 0.0
    for W, b in rest:
        s = s + np.sum(W @ x + b)
    return s
""", "bad.py:7:17: 'rest' was bound to params[1:] inside a loop or branch, and which parts it names after it "
        "depends on the path taken: write params[1:] where it is used\n        for W, b in rest:\n"
        "                    ^"),
    ("run_of_parts_after_its_index_changed", """
def f(params: list, x):
    k = 1
    s = 0.0
    for t in range(2):
        rest = params[k:]
        k = k + 1
        for W, b in rest:
            s = s + np.sum(W @ x + b)
    return s
""", "bad.py:9:21: 'rest' was bound to parts of 'params' before the index it reads changed: write the index into "
        "'params' where it is used\n            for W, b in rest:\n                        ^"),
    ("name_with_a_value_bound_to_run_in_loop", """
def f(params: list, x):
    rest = x
    s = 0.0
    for t in range(2):
        s = s + np.sum(rest)
        rest = params[1:]
    return s
""", "bad.py:8:9: 'rest' holds a value and is bound to a run of parts of 'params' inside a loop or branch: give "
        "one of them another name\n            rest = params[1:]\n            ^"),
    ("starred_name_from_a_slice", """
def f(params: list, x):
    W, *rest = params[1:]
    return np.sum(W)
""", "bad.py:4:8: a starred name unpacking a slice of 'params' is not supported: unpack the part the slice is "
        "taken of\n        W, *rest = params[1:]\n           ^"),
]


@pytest.mark.parametrize("name,body,expected", ERRORS, ids=[e[0] for e in ERRORS])
def test_refusals_say_where_and_what_to_write(name, body, expected):
    with pytest.raises(CompileError) as caught:
        compile_source("import numpy as np\n" + textwrap.dedent(body), "bad.py", wrt="all")
    assert caught.value.format() == expected


def test_a_helper_returning_a_number_unpacked_fails_as_python_does():
    """`a, b = h(x)` of a helper returning its argument: an array of two rows unpacks (it
    was refused as "must return a tuple"); a number raises Python's kind of error."""
    source = "def h(x):\n    return x\n\ndef f(x):\n    a, b = h(x)\n    return a * b\n"
    m = load_module(compile_source(source, "h.py", wrt="all").text, "structured_rebinding_number")
    np.testing.assert_allclose(m.f_grad(np.array([2.0, 3.0])), [3.0, 2.0])
    with pytest.raises(TypeError, match="'x' is a float"):
        m.f_grad(3.0)


def test_a_custom_function_s_array_unpacked_by_rows_follows_its_rule():
    """`a, b = f(w)` of a custom_vjp function returning one array takes its rows (it was
    refused as "returns one value, not 2"); the gradient is the rule's, not the body's."""
    source = ("import numpy as np\nimport gradgen\n\n@gradgen.custom_vjp\ndef f(x):\n    return x * 2\n\n"
              "@f.defvjp\ndef f_vjp(g, out, x):\n    return g * 3\n\ndef loss(w):\n    a, b = f(w)\n"
              "    return np.sum(a * b)\n")
    m = load_module(compile_source(source, "c.py", ["loss"], wrt="all").text, "structured_rebinding_custom")
    w = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(m.loss_grad(w), 3 * np.stack([2 * w[1], 2 * w[0]]))


def test_the_fuzzer_s_reproducers_compile_and_agree():
    """The grammar fuzzer's programs of this class (seeds 7 and 8), as it generates them."""
    for seed, index in [(8, 172), (8, 291), (8, 32), (7, 198), (7, 212), (7, 143), (8, 365), (8, 118), (8, 156), (9, 439)]:
        outcome = fuzz.run(fuzz.generate(seed, index, only="grammar"))
        assert outcome.status == "ok", (seed, index, outcome.problems)
