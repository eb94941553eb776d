"""`--jit numba` on array code (gradgen/codegen/numba_arrays.py): array programs njit-compiled give
the plain module's gradients (rtol 1e-10), GradBench's Kalman filter among them; the typed
overloads of unbroadcast and the matmul gradients against the plain helpers; the respellings'
text; and `gradgen.grad(f, jit="numba")`.

numba compiles slowly (about a second a function): few programs, small ones."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import gradgen
from gradgen import compile_source, load_module
from gradgen.errors import CompileError

TAIL = ("--jit numba compiles numbers, arrays, if/for/while and the NumPy functions numba has: compile this file "
        "without --jit")
ROOT = Path(__file__).resolve().parent.parent
HAS_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install 'gradgen[numba]')")

ARRAYS = '''import numpy as np


def loss(W, b, X, y, idx):
    hidden = np.tanh(X @ W + b)
    scores = np.sum(hidden * hidden, axis=1, keepdims=True)
    picked = scores[1:, 0]
    centred = hidden - np.mean(hidden, axis=0)
    total = np.sum((picked - y[idx]) ** 2) + np.sum(centred ** 2)
    for i in range(X.shape[0]):
        total = total + np.sum(hidden[i] * W[0]) * 0.1
    return total
'''


def assert_agree(got, want):
    got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            assert_agree(g, w)
            continue
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def both(source, filename, **options):
    plain = load_module(compile_source(source, filename, **options).text, f"{Path(filename).stem}_plain")
    jitted = load_module(compile_source(source, filename, jit="numba", **options).text, f"{Path(filename).stem}_nb")
    return plain, jitted


def test_the_respellings_numba_needs():
    text = compile_source(ARRAYS, "arrays.py", jit="numba", wrt=["W", "b"]).text
    assert "np.expand_dims(np.asarray(np.sum(hidden * hidden, axis=1)), 1)" in text  # keepdims (an array for numba)
    assert "np.sum(hidden, axis=0) / np.shape(hidden)[0]" in text  # np.mean of one axis
    assert "dtype=float" not in text.split("def loss_grad")[1]
    assert "@numba.extending.overload(unbroadcast)\ndef unbroadcast_typed(g, like):" in text
    assert "\ndef unbroadcast(g, like):" in text  # the plain helper stays, undecorated, for Python callers


@needs_numba
def test_an_array_program_agrees_with_the_plain_module():
    rng = np.random.default_rng(0)
    point = dict(W=rng.standard_normal((3, 4)), b=rng.standard_normal(4), X=rng.standard_normal((5, 3)),
                 y=rng.standard_normal(6), idx=np.array([0, 2, 2, 4]))  # (y[idx]: data picked by an index array)
    plain, jitted = both(ARRAYS, "arrays.py", wrt=["W", "b"])
    assert_agree(jitted.loss_grad(**point), plain.loss_grad(**point))
    assert_agree(jitted.loss_value_and_grad(**point), plain.loss_value_and_grad(**point))


INDEXED = '''import numpy as np


def loss(W, x, *, idx):
    h = np.tanh(W @ x)
    h[1:] = h[1:] * 2.0
    row = np.sum(W**2, axis=1)[None, 1:] + h[1:, None]
    picked = h[idx]
    return np.sum(picked**2) + np.sum(np.tanh(row))
'''


@needs_numba
def test_the_helpers_of_reads_and_writes_at_an_index():
    """zero_at (what `h[1:] = ...` overwrote) and scatter (the gradient of `...[None, 1:]` and of
    h[idx] through a repeated index: add_at) under numba, their index a value with slice(...)
    and None in it (particle's forms; kmeans' `[None, :]`, every element once, is a reshape)."""
    text = compile_source(INDEXED, "indexed.py", jit="numba", wrt=["W", "x"]).text
    assert "dloss_dh = zero_at(dloss_dh, slice(1, None, None)) + scatter(" in text
    assert "(None, slice(1, None, None))," in text
    assert "@numba.extending.overload(scatter)" in text and "\ndef add_at(a, index, v):" in text
    rng = np.random.default_rng(0)
    point = dict(W=rng.standard_normal((4, 3)), x=rng.standard_normal(3), idx=np.array([0, 2, 2, 3]))
    plain, jitted = both(INDEXED, "indexed.py", wrt=["W", "x"])
    assert_agree(jitted.loss_grad(**point), plain.loss_grad(**point))


STACKED = '''import numpy as np


def loss(W, x, *, X):
    rows = []
    for k in range(3):
        rows.append(np.tanh(X[k]))
    H = np.stack(rows)
    g = np.concatenate([x, W[0]]) * 2.0
    return np.sum((H @ W) ** 2) + np.sum(np.tanh(g))


def elsewhere(v):
    return list(v)
'''


@needs_numba
def test_a_stacked_list_and_the_pieces_of_a_concatenation():
    """np.stack of a list built by appends (numba's np.stack takes tuples: stack_rows), and
    concatenate_grad's typed overload (each part's piece of the gradient)."""
    text = compile_source(STACKED, "stacked.py", jit="numba", functions=["loss"], wrt=["W", "x"]).text
    assert "H = stack_rows(rows)" in text and "dloss_dx = concatenate_grad(dloss_dg_inner, (x, W[0]), 0, 0)" in text
    rng = np.random.default_rng(0)
    point = dict(W=rng.standard_normal((4, 4)), x=rng.standard_normal(4), X=rng.standard_normal((3, 4)))
    plain, jitted = both(STACKED, "stacked.py", functions=["loss"], wrt=["W", "x"])
    assert_agree(jitted.loss_grad(**point), plain.loss_grad(**point))


CUMULATIVE = """import numpy as np


