"""Array corpus: programs the fuzzer (tests/fuzz.py) found failing, shrunk, now fixed."""

import numpy as np


def broadcast_reshaped(b):
    # check's sympy interpreter broadcast b against the target shape's tuple (2 copies, not 3)
    return np.sum(np.broadcast_to(b.reshape(1), (3, 1)))


def inputs_broadcast_reshaped():
    return {"b": np.array([[0.06803414069304425]])}


def broadcast_row_mean(a, *, X):
    s = np.broadcast_to(np.mean(a, axis=0, keepdims=True) @ X, (3, 1))
    return np.sum(s * s)


def inputs_broadcast_row_mean():
    rng = np.random.default_rng(901)
    return {"a": rng.uniform(-1.5, 1.5, (3, 2)), "X": rng.uniform(-1.5, 1.5, 2)}


def mean_of_a_slice(b):
    # the rule reads the result (`np.size(f)`), but only inside `df_ds[:1] += ...`: the
    # forward pass of f_grad dropped the statement computing it (NameError)
    s = b
    return np.mean(s[:1])


def inputs_mean_of_a_slice():
    return {"b": np.array([[0.65], [-1.15], [1.11], [-0.15]])}


def inner_used_three_times(b):
    # np.sum of a number seeds its adjoint with np.ones_like(z), a 0-d array; the adjoint
    # passed through (df_dh = df_dz) and then `df_dh += df_dz` wrote into both: 4h, not 3h
    u = b[1:]
    h = np.inner(u, u)
    z = h + h + h
    return np.sum(z)


def inputs_inner_used_three_times():
    return {"b": np.array([0.006, 0.648])}


def fresh_array_updated_in_place(a):
    # not shared with any other name: `x += ...` stays in place, its old values saved
    x = a * 2.0
    for i in range(3):
        x += np.sin(x) * a
    return np.sum(x * x)


def inputs_fresh_array_updated_in_place():
    return {"a": np.array([[0.3, -0.4], [0.8, 0.1]])}


def parameter_updated_in_place(a):
    # your array changes in place, as in your function; the gradient is of the inputs at the call
    for i in range(2):
        a += np.cos(a)
    a *= 2.0
    return np.sum(a * a)


def inputs_parameter_updated_in_place():
    return {"a": np.array([0.3, -0.7, 1.1])}
