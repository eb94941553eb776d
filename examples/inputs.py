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


def gaussian_process():
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(8, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(8)
    return {"log_params": np.log(np.array([0.8, 1.2, 0.1])), "X": X, "y": y}


def vae():
    rng = np.random.default_rng(4)
    pixels, hidden, latent = 6, 4, 2
    return {"W_enc": 0.3 * rng.standard_normal((pixels, 2 * latent)), "b_enc": 0.1 * rng.standard_normal(2 * latent),
            "W_dec": 0.3 * rng.standard_normal((latent, pixels)), "b_dec": 0.1 * rng.standard_normal(pixels),
            "rs": np.random.RandomState(0), "x": (rng.random((5, pixels)) < 0.5).astype(float)}


def rnn():
    rng = np.random.default_rng(5)
    steps, features, hidden = 6, 3, 4
    xs = rng.standard_normal((steps, features))
    return {"W_xh": 0.5 * rng.standard_normal((features, hidden)), "W_hh": 0.4 * rng.standard_normal((hidden, hidden)),
            "b_h": 0.1 * rng.standard_normal(hidden), "w_out": rng.standard_normal(hidden),
            "xs": xs, "ys": np.sin(np.cumsum(xs[:, 0]))}


def mlp_typed():
    return mlp()