def loss(w, *, X):
    z = X @ w
    c = np.cumprod(z, axis=0)
    return np.sum(c)


def elsewhere(a):
    return np.cumprod(a, axis=0)
"""


def test_a_refusal_of_generated_code_points_at_the_line_it_cites():
    """np.cumprod's gradient is a helper numba does not take (cumprod_grad): the error points
    at the line whose gradient needs it (its `# line 6` comment), not at the np.cumprod
    another function of the file calls. (Till the ninth session the logistic regression's
    np.broadcast, numba's now as an empty array of its shape; till the seventh lstm's list(...)
    of np.stack's gradient.)"""
    with pytest.raises(CompileError) as caught:
        compile_source(CUMULATIVE, "cumulative.py", jit="numba", functions=["loss"], wrt=["w"])
    assert caught.value.format().splitlines()[:2] == [
        f"cumulative.py:6:5: --jit numba: array code (the helper cumprod_grad gradgen writes for arrays); {TAIL}",
        "        c = np.cumprod(z, axis=0)"]


@needs_numba
def test_the_logistic_regression_under_numba():
    """Its mean's gradient counts y * z's elements with np.size(np.broadcast(z, y)) (their
    shapes unknown); numba has no np.broadcast: an empty array of the broadcast shape
    measures the same."""
    source = (ROOT / "benchmarks" / "references" / "logistic_regression.py").read_text()
    text = compile_source(source, "logistic.py", jit="numba", functions=["loss"], wrt=["w", "b"]).text
    assert "np.size(np.empty(np.broadcast_shapes(np.shape(z), np.shape(y))))" in text
    plain, jitted = both(source, "logistic.py", functions=["loss"], wrt=["w", "b"])
    rng = np.random.default_rng(0)
    X, y, w = rng.standard_normal((50, 4)), (rng.uniform(size=50) > 0.5).astype(float), rng.standard_normal(4)
    assert_agree(jitted.loss_value_and_grad(w, 0.3, X=X, y=y), plain.loss_value_and_grad(w, 0.3, X=X, y=y))


@needs_numba
@pytest.mark.parametrize("name", ["kalman", "rosenbrock"])
def test_gradbench_programs_agree_with_the_plain_module(name):
    sys.path.insert(0, str(ROOT / "benchmarks" / "gradbench"))
    if name == "kalman":
        import kalman

        source, args, wrt = (ROOT / "benchmarks" / "gradbench" / "kalman.py").read_text(), kalman.inputs("small"), \
            list(kalman.PARAMETERS)
    else:
        source, wrt = (ROOT / "benchmarks" / "references" / "rosenbrock.py").read_text(), ["x"]
        args = {"x": np.linspace(-1.0, 1.5, 7)}
    function = "objective" if name == "kalman" else "rosenbrock"
    plain, jitted = both(source, f"{name}.py", functions=[function], wrt=wrt)
    assert_agree(getattr(jitted, f"{function}_grad")(**args), getattr(plain, f"{function}_grad")(**args))


@needs_numba
def test_typed_helpers_match_the_plain_ones():
    import numba

    plain, jitted = both("import numpy as np\n\n\ndef f(A, x):\n    return np.sum((A @ x) ** 2)\n", "mm.py",
                         wrt=["A", "x"])
    unbroadcast = numba.njit(lambda g, like: jitted.unbroadcast(g, like))
    rng = np.random.default_rng(1)
    for g_shape, like_shape in [((), ()), ((3,), ()), ((), (3,)), ((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (2, 1)),
                                ((4, 2, 3), (2, 1)), ((2, 3), (2, 3))]:
        g = rng.standard_normal(g_shape) if g_shape else 1.5
        like = np.ones(like_shape) if like_shape else 2.0
        assert_agree(unbroadcast(g, like), plain.unbroadcast(g, like))
    g = rng.standard_normal((2, 3))  # (of like's shape: g itself, no copy, as the plain helper returns it)
    assert np.shares_memory(unbroadcast(g, np.ones((2, 3))), g)
    assert not np.shares_memory(unbroadcast(g[:, ::-1], np.ones((2, 3))), g)  # (a view: numba types it apart)
    for a_shape, x_shape in [((3, 4), (4,)), ((3, 4), (4, 2)), ((4,), (4, 2)), ((4,), (4,))]:
        A, x = rng.standard_normal(a_shape), rng.standard_normal(x_shape)
        assert_agree(jitted.f_grad(A, x), plain.f_grad(A, x))


@needs_numba
def test_gradgen_grad_jit_numba():
    import numba

    sys.path.insert(0, str(ROOT / "benchmarks" / "gradbench"))
    import kalman

    args = kalman.inputs("small")
    g = gradgen.grad(kalman.objective, wrt=list(kalman.PARAMETERS), jit="numba")
    assert isinstance(g.dispatcher, numba.core.registry.CPUDispatcher) and "@numba.njit(cache=False, boundscheck=True)" in g.source
    assert_agree(g(**args), gradgen.grad(kalman.objective, wrt=list(kalman.PARAMETERS))(**args))
    value, grads = gradgen.value_and_grad(kalman.objective, wrt=list(kalman.PARAMETERS), jit="numba")(**args)
    np.testing.assert_allclose(value, kalman.objective(**args), rtol=1e-12)


ZERO_START = '''
import numpy as np


def f(a, b, *, X):
    u = a * np.arctan(3) ** 2
    return sum([np.mean(u) - np.sum(b) for _ in range(1)])
'''


@needs_numba
def test_an_adjoint_started_at_zero_before_a_loop_adding_arrays():
    """`df_du = 0.0` before the backward loop that adds arrays into it: numba types a name
    once, so it starts from zeros of u, which the gradient alone computes first (fuzz --jit
    numba, seed 6 #100)."""
    text = compile_source(ZERO_START, "zero_start.py", jit="numba").text
    grad = text.split("def f_grad")[1].split("def f_value_and_grad")[0]
    assert "    u = a * np.arctan(3) ** 2\n    df_du = np.zeros_like(u, dtype=np.float64)[()]\n" in grad
    plain, jitted = both(ZERO_START, "zero_start.py")
    point = dict(a=np.array([0.5, -1.0, 2.0]), b=np.array([1.0, 2.0]), X=np.ones(2))
    assert_agree(jitted.f_grad(**point), plain.f_grad(**point))
    assert_agree(jitted.f_value_and_grad(**point), plain.f_value_and_grad(**point))


CHOICE = '''
import numpy as np


def f(A, offset=0.0):
    R = np.copy(A)
    e = -R if np.sum(np.deg2rad(A * 30.0)) > 0.179 else offset / np.cosh(R)
    return np.sum(R) + np.mean(e)
'''


@needs_numba
@pytest.mark.parametrize("A", [np.array([0.3, -0.2, 0.5]), np.array([-0.3, -0.2, 0.1])])
def test_a_gradient_added_under_a_test(A):
    """`d = d + (g if t else 0.0)`, the backward pass of a conditional expression on arrays,
    becomes `if t: d = d + g` (numba unifies no array with 0.0: fuzz --jit numba seed 6 #366);
    both branches taken."""
    text = compile_source(CHOICE, "choice.py", jit="numba").text
    assert "    if not e_sum > 0.179:\n        df_dR = df_dR + unbroadcast(" in text
    plain, jitted = both(CHOICE, "choice.py")
    assert_agree(jitted.f_value_and_grad(A), plain.f_value_and_grad(A))
    assert_agree(jitted.f_grad(A), plain.f_grad(A))


@needs_numba
def test_a_product_broadcast_further():
    """`a * (a @ X)` with a @ X of shape (1,): the product's gradient arrives stretched to a's
    shape and is summed back before matmul's rule (fuzz --jit numba seed 6 #74)."""
    source = '''
import numpy as np


def f(a, b, *, X):
    y = np.sin(a * (a @ X))
    return y.sum() + np.sum(b)
'''
    plain, jitted = both(source, "stretched.py")
    point = dict(a=np.array([0.5, -1.0, 2.0]), b=np.array([1.0, 2.0]), X=np.array([[0.3], [0.1], [-0.2]]))
    assert_agree(jitted.f_value_and_grad(**point), plain.f_value_and_grad(**point))
    assert_agree(jitted.f_grad(**point), plain.f_grad(**point))


SAVED_BEFORE_ITS_FIRST_VALUE = '''
import numpy as np


def f(w, *, xs):
    s = 0.0
    for i in range(4):
        if i > 0:
            s = s + np.sum(h * w) * w
        h = np.tanh(xs * i)
    return s
'''


@needs_numba
@pytest.mark.parametrize("xs", [np.array([1.0, 2.0, 3.0]), 0.4], ids=["array", "number"])
def test_a_value_saved_before_its_first_value_in_a_loop(xs):
    """h, read in the trip after it is made, is saved before each overwrite, from `h = None`:
    where the analysis says h may be an array it stays None (numba types an optional of what
    h later holds), not `0.0`, which numba could not unify with an array; and the helpers look
    through the optional (`optional_value`): an optional array taken for a number had
    unbroadcast sum it, a silently wrong gradient."""
    text = compile_source(SAVED_BEFORE_ITS_FIRST_VALUE, "saved_first.py", jit="numba").text
    assert "    h = None\n    h_stack = []\n" in text
    assert "@numba.extending.intrinsic\ndef optional_value(typingctx, x):" in text
    plain, jitted = both(SAVED_BEFORE_ITS_FIRST_VALUE, "saved_first.py")
    assert_agree(jitted.f_grad(0.7, xs=xs), plain.f_grad(0.7, xs=xs))
    assert_agree(jitted.f_value_and_grad(0.7, xs=xs), plain.f_value_and_grad(0.7, xs=xs))


@needs_numba
@pytest.mark.parametrize("g_shape, like_shape", [((2, 3), (3,)), ((2, 3), (2, 3)), ((3,), ()), ((), ())])
def test_the_typed_helpers_look_through_an_optional(g_shape, like_shape):
    """unbroadcast(g, like) and the matmul gradients with an argument of an optional type (a
    value popped from a stack started at None): summed back to like's shape, not to a number
    (an optional array is no number: the unwrapped overload chose the number's code)."""
    import numba

    plain, jitted = both("import numpy as np\n\n\ndef f(A, x):\n    return np.sum((A @ x) ** 2)\n", "mm.py",
                         wrt=["A", "x"])

    @numba.njit
    def optional(flag, value):
        out = None
        if flag:
            out = value
        return out

    unbroadcast = numba.njit(lambda g, like, flag: jitted.unbroadcast(g, optional(flag, like)))
    product_a = numba.njit(lambda g, a, b, flag: jitted.matmul_grad_a(optional(flag, g), a, b))
    rng = np.random.default_rng(2)
    g = rng.standard_normal(g_shape) if g_shape else 1.5
    like = np.ones(like_shape) if like_shape else 2.0
    assert_agree(unbroadcast(g, like, True), plain.unbroadcast(g, like))
    a, b, g2 = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
    assert_agree(product_a(g2, a, b, True), plain.matmul_grad_a(g2, a, b))


ALONG_AN_AXIS = '''
import numpy as np


def f(W, *, X):
    weights = np.cumprod(1.0 + 0.1 * np.abs(X), axis=1) / np.prod(X * X + 1.0, axis=-1, keepdims=True)
    scores = (X * weights) @ W
    shifted = scores - np.max(scores, axis=1, keepdims=True)
    nearest = np.min(shifted * shifted, axis=0)
    running = np.cumsum(np.sin(scores), axis=0)
    return np.sum(nearest) + np.sum(running * running)
'''


def test_the_reductions_along_an_axis_numba_lacks_are_its_helpers():
    """np.max / np.min / np.prod of one axis (keepdims too) and np.cumprod / np.cumsum along one,
    which numba takes for whole arrays only, are `max_along(a, k)` and so on: helpers written into
    the module, typed for the rank of each call (gradgen/codegen/numba_along.py). (The gradients
    of np.prod and np.cumprod are helpers numba does not take yet: here they run on data.)"""
    text = compile_source(ALONG_AN_AXIS, "along.py", jit="numba", wrt=["W"]).text
    body = text.split("def f_grad")[1]
    assert "np.expand_dims(np.asarray(max_along(scores, 1)), 1)" in body and "min_along(" in body
    assert "\ndef min_along(a, axis):\n" in text and "@numba.extending.overload(cumprod_along)\n" in text


@needs_numba
def test_the_reductions_along_an_axis_agree_with_the_plain_module():
    plain, jitted = both(ALONG_AN_AXIS, "along.py", wrt=["W"])
    rng = np.random.default_rng(3)
    for shape in [(4, 3), (1, 3)]:  # (one module: numba types both the same, and compiles once)
        W, X = rng.standard_normal((shape[1], 5)), rng.standard_normal(shape)
        assert_agree(jitted.f_value_and_grad(W, X=X), plain.f_value_and_grad(W, X=X))


@needs_numba
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_the_along_helpers_for_each_rank(axis):
    import numba

    from gradgen.codegen import numba_along

    namespace = {}
    text = "import numba\nimport numpy as np\n\n" + "\n\n".join(numba_along.helpers(
        {"min_along", "max_along", "prod_along", "cumsum_along", "cumprod_along", "repeat_along"}))
    exec(compile(text, "along_helpers", "exec"), namespace)  # noqa: S102 - gradgen's own helper text
    rng = np.random.default_rng(4)
    names = ("min", "max", "prod", "cumsum", "cumprod")
    low, high, prod, cumsum, cumprod = (namespace[f"{name}_along"] for name in names)
    every = numba.njit(lambda a, k: (low(a, k), high(a, k), prod(a, k), cumsum(a, k),
                                     cumprod(a, k)))  # (one compile a rank: the suite's time)
    for a in (rng.standard_normal(5), rng.standard_normal((3, 4)), rng.standard_normal((2, 3, 4))):
        if not -a.ndim <= axis < a.ndim:
            continue
        for name, got in zip(names, every(a, axis)):
            want = getattr(np, name)(a, axis=axis)
            assert np.shape(got) == np.shape(want)
            np.testing.assert_allclose(got, want, rtol=1e-12)
        if axis >= 0:  # np.repeat(a, 3, axis=k) (llsq's data): repeat_along
            repeat = namespace["repeat_along"]
            got = numba.njit(lambda a, k: repeat(a, 3, k))(a, axis)
            assert np.array_equal(got, np.repeat(a, 3, axis=axis))


GATHERED = '''
import numpy as np


def f(X, cams, *, point, camera):
    moved = X[point] - cams[camera]
    picked = X[point, 0] * cams[camera, 1]
    return np.sum(moved ** 2) + np.sum(np.tanh(picked))
'''


@needs_numba
def test_a_read_through_repeated_indices_adds_back_with_add_at():
    """The gradient of `X[point]` (point repeats rows: bundle adjustment's observations) is
    np.add.at, which numba lacks: `add_at`, a loop over the index (one integer array, or one
    per axis), written into the module (GradBench's ba compiles under --jit numba)."""
    text = compile_source(GATHERED, "gathered.py", jit="numba", wrt=["X", "cams"]).text
    assert "add_at(" in text.split("def f_grad")[1] and "\ndef add_at(a, index, v):\n" in text
    rng = np.random.default_rng(5)
    point = dict(X=rng.standard_normal((4, 2)), cams=rng.standard_normal((3, 2)), point=np.array([0, 2, 2, 3, 0, 2]),
                 camera=np.array([1, 1, 0, 2, 2, 1]))
    plain, jitted = both(GATHERED, "gathered.py", wrt=["X", "cams"])
    assert_agree(jitted.f_value_and_grad(**point), plain.f_value_and_grad(**point))
    assert_agree(jitted.f_grad(**point), plain.f_grad(**point))


@needs_numba
@pytest.mark.parametrize("x", [np.array([0.3, 0.9, 0.9, 0.1]), np.array([[0.3, 0.2], [0.9, -0.4]])], ids=["tie", "matrix"])
def test_the_gradient_of_a_whole_max_divides_by_its_count_as_a_number(x):
    """np.max(x)'s gradient divides the mask of the maxima by np.sum(mask, axis=None,
    keepdims=True), which numba has no keywords for: the count as a number divides the mask
    to the same numbers (GradBench's lse compiles under --jit numba)."""
    source = "import numpy as np\n\n\ndef f(x):\n    a = np.max(x)\n    return a + np.log(np.sum(np.exp(x - a)))\n"
    text = compile_source(source, "lse.py", jit="numba").text
    assert "(x == a) / np.sum(x == a)\n" in text
    plain, jitted = both(source, "lse.py")
    assert_agree(jitted.f_value_and_grad(x), plain.f_value_and_grad(x))


RELAXED = '''import numpy as np


def relax(h, rate=0.5):
    k = 0
    while True:
        h = h - rate * np.tanh(h)
        k += 1
        if k >= 2:
            return h


def f(w, x):
    w = relax(w + 0.8)
    for it in range(2):
        r = x / (1 + w * w)
        if np.sum(x) > -1.0:
            return np.mean(r)
    return np.mean(x)
'''


@needs_numba
def test_adjoints_start_from_zeros_of_a_value_bound_there():
    """numba types a variable once, so an adjoint that starts or restarts at 0.0 and later holds
    an array starts from zeros of a value of its type, which must be bound there: the adjoint
    of `h`, a loop's variable, from h as the loop left it (it stayed 0.0: numba could not unify
    it with the array added later); `df_dr` in the `else` of a trip that binds it only in the
    `if`, from r (it read df_dr, unbound in the first trip). Fuzz --jit numba 63000 #3; both
    branches taken."""
    text = compile_source(RELAXED, "relaxed.py", functions=["f"], jit="numba").text
    assert "    df_dh_1 = np.zeros_like(h_1, dtype=np.float64)[()]\n" in text
    assert "        else:\n            df_dr = np.zeros_like(r, dtype=np.float64)[()]\n" in text
    plain, jitted = both(RELAXED, "relaxed.py", functions=["f"])
    w = np.array([0.3, -0.4, 1.1])
    for x in (np.array([0.5, 1.0, -0.2]), np.array([-2.0, 0.1, 0.3])):  # (one compile: numba is slow)
        assert_agree(jitted.f_value_and_grad(w, x), plain.f_value_and_grad(w, x))
        assert_agree(jitted.f_grad(w, x), plain.f_grad(w, x))


LAYERED = '''import numpy as np


def loss(W, e, *, state):
    hidden = state
    total = 0.0
    for t in range(3):
        x = e * 0.5
        rows = []
        for i in range(2):
            g = np.concatenate([x, hidden[i]]) * W[i]
            x = np.tanh(g[:2] + g[2:])
            rows.append(x)
        hidden = np.stack(rows)
        total = total + np.sum(x)
    return total
'''


@needs_numba
def test_layers_over_time_as_lstm_writes_them():
    """lstm's shape under numba: the rows of np.stack's gradient as a list (`list(...)`,
    numba's); concatenate_grad of parts of two types (x, a C array, and hidden[i], a view);
    x, saved before the trip first binds it, bound before the loop to that first value (numba
    met `x = None` first and typed np.ones_like(x) a number); and the value np.stack(rows)
    named without taking the name of the helper numba's module writes for it (`stack_rows`)."""
    text = compile_source(LAYERED, "layered.py", wrt=["W", "e"], jit="numba").text
    assert "    x = None\n    hidden = state\n" in text and "    x = e * 0.5\n    for t in range(3):\n" in text
    assert "        dtotal_drows = list(dtotal_dstack_rows_1)\n" in text
    assert "        stack_rows_1 = stack_rows(rows)\n" in text
    plain, jitted = both(LAYERED, "layered.py", wrt=["W", "e"])
    rng = np.random.default_rng(0)
    point = dict(W=rng.standard_normal((2, 4)), e=rng.standard_normal(2), state=rng.standard_normal((2, 2)))
    assert_agree(jitted.loss_grad(**point), plain.loss_grad(**point))
    assert_agree(jitted.loss_value_and_grad(**point), plain.loss_value_and_grad(**point))


@pytest.mark.parametrize("call", ["np.squeeze(b)", "np.diagonal(b)"])
def test_calls_numba_lacks_are_refused_where_they_are_written(call):
    """np.squeeze and np.diagonal are not numba's (0.68): a module calling them was accepted
    and failed at its first call (fuzz --jit numba 63001 #291); now refused, located."""
    source = f"import numpy as np\n\n\ndef f(a, b):\n    return np.sum({call}) + np.sum(np.arctan(a))\n"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "lacks.py", functions=["f"], jit="numba")
    column = source.splitlines()[4].index(call) + 1
    assert caught.value.format().splitlines()[:3] == [
        f"lacks.py:5:{column}: --jit numba: the array function {call.split('(')[0]}; {TAIL}",
        f"        return np.sum({call}) + np.sum(np.arctan(a))", " " * (3 + column) + "^"]


STACKS = '''import numpy as np


def rotation(v):
    n = np.sqrt(np.sum(v ** 2))
    if n < 0.0001:
        return np.eye(2)
    c = np.cos(n)
    s = np.sin(n)
    R = np.zeros((2, 2))
    R[0, 0] = c
    R[0, 1] = -s
    R[1, 0] = s
    R[1, 1] = c
    return R * v[0]


def loss(theta, *, bases, M):
    mats = []
    for i in range(3):
        mats.append(bases[i] * theta[i])
    T = np.stack(mats) @ bases
    U = T @ M
    V = M @ T
    return np.sum(U ** 2) + np.sum(V) + np.sum(rotation(theta[:2]))
'''


@needs_numba
def test_stacks_of_matrices_and_an_adjoint_started_in_a_branch():
    """GradBench ht's forms under numba: `@` of stacks of matrices (3-D by 3-D, by 2-D, 2-D by
    3-D) and their gradients, numba's `@` taking matrices only (an overload of the operator,
    matmul_stacked); and an adjoint first set to 0.0 in a branch (a near-zero rotation's
    `return np.eye(2)`) whose other branch makes it an array: zeros of v there. Both
    branches taken; one function compiled (numba compiles slowly)."""
    text = compile_source(STACKS, "stacks.py", functions=["loss"], jit="numba").text
    assert "import numba\nimport numpy as np\nimport operator\n" in text
    assert "@numba.extending.overload(operator.matmul)\ndef matmul_stacked(a, b):" in text
    assert ("    if n < 0.0001:\n        dloss_dn = np.zeros_like(n, dtype=np.float64)[()]\n"
            "        dloss_dv = np.zeros_like(v, dtype=np.float64)[()]\n") in text
    plain = load_module(compile_source(STACKS, "stacks.py", functions=["loss"]).text, "stacks_plain")
    jitted = load_module(text, "stacks_nb")
    rng = np.random.default_rng(1)
    data = dict(bases=rng.standard_normal((3, 2, 2)), M=rng.standard_normal((2, 2)))
    for theta in (np.array([0.5, -0.2, 0.3]), np.array([1e-5, 1e-5, 0.3])):
        assert_agree(jitted.loss_grad(theta, **data), plain.loss_grad(theta, **data))


LISTS = '''import numpy as np


def f(a, b):
    parts = [a * (j + 1.0) for j in range(3)]
    joined = np.concatenate([np.sin(q) for q in parts])
    rows = []
    for k in range(2):
        rows.append(b * k)
    return np.sum(joined**2) + np.sum(np.concatenate(rows, axis=0) * 0.5)
'''


@needs_numba
def test_np_concatenate_of_a_list_under_numba():
    """A list the function builds given whole to np.concatenate (numba's takes a tuple) is
    concatenate_rows(items); the gradient's pieces of it (unconcatenate) and zeros for a list
    variable (zeros_like_tree) are overloads, popped as numba's lists (fuzz 63004 #131)."""
    text = compile_source(LISTS, "lists.py", jit="numba", wrt=["a", "b"]).text
    assert "concatenate_items = concatenate_rows(items)" in text and "@numba.extending.overload(unconcatenate)" in text
    plain, jitted = both(LISTS, "lists.py", wrt=["a", "b"])
    a, b = np.array([0.3, -0.7]), np.array([[0.2, 0.5], [1.0, -1.0]])
    assert_agree(jitted.f_value_and_grad(a, b), plain.f_value_and_grad(a, b))
