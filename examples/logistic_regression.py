"""Logistic regression: mean binary cross-entropy, in the numerically stable form.

For labels y in {0, 1} and logits z = X @ w + b, the per-sample loss
log(1 + exp(z)) - y*z is written as max(z, 0) - y*z + log1p(exp(-|z|)), which never
overflows. X and y come after `*`: they are data, so gradgen differentiates w and b only.
"""

import numpy as np


def loss(w, b, *, X, y):
    z = X @ w + b
    per_sample = np.maximum(z, 0.0) - y * z + np.log1p(np.exp(-np.abs(z)))
    return np.mean(per_sample)
