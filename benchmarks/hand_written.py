"""The five reference programs of the speed benchmark, each with the gradient an expert
writes by hand, and the inputs it runs on.

The sources gradgen compiles are the files in benchmarks/references/ (unannotated, as a
person writes them); the functions here are the backward passes a person who knows the
shapes writes: every forward value computed once, broadcasting undone by an explicit sum,
matmul gradients as transposed matmuls. tests/test_benchmarks_agree.py asserts each equals
the generated gradient; benchmarks/run.py times them against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

REFERENCES = Path(__file__).resolve().parent / "references"


# ---- seed network: 8 scalars ----------------------------------------------------------------

def seed_net_grad(w1, w2, b1, w3, b2, x1, x2, y):
    z1 = w1 * x1 + w2 * x2 + b1
    h = 1.0 / (1.0 + math.exp(-z1))
    yhat = w3 * h + b2
    dyhat = 2 * (yhat - y)
    dh = dyhat * w3
    dz1 = dh * h * (1 - h)
    return dz1 * x1, dz1 * x2, dz1, dyhat * h, dyhat, dz1 * w1, dz1 * w2, -dyhat


def seed_net_inputs(size=None, seed=0):
    return dict(w1=0.5, w2=-0.5, b1=0.5, w3=2.0, b2=0.0, x1=1.0, x2=2.0, y=0.3)


# ---- Rosenbrock, n variables ---------------------------------------------------------------

def rosenbrock_grad(x):
    head = x[:-1]
    gap = x[1:] - head**2
    grad = np.zeros_like(x)
    grad[:-1] = -400.0 * gap * head - 2.0 * (1.0 - head)
    grad[1:] += 200.0 * gap
    return grad


def rosenbrock_inputs(n=1000, seed=0):
    return dict(x=np.random.default_rng(seed).uniform(-2.0, 2.0, n))


# ---- logistic regression, n samples of d features ------------------------------------------

def logistic_regression_grad(w, b, *, X, y):
    z = X @ w + b
    e = np.exp(-np.abs(z))
    p = np.where(z >= 0, 1.0, e) / (1.0 + e)  # the sigmoid, without overflow
    dz = (p - y) / len(z)
    return X.T @ dz, np.sum(dz)


def logistic_regression_inputs(n=10_000, d=100, seed=0):
    rng = np.random.default_rng(seed)
    return dict(w=0.1 * rng.standard_normal(d), b=0.2, X=rng.standard_normal((n, d)),
                y=(rng.uniform(size=n) < 0.5).astype(float))


# ---- MLP d-h-k on a batch of n --------------------------------------------------------------

def mlp_grad(W1, b1, W2, b2, *, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp_shifted = np.exp(shifted)
    probs = exp_shifted / exp_shifted.sum(axis=1, keepdims=True)
    dlogits = (probs - Y) / len(X)  # the rows of Y are one-hot: each sums to one
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = dlogits @ W2.T
    dpre = dh * (1 - h**2)
    dW1 = X.T @ dpre
    db1 = dpre.sum(axis=0)
    return dW1, db1, dW2, db2


def mlp_inputs(n=256, d=784, hidden=256, k=10, seed=0):
    rng = np.random.default_rng(seed)
    return dict(W1=0.05 * rng.standard_normal((d, hidden)), b1=np.zeros(hidden),
                W2=0.05 * rng.standard_normal((hidden, k)), b2=np.zeros(k),
                X=rng.standard_normal((n, d)), Y=np.eye(k)[rng.integers(0, k, n)])


# ---- explicit Euler, 200 steps ---------------------------------------------------------------

N_STEPS, DT, TARGET = 200, 0.02, 1.2


def euler_grad(a, b, x0):
    x = x0
    xs = []
    for _ in range(N_STEPS):
        xs.append(x)
        x = x + DT * (a * x - b * x**3)
    dx = da = db = 0.0
    for _ in range(N_STEPS):
        dx += 2 * DT * (x - TARGET)
        x = xs.pop()
        da += dx * DT * x
        db -= dx * DT * x**3
        dx *= 1 + DT * (a - 3 * b * x * x)
    return da, db, dx


def euler_inputs(size=None, seed=0):
    return dict(a=1.5, b=0.7, x0=0.2)


# ---- the table -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reference:
    name: str
    title: str
    function: str  # the function of the source file that is differentiated
    hand: Callable
    inputs: Callable
    small: dict  # keyword arguments of `inputs` for a quick test


BENCHMARKS = [
    Reference("seed_net", "seed network, 8 scalars", "loss", seed_net_grad, seed_net_inputs, {}),
    Reference("rosenbrock", "Rosenbrock, n = 1000", "rosenbrock", rosenbrock_grad, rosenbrock_inputs, {"n": 7}),
    Reference("logistic_regression", "logistic regression 10000x100", "loss", logistic_regression_grad,
              logistic_regression_inputs, {"n": 40, "d": 5}),
    Reference("mlp", "MLP 256x784-256-10", "loss", mlp_grad, mlp_inputs, {"n": 6, "d": 5, "hidden": 4, "k": 3}),
    Reference("euler", "Euler loop, 200 steps", "loss", euler_grad, euler_inputs, {}),
]


def source(reference):
    return (REFERENCES / f"{reference.name}.py").read_text()
