"""Losses built by factories: `make_objective(X, y)` closes over the data and returns the
objective of the parameters alone; `make_nn_funs` returns several closures in a tuple and
unpacks a flat weight vector into layers with integer offsets (as in autograd's
bayesian_neural_net example). Training code calls what the factory returns."""

import numpy as np


def make_objective(X, y, l2=0.01):
    n = X.shape[0]

    def predict(params):
        w, b = params
        return np.dot(X, w) + b

    def objective(params):
        w, b = params
        residuals = predict(params) - y
        return np.sum(residuals ** 2) / n + l2 * np.sum(w ** 2)

    return objective


def fit_loss(params, X, y):
    objective = make_objective(X, y)
    return objective(params)


def inputs_fit_loss():
    rs = np.random.RandomState(0)
    return {"params": (rs.randn(3), 0.5), "X": rs.randn(6, 3), "y": rs.randn(6)}


def make_nn_funs(layer_sizes, L2_reg, noise_variance, nonlinearity=np.tanh):
    """These functions implement a standard multi-layer perceptron,
    vectorized over both training examples and weight samples."""
    shapes = list(zip(layer_sizes[:-1], layer_sizes[1:]))
    num_weights = sum((m + 1) * n for m, n in shapes)

    def unpack_layers(weights):
        layers = []
        start = 0
        for m, n in shapes:
            W = weights[start:start + m * n].reshape((m, n))
            b = weights[start + m * n:start + (m + 1) * n]
            layers.append((W, b))
            start += (m + 1) * n
        return layers

    def predictions(weights, inputs):
        for W, b in unpack_layers(weights):
            outputs = np.dot(inputs, W) + b
            inputs = nonlinearity(outputs)
        return outputs

    def logprob(weights, inputs, targets):
        log_prior = -L2_reg * np.sum(weights**2)
        preds = predictions(weights, inputs)
        log_lik = -np.sum((preds - targets)**2) / noise_variance
        return log_prior + log_lik

    return num_weights, predictions, logprob


def map_objective(weights, inputs, targets):
    num_weights, predictions, logprob = make_nn_funs(layer_sizes=[1, 4, 1], L2_reg=0.1,
                                                     noise_variance=0.01)
    return -logprob(weights, inputs, targets)


def inputs_map_objective():
    rs = np.random.RandomState(0)
    inputs = np.linspace(-2, 2, 6).reshape((6, 1))
    return {
        "weights": 0.5 * rs.randn(13),
        "inputs": inputs,
        "targets": np.cos(inputs) + 0.1 * rs.randn(6, 1),
    }
