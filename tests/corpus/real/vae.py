"""A variational autoencoder with the reparameterisation trick, in the style of autograd's
vae example: encoder and decoder are lists of (W, b) layers, the noise is drawn inside the
objective from the RandomState `rs` it is given, and the lower bound is estimated from one
sample per data point."""

import numpy as np
from scipy.special import expit


def init_net_params(scale, layer_sizes, rs=np.random.RandomState(0)):
    """Build a (weights, biases) tuples for all layers."""
    return [(scale * rs.randn(m, n),   # weight matrix
             scale * rs.randn(n))      # bias vector
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def diag_gaussian_log_density(x, mu, log_std):
    return np.sum(-0.5 * np.log(2 * np.pi) - log_std - 0.5 * ((x - mu) / np.exp(log_std)) ** 2, axis=-1)


def unpack_gaussian_params(params):
    # Params of a diagonal Gaussian.
    D = np.shape(params)[-1] // 2
    mean, log_std = params[:, :D], params[:, D:]
    return mean, log_std


def sample_diag_gaussian(mean, log_std, rs):
    return rs.randn(*mean.shape) * np.exp(log_std) + mean


def bernoulli_log_density(targets, unnormalized_logprobs):
    # unnormalized_logprobs are in R
    # Targets must be -1 or 1
    label_probabilities = -np.logaddexp(0, -unnormalized_logprobs * targets)
    return np.sum(label_probabilities, axis=-1)  # Sum across pixels.


def relu(x):
    return np.maximum(0, x)


def neural_net_predict(params, inputs):
    """Params is a list of (weights, bias) tuples.
       inputs is an (N x D) matrix.
       Applies relu to every layer but the last."""
    for W, b in params[:-1]:
        outputs = np.dot(inputs, W) + b  # linear transformation
        inputs = relu(outputs)           # nonlinear transformation

    # Last layer is linear.
    outW, outb = params[-1]
    outputs = np.dot(inputs, outW) + outb
    return outputs


def nn_predict_gaussian(params, inputs):
    # Returns means and diagonal variances
    return unpack_gaussian_params(neural_net_predict(params, inputs))


def generate_from_prior(gen_params, num_samples, noise_dim, rs):
    latents = rs.randn(num_samples, noise_dim)
    return expit(neural_net_predict(gen_params, latents))


def p_images_given_latents(gen_params, images, latents):
    preds = neural_net_predict(gen_params, latents)
    return bernoulli_log_density(images, preds)


def vae_lower_bound(gen_params, rec_params, data, rs):
    # We use a simple Monte Carlo estimate of the KL
    # divergence from the prior.
    q_means, q_log_stds = nn_predict_gaussian(rec_params, data)
    latents = sample_diag_gaussian(q_means, q_log_stds, rs)
    q_latents = diag_gaussian_log_density(latents, q_means, q_log_stds)
    p_latents = diag_gaussian_log_density(latents, 0, 0)
    likelihood = p_images_given_latents(gen_params, data, latents)
    return np.mean(p_latents + likelihood - q_latents)


def objective(combined_params, data, rs):
    gen_params, rec_params = combined_params
    return -vae_lower_bound(gen_params, rec_params, data, rs)


def inputs_objective():
    rs = np.random.RandomState(0)
    latent_dim, data_dim, hidden = 2, 4, 3
    gen_params = init_net_params(0.5, [latent_dim, hidden, data_dim], rs)
    rec_params = init_net_params(0.5, [data_dim, hidden, latent_dim * 2], rs)
    pixels = np.where(rs.rand(3, data_dim) > 0.5, 1.0, -1.0)
    return {
        "combined_params": (gen_params, rec_params),
        "data": pixels,
        "rs": np.random.RandomState(1),
    }


def gaussian_vae_loss(enc_W, enc_b, dec_W, dec_b, x, rs, beta=1.0):
    """A one-layer Gaussian VAE with the analytic KL term, the noise drawn with
    `rs.normal`."""
    h = x @ enc_W + enc_b
    k = h.shape[1] // 2
    mu, log_var = h[:, :k], h[:, k:]
    eps = rs.normal(size=mu.shape)
    z = mu + np.exp(0.5 * log_var) * eps
    x_hat = np.tanh(z @ dec_W + dec_b)
    reconstruction = np.sum((x - x_hat) ** 2, axis=1)
    kl = -0.5 * np.sum(1 + log_var - mu ** 2 - np.exp(log_var), axis=1)
    return np.mean(reconstruction + beta * kl)


def inputs_gaussian_vae_loss():
    rs = np.random.RandomState(0)
    return {
        "enc_W": 0.5 * rs.randn(3, 4),
        "enc_b": 0.1 * rs.randn(4),
        "dec_W": 0.5 * rs.randn(2, 3),
        "dec_b": 0.1 * rs.randn(3),
        "x": rs.randn(4, 3),
        "rs": np.random.RandomState(2),
        "beta": 1.0,
    }
