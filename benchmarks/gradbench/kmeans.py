"""GradBench `kmeans`: the cost sum_i min_j |C_j - P_i|^2 of k centroids C for n points P in
d dimensions, all pairwise squared distances at once, as GradBench's jax and PyTorch tools
write it. GradBench asks for J / H (the gradient over the Hessian's diagonal); this measures
the gradient J alone. Inputs as GradBench makes them: points uniform in [0, 1), the last k
points as centroids; k = 10, n = 1000, d = 8 (small) or k = 100, n = 1000, d = 16 (medium)."""

import numpy as np

import tools

PARAMETERS = ("centroids",)
SIZES = {"small": (10, 1000, 8), "medium": (100, 1000, 16)}


def objective(centroids, *, points):
    distances = (np.sum(points**2, axis=1)[None, :] + np.sum(centroids**2, axis=1)[:, None]
                 - 2 * centroids @ points.T)
    return np.sum(np.min(distances, axis=0))


def inputs(size="small", seed=31337):
    k, n, d = SIZES[size]
    points = np.random.default_rng(seed).uniform(size=(n, d))
    return {"centroids": points[-k:].copy(), "points": points}


def torch_objective(centroids, *, points):
    import torch  # start-up: benchmark-only extra

    distances = ((points**2).sum(1)[None, :] + (centroids**2).sum(1)[:, None] - 2 * centroids @ points.T)
    return torch.min(distances, dim=0).values.sum()


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
