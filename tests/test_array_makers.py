"""Array makers whose values are their arguments': `np.full(shape, w)`, `np.linspace(a, L, n)`,
`np.arange(a, b, h)` were taken for constants (a silent zero gradient: `gradgen check` found
0 against finite differences of 7.2 and 4.04). Gradients, Hessian-vector products and the
integer dtype that makes whole numbers, against central differences."""

from __future__ import annotations

import numpy as np
import pytest

from differences import central
from gradgen import compile_source, load_module

MAKERS = '''
import numpy as np


def loss(w, L, a):
    y = np.full(3, w)
    x = np.linspace(0.0, L, 4)
    z = np.arange(a, 5.0, 1.5)
    s = np.linspace(w, L, 5, endpoint=False)
    grid = np.full((2, 3), np.tanh(x[:3]))
    return np.sum(y * y) + np.sum(x ** 2) * w + np.sum(z * z) + np.sum(s ** 3) + np.sum(grid * w)


def counted(w):
    k = np.full(3, w, dtype=int)
    return np.sum(k) + w
'''


@pytest.fixture(scope="module")
def made():
    return load_module(compile_source(MAKERS, "makers.py", wrt="all", emit_kinds=("grad", "hvp")).text), \
        load_module(MAKERS)


@pytest.mark.parametrize("point", [(0.7, 1.3, 0.3), (-0.4, 2.1, -0.9)])
def test_gradients_of_made_arrays(made, point):
    mod, user = made
    got = mod.loss_grad(*point)
    for i, g in enumerate(got):
        want = central(lambda v: user.loss(*point[:i], float(v), *point[i + 1:]), point[i])
        np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-8)
        assert isinstance(g, float)


def test_hessian_vector_products_of_made_arrays(made):
    mod, _ = made
    point, direction = np.array([0.7, 1.3, 0.3]), np.array([1.0, 0.5, -0.25])
    got = np.array(mod.loss_hvp(*point, dw=direction[0], dL=direction[1], da=direction[2]))
    h = 1e-6
    want = (np.array(mod.loss_grad(*(point + h * direction))) - np.array(mod.loss_grad(*(point - h * direction)))) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_an_integer_dtype_makes_whole_numbers(made):
    mod, _ = made
    assert mod.counted_grad(0.7) == 1.0
