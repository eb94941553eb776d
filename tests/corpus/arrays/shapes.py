"""Array corpus: shape operations: reshape (method and function, with -1), concatenate,
stack, hstack/vstack/column_stack of a list, expand_dims, squeeze, transpose with axes,
np.sum over a list, and the non-differentiated shape facts (x.shape, np.shape, len,
zeros_like, ones_like)."""

import numpy as np


def reshape_method_minus1(x, w):
    return np.sum(np.tanh(x.reshape(3, -1) @ w))


def inputs_reshape_method_minus1():
    rng = np.random.default_rng(501)
    return {"x": rng.standard_normal(12), "w": rng.standard_normal(4)}


def reshape_function_flatten(X):
    v = np.reshape(X, (-1,))
    return np.sum(np.cumsum(v) * v)


def inputs_reshape_function_flatten():
    rng = np.random.default_rng(502)
    return {"X": rng.standard_normal((2, 3))}


def reshape_tuple_3d(x):
    T = x.reshape((2, 3, 2))
    return np.sum(np.sum(T, axis=1) ** 2)


def inputs_reshape_tuple_3d():
    rng = np.random.default_rng(503)
    return {"x": rng.standard_normal((3, 4))}


def concatenate_axis0(a, b):
    c = np.concatenate([a, b])
    return np.sum(np.sin(c) * np.cumsum(c))


def inputs_concatenate_axis0():
    rng = np.random.default_rng(504)
    return {"a": rng.standard_normal(3), "b": rng.standard_normal(4)}


def concatenate_axis1(A, B, C):
    M = np.concatenate((A, B, C), axis=1)
    return np.sum((M @ M.T) ** 2)


def inputs_concatenate_axis1():
    rng = np.random.default_rng(505)
    return {
        "A": rng.standard_normal((3, 1)),
        "B": rng.standard_normal((3, 2)),
        "C": rng.standard_normal((3, 3)),
    }


def stack_rows(a, b):
    S = np.stack([a, b])
    return np.sum(np.max(S, axis=0) ** 2 + S * 0.5)


def inputs_stack_rows():
    rng = np.random.default_rng(506)
    a = rng.standard_normal(5)
    return {"a": a, "b": a + rng.choice([-0.6, 0.7], 5)}


def stack_axis1(a, b, c):
    S = np.stack([a, b, c], axis=1)
    return np.sum(np.exp(0.5 * S) * S)


def inputs_stack_axis1():
    rng = np.random.default_rng(507)
    return {
        "a": rng.standard_normal(4),
        "b": rng.standard_normal(4),
        "c": rng.standard_normal(4),
    }


def expand_dims_outer(u, v):
    return np.sum(np.exp(np.expand_dims(u, 1) - np.expand_dims(v, 0)))


def inputs_expand_dims_outer():
    rng = np.random.default_rng(508)
    return {"u": rng.standard_normal(3), "v": rng.standard_normal(4)}


def squeeze_column(C, w):
    return np.sum(np.squeeze(C) * w) + np.sum(np.squeeze(C, axis=1) ** 2)


def inputs_squeeze_column():
    rng = np.random.default_rng(509)
    return {"C": rng.standard_normal((4, 1)), "w": rng.standard_normal(4)}


def transpose_axes(T, M):
    return np.sum(np.transpose(T, (2, 0, 1)) * M)


def inputs_transpose_axes():
    rng = np.random.default_rng(510)
    return {"T": rng.standard_normal((2, 3, 4)), "M": rng.standard_normal((4, 2, 3))}


def sum_of_list_arrays(a, b):
    return np.sum([np.sum(a**2), np.sum(a * b), np.sum(np.sin(b))])


def inputs_sum_of_list_arrays():
    rng = np.random.default_rng(511)
    return {"a": rng.standard_normal(4), "b": rng.standard_normal(4)}


def sum_of_list_same_shape(a, b, c):
    return np.sum(np.sum([a * b, b * c, np.exp(c)], axis=0) ** 2)


def inputs_sum_of_list_same_shape():
    rng = np.random.default_rng(512)
    return {
        "a": rng.standard_normal(3),
        "b": rng.standard_normal(3),
        "c": rng.standard_normal(3),
    }


def shape_facts(X, w):
    n, d = X.shape
    rows, cols = np.shape(X)
    return np.sum((X @ w) ** 2) / n + np.sum(w**2) / (d * len(X)) + rows * cols * 0.0


def inputs_shape_facts():
    rng = np.random.default_rng(513)
    return {"X": rng.standard_normal((5, 3)), "w": rng.standard_normal(3)}


def shape_index_facts(X, w):
    n = X.shape[0]
    d = np.shape(X)[1]
    return np.sum((X @ w) ** 2) / n + np.sum(X**2) / d


def inputs_shape_index_facts():
    rng = np.random.default_rng(515)
    return {"X": rng.standard_normal((4, 3)), "w": rng.standard_normal(3)}


def zeros_ones_like(x):
    acc = np.zeros_like(x)
    acc = acc + np.sin(x) * np.ones_like(x)
    return np.sum(acc * x + 2.0 * np.ones_like(x))


def inputs_zeros_ones_like():
    rng = np.random.default_rng(514)
    return {"x": rng.standard_normal((3, 3))}


def outer_with_newaxis(x, w):
    pairs = x[:, np.newaxis] * w[np.newaxis, :]
    return np.sum(np.minimum(pairs, np.inf) ** 2) + np.sum(np.maximum(x, -np.inf)) * np.pi


def inputs_outer_with_newaxis():
    rng = np.random.default_rng(531)
    return {"x": rng.standard_normal(4), "w": rng.standard_normal(3)}


def stacks_of_list_literals(a, B):
    """np.hstack / np.vstack / np.column_stack of a list written out."""
    h = np.hstack([a, np.tanh(a)])
    v = np.vstack([B, a[:2] * B[0]])
    c = np.column_stack([a, a ** 2])
    return np.sum(h ** 2) + np.sum(np.sin(v)) + np.sum(c[:, 1] * c[:, 0])


def inputs_stacks_of_list_literals():
    rng = np.random.default_rng(509)
    return {"a": rng.standard_normal(3), "B": rng.standard_normal((2, 2))}
