"""autograd's `flatten` family through gradgen (issue 22: autograd's neural_net.py,
neural_net_regression.py, generative_adversarial_net.py, gmm.py). `gradgen.flatten` and
`flatten_func` at run time (gradgen/trees.py); `flatten(params)` inside a compiled function,
differentiated into the parameter's structure (gradgen/frontend/flattening.py,
gradgen.rules.trees); derivatives of a function flatten_func made, composed in the API
(gradgen/live/flat.py). Every gradient is compared with central differences of the user's
own function, run as written, and with `gradgen check`."""

from __future__ import annotations

import importlib.util
import itertools
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import gradgen
from differences import central_leaves
from gradgen import CompileError, compile_source, flatten, flatten_func, load_module
from gradgen.verify.check import check_source

ROOT = Path(__file__).resolve().parent.parent
_imports = itertools.count()
pytestmark = pytest.mark.usefixtures("fresh_cache")  # (tests/conftest.py)

PROGRAMS = '''\
import numpy as np
from scipy.special import logsumexp
from scipy.stats import norm
from gradgen import flatten


def neural_net_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    """autograd's neural_net.py: the L2 norm through a flattened vector."""
    flattened, _ = flatten(params)
    return np.dot(flattened, flattened)


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


def log_gaussian(params, scale):
    """autograd's neural_net_regression.py."""
    flat_params, _ = flatten(params)
    return np.sum(norm.logpdf(flat_params, 0, scale))


def dict_prior(params, w):
    """A dict (sorted keys), a number leaf and a nested tuple, through flatten(...)[0]."""
    v = flatten(params)[0]
    return np.sum(np.sin(v) * w[: v.shape[0]]) + v[0] ** 2


def layer_norm(params):
    """One part flattened, and a list written in the call."""
    first = flatten(params[0])[0]
    W, b = params[1]
    both, unflatten = flatten([W, 2.0 * b])
    return np.sum(first ** 3) + np.sum(both ** 2)
'''

RS = np.random.RandomState(3)
LAYERS = [(RS.randn(4, 5) * 0.5, RS.randn(5)), (RS.randn(5, 3) * 0.5, RS.randn(3))]
INPUTS = RS.randn(6, 4)
TARGETS = np.eye(3)[RS.randint(0, 3, 6)]


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for key in value for leaf in _leaves(value[key])]
    if isinstance(value, (list, tuple)):
        return [leaf for part in value for leaf in _leaves(part)]
    return [value]


def _replace(value, leaves):
    if isinstance(value, dict):
        return {key: _replace(part, leaves) for key, part in value.items()}
    if isinstance(value, (list, tuple)):
        parts = [_replace(part, leaves) for part in value]
        return type(value)(*parts) if hasattr(value, "_fields") else type(value)(parts)
    return leaves.pop(0)


def _structure(value):
    if isinstance(value, dict):
        return {key: _structure(part) for key, part in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_structure(part) for part in value)
    return ("leaf", np.shape(value))


