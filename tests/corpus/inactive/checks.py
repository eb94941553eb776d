"""Checks that raise, around a loss: a string option closed by `else: raise`, a guard on a
differentiated value, a guard inside a loop, and an option checked before any work."""
import numpy as np


def penalised_fit(coef, X, y, loss="l2", penalty="ridge"):
    if penalty not in ("ridge", "lasso"):
        raise ValueError(f"unknown penalty {penalty!r}")
    r = X @ coef - y
    if loss == "l2":
        data = 0.5 * np.sum(r ** 2)
    elif loss == "l1":
        data = np.sum(np.sqrt(r ** 2 + 1e-6))
    else:
        raise ValueError("loss must be 'l1' or 'l2'")
    if penalty == "ridge":
        reg = 0.1 * np.sum(coef ** 2)
    else:
        reg = 0.1 * np.sum(np.sqrt(coef ** 2 + 1e-6))
    return data + reg


def inputs_penalised_fit():
    rng = np.random.RandomState(7)
    return {"coef": rng.randn(3), "X": rng.randn(6, 3), "y": rng.randn(6)}


def decay_fit(log_k, t, c, tol=1e-12):
    k = np.exp(log_k)
    if np.any(k <= 0):
        raise ValueError("rates must be positive")
    pred = np.zeros_like(t)
    for i in range(len(t)):
        pred[i] = np.sum(np.exp(-k * t[i]))
        if not np.isfinite(pred[i]):
            raise FloatingPointError(f"overflow at t={t[i]}")
    return np.sum((pred - c) ** 2) + tol


def inputs_decay_fit():
    return {"log_k": np.array([-0.5, 0.2]), "t": np.linspace(0.0, 2.0, 5), "c": np.array([2.0, 1.5, 1.1, 0.8, 0.6])}
