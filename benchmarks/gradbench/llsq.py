"""GradBench `llsq` (cmpad's llsq_obj): y(x) = 1/2 sum_i (s_i - sum_j x_j t_i^j)^2 with
t_i = -1 + 2 i / (n - 1) and s_i = sign(t_i). Inputs as GradBench makes them: m = 128
coefficients uniform in [0, 1); n = 256 points (small) or 4096 (medium)."""

import numpy as np

import tools

PARAMETERS = ("x",)
SIZES = {"small": 256, "medium": 4096}


def objective(x, *, n):
    t = np.linspace(-1.0, 1.0, n)
    powers = np.cumprod(np.concatenate([np.ones((n, 1)), np.repeat(t[:, None], x.shape[0] - 1, axis=1)], axis=1),
                        axis=1)
    residual = np.sign(t) - powers @ x
    return 0.5 * np.sum(residual**2)


def inputs(size="small", seed=31337):
    return {"x": np.random.default_rng(seed).uniform(size=128), "n": SIZES[size]}


def torch_objective(x, *, n):
    import torch  # start-up: benchmark-only extra

    t = torch.linspace(-1.0, 1.0, n, dtype=torch.float64)
    powers = torch.cumprod(torch.cat([torch.ones((n, 1), dtype=torch.float64), t[:, None].repeat(1, x.shape[0] - 1)],
                                     dim=1), dim=1)
    residual = torch.sign(t) - powers @ x
    return 0.5 * torch.sum(residual**2)


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS, static=("n",))


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
