"""Reads and writes at an index of arrays under `--jit numba` (gradgen/codegen/numba_index.py)
and np.prod's gradient there (numba_arrays' prod_grad overload): det by permutations, a gather
by two and three index arrays (broadcast, integers and negative indices among them) and
np.prod along an axis, all of it, keepdims, zeros in x, each agreeing with the plain module;
an index out of range raises IndexError, as NumPy does (numba checks no bounds: it read
memory beside the array)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from gradgen import compile_source
from test_jit_arrays import assert_agree, both, needs_numba

ROOT = Path(__file__).resolve().parent.parent

GATHERS = '''import numpy as np


def picks(A, i, j):
    return np.sum(A[i, j] ** 2) + np.sum(A[i, 1] * A[-1, j])


def picks3(T, i, j, k):
    return np.sum(np.sin(T[i, j, k]))
'''

PRODUCTS = '''

def products(x):
    return np.prod(x) * 2.0 + np.sum(np.prod(x, axis=0) ** 2) + np.sum(np.prod(x, axis=-1, keepdims=True) * x)
'''


@needs_numba
def test_det_by_permutations_under_numba():
    sys.path.insert(0, str(ROOT / "benchmarks" / "gradbench"))
    try:
        import det_permutations
    finally:
        sys.path.remove(str(ROOT / "benchmarks" / "gradbench"))
    source = (ROOT / "benchmarks" / "gradbench" / "det_permutations.py").read_text()
    plain, jitted = both(source, "det_permutations.py", functions=["objective"], wrt=["A"])
    text = compile_source(source, "det_permutations.py", functions=["objective"], wrt=["A"], jit="numba").text
    assert "part = gather_at(A, (rows, permutations))" in text  # (numba indexes by one array)
    args = det_permutations.inputs("small")
    A, rest = args.pop("A"), args
    got = jitted.objective_value_and_grad(A, **rest)  # (one numba compile: the suite's time)
    assert_agree(got, plain.objective_value_and_grad(A, **rest))
    want = np.linalg.det(A) * np.linalg.inv(A).T  # (d det A / dA = det(A) A^-T)
    np.testing.assert_allclose(got[1], want, rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def modules():
    """One module of every program here (numba compiles the helpers' overloads once a module)."""
    return both(GATHERS + PRODUCTS + READS, "indexed.py", wrt=["A", "T", "x"])


@needs_numba
def test_gathers_by_index_arrays_agree_and_check_their_bounds(modules):
    plain, jitted = modules
    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 4))
    i, j = np.array([[0, -1, 2], [4, 4, 1]]), np.array([3, -2, 0])  # (broadcast; repeats and negatives)
    assert_agree(jitted.picks_value_and_grad(A, i, j), plain.picks_value_and_grad(A, i, j))
    T = rng.standard_normal((3, 4, 5))
    i3, j3 = np.array([0, 2, 2]), np.array([[1], [3]])
    assert_agree(jitted.picks3_value_and_grad(T, i3, j3, 4), plain.picks3_value_and_grad(T, i3, j3, 4))
    assert_agree(jitted.picks3_value_and_grad(T, i3, j3, -5), plain.picks3_value_and_grad(T, i3, j3, -5))
    with pytest.raises(IndexError):
        plain.picks_value_and_grad(A, i, np.array([3, 4, 0]))
    with pytest.raises(IndexError, match="index out of bounds"):
        jitted.picks_value_and_grad(A, i, np.array([3, 4, 0]))
    with pytest.raises(IndexError, match="index out of bounds"):
        jitted.picks3_value_and_grad(T, i3, j3, 5)


@needs_numba
def test_the_gradient_of_np_prod_under_numba(modules):
    plain, jitted = modules
    rng = np.random.default_rng(5)
    for x in (rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(0.5, 2.0, (2, 3, 4)),
              np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])):  # (zeros: no division)
        assert_agree(jitted.products_value_and_grad(x), plain.products_value_and_grad(x))


READS = '''

def reads(x, idx, n):
    total = 0.0
    for t in range(n):
        total = total + x[t + 1] * x[t]
    return total + np.sum(x[idx] ** 2)
'''


@needs_numba
def test_an_index_out_of_range_raises_under_numba_as_it_does_in_numpy(modules):
    """numba checks no bounds unless asked: `x[t + 1]` one past the end read the memory beside
    x (a number, silently); every function is compiled with boundscheck=True."""
    plain, jitted = modules
    x, idx = np.linspace(0.5, 1.5, 4), np.array([0, 3, 3])
    assert_agree(jitted.reads_value_and_grad(x, idx, 3), plain.reads_value_and_grad(x, idx, 3))
    for args in ((x, idx, 4), (x, np.array([4]), 2)):
        with pytest.raises(IndexError):
            plain.reads_value_and_grad(*args)
        with pytest.raises(IndexError, match="out of bounds"):
            jitted.reads_value_and_grad(*args)
