"""Integer bookkeeping, a special function of integers, a generator made inside the loss."""
import numpy as np
from scipy.special import multigammaln


def wishart_like(log_s, X, dof=4):
    n, d = X.shape
    counts = [0] * (n + 1)
    for i in range(n):
        counts[i + 1] = counts[i] + 1
    offset = sum(counts, 0)
    steps = range(n)
    norm = multigammaln(dof / 2, d)
    s = np.exp(log_s)
    total = 0.0
    for i in steps:
        total = total + np.sum(X[i] ** 2 * s)
    return total / counts[-1] - dof * np.sum(log_s) + norm + 0.0 * offset


def inputs_wishart_like():
    rng = np.random.RandomState(2)
    return {"log_s": 0.1 * rng.randn(3), "X": rng.randn(5, 3)}


def noisy_fit(w, X, seed=0):
    rng = np.random.default_rng(seed)
    noise = rng.normal(scale=0.1, size=X.shape[0])
    V = np.polynomial.polynomial.polyvander(X[:, 0], 2)
    best = X.argmax(axis=1)
    picked = X[np.arange(X.shape[0]), best]
    return np.sum((V @ w - picked - noise) ** 2)


def inputs_noisy_fit():
    rng = np.random.RandomState(3)
    return {"w": rng.randn(3), "X": rng.randn(7, 2)}
