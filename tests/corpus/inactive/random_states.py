"""A RandomState made inside the loss, and inside the factory whose closure the loss calls."""
import numpy as np
import numpy.random as npr


def make_loss(X, y):
    rs = npr.RandomState(0)

    def loss(w):
        noise = rs.randn(X.shape[0]) * 0.01
        return np.sum((X @ w - y - noise) ** 2)
    return loss


def fit(w, X, y):
    loss = make_loss(X, y)
    return loss(w)


def inputs_fit():
    rng = np.random.RandomState(5)
    return {"w": rng.randn(3), "X": rng.randn(4, 3), "y": rng.randn(4)}


def vae_like(w, X):
    rs = npr.RandomState(1)
    eps = rs.randn(*w.shape)
    z = w + 0.1 * eps
    return np.sum((X @ z) ** 2)


def inputs_vae_like():
    rng = np.random.RandomState(6)
    return {"w": rng.randn(3), "X": rng.randn(4, 3)}
