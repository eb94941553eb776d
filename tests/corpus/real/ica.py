"""Independent component analysis by maximum likelihood (Bell & Sejnowski, MacKay):
the unmixing matrix's log-determinant with np.linalg.slogdet and a super-Gaussian source
density log p(s) = -log cosh(s) - log pi; a second version with the sources' density a
Student-t from scipy.stats, as autograd's ica example has it."""

import numpy as np
from scipy.stats import t


def ica_negative_log_likelihood(W, X):
    n = X.shape[0]
    S = np.dot(X, W.T)                      # estimated sources, one row per sample
    sign, logdet = np.linalg.slogdet(W)
    log_p_sources = -np.log(np.cosh(S)) - np.log(np.pi)
    return -(logdet + np.sum(log_p_sources) / n)


def inputs_ica_negative_log_likelihood():
    rs = np.random.RandomState(0)
    sources = rs.laplace(size=(8, 2))
    A = np.array([[1.0, 0.5], [0.3, 1.2]])
    return {"W": np.eye(2) + 0.1 * rs.randn(2, 2), "X": sources @ A.T}


def make_ica_funs(observed_dimension, latent_dimension):
    """These functions implement independent component analysis.

    The model is:
    latents are drawn i.i.d. for each data point from a product of student-ts.
    weights are the same across all datapoints.
    each data = latents * weghts + noise."""

    def logprob(weights, latents, noise_std, observed):
        preds = np.dot(weights, latents)
        log_lik = np.sum(t.logpdf(preds, 2.4, observed, noise_std))
        return log_lik

    num_weights = observed_dimension * latent_dimension

    def unpack_weights(weights):
        return np.reshape(weights, (observed_dimension, latent_dimension))

    return num_weights, logprob, unpack_weights


def ica_objective(weights, latents, observed, noise_std=0.5):
    num_weights, logprob, unpack_weights = make_ica_funs(observed.shape[0], latents.shape[0])
    weight_matrix = unpack_weights(weights)
    return -logprob(weight_matrix, latents, noise_std, observed)


def inputs_ica_objective():
    rs = np.random.RandomState(0)
    latents = rs.randn(2, 5)
    return {
        "weights": rs.randn(6),
        "latents": latents,
        "observed": rs.randn(3, 5),
        "noise_std": 0.5,
    }
