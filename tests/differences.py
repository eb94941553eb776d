"""Central differences of a function of one array, element by element: the reference the
issue-20 regression tests compare gradients with."""

import numpy as np


def central(f, x, h=1e-6):
    """df/dx at x, one element at a time ((f(x + h e) - f(x - h e)) / 2h), shaped like x."""
    x = np.asarray(x, dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out
