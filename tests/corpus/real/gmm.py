"""Gaussian mixture log-likelihoods, in the style of autograd's gmm example: parameters
in a dict, mixing proportions normalised with logsumexp, component densities from
scipy.stats.multivariate_normal in a list comprehension over zip(means, ...)."""

import numpy as np
from scipy.special import logsumexp
from scipy.stats import multivariate_normal as mvn


def init_gmm_params(num_components, D, scale, rs=np.random.RandomState(0)):
    return {'log proportions': rs.randn(num_components) * scale,
            'means':           rs.randn(num_components, D) * scale,
            'lower triangles': np.zeros((num_components, D, D)) + np.eye(D)}


def log_normalize(x):
    return x - logsumexp(x)


def unpack_gmm_params(params):
    normalized_log_proportions = log_normalize(params['log proportions'])
    return normalized_log_proportions, params['means'], params['lower triangles']


def gmm_log_likelihood(params, data):
    cluster_lls = []
    for log_proportion, mean, cov_sqrt in zip(*unpack_gmm_params(params)):
        cov = np.dot(cov_sqrt.T, cov_sqrt)
        cluster_lls.append(log_proportion + mvn.logpdf(data, mean, cov))
    return np.sum(logsumexp(np.vstack(cluster_lls), axis=0))


def objective(params, data):
    return -gmm_log_likelihood(params, data)


def inputs_objective():
    rs = np.random.RandomState(0)
    params = init_gmm_params(2, 2, 0.5, rs)
    params['lower triangles'] = params['lower triangles'] + 0.1 * np.tril(rs.randn(2, 2, 2))
    return {"params": params, "data": rs.randn(5, 2)}


def diagonal_gmm_nll(logits, means, log_stds, X):
    """A diagonal-covariance mixture written out by hand: log N(x | mu_k, sigma_k) for all
    points and components by broadcasting, then logsumexp over components."""
    log_weights = logits - logsumexp(logits)
    diffs = X[:, None, :] - means[None, :, :]                  # (N, K, D)
    stds = np.exp(log_stds)
    log_comp = -0.5 * np.sum((diffs / stds) ** 2 + 2 * log_stds + np.log(2 * np.pi), axis=2)
    return -np.mean(logsumexp(log_comp + log_weights, axis=1))


def inputs_diagonal_gmm_nll():
    rs = np.random.RandomState(0)
    return {
        "logits": rs.randn(3),
        "means": rs.randn(3, 2),
        "log_stds": 0.3 * rs.randn(3, 2),
        "X": rs.randn(6, 2),
    }
