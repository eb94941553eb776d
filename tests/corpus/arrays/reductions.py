"""Array corpus: reductions with axis= (int, negative, tuple) and keepdims=, as functions
and as methods; np.cumsum; np.linalg.norm. Inputs for max/min have well separated values
(no ties); prod is checked away from zero and with zeros in the input (the gradient at a
zero element is the product of the others, not prod / x)."""

import numpy as np


def sum_axis0(X):
    return np.sum(np.sum(X, axis=0) ** 2)


def inputs_sum_axis0():
    rng = np.random.default_rng(301)
    return {"X": rng.standard_normal((4, 3))}


def sum_negative_axis_keepdims(X):
    return np.sum(X * np.sum(X, axis=-1, keepdims=True))


def inputs_sum_negative_axis_keepdims():
    rng = np.random.default_rng(302)
    return {"X": rng.standard_normal((3, 5))}


def sum_axis_tuple(T):
    return np.sum(np.sum(T, axis=(0, 2)) ** 3)


def inputs_sum_axis_tuple():
    rng = np.random.default_rng(303)
    return {"T": rng.standard_normal((2, 3, 4))}


def sum_tuple_keepdims_negative(T):
    s = np.sum(T, axis=(-1, 0), keepdims=True)
    return np.sum(np.sin(T * s))


def inputs_sum_tuple_keepdims_negative():
    rng = np.random.default_rng(304)
    return {"T": 0.5 * rng.standard_normal((2, 3, 2))}


def mean_axis1(X):
    return np.sum(np.mean(X, axis=1) ** 3)


def inputs_mean_axis1():
    rng = np.random.default_rng(305)
    return {"X": rng.standard_normal((3, 4))}


def mean_tuple_keepdims(T):
    return np.sum((T - np.mean(T, axis=(1, 2), keepdims=True)) ** 2 * T)


def inputs_mean_tuple_keepdims():
    rng = np.random.default_rng(306)
    return {"T": rng.standard_normal((2, 3, 3))}


def prod_all(x):
    return np.prod(x)


def inputs_prod_all():
    rng = np.random.default_rng(307)
    return {"x": rng.choice([-1.0, 1.0], 6) * rng.uniform(0.5, 1.5, 6)}


def prod_with_zeros(X):
    # one zero in a row: its element gets the product of the others; two zeros: all get 0
    return np.sum(np.prod(X, axis=1) * np.arange(1.0, 4.0)) + np.prod(X[0])


def inputs_prod_with_zeros():
    return {"X": np.array([[0.0, 1.5, -0.5], [2.0, 0.0, 0.0], [0.7, -1.2, 0.9]])}


def prod_axis_keepdims(X):
    return np.sum(np.prod(X, axis=-1, keepdims=True) * X)


def inputs_prod_axis_keepdims():
    rng = np.random.default_rng(308)
    return {"X": rng.choice([-1.0, 1.0], (3, 4)) * rng.uniform(0.5, 1.5, (3, 4))}


def max_axis1(X):
    return np.sum(np.max(X, axis=1) ** 2)


def inputs_max_axis1():
    rng = np.random.default_rng(309)
    values = np.linspace(-2.0, 2.0, 15) + 0.011
    return {"X": rng.permutation(values).reshape(3, 5)}


def min_axis0_keepdims(X):
    return np.sum(np.exp(X - np.min(X, axis=0, keepdims=True)))


def inputs_min_axis0_keepdims():
    rng = np.random.default_rng(310)
    values = np.linspace(-1.5, 1.5, 12) + 0.017
    return {"X": rng.permutation(values).reshape(4, 3)}


def max_all_and_min_tuple(T):
    return np.max(T) * 2.0 + np.sum(np.min(T, axis=(0, 2)) ** 2)


def inputs_max_all_and_min_tuple():
    rng = np.random.default_rng(311)
    values = np.linspace(-2.0, 2.0, 24) + 0.009
    return {"T": rng.permutation(values).reshape(2, 3, 4)}


def method_sum_mean(X):
    return X.sum(axis=0).sum() * X.mean() + (X**2).mean(axis=-1).sum()


def inputs_method_sum_mean():
    rng = np.random.default_rng(312)
    return {"X": rng.standard_normal((3, 4))}


def method_max_min_keepdims(X):
    shifted = X - X.max(axis=1, keepdims=True)
    return np.sum(np.exp(shifted)) + X.min() ** 2


def inputs_method_max_min_keepdims():
    rng = np.random.default_rng(313)
    values = np.linspace(-1.8, 1.8, 12) + 0.021
    return {"X": rng.permutation(values).reshape(3, 4)}


def method_prod_axis(X):
    return X.prod(axis=1).sum() + X.prod()


def inputs_method_prod_axis():
    rng = np.random.default_rng(314)
    return {"X": rng.choice([-1.0, 1.0], (2, 3)) * rng.uniform(0.6, 1.4, (2, 3))}


def cumsum_vector(x):
    return np.sum(np.cumsum(x) ** 2)


def inputs_cumsum_vector():
    rng = np.random.default_rng(315)
    return {"x": rng.standard_normal(8)}


def cumsum_axis(X):
    return np.sum(np.sin(np.cumsum(X, axis=1)) * X)


def inputs_cumsum_axis():
    rng = np.random.default_rng(316)
    return {"X": rng.standard_normal((3, 4))}


def norm_vector(x):
    return np.linalg.norm(x) + np.linalg.norm(2.0 * x - 1.0) ** 2


def inputs_norm_vector():
    rng = np.random.default_rng(317)
    return {"x": rng.standard_normal(6)}


def norm_frobenius(W):
    return np.log(np.linalg.norm(W)) + np.sum(W) / np.linalg.norm(W)


def inputs_norm_frobenius():
    rng = np.random.default_rng(318)
    return {"W": rng.standard_normal((3, 4))}
