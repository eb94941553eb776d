"""Gaussian-process regression: the negative log marginal likelihood of an RBF kernel's
hyperparameters (Rasmussen & Williams, Algorithm 2.1), as a scientist writes it: unpack
the log-parameters, build the kernel, one Cholesky factor, two triangular solves, the
log-determinant from the factor's diagonal.

    gradgen compile examples/gaussian_process.py
    gradgen check examples/gaussian_process.py --function neg_log_marginal_likelihood \
        --inputs examples/inputs.py:gaussian_process
"""

import numpy as np

LOG_2PI = np.log(2 * np.pi)


def rbf_kernel(X1, X2, lengthscale, variance):
    sqdist = np.sum(X1**2, 1).reshape(-1, 1) + np.sum(X2**2, 1) - 2 * X1 @ X2.T
    return variance * np.exp(-0.5 / lengthscale**2 * sqdist)


def neg_log_marginal_likelihood(log_params, *, X, y):
    lengthscale, variance, noise = np.exp(log_params)
    n = len(y)
    K = rbf_kernel(X, X, lengthscale, variance) + (noise + 1e-6) * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * n * LOG_2PI
