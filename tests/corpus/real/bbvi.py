"""Black-box stochastic variational inference, in the style of autograd's
black_box_svi example: a factory takes the target log-density and returns the
variational objective, whose Monte Carlo samples are drawn with the reparameterisation
trick from the RandomState it is given; the target is Neal's funnel written with
scipy.stats.norm.logpdf."""

import numpy as np
from scipy.stats import norm


def black_box_variational_inference(logprob, D, num_samples):
    """Implements http://arxiv.org/abs/1401.0118, and uses the
    local reparameterization trick from http://arxiv.org/abs/1506.02557"""

    def unpack_params(params):
        # Variational dist is a diagonal Gaussian.
        mean, log_std = params[:D], params[D:]
        return mean, log_std

    def gaussian_entropy(log_std):
        return 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)

    def variational_objective(params, t, rs):
        """Provides a stochastic estimate of the variational lower bound."""
        mean, log_std = unpack_params(params)
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        lower_bound = gaussian_entropy(log_std) + np.mean(logprob(samples, t))
        return -lower_bound

    return variational_objective, unpack_params


def log_density(x, t):
    mu, log_sigma = x[:, 0], x[:, 1]
    sigma_density = norm.logpdf(log_sigma, 0, 1.35)
    mu_density = norm.logpdf(mu, 0, np.exp(log_sigma))
    return sigma_density + mu_density


def elbo_objective(params, rs, t=0):
    objective, unpack_params = black_box_variational_inference(log_density, D=2, num_samples=5)
    return objective(params, t, rs)


def inputs_elbo_objective():
    init_mean = -1 * np.ones(2)
    init_log_std = -5 * np.ones(2)
    return {"params": np.concatenate([init_mean, init_log_std]), "rs": np.random.RandomState(0), "t": 0}


def gaussian_bbvi_loss(mean, log_std, y, rs, num_samples=4):
    """The ELBO of a Gaussian model for data y with unknown location, written directly:
    samples drawn in a loop and averaged with sum()."""
    elbo_terms = []
    for s in range(num_samples):
        eps = rs.standard_normal(mean.shape)
        z = mean + np.exp(log_std) * eps
        log_joint = np.sum(norm.logpdf(z, 0.0, 2.0)) + np.sum(norm.logpdf(y[:, None], z, 1.0))
        elbo_terms.append(log_joint)
    entropy = np.sum(log_std) + 0.5 * len(mean) * (1.0 + np.log(2 * np.pi))
    return -(sum(elbo_terms) / num_samples + entropy)


def inputs_gaussian_bbvi_loss():
    rs = np.random.RandomState(0)
    return {
        "mean": rs.randn(2),
        "log_std": np.array([-0.5, -1.0]),
        "y": rs.randn(4) + 1.0,
        "rs": np.random.RandomState(3),
        "num_samples": 4,
    }
