"""np.einsum under `--jit numba` (gradgen/codegen/numba_einsum.py): each einsum of the generated
code becomes a loop nest written for its subscripts. Checked: the helper's text byte for byte,
the loop nests of random subscripts against np.einsum (run as plain Python: the generator's
logic, fast), and a Gaussian-mixture gradient njit-compiled against the plain module."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradgen import compile_source, load_module
from gradgen.analysis.stated import shapes_of_point
from gradgen.codegen import numba_einsum
from test_einsum_matmul import GMM, contractions

HAS_NUMBA = importlib.util.find_spec("numba") is not None

STACKED = '''@numba.njit(cache=False)
def einsum_kij_nkj_to_nki(x0, x1):
    """np.einsum("kij,nkj->nki", x0, x1) as loops (numba has no np.einsum)."""
    n_k, n_i, n_j = x0.shape
    n_n = x1.shape[0]
    if x1.shape[1] != n_k or x1.shape[2] != n_j:
        raise ValueError("np.einsum('kij,nkj->nki'): a letter of two lengths (--jit numba)")
    out = np.empty((n_n, n_k, n_i))
    for n in range(n_n):
        for k in range(n_k):
            for i in range(n_i):
                total = 0.0
                for j in range(n_j):
                    total += x0[k, i, j] * x1[n, k, j]
                out[n, k, i] = total
    return out
'''


def test_the_loop_nest_of_gmms_product():
    assert numba_einsum.helpers({"kij,nkj->nki"}) == [STACKED]


class _Numba:
    """numba.njit as the identity: the helper runs as Python."""

    @staticmethod
    def njit(**_):
        return lambda f: f


def _loops(spec):
    env = {"np": np, "numba": _Numba}
    exec(numba_einsum.helpers({spec})[0], env)  # noqa: S102 - gradgen's own helper text
    return env[numba_einsum.helper_name(spec)]


@settings(max_examples=150, deadline=None)
@given(contractions(most=3, longest=4, fewest=1), st.integers(0, 2**32 - 1))
def test_loop_nests_are_np_einsum(case, seed):
    subscripts, shape_a, shape_b = case
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    if list(shape_b) != [dict(zip(subscripts.split(",")[0], shape_a)).get(c, n)
                         for c, n in zip(subscripts.split(",")[1].split("->")[0], shape_b)]:
        with pytest.raises(ValueError, match="a letter of two lengths"):
            _loops(subscripts)(a, b)
        return
    np.testing.assert_allclose(_loops(subscripts)(a, b), np.einsum(subscripts, a, b), rtol=1e-12, atol=1e-12)


def test_one_operand_and_three():
    rng = np.random.default_rng(3)
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
    np.testing.assert_allclose(_loops("ij->ji")(a), a.T)
    np.testing.assert_allclose(_loops("ij,j,i->")(a, b, c), np.einsum("ij,j,i->", a, b, c))


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install 'gradgen[numba]')")
def test_a_mixture_njit_compiled_agrees_with_the_plain_module():
    rng = np.random.default_rng(1)
    point = {"mu": rng.standard_normal((5, 2)), "l": rng.standard_normal((5, 1))}
    data = {"x": rng.standard_normal((50, 2)), "lower": np.array([[[0.0, 0.0], [1.0, 0.0]]])}
    shapes = shapes_of_point({**point, **data})
    plain = load_module(compile_source(GMM, "gmm.py", wrt=["mu", "l"], shapes=shapes).text, "gmm_plain")
    text = compile_source(GMM, "gmm.py", wrt=["mu", "l"], shapes=shapes, jit="numba").text
    assert "Lx = centered + einsum_kij_nkj_to_nki(Ls, centered)" in text
    jitted = load_module(text, "gmm_numba")
    for got, want in zip(jitted.objective_grad(**point, **data), plain.objective_grad(**point, **data)):
        np.testing.assert_allclose(got, want, rtol=1e-10)
