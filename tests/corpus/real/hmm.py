"""Hidden Markov model likelihoods by the forward algorithm in log space, as autograd's
hmm_em example writes it: the observations are integer symbols that index the emission
matrix, the recursion is a logsumexp over the previous state."""

import numpy as np
from scipy.special import logsumexp
from scipy.stats import norm


def log_normalize(x):
    return x - logsumexp(x, axis=-1, keepdims=True)


def unpack_params(params):
    log_pi, log_A, log_B = params
    return log_normalize(log_pi), log_normalize(log_A), log_normalize(log_B)


def log_partition_function(natural_params, data):
    log_pi, log_A, log_B = natural_params

    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]

    return logsumexp(log_alpha)


def negative_log_likelihood(params, sequences):
    natural_params = unpack_params(params)
    return -sum(log_partition_function(natural_params, seq) for seq in sequences)


def inputs_negative_log_likelihood():
    rs = np.random.RandomState(0)
    num_states, num_symbols = 2, 3
    params = (rs.randn(num_states), rs.randn(num_states, num_states), rs.randn(num_states, num_symbols))
    sequences = [rs.randint(0, num_symbols, size=4), rs.randint(0, num_symbols, size=3)]
    return {"params": params, "sequences": sequences}


def gaussian_hmm_nll(logit_pi, logit_A, means, log_stds, observations):
    """A Gaussian-emission HMM: the forward messages kept in a list, emissions from
    norm.logpdf, the first step apart from the rest."""
    log_pi = logit_pi - logsumexp(logit_pi)
    log_A = logit_A - logsumexp(logit_A, axis=1, keepdims=True)
    log_emissions = norm.logpdf(observations[:, None], means, np.exp(log_stds))  # (T, K)
    alphas = [log_pi + log_emissions[0]]
    for t in range(1, len(observations)):
        alphas.append(logsumexp(alphas[t - 1][:, None] + log_A, axis=0) + log_emissions[t])
    return -logsumexp(alphas[-1])


def inputs_gaussian_hmm_nll():
    rs = np.random.RandomState(0)
    return {
        "logit_pi": rs.randn(2),
        "logit_A": rs.randn(2, 2),
        "means": np.array([-1.0, 1.0]),
        "log_stds": np.array([-0.2, 0.1]),
        "observations": rs.randn(5),
    }
