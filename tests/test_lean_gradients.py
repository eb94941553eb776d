"""Gradients that compute nothing only to stretch or measure (issue 23, item 2), each checked
against central differences:

* np.min / np.max under a sum: the share of each extreme entry alone, `hit / count` (ones
  of the extreme's shape, kept, only stretched into it), ties shared;
* `v[:, None]`, `v[None]`, `v[..., None]` (every element once, in order): g reshaped to v's
  shape, no zeros made and nothing added at an index;
* a product by a float adjoint needs no ones to be a float array;
* an hvp term `dx * ...` that holds Z's shape already is not stretched by zeros of Z's shape,
  where one that does not (a number plus an array) still is."""

import numpy as np
import pytest

from differences import central
from gradgen import compile_source, load_module

SOURCE = '''import numpy as np


def extremes(x):
    return np.sum(np.min(x, axis=0)) + 2.0 * np.sum(np.max(x, axis=1)) - np.sum(np.min(x))


def picks(v, w):
    return np.sum(np.tanh(v[:, None] * w[None, :])) + np.sum(np.sin(v[..., None]) * v[None])


def stretched(s, X):
    return np.sum((s + X) ** 2) + np.sum(np.cos(X * s))
'''


@pytest.fixture(scope="module")
def module():
    text = compile_source(SOURCE, "lean.py", wrt=["x", "v", "s"], emit_kinds=["grad", "hvp"]).text
    return text, load_module(text, "lean_grad")


def test_the_extremes_gradient_is_the_share_alone(module):
    text, m = module
    body = text.split("def extremes_grad(")[1].split("\ndef ")[0]
    assert "np.ones_like(" not in body and body.count("/ np.sum(") == 3
    x = np.random.default_rng(1).standard_normal((4, 3))
    f = load_module(SOURCE, "lean_source").extremes
    np.testing.assert_allclose(m.extremes_grad(x), central(f, x), rtol=1e-7, atol=1e-8)
    tied = np.array([[1.0, 2.0], [1.0, 0.5]])  # (column 0's minimum twice: each gets half)
    np.testing.assert_allclose(m.extremes_grad(tied), [[0.5, 2.0], [0.5 + 2.0, 1.0 - 1.0]])


def test_whole_picks_are_reshapes(module):
    text, m = module
    body = text.split("def picks_grad(")[1].split("\ndef ")[0]
    assert "scatter(" not in body and "np.reshape(" in body
    rng = np.random.default_rng(2)
    v, w = rng.standard_normal(3), rng.standard_normal(4)
    f = load_module(SOURCE, "lean_source2").picks
    np.testing.assert_allclose(m.picks_grad(v, w), central(lambda v: f(v, w), v), rtol=1e-7, atol=1e-8)


def test_an_hvp_stretches_only_what_is_smaller_than_the_sum(module):
    text, m = module
    body = text.split("def stretched_hvp(")[1].split("\ndef ")[0]
    assert "np.zeros(np.shape(X))" in body  # (ds, a number, plus X: the sum has X's shape)
    X = np.random.default_rng(3).standard_normal((2, 3))
    got = m.stretched_hvp(0.3, X, ds=1.0)
    want = (m.stretched_grad(0.3 + 1e-6, X) - m.stretched_grad(0.3 - 1e-6, X)) / 2e-6
    np.testing.assert_allclose(got, want, rtol=1e-6)
