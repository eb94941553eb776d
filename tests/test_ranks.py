"""gradgen.grad specialised on the shapes of its calls (issue 23, item 2; gradgen/live/ranks.py):
the module for any shapes until a call says its signature, then the one `--shapes` would write
for it (scalar code in a loop over a vector), one per signature, the plain one where the
shaped compile refuses."""

import sys

import numpy as np
import pytest

import gradgen
from gradgen.errors import CompileError
from gradgen.live import ranks

pytestmark = pytest.mark.usefixtures("fresh_cache")  # (tests/conftest.py)

FILTER = '''\
import numpy as np


def filtered(a, log_q, *, y):
    q = np.exp(log_q)
    mean, variance, total = 0.0, 1.0, 0.0
    for t in range(y.shape[0]):
        mean = a * mean
        variance = a * a * variance + q
        spread = variance + 0.2
        total = total - 0.5 * (np.log(spread) + (y[t] - mean) ** 2 / spread)
        gain = variance / spread
        mean = mean + gain * (y[t] - mean)
        variance = (1 - gain) * variance
    return np.sum(total)
'''


@pytest.fixture
def user(tmp_path):
    (tmp_path / "kalman_user.py").write_text(FILTER)
    sys.path.insert(0, str(tmp_path))
    try:
        import kalman_user
        yield kalman_user
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("kalman_user", None)


def central(f, point, h=1e-6):
    return [(f(*[v + h * (i == j) for j, v in enumerate(point)]) - f(*[v - h * (i == j) for j, v in enumerate(point)]))
            / (2 * h) for i in range(len(point))]


def test_a_loop_over_a_vector_becomes_scalar_code_for_the_shapes_of_the_call(user):
    g = gradgen.grad(user.filtered, wrt="all")
    assert "unbroadcast(" in g.__wrapped__.source  # (the module for any shapes: y[t] may be a row)
    y = np.random.default_rng(0).standard_normal(30)
    got = g(0.8, -1.0, y=y)
    np.testing.assert_allclose(got, central(lambda a, q: user.filtered(a, q, y=y), [0.8, -1.0]), rtol=1e-6)
    np.testing.assert_allclose(got, g.__wrapped__(0.8, -1.0, y=y), rtol=1e-13)
    ((signature, served),) = g.modules.items()
    assert signature == (("a", (), "float"), ("log_q", (), "float"), ("y", ("a",), "f"))
    assert "unbroadcast(" not in served.source and "y (a,)" in served.source
    g(0.5, -2.0, y=y[:7])  # other lengths, the same ranks: the same module
    assert len(g.modules) == 1


def test_another_rank_gets_its_own_module_and_the_right_gradient(user):
    g = gradgen.grad(user.filtered, wrt="all")
    Y = np.random.default_rng(1).standard_normal((6, 3))  # y[t] is a row: the total an array, summed
    got = g(0.7, -0.5, y=Y)
    np.testing.assert_allclose(got, central(lambda a, q: user.filtered(a, q, y=Y), [0.7, -0.5]), rtol=1e-6)
    g(0.7, -0.5, y=Y[:, 0])
    assert [dims for (_, _, (_, dims, _)) in g.modules] == [("a", "b"), ("a",)]


def test_the_signature_names_equal_lengths_alike_and_skips_what_it_cannot_state():
    sig = ranks.signature(["X", "w", "params", "n"], (np.ones((5, 3)), np.ones(3), [np.ones(2)], 4),
                          {"y": np.ones(5, dtype=int), "flag": True})
    assert sig == (("X", ("a", "b"), "f"), ("w", ("b",), "f"), ("n", (), "int"), ("y", ("a",), "i"))
    assert ranks.signature(["x"], (np.ones((1, 4)),), {}) == (("x", (1, "a"), "f"),)


def test_a_refused_shaped_compile_leaves_the_plain_module():
    def plain(x):
        return 2 * x

    def refuse(shapes):
        raise CompileError("no", "f.py")

    g = ranks.specialising(plain, ["x"], refuse)
    assert g(np.ones(2)).tolist() == [2.0, 2.0] and g.modules[(("x", ("a",), "f"),)] is plain


RUNGE_KUTTA = '''\
import numpy as np


def slope(x, y):
    return x * np.concatenate([np.ones(1), y[:-1]])


def last(x, *, s):
    h = 1.0 / s
    y = np.zeros(np.shape(x)[0])
    for _ in range(s):
        k1 = slope(x, y)
        k2 = slope(x, y + h / 2 * k1)
        y = y + h / 2 * (k1 + k2) + np.zeros(len(x)) + np.zeros(x.shape)
    return y[-1]
'''


@pytest.mark.parametrize("shapes", [{"x": ("a",), "s": ()}, {"x": (5,), "s": ()}])
def test_lengths_measured_and_concatenated_keep_their_shapes(shapes):
    """GradBench's ode: `np.zeros(np.shape(x)[0])` (also len(x), x.shape) has x's length, and
    `np.concatenate([np.ones(1), y[:-1]])` y's (1 + (a - 1) = a): with x's shape stated, no
    value's shape is left to run time (no unbroadcast), and the gradient is the plain one."""
    from gradgen import compile_source, load_module

    text = compile_source(RUNGE_KUTTA, "rk.py", functions=["last"], shapes=shapes).text
    assert "unbroadcast" not in text
    x = np.linspace(0.2, 1.0, 5)
    plain = load_module(compile_source(RUNGE_KUTTA, "rk.py", functions=["last"]).text, "rk0")
    np.testing.assert_allclose(load_module(text, "rk1").last_grad(x, s=4), plain.last_grad(x, s=4), rtol=1e-14)
    user = {}
    exec(RUNGE_KUTTA, user)
    step = 1e-6 * np.eye(5)
    fd = [(user["last"](x + e, s=4) - user["last"](x - e, s=4)) / 2e-6 for e in step]
    np.testing.assert_allclose(plain.last_grad(x, s=4), fd, rtol=1e-6, atol=1e-10)


def test_a_cumulative_product_of_a_number_is_a_vector_of_one():
    """Soak seed 34000 #1318: `np.cumprod(np.ones(np.shape(alpha)))` for a number alpha has shape
    (1,), not (): the shaped module took it for a number and wrote a sequence into an array."""
    from gradgen import compile_source, load_module

    source = ("import numpy as np\n\n\ndef f(alpha, h):\n    z = np.cumprod(np.ones(np.shape(alpha)) * alpha)\n"
              "    return np.sum(np.array([h, np.sum(z - h)]) ** 2)\n")
    shaped = load_module(compile_source(source, "c.py", shapes={"alpha": (), "h": ()}).text, "c1")
    plain = load_module(compile_source(source, "c.py", wrt="all").text, "c0")
    assert shaped.f_grad(0.7, 0.2) == pytest.approx(plain.f_grad(0.7, 0.2)[0], rel=1e-14)
