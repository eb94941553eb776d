"""GradBench `gmm` (ADBench's Gaussian mixture, with GradBench's three fixes): the log posterior
of k Gaussians in d dimensions over n points, each precision matrix Q = L L^T parametrised by
the logarithms q of its diagonal and the strictly lower part l, a Wishart prior on the
precisions. Written as GradBench's jax tool writes it: every point against every component
at once, logsumexp by the max trick. Inputs as GradBench's generator makes them: x and alpha
normal, mu uniform, q and l normal; n = 1000, m = 0, gamma = 1; d = 2, k = 5 (small) or
d = 10, k = 25 (medium)."""

import math

import numpy as np

import tools

PARAMETERS = ("alpha", "mu", "q", "l")
SIZES = {"small": (2, 5), "medium": (10, 25)}


# (one helper per axis: gradgen refuses `def logsumexp(z, axis)`, "'axis=' must be a constant
# here", though every call passes a constant; benchmarks/gradbench/README.md lists it)
def logsumexp_rows(z):
    top = np.max(z, axis=1, keepdims=True)
    return np.log(np.sum(np.exp(z - top), axis=1)) + top[:, 0]


def logsumexp(v):
    top = np.max(v)
    return np.log(np.sum(np.exp(v - top))) + top


def objective(alpha, mu, q, l, *, x, lower, gamma, m, constant):
    n = x.shape[0]
    diagonal = np.exp(q)
    sum_q = np.sum(q, axis=1)
    Ls = np.einsum("kp,pij->kij", l, lower)  # the strictly lower parts, placed (lower: one-hot)
    centered = x[:, None, :] - mu[None, :, :]
    Lx = diagonal * centered + np.einsum("kij,nkj->nki", Ls, centered)
    inner = alpha + sum_q - 0.5 * np.sum(Lx**2, axis=2)
    likelihood = np.sum(logsumexp_rows(inner)) - n * logsumexp(alpha)
    prior = -np.sum(0.5 * gamma * gamma * (np.sum(diagonal**2, axis=1) + np.sum(l**2, axis=1)) - m * sum_q)
    return constant + likelihood + prior


def wishart_constant(d, k, n, gamma, m):
    """The terms that no parameter changes: the Gaussians' normalisation and the Wishart
    prior's (log multivariate gamma by its product formula)."""
    degrees = d + m + 1
    multigammaln = d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(0.5 * degrees - 0.5 * j) for j in range(d))
    return -n * d * 0.5 * math.log(2 * math.pi) + k * (degrees * d * math.log(gamma / math.sqrt(2)) - multigammaln)


def lower_places(d):
    """One-hot (d (d - 1) / 2, d, d): entry p of l goes to row i > column j, column by column."""
    places = [(i, j) for j in range(d) for i in range(j + 1, d)]
    lower = np.zeros((len(places), d, d))
    for p, (i, j) in enumerate(places):
        lower[p, i, j] = 1.0
    return lower


def inputs(size="small", seed=31337, n=1000, m=0, gamma=1.0):
    d, k = SIZES[size]
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return {"alpha": rng.normal(size=k), "mu": rng.uniform(size=(k, d)), "q": rng.normal(size=(k, d)),
            "l": rng.normal(size=(k, d * (d - 1) // 2)), "x": x, "lower": lower_places(d), "gamma": gamma, "m": m,
            "constant": wishart_constant(d, k, n, gamma, m)}


def torch_objective(alpha, mu, q, l, *, x, lower, gamma, m, constant):
    import torch  # start-up: benchmark-only extra

    n = x.shape[0]
    diagonal = torch.exp(q)
    sum_q = torch.sum(q, dim=1)
    Ls = torch.einsum("kp,pij->kij", l, lower)
    centered = x[:, None, :] - mu[None, :, :]
    Lx = diagonal * centered + torch.einsum("kij,nkj->nki", Ls, centered)
    inner = alpha + sum_q - 0.5 * torch.sum(Lx**2, dim=2)
    likelihood = torch.sum(torch.logsumexp(inner, dim=1)) - n * torch.logsumexp(alpha, dim=0)
    prior = -torch.sum(0.5 * gamma * gamma * (torch.sum(diagonal**2, dim=1) + torch.sum(l**2, dim=1)) - m * sum_q)
    return constant + likelihood + prior


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
