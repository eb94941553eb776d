"""A two-layer perceptron with its shapes written down (jaxtyping)."""

import numpy as np
from jaxtyping import Float


def loss(
    W1: Float[np.ndarray, "d h"],
    b1: Float[np.ndarray, "h"],
    W2: Float[np.ndarray, "h k"],
    b2: Float[np.ndarray, "k"],
    *,
    X: Float[np.ndarray, "n d"],
    Y: Float[np.ndarray, "n k"],
) -> float:
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_probs, axis=1))
