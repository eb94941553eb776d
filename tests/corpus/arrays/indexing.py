"""Array corpus, pending: indexing and slicing for reading, integer-array and boolean-mask
indexing (repeated indices must accumulate), writes into arrays inside loops, and
module-level array constants. Expected to fail until the compiler supports them."""

import numpy as np

WEIGHTS = np.array([0.5, -1.0, 2.0])
IDENTITY3 = np.eye(3)
GRID = np.linspace(0.0, 1.0, 5)


def index_scalar(x, *, i):
    return x[i] ** 2 + np.sum(x) * x[0]


def inputs_index_scalar():
    rng = np.random.default_rng(801)
    return {"x": rng.standard_normal(5), "i": 3}


def index_two_d(X, *, i, j):
    return np.sin(X[i, j]) * X[0, 1] + X[-1, -1] ** 3


def inputs_index_two_d():
    rng = np.random.default_rng(802)
    return {"X": rng.standard_normal((3, 4)), "i": 2, "j": 1}


def smoothness_penalty(x):
    return np.sum((x[1:] - x[:-1]) ** 2)


def inputs_smoothness_penalty():
    rng = np.random.default_rng(803)
    return {"x": rng.standard_normal(8)}


def strided_slice(x):
    return np.sum(x[::2] * np.exp(x[1::2]))


def inputs_strided_slice():
    rng = np.random.default_rng(804)
    return {"x": rng.standard_normal(10)}


def first_column(X, w):
    return np.sum(X[:, 0] * (X @ w)) + np.sum(X[1, :] ** 2)


def inputs_first_column():
    rng = np.random.default_rng(805)
    return {"X": rng.standard_normal((4, 3)), "w": rng.standard_normal(3)}


def new_axis_outer(u, v):
    return np.sum(np.tanh(u[..., None] * v[None, :]))


def inputs_new_axis_outer():
    rng = np.random.default_rng(806)
    return {"u": rng.standard_normal(3), "v": rng.standard_normal(4)}


def embedding_lookup(E, *, tokens):
    rows = E[tokens]
    return np.sum(np.sum(rows, axis=0) ** 2)


def inputs_embedding_lookup():
    rng = np.random.default_rng(807)
    # token 2 repeats: its row's gradient must accumulate (np.add.at)
    return {"E": rng.standard_normal((5, 3)), "tokens": np.array([2, 0, 2, 4, 2])}


def gather_repeated(x, *, idx):
    return np.sum(np.sin(x[idx]) * np.arange(len(idx)))


def inputs_gather_repeated():
    rng = np.random.default_rng(808)
    return {"x": rng.standard_normal(6), "idx": np.array([1, 1, 3, 5, 1, 0])}


def boolean_mask(x, *, mask):
    return np.sum(x[mask] ** 2) + np.sum(np.exp(x))


def inputs_boolean_mask():
    rng = np.random.default_rng(809)
    return {
        "x": rng.standard_normal(7),
        "mask": np.array([True, False, True, True, False, False, True]),
    }


def boolean_mask_complement(x, *, mask):
    return np.sum(x[mask] ** 2) + np.sum(np.exp(x[~mask]))


def inputs_boolean_mask_complement():
    rng = np.random.default_rng(816)
    return {"x": rng.standard_normal(6), "mask": rng.random(6) < 0.5}


def mask_from_data(x, *, y):
    return np.sum(np.sin(x[y > 0]))


def inputs_mask_from_data():
    rng = np.random.default_rng(817)
    return {"x": rng.standard_normal(7), "y": rng.standard_normal(7)}


def rnn_over_sequence(Wx, Wh, b, *, X):
    h = np.zeros_like(b)
    for t in range(len(X)):
        h = np.tanh(Wx @ X[t] + Wh @ h + b)
    return np.sum(h**2)


def inputs_rnn_over_sequence():
    rng = np.random.default_rng(810)
    return {
        "Wx": 0.5 * rng.standard_normal((3, 2)),
        "Wh": 0.5 * rng.standard_normal((3, 3)),
        "b": 0.1 * rng.standard_normal(3),
        "X": rng.standard_normal((4, 2)),
    }


def module_constant_array(w):
    return np.sum((WEIGHTS * w) ** 2) + w @ IDENTITY3 @ w


def inputs_module_constant_array():
    rng = np.random.default_rng(813)
    return {"w": rng.standard_normal(3)}


def module_constant_linspace(a):
    return np.sum(np.exp(a * GRID))


def inputs_module_constant_linspace():
    return {"a": 0.7}


def shape_component(X, w):
    n = X.shape[0]
    return np.sum((X @ w) ** 2) / n + X.ndim * 0.0 + w.size * 0.0


def inputs_shape_component():
    rng = np.random.default_rng(814)
    return {"X": rng.standard_normal((5, 3)), "w": rng.standard_normal(3)}


def arange_and_zeros(x):
    k = np.arange(len(x))
    Z = np.zeros((2, len(x)))
    return np.sum((Z + x) * k) + np.sum(np.eye(len(x)) @ x)


def inputs_arange_and_zeros():
    rng = np.random.default_rng(815)
    return {"x": rng.standard_normal(4)}


def interpolate_at_computed_cells(f, v):
    """Indices computed from data (`np.floor(...).astype(int)`, np.mod for a periodic grid):
    no derivative through them, the values gathered are differentiated (a cell may be
    gathered twice: its gradient adds up)."""
    n = f.shape[0]
    centers = np.arange(n) - 0.7 * v
    left = np.floor(centers).astype(int)
    weight = centers - left
    right = np.mod(left + 1, n)
    left = np.mod(left, n)
    return np.sum(((1 - weight) * f[left] + weight * f[right]) ** 2)


def inputs_interpolate_at_computed_cells():
    rng = np.random.default_rng(521)
    return {"f": rng.standard_normal(6), "v": 1.2 + 0.3 * rng.uniform(size=6)}
