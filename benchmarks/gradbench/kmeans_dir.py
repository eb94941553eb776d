"""GradBench `kmeans` as GradBench asks for it: the Newton direction J / H, J the cost's
gradient with respect to the centroids and H the diagonal of its Hessian (the Hessian is
diagonal, so H = H 1, one Hessian-vector product with ones). gradgen: `grad_and_hvp`
(`--emit grad_and_hvp`: both from one pass); jax: a jvp of grad (both), as GradBench's jax
tool; torch: vjp and vhp, as its PyTorch tool; autograd: grad and hessian_vector_product.
The forward is the cost.
Checked against the closed form: each centroid minus the mean of the points nearest it.
Inputs as kmeans.py's."""

import numpy as np

import kmeans

SOURCE = "kmeans.py"  # what gradgen compiles: the cost, with --emit grad_and_hvp
PARAMETERS = kmeans.PARAMETERS
EMIT = ("grad_and_hvp",)
objective = kmeans.objective
inputs = kmeans.inputs


def gradgen_result(module, args):
    """J / H from the generated module's objective_grad_and_hvp: both from one pass, as jax's
    jvp of its grad gives them."""
    J, H = module.objective_grad_and_hvp(**args, dcentroids=np.ones_like(args["centroids"]))
    return J / H


def reference(args):
    centroids, points = args["centroids"], args["points"]
    nearest = np.argmin(np.sum((points[:, None, :] - centroids[None]) ** 2, axis=2), axis=1)
    return (centroids - np.stack([points[nearest == j].mean(axis=0) for j in range(len(centroids))]),)


def jax_gradient(args):
    import jax  # start-up: benchmark-only extra

    import tools

    jax.config.update("jax_enable_x64", True)
    cost = tools.rebound(objective, jax.numpy)
    points, centroids = jax.numpy.asarray(args["points"]), jax.numpy.asarray(args["centroids"])

    @jax.jit
    def direction(centroids, points):
        slope = jax.grad(lambda c: cost(c, points=points))
        J, H = jax.jvp(slope, (centroids,), (jax.numpy.ones_like(centroids),))
        return J / H

    direction(centroids, points).block_until_ready()
    return lambda: (np.asarray(direction(centroids, points).block_until_ready()),)


def torch_gradient(args):
    import torch  # start-up: benchmark-only extra
    from torch.autograd.functional import vhp, vjp  # start-up: as above

    points, centroids = torch.tensor(args["points"]), torch.tensor(args["centroids"])

    def cost(c):
        return kmeans.torch_objective(c, points=points)

    def run():
        _, J = vjp(cost, centroids, v=torch.tensor(1.0, dtype=torch.float64))
        _, H = vhp(cost, centroids, v=torch.ones_like(centroids))
        return ((J / H).numpy(),)
    return run


def autograd_gradient(args):
    import autograd  # start-up: benchmark-only extra
    import autograd.numpy as anp  # start-up: as above

    import tools

    cost = tools.rebound(objective, anp)
    points, centroids = args["points"], args["centroids"]

    def f(c):
        return cost(c, points=points)

    J, Hv = autograd.grad(f), autograd.hessian_vector_product(f)
    return lambda: (J(centroids) / Hv(centroids, np.ones_like(centroids)),)
