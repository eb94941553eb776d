"""Logistic regression: mean binary cross-entropy of logits X @ w + b, in the stable form
max(z, 0) - y*z + log1p(exp(-|z|)). X and y are data (after `*`)."""

import numpy as np


def loss(w, b, *, X, y):
    z = X @ w + b
    per_sample = np.maximum(z, 0.0) - y * z + np.log1p(np.exp(-np.abs(z)))
    return np.mean(per_sample)
