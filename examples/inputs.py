"""Sample inputs for `gradgen check --inputs`: shapes and data of the array examples.

Each function returns a dict of parameter values, built with a fixed seed.
"""

import numpy as np


def logistic_regression():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((32, 5))
    return {"w": 0.5 * rng.standard_normal(5), "b": 0.1, "X": X, "y": (rng.random(32) < 0.5).astype(float)}


def mlp():
    rng = np.random.default_rng(1)
    n, d, hidden, k = 16, 6, 8, 3
    Y = np.eye(k)[rng.integers(0, k, n)]
    return {"W1": 0.5 * rng.standard_normal((d, hidden)), "b1": 0.1 * rng.standard_normal(hidden),
            "W2": 0.5 * rng.standard_normal((hidden, k)), "b2": 0.1 * rng.standard_normal(k),
            "X": rng.standard_normal((n, d)), "Y": Y}
