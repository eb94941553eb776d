"""Python's builtins on data and counts: a minibatch chosen by a `slice` a helper returns,
`divmod` of an iteration count, `sorted` keys, `reversed` and `min` of lengths."""
import numpy as np

BATCH = 3


def batch_indices(iteration, num_batches):
    idx = iteration % num_batches
    return slice(idx * BATCH, (idx + 1) * BATCH)


def minibatch_loss(w, X, y, iteration=4):
    num_batches = int(np.ceil(len(X) / BATCH))
    rows = batch_indices(iteration, num_batches)
    epoch, step = divmod(iteration, num_batches)
    scale = 1.0 / (1 + epoch + step)
    return scale * np.sum((np.tanh(X[rows] @ w) - y[rows]) ** 2)


def inputs_minibatch_loss():
    rng = np.random.RandomState(5)
    return {"w": rng.randn(2), "X": rng.randn(8, 2), "y": rng.randn(8)}


def window_loss(w, series):
    order = sorted(range(len(series)), key=lambda i: -abs(series[i]))
    top = np.array(order[: min(3, len(series))])
    last = list(reversed(range(len(series))))[0]
    window = slice(1, last)
    return np.sum(w * series[top]) + np.sum(np.cos(w[0] * series[window]))


def inputs_window_loss():
    rng = np.random.RandomState(6)
    return {"w": rng.randn(3), "series": rng.randn(6)}
