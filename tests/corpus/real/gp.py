"""Gaussian-process regression: the negative log marginal likelihood of the kernel's
hyperparameters, once as in Rasmussen & Williams' Algorithm 2.1 (Cholesky factor, two
solves, the log-determinant from the factor's diagonal), once as autograd's
gaussian_process example builds it (a factory taking the covariance function, returning
closures, scipy.stats.multivariate_normal.logpdf)."""

import numpy as np
from scipy.stats import multivariate_normal as mvn


def rbf_kernel(X1, X2, lengthscale, variance):
    sqdist = np.sum(X1 ** 2, 1).reshape(-1, 1) + np.sum(X2 ** 2, 1) - 2 * np.dot(X1, X2.T)
    return variance * np.exp(-0.5 / lengthscale ** 2 * sqdist)


def neg_log_marginal_likelihood(log_params, X, y):
    lengthscale, variance, noise = np.exp(log_params)
    n = len(y)
    K = rbf_kernel(X, X, lengthscale, variance) + (noise + 1e-6) * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * np.dot(y, alpha) + np.sum(np.log(np.diag(L))) + 0.5 * n * np.log(2 * np.pi)


def inputs_neg_log_marginal_likelihood():
    rs = np.random.RandomState(0)
    X = rs.uniform(-2, 2, size=(5, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rs.randn(5)
    return {"log_params": np.log(np.array([0.8, 1.2, 0.1])), "X": X, "y": y}


def make_gp_funs(cov_func, num_cov_params):
    """Functions that perform Gaussian process regression.
       cov_func has signature (cov_params, x, x')"""

    def unpack_kernel_params(params):
        mean        = params[0]
        cov_params  = params[2:]
        noise_scale = np.exp(params[1]) + 0.0001
        return mean, cov_params, noise_scale

    def predict(params, x, y, xstar):
        """Returns the predictive mean and covariance at locations xstar,
           of the latent function value f (without observation noise)."""
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_f_f = cov_func(cov_params, xstar, xstar)
        cov_y_f = cov_func(cov_params, x, xstar)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        pred_mean = mean + np.dot(np.linalg.solve(cov_y_y, cov_y_f).T, y - mean)
        pred_cov = cov_f_f - np.dot(np.linalg.solve(cov_y_y, cov_y_f).T, cov_y_f)
        return pred_mean, pred_cov

    def log_marginal_likelihood(params, x, y):
        mean, cov_params, noise_scale = unpack_kernel_params(params)
        cov_y_y = cov_func(cov_params, x, x) + noise_scale * np.eye(len(y))
        prior_mean = mean * np.ones(len(y))
        return mvn.logpdf(y, prior_mean, cov_y_y)

    return num_cov_params + 2, predict, log_marginal_likelihood


def rbf_covariance(kernel_params, x, xp):
    output_scale = np.exp(kernel_params[0])
    lengthscales = np.exp(kernel_params[1:])
    diffs = np.expand_dims(x / lengthscales, 1) \
          - np.expand_dims(xp / lengthscales, 0)
    return output_scale * np.exp(-0.5 * np.sum(diffs**2, axis=2))


def gp_objective(params, X, y):
    num_params, predict, log_marginal_likelihood = make_gp_funs(rbf_covariance, num_cov_params=X.shape[1] + 1)
    return -log_marginal_likelihood(params, X, y)


def inputs_gp_objective():
    rs = np.random.RandomState(0)
    X = rs.uniform(-2, 2, size=(5, 1))
    y = np.cos(X[:, 0]) + 0.1 * rs.randn(5)
    return {"params": np.array([0.1, -2.0, 0.0, -0.2]), "X": X, "y": y}
