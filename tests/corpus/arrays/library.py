"""Array corpus: realistic small losses built from the library functions users reach for:
scipy.special (logsumexp, log_softmax, gammaln, xlogy, log_expit), scipy.stats (norm,
multivariate_normal), np.linalg / scipy.linalg (cholesky, solve_triangular, solve, slogdet,
inv, det), trace, diag, var/std, sort."""

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import gammaln, log_expit, log_softmax, logsumexp, xlogy
from scipy.stats import multivariate_normal, norm


def gmm_log_likelihood(means, log_sigmas, logits, *, X):
    """A 1-D Gaussian mixture: -sum_n log sum_k pi_k N(x_n | mu_k, sigma_k)."""
    log_weights = log_softmax(logits)
    sigmas = np.exp(log_sigmas)
    per_component = norm.logpdf(X[:, None], means[None, :], sigmas[None, :])
    return -np.sum(logsumexp(per_component + log_weights[None, :], axis=1))


def inputs_gmm_log_likelihood():
    rng = np.random.default_rng(901)
    return {"means": rng.standard_normal(3), "log_sigmas": 0.3 * rng.standard_normal(3),
            "logits": rng.standard_normal(3), "X": rng.standard_normal(8)}


def gp_neg_log_marginal(log_length, log_noise, *, X, y):
    """A Gaussian process: 0.5 y^T K^-1 y + sum log diag L, K = RBF + noise, L = cholesky(K)."""
    sq = (X[:, None] - X[None, :]) ** 2
    K = np.exp(-0.5 * sq / np.exp(2 * log_length)) + np.exp(log_noise) * np.eye(len(X))
    L = np.linalg.cholesky(K)
    alpha = solve_triangular(L, y, lower=True)
    return 0.5 * np.sum(alpha**2) + np.sum(np.log(np.diag(L)))


def inputs_gp_neg_log_marginal():
    rng = np.random.default_rng(902)
    X = np.sort(rng.uniform(-2.0, 2.0, 6))
    return {"log_length": np.log(0.8), "log_noise": np.log(0.1), "X": X, "y": np.sin(X)}


def gp_kernel_matrix_nll(K, *, y):
    """The same objective in the kernel matrix itself: solve and slogdet."""
    return 0.5 * y @ np.linalg.solve(K, y) + 0.5 * np.linalg.slogdet(K)[1]


def inputs_gp_kernel_matrix_nll():
    rng = np.random.default_rng(903)
    A = rng.standard_normal((4, 4))
    return {"K": A @ A.T + 4.0 * np.eye(4), "y": rng.standard_normal(4)}


def bayesian_logistic_regression(w, b, *, X, t):
    """-log p(w, b | data): a N(0, 1) prior and a Bernoulli likelihood through log_expit."""
    z = X @ w + b
    log_likelihood = np.sum(t * log_expit(z) + (1 - t) * log_expit(-z))
    log_prior = np.sum(norm.logpdf(w, 0.0, 1.0)) + norm.logpdf(b, 0.0, 2.0)
    return -(log_likelihood + log_prior)


def inputs_bayesian_logistic_regression():
    rng = np.random.default_rng(904)
    return {"w": rng.standard_normal(3), "b": 0.2, "X": rng.standard_normal((6, 3)),
            "t": (rng.uniform(size=6) > 0.5).astype(float)}


def softmax_cross_entropy(W, *, X, Y):
    """Multiclass logistic regression: mean over rows of -sum Y * log_softmax(X W)."""
    return -np.mean(np.sum(Y * log_softmax(X @ W, axis=1), axis=1))


def inputs_softmax_cross_entropy():
    rng = np.random.default_rng(905)
    return {"W": rng.standard_normal((3, 4)), "X": rng.standard_normal((5, 3)),
            "Y": np.eye(4)[rng.integers(0, 4, 5)]}


def poisson_regression(beta, *, X, counts):
    """Poisson log-likelihood with the log-factorial term: gammaln(k + 1), xlogy."""
    rate = np.exp(X @ beta)
    return -np.sum(xlogy(counts, rate) - rate - gammaln(counts + 1.0))


def inputs_poisson_regression():
    rng = np.random.default_rng(906)
    return {"beta": 0.3 * rng.standard_normal(2), "X": rng.standard_normal((6, 2)),
            "counts": rng.integers(0, 5, 6).astype(float)}


def gamma_prior(shape, rate, *, x):
    """Gamma log-density of positive data in its shape and rate: gammaln and xlogy."""
    return -np.sum(xlogy(shape, rate) - gammaln(shape) + (shape - 1) * np.log(x) - rate * x)


def inputs_gamma_prior():
    rng = np.random.default_rng(907)
    return {"shape": 2.5, "rate": 1.5, "x": rng.uniform(0.5, 3.0, 5)}


def mvn_fit(mean, A, *, X):
    """Multivariate normal with covariance A A^T + I."""
    cov = A @ A.T + np.eye(2)
    return -np.sum(multivariate_normal.logpdf(X, mean, cov))


def inputs_mvn_fit():
    rng = np.random.default_rng(908)
    return {"mean": rng.standard_normal(2), "A": rng.standard_normal((2, 2)), "X": rng.standard_normal((5, 2))}


def whitened_trace(A, *, S):
    """trace(A^-1 S) + log det A: a KL-like matrix objective."""
    return np.trace(np.linalg.inv(A) @ S) + np.log(np.linalg.det(A))


def inputs_whitened_trace():
    rng = np.random.default_rng(909)
    B = rng.standard_normal((3, 3))
    C = rng.standard_normal((3, 3))
    return {"A": B @ B.T + 3.0 * np.eye(3), "S": C @ C.T + np.eye(3)}


def standardized_sorted(x):
    """Batch-normalise, then weight the sorted values (an order-statistics loss)."""
    z = (x - np.mean(x)) / np.std(x)
    return np.sum(np.sort(z) * np.linspace(-1.0, 1.0, 6)) + np.var(x, ddof=1)


def inputs_standardized_sorted():
    rng = np.random.default_rng(910)
    return {"x": rng.standard_normal(6)}
