"""A softmax-regression model whose parameters are a dict (`params["W"]`, `params["b"]`),
as in many tutorials and in JAX/flax-style code, with the checks and logging authors leave
in: an assert on the shapes, a print behind a verbose flag, a dict of hyperparameters."""

import numpy as np
from scipy.special import logsumexp

HYPERPARAMS = {"l2": 1e-2, "temperature": 1.5}


def predict(params, X):
    return (X @ params["W"] + params["b"]) / HYPERPARAMS["temperature"]


def cross_entropy(params, X, y_onehot, verbose=False):
    assert X.shape[1] == params["W"].shape[0], "feature dimension mismatch"
    logits = predict(params, X)
    log_probs = logits - logsumexp(logits, axis=1, keepdims=True)
    nll = -np.mean(np.sum(y_onehot * log_probs, axis=1))
    penalty = HYPERPARAMS["l2"] * sum(np.sum(v ** 2) for k, v in params.items() if k != "b")
    if verbose:
        print("nll", nll, "penalty", penalty)
    return nll + penalty


def inputs_cross_entropy():
    rs = np.random.RandomState(0)
    labels = rs.randint(0, 3, size=6)
    return {
        "params": {"W": 0.5 * rs.randn(4, 3), "b": np.zeros(3)},
        "X": rs.randn(6, 4),
        "y_onehot": np.eye(3)[labels],
        "verbose": False,
    }


def two_layer_loss(params, X, y):
    """A dict of layers, each a dict of arrays, visited in order by key."""
    h = X
    for name in ["layer1", "layer2"]:
        layer = params[name]
        h = np.tanh(h @ layer["W"] + layer["b"])
    out = h @ params["readout"]
    print("batch loss:", np.mean((out - y) ** 2))
    return np.mean((out - y) ** 2)


def inputs_two_layer_loss():
    rs = np.random.RandomState(1)
    return {
        "params": {
            "layer1": {"W": 0.5 * rs.randn(3, 4), "b": 0.1 * rs.randn(4)},
            "layer2": {"W": 0.5 * rs.randn(4, 4), "b": 0.1 * rs.randn(4)},
            "readout": rs.randn(4),
        },
        "X": rs.randn(5, 3),
        "y": rs.randn(5),
    }
