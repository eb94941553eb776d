"""GradBench `det` (cmpad's det_by_minor): the determinant of an ell x ell matrix by expansion
by minors along the first row, recursively, as the textbook writes it. Inputs as GradBench
makes them: A uniform in [0, 1); ell = 5 (small) or 7 (medium)."""

import math

import numpy as np

import tools

PARAMETERS = ("A",)
SIZES = {"small": 5, "medium": 7}


def det(A):
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    total = 0.0
    for j in range(n):
        minor = np.delete(A[1:], j, axis=1)
        total = total + (-1) ** j * A[0, j] * det(minor)
    return total


def objective(A):
    return det(A)


def inputs(size="small", seed=31337):
    ell = SIZES[size]
    return {"A": np.random.default_rng(seed).uniform(size=(ell, ell))}


def torch_objective(A):
    import torch  # start-up: benchmark-only extra

    def minors(M):
        n = M.shape[0]
        if n == 1:
            return M[0, 0]
        total = 0.0
        for j in range(n):
            minor = torch.cat([M[1:, :j], M[1:, j + 1:]], dim=1)
            total = total + (-1) ** j * M[0, j] * minors(minor)
        return total

    return minors(A)


def jax_gradient(args):
    if args["A"].shape[0] > SIZES["small"]:  # jax.jit traces all ell! products: 7 s at ell = 5
        raise tools.Skipped(f"jax.jit unrolls the recursion into {math.factorial(args['A'].shape[0])} products;"
                            " its compile takes minutes")
    return tools.jax_gradient(objective, args, PARAMETERS)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
