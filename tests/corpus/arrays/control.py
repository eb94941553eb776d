"""Array corpus: arrays inside control flow: recurrences over range(T), unrolled gradient
descent, accumulators, branches on array-valued tests and on shapes, early return."""

import numpy as np


def tanh_recurrence(W, x, *, T):
    h = np.zeros_like(x)
    for t in range(T):
        h = np.tanh(W @ h + x)
    return np.sum(h**2)


def inputs_tanh_recurrence():
    rng = np.random.default_rng(601)
    return {"W": 0.5 * rng.standard_normal((4, 4)), "x": rng.standard_normal(4), "T": 5}


def recurrence_with_step_input(W, U, b, *, x, T):
    h = np.zeros_like(b)
    for t in range(T):
        h = np.tanh(W @ h + (t + 1.0) * (U @ x) + b)
    return np.mean(h)


def inputs_recurrence_with_step_input():
    rng = np.random.default_rng(602)
    return {
        "W": 0.4 * rng.standard_normal((3, 3)),
        "U": 0.3 * rng.standard_normal((3, 2)),
        "b": 0.1 * rng.standard_normal(3),
        "x": rng.standard_normal(2),
        "T": 4,
    }


def unrolled_gradient_descent(w0, lr, *, X, y, K):
    w = w0
    for k in range(K):
        r = X @ w - y
        w = w - lr * (X.T @ r) / len(y)
    return 0.5 * np.mean((X @ w - y) ** 2)


def inputs_unrolled_gradient_descent():
    rng = np.random.default_rng(603)
    return {
        "w0": rng.standard_normal(3),
        "lr": 0.3,
        "X": rng.standard_normal((6, 3)),
        "y": rng.standard_normal(6),
        "K": 4,
    }


def power_iteration(A, v0, *, K):
    v = v0
    for k in range(K):
        u = A @ v
        v = u / np.linalg.norm(u)
    return v @ A @ v


def inputs_power_iteration():
    rng = np.random.default_rng(604)
    B = rng.standard_normal((3, 3))
    return {
        "A": B @ B.T + np.diag([3.0, 1.0, 0.2]),
        "v0": rng.standard_normal(3),
        "K": 6,
    }


def loop_accumulator(x, w):
    total = 0.0
    for k in range(1, 4):
        total = total + np.sum(np.sin(k * x) * w)
    return total


def inputs_loop_accumulator():
    rng = np.random.default_rng(605)
    return {"x": rng.standard_normal((2, 3)), "w": rng.standard_normal(3)}


def loop_array_accumulator(x):
    acc = np.zeros_like(x)
    for k in range(3):
        acc = acc * x + np.cos(acc + k)
    return np.sum(acc)


def inputs_loop_array_accumulator():
    rng = np.random.default_rng(606)
    return {"x": rng.standard_normal(5)}


def branch_on_sum(x, w):
    s = np.sum(x * w)
    if s > 0:
        y = np.tanh(x) * w
    else:
        y = x**2 - w
    return np.sum(y)


def inputs_branch_on_sum():
    rng = np.random.default_rng(607)
    x = rng.standard_normal(4)
    w = rng.standard_normal(4)
    return {"x": x, "w": w if np.sum(x * w) > 0.5 else -w}


def branch_else_side(x, w):
    s = np.sum(x * w)
    if s > 0:
        y = np.tanh(x) * w
    else:
        y = x**2 - w
    return np.sum(y)


def inputs_branch_else_side():
    rng = np.random.default_rng(608)
    x = rng.standard_normal(4)
    w = rng.standard_normal(4)
    return {"x": x, "w": -w if np.sum(x * w) > 0 else w}


def branch_on_shape(x):
    if len(x) > 3:
        y = np.exp(x)
    else:
        y = np.sin(x)
    n, m = x.shape
    if n * m > 100:
        y = y * 0.0
    return np.sum(y * x)


def inputs_branch_on_shape():
    rng = np.random.default_rng(609)
    return {"x": rng.standard_normal((5, 2))}


def early_return_norm(x):
    r = np.linalg.norm(x)
    if r > 10.0:
        return r
    y = x / (1.0 + r)
    return np.sum(y**3)


def inputs_early_return_norm():
    rng = np.random.default_rng(610)
    return {"x": rng.standard_normal(6)}


def loop_over_len(x):
    s = 0.0
    for i in range(len(x)):
        s = s + np.sum(x ** (i + 1)) / (i + 1)
    return s


def inputs_loop_over_len():
    rng = np.random.default_rng(611)
    return {"x": rng.uniform(-0.9, 0.9, 4)}
