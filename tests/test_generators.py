"""Issue 22: generators as helpers (inlined where a loop consumes them), builtin map and
functools.partial, and recursion whose depth the kind of a parameter decides (a list of
sequences): realistic programs compiled and checked against central differences, and the
exact refusals of what is not supported."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import gradgen
from differences import central
from gradgen import CompileError, compile_source, load_module
from gradgen.verify.check import check_source

VALUE_REL = 1e-12


def check_at(source, name, points):
    for point in points:
        (report,) = check_source(source, "gens.py", functions=[name], at=point)
        (checked,) = report.points
        assert report.ok, [(r.param, r.generated, r.sympy, r.fd, r.note) for r in checked.rows]
        assert abs(checked.value_generated - checked.value_original) <= VALUE_REL * max(
            1.0, abs(checked.value_original))


def refusal(source, name):
    with pytest.raises(CompileError) as info:
        compile_source(textwrap.dedent(source), "gens.py", functions=[name])
    return f"{info.value.line}:{info.value.col}: {info.value.message}"


# ---- generators ----------------------------------------------------------------------------------

GENERATORS = """
import numpy as np


def steps(x, n):
    for i in range(n):
        x = np.sin(x) + 0.5 * x
        yield x
        if np.sum(x) > 3.0:
            return
    yield x * 2.0


def pairs(w):
    yield w[0], 1.0
    yield w[1] * w[0], 2.0
    if w[2] > 0:
        yield np.exp(w[2]), 3.0
    else:
        yield w[2] ** 2, 4.0


def chained(w):
    yield from pairs(w)
    yield w[0] * w[1], 5.0


def trajectory(w, n):
    total = 0.0
    for v in steps(w, n):
        total = total + np.sum(v ** 2)
    return total


def weighted(w):
    acc = 0.0
    for a, c in pairs(w):
        acc = acc + c * a
    return acc


def forwarded(w):
    return sum(c * a for a, c in chained(w))


def listed(w, n):
    vs = list(steps(w, n))
    return np.sum(np.stack(vs) ** 2)


def summed(w, n):
    return sum(np.sum(v) for v in steps(w, n)) + sum([np.sum(v * v) for v in steps(w, 2)])
"""

NEAR, FAR = np.array([0.3, -0.2, 0.4]), np.array([1.3, 1.2, -0.4])  # FAR: steps returns after its first yield


@pytest.mark.parametrize("name", ["trajectory", "listed", "summed"])
def test_a_generator_s_loop_drives_and_its_return_ends_it(name):
    check_at(GENERATORS, name, [{"w": NEAR, "n": 3}, {"w": FAR, "n": 3}, {"w": NEAR, "n": 0}])


@pytest.mark.parametrize("name", ["weighted", "forwarded"])
def test_several_yields_in_branches_and_yield_from(name):
    check_at(GENERATORS, name, [{"w": NEAR}, {"w": FAR}])


def test_the_loop_body_runs_where_the_generator_yields():
    text = compile_source(GENERATORS, "gens.py", functions=["trajectory"]).text
    assert "for i in range(n):" in text and "total = total + np.sum(v**2)" in text


MLP = '''
import numpy as np


def make_nn_funs(layer_sizes, nonlinearity=np.tanh):
    shapes = list(zip(layer_sizes[:-1], layer_sizes[1:]))
    num_weights = sum((m + 1) * n for m, n in shapes)

    def unpack_layers(weights):
        num_weight_sets = len(weights)
        for m, n in shapes:
            yield (
                weights[:, : m * n].reshape((num_weight_sets, m, n)),
                weights[:, m * n : m * n + n].reshape((num_weight_sets, 1, n)),
            )
            weights = weights[:, (m + 1) * n :]

    def predictions(weights, inputs):
        inputs = np.expand_dims(inputs, 0)
        for W, b in unpack_layers(weights):
            outputs = np.einsum("mnd,mdo->mno", inputs, W) + b
            inputs = nonlinearity(outputs)
        return outputs

    def logprob(weights, inputs, targets):
        log_prior = -0.1 * np.sum(weights ** 2, axis=1)
        preds = predictions(weights, inputs)
        return np.sum(log_prior - np.sum((preds - targets) ** 2, axis=1)[:, 0])

    return num_weights, logprob


num_weights, logprob = make_nn_funs([1, 4, 3, 1])
'''


@pytest.fixture
def mlp(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    path = tmp_path / "gens_mlp.py"
    path.write_text(MLP)
    spec = importlib.util.spec_from_file_location("gens_mlp", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gens_mlp"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("gens_mlp", None)


def test_an_mlp_whose_layers_a_generator_unpacks_from_a_flat_vector(mlp):
    """autograd's bayesian_neural_net: the generator a closure of the factory, its `shapes` too."""
    g = gradgen.grad(mlp.logprob)
    rng = np.random.RandomState(0)
    w, x, t = rng.randn(3, mlp.num_weights), rng.randn(6, 1), rng.randn(6, 1)
    np.testing.assert_allclose(g(w, x, t), central(lambda v: mlp.logprob(v, x, t), w), rtol=1e-6, atol=1e-8)


