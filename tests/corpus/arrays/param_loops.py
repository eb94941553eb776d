"""Array corpus: loops over a differentiated parameter's first axis (`for W in Ws`). The
gradient is scattered back row by row; it must never be dropped (it was: `loss_grad`
returned `()`)."""

import numpy as np


def deep_tanh(Ws, *, x):
    for W in Ws:
        x = np.tanh(x @ W)
    return np.sum(x)


def inputs_deep_tanh():
    rng = np.random.default_rng(901)
    return {"Ws": 0.5 * rng.standard_normal((3, 4, 4)), "x": rng.standard_normal((2, 4))}


def rows_dot(A, w):
    s = 0.0
    for row in A:
        s = s + np.sum(row * w) ** 2
    return s


def inputs_rows_dot():
    rng = np.random.default_rng(902)
    return {"A": rng.standard_normal((5, 3)), "w": rng.standard_normal(3)}


def elements_of_vector(xs, c):
    total = 0.0
    for v in xs:
        total = total + np.sin(v * c) + v * v
    return total


def inputs_elements_of_vector():
    rng = np.random.default_rng(903)
    return {"xs": rng.standard_normal(6), "c": 0.7}


def rows_until(A, w):
    s = 0.0
    for row in A:
        s = s + np.sum(np.exp(0.3 * row * w))
        if s > 5.0:
            break
    return s


def inputs_rows_until():
    rng = np.random.default_rng(904)
    return {"A": rng.standard_normal((8, 3)), "w": rng.standard_normal(3)}


def layer(h, W, b):
    h = np.tanh(h @ W + b)
    return h


def layers_in_helper(Ws, bs, *, x):
    h = x
    for k in range(len(Ws)):
        h = layer(h, Ws[k], bs[k])
    for W in Ws:
        h = layer(h, W, 0.1)
    return np.sum(h ** 2)


def inputs_layers_in_helper():
    rng = np.random.default_rng(905)
    return {"Ws": 0.6 * rng.standard_normal((2, 3, 3)), "bs": rng.standard_normal((2, 3)),
            "x": rng.standard_normal((4, 3))}


def nested_rows(A, B):
    s = 0.0
    for a in A:
        for b in B:
            s = s + np.sum(a * b) * np.sum(a)
    return s


def inputs_nested_rows():
    rng = np.random.default_rng(906)
    return {"A": rng.standard_normal((3, 2)), "B": rng.standard_normal((4, 2))}
