"""Array corpus: NumPy broadcasting between parameters of different shapes. The gradient
of each parameter must be summed back over the axes broadcasting stretched."""

import numpy as np


def row_bias(X, b):
    return np.sum(np.sin(X + b))


def inputs_row_bias():
    rng = np.random.default_rng(201)
    return {"X": rng.standard_normal((5, 3)), "b": rng.standard_normal(3)}


def row_scale_data(g, *, X):
    return np.sum((X * g - 0.5) ** 2)


def inputs_row_scale_data():
    rng = np.random.default_rng(202)
    return {"g": rng.standard_normal(4), "X": rng.standard_normal((6, 4))}


def column_times_row(u, v):
    return np.sum(np.exp(0.3 * u * v) + u - v)


def inputs_column_times_row():
    rng = np.random.default_rng(203)
    return {"u": rng.standard_normal((4, 1)), "v": rng.standard_normal((1, 3))}


def column_minus_row_squared(u, v):
    return np.mean((u - v) ** 2 * np.cos(v))


def inputs_column_minus_row_squared():
    rng = np.random.default_rng(204)
    return {"u": rng.standard_normal((3, 1)), "v": rng.standard_normal((1, 5))}


def scalar_times_array(a, x):
    return np.sum(np.tanh(a * x + a**2))


def inputs_scalar_times_array():
    rng = np.random.default_rng(205)
    return {"a": 0.7, "x": rng.standard_normal((3, 4))}


def scalar_offset_mean(c, X):
    return np.mean((X - c) ** 2) + c / 3.0


def inputs_scalar_offset_mean():
    rng = np.random.default_rng(206)
    return {"c": -0.4, "X": rng.standard_normal((2, 5))}


def column_bias_divide(X, c):
    return np.sum(X / c + c * X**2)


def inputs_column_bias_divide():
    rng = np.random.default_rng(207)
    return {"X": rng.standard_normal((4, 3)), "c": rng.uniform(0.5, 1.5, (4, 1))}


def three_way_broadcast(a, b, c):
    return np.sum(np.sin(a * b + c))


def inputs_three_way_broadcast():
    rng = np.random.default_rng(208)
    return {
        "a": rng.standard_normal((2, 1, 3)),
        "b": rng.standard_normal((4, 1)),
        "c": 0.3,
    }


def vector_against_3d(T, w):
    return np.sum((T - w) ** 2 * w)


def inputs_vector_against_3d():
    rng = np.random.default_rng(209)
    return {"T": rng.standard_normal((2, 3, 4)), "w": rng.standard_normal(4)}


def layer_norm(gamma, beta, *, X):
    mu = np.mean(X, axis=1, keepdims=True)
    var = np.mean((X - mu) ** 2, axis=1, keepdims=True)
    Z = (X - mu) / np.sqrt(var + 1e-5)
    return np.sum(np.tanh(gamma * Z + beta) ** 2)


def inputs_layer_norm():
    rng = np.random.default_rng(210)
    return {
        "gamma": rng.uniform(0.5, 1.5, 4),
        "beta": 0.1 * rng.standard_normal(4),
        "X": rng.standard_normal((5, 4)),
    }


def layer_norm_input(X):
    mu = np.mean(X, axis=-1, keepdims=True)
    var = np.mean((X - mu) ** 2, axis=-1, keepdims=True)
    Z = (X - mu) / np.sqrt(var + 1e-5)
    return np.sum(Z**3 + Z * X)


def inputs_layer_norm_input():
    rng = np.random.default_rng(211)
    return {"X": rng.standard_normal((3, 4))}


def broadcast_reused(x, b):
    y = x + b
    z = y * b
    return np.sum(z * y) + np.sum(b)


def inputs_broadcast_reused():
    rng = np.random.default_rng(212)
    return {"x": rng.standard_normal((3, 2)), "b": rng.standard_normal((1, 2))}