# ---- map and partial ------------------------------------------------------------------------------

MAPS = """
from functools import partial

import numpy as np


def sq(a, x):
    return np.sum((a * x) ** 2)


def mapped(w, xs):
    return sum(map(partial(sq, w), xs))


def bound(w):
    f = partial(sq, w * 2.0)
    return f(w) + partial(sq, w)(3.0)


def two_sequences(w):
    parts = [w, w ** 2]
    total = 0.0
    for v in map(lambda a, b: a * b, parts, [1.0, 2.0]):
        total = total + np.sum(v)
    return total + max(map(np.sum, parts))


def listed(w):
    parts = [w, np.sin(w)]
    return np.sum(np.stack(list(map(np.tanh, parts))))
"""


@pytest.mark.parametrize("name", ["bound", "two_sequences", "listed"])
def test_map_and_partial(name):
    check_at(MAPS, name, [{"w": NEAR}, {"w": FAR}])


def test_sum_of_a_map_of_a_partial():
    check_at(MAPS, "mapped", [{"w": NEAR, "xs": np.array([[1.0, 2.0, 0.5], [0.2, 0.1, 3.0]])}])


# ---- recursion the kind of a parameter decides -----------------------------------------------------

HMM = """
from functools import partial

import numpy as np
from scipy.special import logsumexp


def log_partition_function(natural_params{annotation}, data{data_annotation}):
    if isinstance(data, list):
        return sum(map(partial(log_partition_function, natural_params), data))

    log_pi, log_A, log_B = natural_params

    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]

    return logsumexp(log_alpha)
"""


def hmm_point():
    rng = np.random.RandomState(0)
    params = [np.log(np.full(3, 1 / 3)), np.log(rng.dirichlet(np.ones(3), 3)), np.log(rng.dirichlet(np.ones(4), 3))]
    return params, [np.array([0, 1, 3]), np.array([2, 2]), np.array([1])]


def hmm_check(g, f):
    params, data = hmm_point()
    grads = g(params, data)
    for k in range(3):
        fd = central(lambda v: f([v if j == k else params[j] for j in range(3)], data), params[k])
        np.testing.assert_allclose(grads[k], fd, rtol=1e-6, atol=1e-8)


def test_an_hmm_over_a_list_of_sequences_its_kind_annotated():
    source = HMM.format(annotation="", data_annotation=": list[np.ndarray]")
    compiled = compile_source(source, "hmm.py", functions=["log_partition_function"])
    namespace = {}
    exec(source, namespace)  # noqa: S102 - the test's own program
    module = load_module(compiled.text, "gens_hmm")
    hmm_check(module.log_partition_function_grad, namespace["log_partition_function"])
    with pytest.raises(ValueError, match="compiled for 'data' a list"):
        module.log_partition_function_grad(hmm_point()[0], tuple(hmm_point()[1]))


def test_an_hmm_through_the_python_api_compiles_for_its_first_call(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    path = tmp_path / "gens_hmm_live.py"
    path.write_text(HMM.format(annotation="", data_annotation=""))
    spec = importlib.util.spec_from_file_location("gens_hmm_live", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    g = gradgen.value_and_grad(module.log_partition_function)
    hmm_check(lambda p, d: g(p, d)[1], module.log_partition_function)


def test_recursion_whose_depth_nothing_states_is_refused_at_the_recursive_call():
    assert refusal(HMM.format(annotation="", data_annotation=""), "log_partition_function") == (
        "10:24: recursive call to 'log_partition_function' on a depth known only when it runs: write it as a loop")


# ---- refusals ------------------------------------------------------------------------------------

def test_break_in_a_loop_over_a_generator_is_refused():
    assert refusal("""
        def g(x):
            yield x
            yield x * 2

        def f(x):
            t = 0.0
            for v in g(x):
                if v > 1.0:
                    break
                t = t + v
            return t
        """, "f") == ("10:13: 'break' inside a loop over the generator 'g' is not supported: gradgen runs the "
                      "loop's body at each 'yield' of 'g'; end the generator itself (a 'return' in 'g'), or test "
                      "inside the body")


def test_a_generator_kept_as_a_value_is_refused():
    assert refusal("""
        def g(x):
            yield x

        def f(x):
            it = g(x)
            return next(it)
        """, "f") == ("6:10: 'g' is a generator function: gradgen inlines one where a loop consumes it (for x in "
                      "g(...), list(g(...)), sum(g(...)), a comprehension); a generator kept as a value (next(), "
                      "send()) is not supported")


def test_yield_as_an_expression_is_refused():
    assert refusal("""
        def g(x):
            y = yield x
            yield y

        def f(x):
            return sum(g(x))
        """, "f") == ("3:9: 'yield' inside an expression (x = yield v) is not supported: gradgen inlines a "
                      "generator that yields values (a statement 'yield v') where a loop consumes it")


def test_a_generator_s_return_value_is_refused():
    assert refusal("""
        def g(x):
            yield x
            return x

        def f(x):
            return sum(g(x))
        """, "f") == ("4:12: a generator's 'return <value>' is not supported (a loop over 'g' never reads it): "
                      "write 'return'")
