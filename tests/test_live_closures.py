"""gradgen.grad on the functions autograd- and JAX-style code makes at run time: a closure a
factory returns, a lambda over data loaded in `__main__`, a module global the running
program computed (gradgen/live/outside.py). Gradients against central differences; the
values the generated function takes are passed again on every call, and a value gradgen
folded into the code compiles again when it changes.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import gradgen
from gradgen import CompileError
from differences import central

FACTORY = '''\
import numpy as np


def rbf(kernel_params, x, xp):
    scale = np.exp(kernel_params[0])
    diffs = np.expand_dims(x / np.exp(kernel_params[1]), 1) - np.expand_dims(xp / np.exp(kernel_params[1]), 0)
    return scale * np.exp(-0.5 * np.sum(diffs ** 2, axis=2))


def make_gp_funs(cov_func, num_cov_params):
    def unpack(params):
        return params[0], params[2:], np.exp(params[1]) + 0.0001

    def log_marginal_likelihood(params, x, y):
        mean, cov_params, noise = unpack(params)
        K = cov_func(cov_params, x, x) + noise * np.eye(len(y))
        r = y - mean
        return -0.5 * r @ np.linalg.solve(K, r) - 0.5 * np.linalg.slogdet(K)[1]

    return num_cov_params + 2, log_marginal_likelihood


def make_mlp(sizes, nonlinearity=np.tanh):
    shapes = list(zip(sizes[:-1], sizes[1:]))

    def predict(weights, inputs):
        for m, n in shapes:
            W = weights[: m * n].reshape((m, n))
            weights = weights[m * n:]
            inputs = nonlinearity(inputs @ W)
        return inputs

    def loss(weights, inputs, targets):
        return np.sum((predict(weights, inputs) - targets) ** 2)

    return sum(m * n for m, n in shapes), loss


rs = np.random.RandomState(0)
X = rs.randn(12, 1)
y = np.cos(X[:, 0])
num_params, log_marginal_likelihood = make_gp_funs(rbf, num_cov_params=2)
objective = lambda params: -log_marginal_likelihood(params, X, y)  # noqa: E731
num_weights, mlp_loss = make_mlp([2, 3, 1])
relu_like = lambda v: np.log1p(np.exp(v))  # noqa: E731
_, softplus_loss = make_mlp([2, 2, 1], nonlinearity=relu_like)


def data_loss(w):
    return np.sum((X[:, 0] * w[0] + w[1] - y) ** 2)


def scaled(k):
    def inner(w):
        return np.sum(w ** 2) * k
    return inner


def counted(n):
    def inner(w):
        total = 0.0
        for i in range(n):
            total = total + w[i] ** 2
        return total
    return inner
'''


@pytest.fixture
def program(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    path = tmp_path / "closures_program.py"
    path.write_text(FACTORY)
    spec = importlib.util.spec_from_file_location("closures_program", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["closures_program"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("closures_program", None)


def test_a_lambda_over_a_factory_closure_and_data_of_main(program):
    """gaussian_process.py's shape: `objective = lambda params: -lml(params, X, y)`, lml a
    closure over a covariance function passed to the factory."""
    g = gradgen.grad(program.objective)
    p = np.array([0.1, -1.0, 0.2, 0.3])
    np.testing.assert_allclose(g(p), central(program.objective, p), rtol=1e-6)
    assert "def objective_grad(params, *, X, y):" in g.source
    assert "Given on every call by gradgen.grad, read from the running program: X, y" in g.source


def test_a_closure_over_a_list_of_shapes_and_a_library_function(program):
    g = gradgen.grad(program.mlp_loss, wrt="all")
    rng = np.random.RandomState(1)
    w, inputs, targets = rng.randn(program.num_weights), rng.randn(5, 2), rng.randn(5, 1)
    dw, dinputs, dtargets = g(w, inputs, targets)
    np.testing.assert_allclose(dw, central(lambda v: program.mlp_loss(v, inputs, targets), w), rtol=1e-6)
    np.testing.assert_allclose(dinputs, central(lambda v: program.mlp_loss(w, v, targets), inputs), rtol=1e-6)
    assert "np.tanh(" in g.source


def test_a_closure_over_a_lambda_of_the_file(program):
    g = gradgen.grad(program.softplus_loss, wrt="weights")
    rng = np.random.RandomState(2)
    w, inputs, targets = rng.randn(6), rng.randn(4, 2), rng.randn(4, 1)
    np.testing.assert_allclose(g(w, inputs, targets), central(lambda v: program.softplus_loss(v, inputs, targets), w),
                               rtol=1e-6)


def test_a_global_the_program_computed_is_passed_on_every_call(program):
    g = gradgen.grad(program.data_loss)
    w = np.array([0.5, -0.2])
    np.testing.assert_allclose(g(w), central(program.data_loss, w), rtol=1e-6)
    program.X = program.X * 2.0  # new numbers, same shape: passed to the same code
    np.testing.assert_allclose(g(w), central(program.data_loss, w), rtol=1e-6)
    program.X, program.y = np.ones((3, 1)), np.zeros(3)  # another shape: compiled again
    np.testing.assert_allclose(g(w), [2 * 3 * (w[0] + w[1])] * 2, rtol=1e-12)


def test_a_captured_number_is_given_and_a_folded_one_compiles_again(program):
    f = program.scaled(3.0)
    g = gradgen.grad(f)
    w = np.array([1.0, 2.0])
    np.testing.assert_allclose(g(w), 6.0 * w)
    f.__closure__[0].cell_contents = 4.0  # the cell changed: its value is passed
    np.testing.assert_allclose(g(w), 8.0 * w)
    h = program.counted(1)
    gh = gradgen.grad(h)
    np.testing.assert_allclose(gh(w), [2.0, 0.0])
    h.__closure__[0].cell_contents = 2  # a loop bound gradgen may unroll: compiled again
    np.testing.assert_allclose(gh(w), [2.0, 4.0])


STATES = """\
import numpy as np


