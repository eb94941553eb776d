"""Generative adversarial network objectives, in the style of autograd's gan example:
generator and discriminator are lists of (W, b) layers with tanh hidden layers, the
generator's noise is drawn inside the objective from `rs`, and the log sigmoid is
written with np.logaddexp."""

import numpy as np


def init_random_params(scale, layer_sizes, rs=np.random.RandomState(0)):
    return [(scale * rs.randn(m, n), scale * rs.randn(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def neural_net_predict(params, inputs):
    inpW, inpb = params[0]
    inputs = np.tanh(np.dot(inputs, inpW) + inpb)
    for W, b in params[1:-1]:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    outW, outb = params[-1]
    outputs = np.dot(inputs, outW) + outb
    return outputs


def logsigmoid(x):
    return x - np.logaddexp(0, x)


def gan_objective(gen_params, dsc_params, real_data, num_samples, noise_dim, rs):
    fake_data = neural_net_predict(gen_params, rs.randn(num_samples, noise_dim))
    logprobs_fake = logsigmoid(neural_net_predict(dsc_params, fake_data))
    logprobs_real = logsigmoid(neural_net_predict(dsc_params, real_data))
    return np.mean(logprobs_real) - np.mean(logprobs_fake)


def inputs_gan_objective():
    rs = np.random.RandomState(0)
    return {
        "gen_params": init_random_params(0.5, [2, 3, 2], rs),
        "dsc_params": init_random_params(0.5, [2, 3, 3, 1], rs),
        "real_data": rs.randn(4, 2) + 1.0,
        "num_samples": 4,
        "noise_dim": 2,
        "rs": np.random.RandomState(1),
    }


def generator_loss(gen_params, dsc_params, rs, num_samples=4, noise_dim=2):
    """The non-saturating generator loss: -log D(G(z))."""
    noise = rs.randn(num_samples, noise_dim)
    fake = neural_net_predict(gen_params, noise)
    return -np.mean(logsigmoid(neural_net_predict(dsc_params, fake)))


def inputs_generator_loss():
    rs = np.random.RandomState(2)
    return {
        "gen_params": init_random_params(0.5, [2, 3, 2], rs),
        "dsc_params": init_random_params(0.5, [2, 3, 1], rs),
        "rs": np.random.RandomState(3),
        "num_samples": 4,
        "noise_dim": 2,
    }
