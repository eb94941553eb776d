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