def make(rs):
    def loss(w):
        return np.sum(w * rs.randn(2))
    return loss


def make_helper(rs):
    def noise():
        return rs.randn(2)

    def loss(w):
        return np.sum(w * noise())
    return loss


def make_valued(rs):
    def noise():
        return rs.randn(2)

    def loss(w):
        draw = noise
        return np.sum(w * draw())
    return loss


def make_table(table):
    def loss(w):
        return w * table["scale"]
    return loss


loss = make(np.random.RandomState(0))
helped = make_helper(np.random.RandomState(0))
tabled = make_table({"scale": 2.0})
valued = make_valued(np.random.RandomState(0))
"""


def _load(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def test_a_random_state_the_loss_draws_from_is_passed_as_a_parameter(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    _, module = _load(tmp_path, "states_program", STATES)
    g = gradgen.grad(module.loss)
    assert "def loss_grad(w, *, rs):" in g.source
    np.testing.assert_array_equal(g(np.ones(2)), np.random.RandomState(0).randn(2))  # the loss's own draws


def test_a_random_state_a_helper_draws_from_is_passed_down_to_it(tmp_path, monkeypatch):
    """mixture_variational_inference.py's shape: the loss calls a closure that draws."""
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    _, module = _load(tmp_path, "helper_states_program", STATES)
    g = gradgen.grad(module.helped)
    assert "def loss_grad(w, *, rs):" in g.source
    np.testing.assert_array_equal(g(np.ones(2)), np.random.RandomState(0).randn(2))


@pytest.mark.parametrize(("name", "line", "message"), [
    ("valued", 24, "'noise' draws from the random state 'rs' and is used here as a value; gradgen.grad passes a "
                   "random state only to functions it sees called: call it here, or pass the state as a parameter\n"
                   "            draw = noise\n                   ^"),
    ("tabled", 30, "'loss' reads 'table', a dict from the running program; gradgen.grad reads numbers, arrays, "
                   "tuples and lists of them, and functions of Python files or of NumPy/SciPy there: pass 'table' as "
                   "a parameter\n        def loss(w):\n        ^"),
])
def test_values_gradgen_cannot_pass_are_refused_at_the_function_that_reads_them(tmp_path, monkeypatch, name, line,
                                                                               message):
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    path, module = _load(tmp_path, "refused_program", STATES)
    with pytest.raises(CompileError) as info:
        gradgen.grad(getattr(module, name))
    assert str(info.value) == f"{path}:{line}:{5 if name == 'tabled' else 16}: {message}"


def test_a_closure_of_another_file_is_read_from_its_own_file(tmp_path, monkeypatch):
    """deep_gaussian_process.py's shape: the loss is a lambda of one file over a closure
    another file's factory made; errors in it are located in that file."""
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "factory_lib.py").write_text(textwrap.dedent('''\
        import numpy as onp


        def make(scale):
            def energy(w, x):
                return scale * onp.sum(onp.sin(w * x))
            return energy
        '''))
    _, module = _load(tmp_path, "uses_factory", textwrap.dedent('''\
        import numpy as np
        from factory_lib import make

        energy = make(3.0)
        X = np.linspace(0.0, 1.0, 4)
        loss = lambda w: energy(w, X) + np.sum(w ** 2)
        '''))
    g = gradgen.grad(module.loss)
    w = np.array([0.3, -0.2, 0.5, 1.0])
    np.testing.assert_allclose(g(w), 3.0 * np.cos(w * module.X) * module.X + 2 * w, rtol=1e-12)


