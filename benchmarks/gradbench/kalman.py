"""A scalar Kalman filter's log-likelihood: the local-level model x_t = a x_{t-1} + process noise
(variance q), y_t = x_t + measurement noise (variance r), filtered along a data vector y with a
loop, the prediction-error decomposition summed as it goes. Differentiated with respect to
(a, log q, log r). Inputs: a synthetic series from the model itself, 100 points (small) or
10,000 (medium)."""

import numpy as np

import tools

PARAMETERS = ("a", "log_q", "log_r")
SIZES = {"small": 100, "medium": 10_000}


def objective(a, log_q, log_r, *, y):
    q = np.exp(log_q)
    r = np.exp(log_r)
    mean = 0.0
    variance = 1.0
    total = 0.0
    for t in range(y.shape[0]):
        mean = a * mean
        variance = a * a * variance + q
        innovation = y[t] - mean
        spread = variance + r
        total = total - 0.5 * (np.log(2 * np.pi * spread) + innovation**2 / spread)
        gain = variance / spread
        mean = mean + gain * innovation
        variance = (1 - gain) * variance
    return total


def inputs(size="small", seed=31337):
    rng = np.random.default_rng(seed)
    n = SIZES[size]
    x = np.zeros(n)
    for t in range(1, n):
        x[t] = 0.9 * x[t - 1] + 0.3 * rng.standard_normal()
    return {"a": 0.8, "log_q": np.log(0.1), "log_r": np.log(0.2), "y": x + 0.5 * rng.standard_normal(n)}


def torch_objective(a, log_q, log_r, *, y):
    import torch  # start-up: benchmark-only extra

    q, r = torch.exp(log_q), torch.exp(log_r)
    mean, variance, total = 0.0, 1.0, 0.0
    for t in range(y.shape[0]):
        mean = a * mean
        variance = a * a * variance + q
        innovation = y[t] - mean
        spread = variance + r
        total = total - 0.5 * (torch.log(2 * np.pi * spread) + innovation**2 / spread)
        gain = variance / spread
        mean = mean + gain * innovation
        variance = (1 - gain) * variance
    return total


def jax_objective(jax):
    """The same filter as a jax user writes it: the loop as jax.lax.scan."""
    jnp = jax.numpy

    def objective(a, log_q, log_r, *, y):
        q, r = jnp.exp(log_q), jnp.exp(log_r)

        def step(carry, observed):
            mean, variance, total = carry
            mean = a * mean
            variance = a * a * variance + q
            innovation = observed - mean
            spread = variance + r
            total = total - 0.5 * (jnp.log(2 * jnp.pi * spread) + innovation**2 / spread)
            gain = variance / spread
            return (mean + gain * innovation, (1 - gain) * variance, total), None

        (_, _, total), _ = jax.lax.scan(step, (0.0 * a, 1.0 + 0.0 * a, 0.0 * a), y)
        return total
    return objective


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS, written=jax_objective)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