@pytest.fixture
def user(tmp_path):
    path = Path(tmp_path) / "programs.py"
    path.write_text(PROGRAMS)
    spec = importlib.util.spec_from_file_location(f"flat_programs_{next(_imports)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_gradient(source, function, kwargs, original):
    """The gradient of the first parameter, compiled from `source`: its structure and every
    element against central differences of `original` (the user's function, run), and
    `gradgen check` at the same point."""
    name = next(iter(kwargs))
    module = load_module(compile_source(source, "programs.py", functions=[function]).text, "flat_generated")
    value, grad = getattr(module, f"{function}_value_and_grad")(**kwargs)
    assert value == pytest.approx(original(**kwargs), rel=1e-12)
    assert _structure(grad) == _structure(kwargs[name])
    for got, want in zip(_leaves(grad), central_leaves(original, kwargs, name, _leaves, _replace)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    [report] = check_source(source, "programs.py", functions=[function], at=kwargs)
    assert report.ok, report
    return module


def test_an_l2_norm_of_the_flattened_layers_inside_the_loss(user):
    """autograd's neural_net.py as written: a list of (W, b) tuples of any length."""
    kwargs = {"params": LAYERS, "inputs": INPUTS, "targets": TARGETS, "L2_reg": 0.7}
    module = assert_gradient(PROGRAMS, "log_posterior", kwargs, user.log_posterior)
    text = compile_source(PROGRAMS, "programs.py", functions=["log_posterior"]).text
    assert "    flattened = flatten_tree(params)\n" in text
    assert "add_flat_at(\n        dlog_posterior_dparams, dlog_posterior_dflattened\n    )" in text
    deeper = [*LAYERS, (RS.randn(3, 3), RS.randn(3))]  # one module for any number of layers
    grad = module.log_posterior_grad(deeper, INPUTS, TARGETS, 0.7)
    assert len(grad) == 3 and isinstance(grad[2], tuple)


def test_a_gaussian_prior_on_the_flattened_weights(user):
    """autograd's neural_net_regression.py: norm.logpdf of the vector."""
    assert_gradient(PROGRAMS, "log_gaussian", {"params": LAYERS, "scale": 1.3}, user.log_gaussian)


def test_a_dict_with_numbers_and_tuples_in_sorted_key_order(user):
    params = {"w2": RS.randn(2, 2), "a": (0.4, RS.randn(3)), "b": [RS.randn(2)]}
    vector, _ = flatten(params)
    np.testing.assert_array_equal(vector, np.concatenate([[0.4], params["a"][1], params["b"][0],
                                                          np.ravel(params["w2"])]))
    assert_gradient(PROGRAMS, "dict_prior", {"params": params, "w": RS.randn(12)}, user.dict_prior)


def test_a_part_and_a_list_written_in_the_call(user):
    assert_gradient(PROGRAMS, "layer_norm", {"params": LAYERS}, user.layer_norm)


def test_autograds_spellings_compile_the_same(user):
    """`from autograd.misc import flatten` and `autograd.misc.flatten.flatten`: read, never
    imported (the generated module writes its own flatten_tree)."""
    for spelling in ("from autograd.misc import flatten", "from autograd.misc.flatten import flatten"):
        source = PROGRAMS.replace("from gradgen import flatten", spelling)
        module = load_module(compile_source(source, "programs.py", functions=["l2_norm"]).text, "flat_spelled")
        grad = module.l2_norm_grad(LAYERS)
        for got, (W, b) in zip(grad, LAYERS):
            np.testing.assert_allclose(got[0], 2 * W, rtol=1e-14)
            np.testing.assert_allclose(got[1], 2 * b, rtol=1e-14)


def test_the_hessian_vector_product_through_flatten(user):
    """Forward mode over the gradient: flatten_tree's tangent is flatten_tree of the direction."""
    kwargs = {"params": LAYERS, "inputs": INPUTS, "targets": TARGETS, "L2_reg": 0.7}
    direction = [(RS.randn(*W.shape), RS.randn(*b.shape)) for W, b in LAYERS]
    product = gradgen.hvp(user.log_posterior)(**kwargs, dparams=direction)
    grad, h = gradgen.grad(user.log_posterior), 1e-6

    def moved(s):
        return grad(**{**kwargs, "params": [(W + s * dW, b + s * db) for (W, b), (dW, db) in zip(LAYERS, direction)]})
    for got, up, down in zip(_leaves(product), _leaves(moved(h)), _leaves(moved(-h))):
        np.testing.assert_allclose(got, (up - down) / (2 * h), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("body, message", [
    ("    v, unflatten = flatten(params)\n    return np.sum(unflatten(v)[0][0])\n",
     "programs.py:9:19: 'unflatten' is the unflatten function gradgen.flatten returned: calling it inside a "
     "compiled function is not supported; read the parameter's parts instead, or flatten and unflatten outside "
     "the function gradgen differentiates (flatten_func does)"),
    ("    pair = flatten(params)\n    return np.sum(pair[0])\n",
     "programs.py:8:5: 'flatten(params)' returns (vector, unflatten): unpack it into two names "
     "(v, unflatten = ...) or take its [0]"),
    ("    return np.sum(flatten(params))\n",
     "programs.py:8:19: 'flatten(params)' returns (vector, unflatten): unpack it (v, _ = ...) or take its [0]"),
    ("    v, u, w = flatten(params)\n    return np.sum(v)\n",
     "programs.py:8:5: 'flatten(params)' returns (vector, unflatten): unpack it into two names "
     "(v, unflatten = ...) or take its [0]"),
])
def test_what_stays_refused_is_located(body, message):
    source = "import numpy as np\nfrom gradgen import flatten\n\n\n\n\ndef f(params):\n" + body
    with pytest.raises(CompileError) as found:
        compile_source(source, "programs.py", functions=["f"])
    assert str(found.value).splitlines()[0] == message


# --- the run-time functions and the API ---------------------------------------------------------

class Layer(NamedTuple):
    W: np.ndarray
    b: float


def test_flatten_and_unflatten_keep_every_container():
    value = [(np.arange(6.0).reshape(2, 3), 2), {"z": np.ones(2), "a": 3.5}, Layer(np.eye(2), 0.25)]
    vector, unflatten = flatten(value)
    np.testing.assert_array_equal(vector, [0, 1, 2, 3, 4, 5, 2, 3.5, 1, 1, 1, 0, 0, 1, 0.25])
    back = unflatten(vector * 2)
    assert isinstance(back[0], tuple) and isinstance(back[2], Layer) and list(back[1]) == ["z", "a"]
    np.testing.assert_array_equal(back[0][0], 2 * value[0][0])
    assert back[0][1] == 4.0 and back[1]["a"] == 7.0 and back[2].b == 0.5
    with pytest.raises(ValueError, match="unflatten takes a vector of 15 entries, not an array of shape .14,."):
        unflatten(vector[1:])
    with pytest.raises(TypeError, match="flatten takes lists, tuples and dicts of arrays and numbers, not str"):
        flatten(["a"])
    assert flatten([])[0].shape == (0,)


def gmm_like(params):
    """A dict of a number, a vector and a tuple of arrays (gmm.py's shape of parameters)."""
    r = DATA - params["means"]
    return np.sum(r ** 2) * params["scale"] + np.sum(np.tanh(params["w"][0]) * params["w"][1] ** 2)


DATA = RS.randn(10, 2)
INIT = {"scale": 1.3, "means": np.array([0.2, -0.1]), "w": (np.ones(3), np.arange(3.0))}


def _central_vector(f, x, h=1e-6):
    return np.array([np.sum(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


def test_flatten_func_and_its_derivatives():
    """gmm.py's flatten_func: the gradient and value_and_grad of the flat function, and its
    Hessian-vector product in autograd's order, against central differences."""
    flat, unflatten, x0 = flatten_func(gmm_like, INIT)
    assert flat(x0).shape == (1,) and flat(x0)[0] == pytest.approx(gmm_like(INIT), rel=1e-14)  # (autograd's)
    grad = gradgen.grad(flat)
    np.testing.assert_allclose(grad(x0), _central_vector(flat, x0), rtol=1e-6, atol=1e-7)
    value, same = gradgen.value_and_grad(flat)(x0)
    np.testing.assert_allclose(same, grad(x0), rtol=1e-14)
    assert value == pytest.approx([gmm_like(INIT)], rel=1e-14)
    direction = RS.randn(x0.size)
    hvp = gradgen.hessian_vector_product(flat)
    np.testing.assert_allclose(hvp(x0, direction), (grad(x0 + 1e-6 * direction) - grad(x0 - 1e-6 * direction)) / 2e-6,
                               rtol=1e-5, atol=1e-6)
    assert grad.__name__ == "flat_gmm_like_grad" and "def gmm_like_grad(params" in grad.source


def test_scipy_newton_cg_on_a_flattened_objective():
    from scipy.optimize import minimize

    flat, unflatten, x0 = flatten_func(lambda p: np.sum((p["a"] - 1.0) ** 2) + (p["b"][0] + 2.0) ** 2,
                                       {"a": np.zeros(3), "b": [0.5]})
    found = minimize(lambda x: flat(x)[0], x0, jac=gradgen.grad(flat), hessp=gradgen.hessian_vector_product(flat),
                     method="Newton-CG")
    result = unflatten(found.x)
    np.testing.assert_allclose(result["a"], np.ones(3), atol=1e-6)
    assert result["b"][0] == pytest.approx(-2.0, abs=1e-6)


def test_the_other_derivatives_of_a_flat_function_are_refused_by_name():
    flat, _, _ = flatten_func(gmm_like, INIT)
    with pytest.raises(CompileError) as found:
        gradgen.jvp(flat)
    assert found.value.message == ("gradgen.jvp(flat_gmm_like): a function flatten_func made has a grad, "
                                   "value_and_grad, hvp and hessian_vector_product; for a jvp, call gradgen.jvp on "
                                   "'gmm_like' itself")
    with pytest.raises(CompileError) as found:
        gradgen.grad(flat, argnum=1)
    assert found.value.message == ("gradgen.grad(flat_gmm_like): a function flatten_func made is differentiated "
                                   "with respect to its vector (its first argument, 'vector'), not 'args'")


def gan_like(gen_params, dsc_params, k):
    return np.sum(np.tanh(gen_params[0][0]) * dsc_params[0][1]) * k + np.sum(gen_params[0][1] ** 2)


def test_argnum_a_tuple_gives_a_tuple_of_structured_gradients():
    """generative_adversarial_net.py: grad(objective, argnum=(0, 1)), flattened by its optimizer."""
    gen, dsc = [(RS.randn(3), RS.randn(2))], [(RS.randn(3), RS.randn(3))]
    dgen, ddsc = gradgen.grad(gan_like, argnum=(0, 1))(gen, dsc, 2.0)
    assert isinstance(dgen, list) and isinstance(dgen[0], tuple) and isinstance(ddsc[0], tuple)
    for grad, name, value in ((dgen, "gen_params", gen), (ddsc, "dsc_params", dsc)):
        kwargs = {"gen_params": gen, "dsc_params": dsc, "k": 2.0}
        want = central_leaves(gan_like, kwargs, name, _leaves, _replace)
        np.testing.assert_allclose(flatten(grad)[0], np.concatenate([np.ravel(w) for w in want]), rtol=1e-6)


def test_importing_flatten_imports_no_compiler():
    code = ("import sys\nfrom gradgen import flatten, flatten_func\n"
            "print(sorted(m for m in ('sympy', 'black', 'gradgen.api', 'gradgen.live') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "[]", result.stderr