def test_a_cell_and_a_global_of_one_name_stay_two_values(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    path = tmp_path / "clash_program.py"
    path.write_text(textwrap.dedent('''\
        import numpy as np

        scale = np.ones(2) * 10.0


        def spread(w):
            return np.sum(w * scale)


        def make(scale):
            def loss(w):
                return spread(w) + np.sum(w ** 2) * scale
            return loss


        loss = make(0.5)
        '''))
    spec = importlib.util.spec_from_file_location("clash_program", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    g = gradgen.grad(module.loss)
    w = np.array([1.0, -1.0])
    np.testing.assert_allclose(g(w), 10.0 + w, rtol=1e-12)


def test_the_gradient_of_a_generated_gradient(tmp_path, monkeypatch):
    """tanh.py's shape: grad(grad(f)), the inner function read from the generated text (and a
    module constant of the user's file wraps it in the function that reads constants live)."""
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    _, module = _load(tmp_path, "higher_program", textwrap.dedent('''\
        import numpy as np

        AT = 0.3


        def tanh(x):
            y = np.exp(-2.0 * x)
            return (1.0 - y) / (1.0 + y)
        '''))
    second = gradgen.grad(gradgen.grad(module.tanh))
    t = np.tanh(0.3)
    assert second(0.3) == pytest.approx(-2 * t * (1 - t ** 2), rel=1e-12)


CAPTURED = '''\
import numpy as np


def optimize(X, y, passes):
    found = []
    for k in range(2):
        scale = float(k + 1)

        def predict(w, X=X, scale=scale):
            return np.tanh(X @ w) * scale

        def acquisition(w, y=y):
            return np.sum((predict(w) - y) ** 2)

        def twice(w):
            return predict(w, X * 2.0) if passes else predict(w)

        found.append((acquisition, twice))
    return found
'''


def test_defaults_that_capture_values_of_the_running_program(tmp_path, monkeypatch):
    """bayesian_optimization.py's shape: `def predict_func(xstar, model_params=model_params,
    X=X, y=y)` made in a loop; the loss calls it without them, so they are the values they
    captured. A call that passes one is refused (its value would be ignored)."""
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    _, module = _load(tmp_path, "captured_program", CAPTURED)
    rng = np.random.RandomState(4)
    X, y, w = rng.randn(5, 3), rng.randn(5), rng.randn(3)
    for k, (acquisition, _) in enumerate(module.optimize(X, y, False)):
        g = gradgen.grad(acquisition)
        want = central(acquisition, w)
        np.testing.assert_allclose(g(w), want, rtol=1e-6)
        assert "def acquisition_grad(w, *, y, scale, X):" in g.source  # each passed on every call
        np.testing.assert_allclose(g(w, y=2 * y), central(lambda v: acquisition(v, y=2 * y), w), rtol=1e-6)
    twice = module.optimize(X, y, True)[0][1]
    with pytest.raises(CompileError) as info:
        gradgen.grad(twice)
    assert str(info.value).split("\n")[0].endswith(
        "this call passes a value for a parameter to 'predict', whose default captured a value of the running "
        "program that gradgen.grad reads as that value: pass it the same way everywhere, or give the default as a "
        "constant")


NESTED = '''\
import numpy as np
import gradgen


def fit(x):
    loglike = lambda r: np.sum(np.log(r * x) - r * x)  # noqa: E731
    score = lambda r: np.sum(gradgen.grad(loglike)(r) ** 2)  # noqa: E731
    return score
'''


def test_a_nested_gradient_of_a_closure_of_the_running_program(tmp_path, monkeypatch):
    """negative_binomial_maxlike.py's shape: `grad(loglike)` inside a lambda, loglike a closure
    over the data: the inner derivative is compiled with what the outer one read."""
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    _, module = _load(tmp_path, "nested_program", NESTED)
    x = np.array([0.5, 1.5, 2.0])
    score = module.fit(x)
    g = gradgen.grad(score)
    r = 0.8
    d = np.sum(1 / r - x)  # dloglike/dr; score = d ** 2, dscore/dr = 2 d * (-len(x) / r ** 2)
    assert score(r) == pytest.approx(d ** 2, rel=1e-12)
    assert g(r) == pytest.approx(2 * d * (-len(x) / r ** 2), rel=1e-9)


def test_asking_again_for_the_same_function_does_not_read_its_file_again(tmp_path, monkeypatch):
    """GradBench's particle asks gradgen.grad(f) inside its loop: the same function object,
    its file unchanged, gets the function handed out before (which reads the running
    program's values itself); an edited file is compiled again."""
    from gradgen import live

    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    path, module = _load(tmp_path, "again_program", "def f(x):\n    return x * x\n")
    first = gradgen.grad(module.f)
    monkeypatch.setattr(live, "source_of", lambda *a: (_ for _ in ()).throw(AssertionError("read again")))
    assert gradgen.grad(module.f) is first
    monkeypatch.undo()
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    path.write_text("def f(x):\n    return x * x * x\n")  # (the same object, its file edited)
    import os
    os.utime(path, ns=(1, 1))
    assert gradgen.grad(module.f)(2.0) == 12.0
