"""A multilayer perceptron written the way the autograd examples write one: parameters are
a list of (weights, biases) pairs, the nonlinearity is an argument with a NumPy default, the
output layer is normalised with logsumexp, and the L2 penalty walks the same list."""

import numpy as np
from scipy.special import logsumexp


def init_random_params(scale, layer_sizes, rs=np.random.RandomState(0)):
    """Build a list of (weights, biases) tuples, one for each layer in the net."""
    return [(scale * rs.randn(m, n), scale * rs.randn(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def relu(x):
    return np.maximum(0.0, x)


def neural_net_predict(params, inputs, nonlinearity=np.tanh):
    """Implements a deep neural network for classification.
    params is a list of (weights, bias) tuples.
    inputs is an (N x D) matrix.
    returns normalized class log-probabilities."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = nonlinearity(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    """Computes l2 norm of params by flattening them into a vector."""
    flattened = np.concatenate([np.ravel(p) for layer in params for p in layer])
    return np.dot(flattened, flattened)


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


def objective(params, inputs, targets, L2_reg=0.1):
    return -log_posterior(params, inputs, targets, L2_reg)


def inputs_objective():
    rs = np.random.RandomState(0)
    inputs = rs.randn(5, 3)
    labels = rs.randint(0, 2, size=5)
    return {
        "params": init_random_params(0.5, [3, 4, 2], rs),
        "inputs": inputs,
        "targets": np.eye(2)[labels],
        "L2_reg": 0.1,
    }


def regression_loss(params, inputs, targets, nonlinearity=np.tanh):
    """Mean squared error of a regression net: a linear last layer, the hidden layers
    through `nonlinearity`."""
    *hidden, (W_out, b_out) = params
    h = inputs
    for W, b in hidden:
        h = nonlinearity(h @ W + b)
    predictions = h @ W_out + b_out
    return np.mean((predictions - targets) ** 2)


def inputs_regression_loss():
    rs = np.random.RandomState(0)
    return {
        "params": init_random_params(0.5, [2, 3, 3, 1], rs),
        "inputs": rs.randn(6, 2),
        "targets": rs.randn(6, 1),
    }


def softplus_net_loss(params, inputs, targets):
    """The same regression net called with another activation passed by name."""
    return regression_loss(params, inputs, targets, nonlinearity=lambda x: np.logaddexp(0.0, x))


def inputs_softplus_net_loss():
    rs = np.random.RandomState(1)
    return {
        "params": init_random_params(0.5, [2, 3, 1], rs),
        "inputs": rs.randn(6, 2),
        "targets": rs.randn(6, 1),
    }
