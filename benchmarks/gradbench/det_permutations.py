"""GradBench `det` without recursion (what its README suggests for tools that cannot recurse,
and what gradgen's refusal of det.py asks for): the Leibniz formula, every one of the ell!
permutations' signed product of entries at once. More arithmetic than expansion by minors,
but no recursion. The permutations and their signs are data, made from ell alone. Inputs as
det.py's: ell = 5 (small) or 7 (medium)."""

import itertools

import numpy as np

import det
import tools

PARAMETERS = ("A",)


def objective(A, *, permutations, signs):
    rows = np.arange(A.shape[0])
    return np.sum(signs * np.prod(A[rows, permutations], axis=1))


def inputs(size="small", seed=31337):
    A = det.inputs(size, seed)["A"]
    permutations = np.array(list(itertools.permutations(range(A.shape[0]))))
    inversions = np.sum(permutations[:, :, None] > permutations[:, None, :], axis=(1, 2), where=np.triu(
        np.ones((A.shape[0], A.shape[0]), dtype=bool), 1))
    return {"A": A, "permutations": permutations, "signs": (-1.0) ** inversions}


def torch_objective(A, *, permutations, signs):
    import torch  # start-up: benchmark-only extra

    rows = torch.arange(A.shape[0])
    return torch.sum(signs * torch.prod(A[rows, permutations], dim=1))


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
