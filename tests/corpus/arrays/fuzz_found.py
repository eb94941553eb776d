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


def lazy_zero_adjoint_in_a_loop(a, b, *, X):
    # z's last value is never read: its adjoint is a plain 0.0 when the loop's backward sweep
    # sums it back to z's shape (unbroadcast of a number to a (1, 1) array raised IndexError)
    z = np.mean(b, axis=0, keepdims=True) + 1.5
    y = np.arctan(3.0 * b) + np.sum(z, axis=-2)
    for i in range(1):
        z -= np.arctan(b + b)
    return np.sum(a) + np.sum(np.tanh(y))


def inputs_lazy_zero_adjoint_in_a_loop():
    return {"a": np.array([[0.3, -0.2, 0.9, 0.1]]), "b": np.array([[0.4]]), "X": np.array([[0.5], [1.0]])}


def steep_outer_updated_in_a_loop(a, b, *, X):
    # large higher derivatives: the finite differences need steps down to 1.25e-4 to agree
    v = np.outer(-(b + b), X[1] / np.cosh(np.sin(b * X)))
    v -= np.arctan(-b)
    for i in range(2):
        v += np.sin(np.sin(np.arctan(v) @ np.tanh(v.T)).reshape(-1)) / (i + 1)
    return np.sum(np.arctan(v) / np.sqrt(1 + v * v) + np.arctan(v)) + np.sum(a)


def inputs_steep_outer_updated_in_a_loop():
    return {"a": np.array([[-1.092], [-0.223], [0.113], [-0.501]]), "b": np.array([[-0.32319847593260853]]),
            "X": np.array([[0.6205673643721172, 0.2547926943785823, -0.08720473180646993, 1.2786417634770837],
                           [-1.1343301739968585, -1.1290875052638212, 0.31006191129381877, -1.2751117595491839],
                           [0.6886443535490891, -0.8199743743900529, 0.9896029174559318, -1.0366937330053132]])}
