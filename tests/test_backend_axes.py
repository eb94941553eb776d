"""--backend array-api on reductions along an axis: their gradients put the axis back with
xp.expand_dims (one axis per call, as the standard has it), run under array-api-strict and
equal to the NumPy backend's gradient, itself checked against central differences."""

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.errors import CompileError

LOSS = '''\
import numpy as np


def loss(x, w):
    s = np.sum(x ** 2, axis=0)
    m = np.max(x, axis=1)
    a = np.mean(np.sin(x), axis=-1)
    lo = np.min(x, axis=-2)
    return np.sum(s * w) + np.sum(m * m) + np.sum(a) + np.sum(np.exp(lo))
'''

CUBE = '''\
import numpy as np


def loss(t):
    top = np.max(t, axis=(0, 2))
    low = np.min(t, axis=(-1, -3))
    middle = np.max(t ** 2, axis=1)
    return np.sum(top * np.arange(3.0)) + np.sum(np.cos(low)) + np.sum(middle)
'''

RNG = np.random.default_rng(24)
POINTS = {"LOSS": {"x": RNG.standard_normal((4, 3)), "w": RNG.standard_normal(3)},
          "CUBE": {"t": RNG.standard_normal((2, 3, 4))}}
SOURCES = {"LOSS": LOSS, "CUBE": CUBE}


def central(f, point, name, h=1e-6):
    grad = np.zeros_like(point[name])
    for index in np.ndindex(grad.shape):
        up, down = {k: np.array(v) for k, v in point.items()}, {k: np.array(v) for k, v in point.items()}
        up[name][index] += h
        down[name][index] -= h
        grad[index] = (f(**up) - f(**down)) / (2 * h)
    return grad


@pytest.mark.parametrize("which", ["LOSS", "CUBE"])
def test_an_axis_reductions_gradient_runs_on_the_standard(which):
    xs = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed (the test extra)")
    pytest.importorskip("array_api_compat", reason="the array-api extra (array-api-compat) is not installed")
    text = compile_source(SOURCES[which], "loss.py", backend="array-api", wrt="all").text
    reference = load_module(compile_source(SOURCES[which], "loss.py", wrt="all").text, f"axes_{which}_numpy")
    module = load_module(text, f"axes_{which}_xp")
    point = POINTS[which]
    want = reference.loss_grad(**point)
    want = want if isinstance(want, tuple) else (want,)
    got = module.loss_grad(**{k: xs.asarray(v) for k, v in point.items()})
    got = got if isinstance(got, tuple) else (got,)
    for g, w, name in zip(got, want, point, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-15)
        original = {}
        exec(SOURCES[which], original)  # noqa: S102 - the test's own source
        np.testing.assert_allclose(w, central(original["loss"], point, name), rtol=1e-6, atol=1e-8)


def test_the_axes_are_put_back_one_at_a_time():
    text = compile_source(CUBE, "loss.py", backend="array-api", wrt="all").text
    assert "xp.expand_dims(xp.expand_dims(top, axis=0), axis=2)" in text  # (non-negative: ascending)
    assert "xp.expand_dims(xp.expand_dims(low, axis=-1), axis=-3)" in text  # (negative: from -1 down)
    text = compile_source(LOSS, "loss.py", backend="array-api", wrt="all").text
    assert "xp.expand_dims(m, axis=1)" in text and "xp.expand_dims(dloss_ds, axis=0)" in text


def test_a_mix_of_negative_and_non_negative_axes_is_refused_at_the_reduction():
    text = "import numpy as np\n\n\ndef loss(t):\n    top = np.max(t, axis=(0, -1))\n    return np.sum(top ** 2)\n"
    compile_source(text, "loss.py", wrt="all")  # the NumPy backend writes it
    with pytest.raises(CompileError) as caught:
        compile_source(text, "loss.py", backend="array-api", wrt="all")
    assert caught.value.format() == (
        "loss.py:5:5: --backend array-api: the gradient of this line puts the reduced axes (0, -1) back with "
        "np.expand_dims, and the standard's xp.expand_dims adds one axis at a time: a mix of negative and "
        "non-negative axes cannot be put back one by one without the array's ndim; write the axes all "
        "non-negative (or all negative), or compile with --backend numpy\n"
        "        top = np.max(t, axis=(0, -1))\n        ^")
