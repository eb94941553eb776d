"""Bayesian logistic regression: a Gaussian prior with scipy.stats.norm.logpdf, the
Bernoulli likelihood with np.logaddexp, and the MAP objective as the negative log joint."""

import numpy as np
from scipy.stats import norm


def log_prior(w, prior_scale):
    return np.sum(norm.logpdf(w, 0.0, prior_scale))


def log_likelihood(w, b, X, y):
    logits = np.dot(X, w) + b
    return np.sum(y * logits - np.logaddexp(0.0, logits))


def neg_log_joint(w, b, X, y, prior_scale=1.0):
    return -(log_prior(w, prior_scale) + norm.logpdf(b, 0.0, 10.0) + log_likelihood(w, b, X, y))


def inputs_neg_log_joint():
    rs = np.random.RandomState(0)
    X = rs.randn(8, 3)
    true_w = np.array([1.0, -2.0, 0.5])
    y = (rs.rand(8) < 1.0 / (1.0 + np.exp(-X @ true_w))).astype(float)
    return {"w": 0.1 * rs.randn(3), "b": 0.2, "X": X, "y": y, "prior_scale": 1.0}


def log_posterior_labels_pm1(weights, inputs, targets, log_prior_std):
    """Targets in {-1, +1}; the prior's scale is a hyperparameter on the log scale."""
    label_probabilities = norm.logcdf(targets * np.dot(inputs, weights))
    prior = norm.logpdf(weights, loc=0.0, scale=np.exp(log_prior_std))
    return -(np.sum(label_probabilities) + np.sum(prior))


def inputs_log_posterior_labels_pm1():
    rs = np.random.RandomState(1)
    return {
        "weights": 0.3 * rs.randn(3),
        "inputs": rs.randn(6, 3),
        "targets": np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0]),
        "log_prior_std": 0.5,
    }
