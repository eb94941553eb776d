"""A variational autoencoder's negative evidence lower bound on one batch, with the
reparameterisation trick: the noise is drawn inside the loss from the random state it is
given, so the generated gradient draws exactly the numbers the loss draws (once, in the
forward pass) and differentiates `mean + std * eps` as written.

    gradgen compile examples/vae.py
    gradgen check examples/vae.py --function loss --inputs examples/inputs.py:vae
"""

import numpy as np


def softplus(z):
    return np.log1p(np.exp(z))


def encode(W_enc, b_enc, x):
    h = np.tanh(x @ W_enc + b_enc)
    d = h.shape[1] // 2
    return h[:, :d], h[:, d:]


def loss(W_enc, b_enc, W_dec, b_dec, rs, *, x):
    mean, log_std = encode(W_enc, b_enc, x)
    std = np.exp(log_std)
    eps = rs.randn(*mean.shape)
    z = mean + std * eps  # the reparameterisation trick
    logits = z @ W_dec + b_dec
    reconstruction = np.sum(softplus(logits) - x * logits)  # Bernoulli likelihood, binary pixels
    kl = 0.5 * np.sum(std**2 + mean**2 - 1.0 - 2.0 * log_std)
    assert np.isfinite(kl), "the KL term overflowed"
    return (reconstruction + kl) / x.shape[0]
