"""GradBench `ba` (ADBench's bundle adjustment): n cameras (11 parameters each: Rodrigues
rotation, centre, focal length, principal point, two radial distortion coefficients), m points
and one weight per observation; each of the p observations projects its point through its
camera. GradBench asks for the sparse Jacobian of the residuals; a gradient needs a scalar, so
this measures the gradient of the sum of squared residuals (reprojection errors and weight
errors 1 - w^2), J^T r. All observations at once, as a person writes it in NumPy. Inputs: a
small synthetic generator of the same structure instead of ADBench's data files (rotations
near zero, points in front of the cameras, weights near one, each observation a random
camera and point): n = 10, m = 200, p = 400 (small); n = 50, m = 2000, p = 8000 (medium)."""

import numpy as np

import tools

PARAMETERS = ("cams", "X", "w")
SIZES = {"small": (10, 200, 400), "medium": (50, 2000, 8000)}


def objective(cams, X, w, *, camera, point, features):
    cam = cams[camera]
    rot = cam[:, 0:3]
    shifted = X[point] - cam[:, 3:6]
    theta = np.sqrt(np.sum(rot**2, axis=1, keepdims=True))
    axis = rot / theta
    cos = np.cos(theta)
    across = np.cross(axis, shifted)
    along = np.sum(axis * shifted, axis=1, keepdims=True)
    rotated = shifted * cos + across * np.sin(theta) + axis * along * (1 - cos)
    projected = rotated[:, 0:2] / rotated[:, 2:3]
    rsq = np.sum(projected**2, axis=1, keepdims=True)
    distorted = projected * (1 + cam[:, 9:10] * rsq + cam[:, 10:11] * rsq * rsq)
    residual = w[:, None] * (distorted * cam[:, 6:7] + cam[:, 7:9] - features)
    return np.sum(residual**2) + np.sum((1 - w**2) ** 2)


def inputs(size="small", seed=31337):
    n, m, p = SIZES[size]
    rng = np.random.default_rng(seed)
    cams = np.concatenate([0.1 * rng.standard_normal((n, 3)), 0.5 * rng.standard_normal((n, 3)),
                           rng.uniform(0.8, 1.2, (n, 1)), 0.1 * rng.standard_normal((n, 2)),
                           0.01 * rng.standard_normal((n, 2))], axis=1)
    X = np.concatenate([rng.standard_normal((m, 2)), rng.uniform(5.0, 10.0, (m, 1))], axis=1)
    return {"cams": cams, "X": X, "w": rng.uniform(0.8, 1.2, p), "camera": rng.integers(0, n, p),
            "point": rng.integers(0, m, p), "features": 0.2 * rng.standard_normal((p, 2))}


def torch_objective(cams, X, w, *, camera, point, features):
    import torch  # start-up: benchmark-only extra

    cam = cams[camera]
    rot = cam[:, 0:3]
    shifted = X[point] - cam[:, 3:6]
    theta = torch.sqrt(torch.sum(rot**2, dim=1, keepdim=True))
    axis = rot / theta
    cos = torch.cos(theta)
    across = torch.linalg.cross(axis, shifted)
    along = torch.sum(axis * shifted, dim=1, keepdim=True)
    rotated = shifted * cos + across * torch.sin(theta) + axis * along * (1 - cos)
    projected = rotated[:, 0:2] / rotated[:, 2:3]
    rsq = torch.sum(projected**2, dim=1, keepdim=True)
    distorted = projected * (1 + cam[:, 9:10] * rsq + cam[:, 10:11] * rsq * rsq)
    residual = w[:, None] * (distorted * cam[:, 6:7] + cam[:, 7:9] - features)
    return torch.sum(residual**2) + torch.sum((1 - w**2) ** 2)


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
