"""GradBench `ode` (cmpad's an_ode): y_0' = x_0, y_i' = x_i y_{i-1}, y(0) = 0, integrated to
t = 2 by s classical Runge-Kutta steps; the gradient of the last component of y(2). Inputs as
GradBench makes them: x uniform in [0, 1); n = 1000, s = 10 (small) or n = 10,000, s = 100
(medium)."""

import numpy as np

import tools

PARAMETERS = ("x",)
SIZES = {"small": (1000, 10), "medium": (10_000, 100)}


def slope(x, y):
    return x * np.concatenate([np.ones(1), y[:-1]])


def objective(x, *, s):
    h = 2.0 / s
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = slope(x, y)
        k2 = slope(x, y + h / 2 * k1)
        k3 = slope(x, y + h / 2 * k2)
        k4 = slope(x, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y[-1]


def inputs(size="small", seed=31337):
    n, s = SIZES[size]
    return {"x": np.random.default_rng(seed).uniform(size=n), "s": s}


def torch_objective(x, *, s):
    import torch  # start-up: benchmark-only extra

    def f(y):
        return x * torch.cat([torch.ones(1, dtype=torch.float64), y[:-1]])

    h = 2.0 / s
    y = torch.zeros(x.shape[0], dtype=torch.float64)
    for _ in range(s):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y[-1]


def jax_objective(jax):
    """The same integration as GradBench's jax tool writes it: the steps as jax.lax.scan."""
    jnp = jax.numpy

    def objective(x, *, s):
        h = 2.0 / s

        def f(y):
            return x * jnp.concatenate([jnp.ones(1), y[:-1]])

        def step(y, _):
            k1 = f(y)
            k2 = f(y + h / 2 * k1)
            k3 = f(y + h / 2 * k2)
            k4 = f(y + h * k3)
            return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None

        y, _ = jax.lax.scan(step, jnp.zeros_like(x), None, length=s)
        return y[-1]
    return objective


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS, static=("s",), written=jax_objective)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
