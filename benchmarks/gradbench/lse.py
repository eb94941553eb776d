"""GradBench `lse`: LogSumExp with the max trick, written from its primitives (a max, a sum).
Inputs as GradBench makes them: x uniform in [0, 1), n = 2500 (small) or 80,000 (medium)."""

import numpy as np

import tools

PARAMETERS = ("x",)
SIZES = {"small": 2500, "medium": 80_000}


def objective(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def inputs(size="small", seed=31337):
    return {"x": np.random.default_rng(seed).uniform(size=SIZES[size])}


def torch_objective(x):
    import torch  # start-up: benchmark-only extra

    a = torch.max(x)
    return a + torch.log(torch.sum(torch.exp(x - a)))


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
