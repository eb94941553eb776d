"""A smoothing fit: the windows, the buffer and the bookkeeping are data (issue 22 item 1)."""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def smooth_loss(w, signal, k=3, reg=None):
    windows = sliding_window_view(signal, k)
    buf = np.empty(len(windows))
    for i in range(len(windows)):
        buf[i] = windows[i].mean()
    pred = w[0] + w[1] * buf
    target = signal[k - 1:]
    if reg is None:
        reg = 0.01
    label = f"k={k}, {len(buf)} windows"
    assert isinstance(k, int), label
    return np.mean((pred - target) ** 2) + reg * np.sum(w ** 2)


def inputs_smooth_loss():
    rng = np.random.RandomState(0)
    return {"w": rng.randn(2), "signal": np.cumsum(rng.randn(20))}


def weighted_loss(w, X, y, weights=None, kind="l2"):
    n = X.shape[0]
    if weights is None:
        weights = np.ones(n, dtype=X.dtype) / n
    mask = np.zeros(n, dtype=bool)
    mask[::2] = True
    r = X @ w - y
    if kind == "l1":
        per_row = np.abs(r)
    else:
        per_row = r ** 2
    col = w.reshape((*w.shape, 1))
    return np.sum(weights * per_row * np.where(mask, 1.0, 0.5)) + 0.1 * np.sum(col ** 2)


def inputs_weighted_loss():
    rng = np.random.RandomState(1)
    return {"w": rng.randn(3), "X": rng.randn(6, 3), "y": rng.randn(6)}
