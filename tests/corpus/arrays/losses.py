"""Array corpus: losses as they are written for machine learning: mean squared error,
ridge, stable logistic loss, softmax cross-entropy with the max trick, Huber, Gaussian
negative log-likelihood, Poisson, KL, cosine similarity, a two-layer MLP and a small RNN
(unrolled over three separate input vectors, since indexing comes later)."""

import numpy as np


def mse(w, b, *, X, y):
    r = X @ w + b - y
    return np.mean(r**2)


def inputs_mse():
    rng = np.random.default_rng(701)
    return {
        "w": rng.standard_normal(3),
        "b": 0.2,
        "X": rng.standard_normal((8, 3)),
        "y": rng.standard_normal(8),
    }


def ridge(w, *, X, y, lam):
    return np.sum((X @ w - y) ** 2) / (2.0 * len(y)) + lam * np.sum(w**2)


def inputs_ridge():
    rng = np.random.default_rng(702)
    return {
        "w": rng.standard_normal(4),
        "X": rng.standard_normal((6, 4)),
        "y": rng.standard_normal(6),
        "lam": 0.1,
    }


def logistic_stable(w, b, *, X, y):
    z = X @ w + b
    per_sample = np.maximum(z, 0.0) - y * z + np.log1p(np.exp(-np.abs(z)))
    return np.mean(per_sample)


def inputs_logistic_stable():
    rng = np.random.default_rng(703)
    X = rng.standard_normal((10, 3))
    w = rng.standard_normal(3)
    z = X @ w
    # keep every logit away from the kink of max(z, 0) and |z| at zero
    X = X + 0.5 * np.sign(z)[:, None] * w / (w @ w)
    return {"w": w, "b": 0.0, "X": X, "y": (rng.random(10) < 0.5).astype(float)}


def softmax_cross_entropy(W, b, *, X, Y):
    logits = X @ W + b
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_probs, axis=1))


def inputs_softmax_cross_entropy():
    rng = np.random.default_rng(704)
    n, d, k = 6, 4, 3
    return {
        "W": rng.standard_normal((d, k)),
        "b": 0.1 * rng.standard_normal(k),
        "X": rng.standard_normal((n, d)),
        "Y": np.eye(k)[rng.integers(0, k, n)],
    }


def logsumexp_rows(Z):
    m = Z.max(axis=-1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(Z - m), axis=-1)) + np.squeeze(m, axis=-1))


def inputs_logsumexp_rows():
    rng = np.random.default_rng(705)
    return {"Z": rng.permutation(np.linspace(-3.0, 3.0, 15) + 0.01).reshape(3, 5)}


def huber(w, *, X, y, delta):
    r = X @ w - y
    quadratic = 0.5 * r**2
    linear = delta * (np.abs(r) - 0.5 * delta)
    return np.mean(np.where(np.abs(r) <= delta, quadratic, linear))


def inputs_huber():
    rng = np.random.default_rng(706)
    X = rng.standard_normal((8, 2))
    w = rng.standard_normal(2)
    # residuals well inside and well outside |r| <= 1, never near 0
    target = rng.choice([-1.0, 1.0], 8) * np.array(
        [0.2, 0.5, 0.7, 1.4, 1.8, 2.5, 0.3, 3.0]
    )
    return {"w": w, "X": X, "y": X @ w - target, "delta": 1.0}


def gaussian_nll(mu, log_sigma, *, x):
    z = (x - mu) * np.exp(-log_sigma)
    return np.sum(0.5 * z**2 + log_sigma + 0.5 * np.log(2.0 * np.pi))


def inputs_gaussian_nll():
    rng = np.random.default_rng(707)
    return {
        "mu": rng.standard_normal(4),
        "log_sigma": 0.3 * rng.standard_normal(4),
        "x": rng.standard_normal((5, 4)),
    }


def poisson_regression(w, *, X, counts):
    z = X @ w
    return np.mean(np.exp(z) - counts * z)


def inputs_poisson_regression():
    rng = np.random.default_rng(708)
    return {
        "w": 0.3 * rng.standard_normal(3),
        "X": rng.standard_normal((7, 3)),
        "counts": rng.poisson(2.0, 7).astype(float),
    }


def kl_softmax(p_logits, q_logits):
    p = np.exp(p_logits) / np.sum(np.exp(p_logits))
    log_p = p_logits - np.log(np.sum(np.exp(p_logits)))
    log_q = q_logits - np.log(np.sum(np.exp(q_logits)))
    return np.sum(p * (log_p - log_q))


def inputs_kl_softmax():
    rng = np.random.default_rng(709)
    return {"p_logits": rng.standard_normal(5), "q_logits": rng.standard_normal(5)}


def cosine_similarity_loss(A, B):
    dots = np.sum(A * B, axis=1)
    norms = np.sqrt(np.sum(A**2, axis=1) * np.sum(B**2, axis=1))
    return np.mean(1.0 - dots / norms)


def inputs_cosine_similarity_loss():
    rng = np.random.default_rng(710)
    return {"A": rng.standard_normal((4, 3)), "B": rng.standard_normal((4, 3))}


def mlp_two_layer(W1, b1, W2, b2, *, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * log_probs, axis=1)) + 1e-3 * (
        np.sum(W1**2) + np.sum(W2**2)
    )


def inputs_mlp_two_layer():
    rng = np.random.default_rng(711)
    n, d, hidden, k = 6, 4, 5, 3
    return {
        "W1": 0.5 * rng.standard_normal((d, hidden)),
        "b1": 0.1 * rng.standard_normal(hidden),
        "W2": 0.5 * rng.standard_normal((hidden, k)),
        "b2": 0.1 * rng.standard_normal(k),
        "X": rng.standard_normal((n, d)),
        "Y": np.eye(k)[rng.integers(0, k, n)],
    }


def small_rnn(Wx, Wh, b, v, *, x0, x1, x2, target):
    h = np.zeros_like(b)
    h = np.tanh(Wx @ x0 + Wh @ h + b)
    h = np.tanh(Wx @ x1 + Wh @ h + b)
    h = np.tanh(Wx @ x2 + Wh @ h + b)
    return (v @ h - target) ** 2


def inputs_small_rnn():
    rng = np.random.default_rng(712)
    return {
        "Wx": 0.5 * rng.standard_normal((4, 2)),
        "Wh": 0.5 * rng.standard_normal((4, 4)),
        "b": 0.1 * rng.standard_normal(4),
        "v": rng.standard_normal(4),
        "x0": rng.standard_normal(2),
        "x1": rng.standard_normal(2),
        "x2": rng.standard_normal(2),
        "target": 0.3,
    }


def rnn_loop_same_input(Wx, Wh, b, *, x, T):
    h = np.zeros_like(b)
    for t in range(T):
        h = np.tanh(Wx @ x + Wh @ h + b)
    return np.sum(h**2) + 0.01 * np.linalg.norm(Wh) ** 2


def inputs_rnn_loop_same_input():
    rng = np.random.default_rng(713)
    return {
        "Wx": 0.5 * rng.standard_normal((3, 2)),
        "Wh": 0.5 * rng.standard_normal((3, 3)),
        "b": 0.1 * rng.standard_normal(3),
        "x": rng.standard_normal(2),
        "T": 4,
    }
