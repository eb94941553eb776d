"""GradBench `ht` (ADBench's hand tracking, the simple variant): 26 pose parameters drive a
skinned hand of 22 bones (5 fingers of 4 bones on a wrist and a palm); each data point is
compared with the vertex it corresponds to. GradBench asks for the Jacobian of the residuals;
this measures the gradient of their sum of squares. Written as GradBench's PyTorch tool writes
it: the pose matrix filled entry by entry, a loop over the bones for the posed and absolute
transforms, a branch for a near-zero global rotation. Inputs: a small synthetic generator of
the same structure instead of ADBench's model files (random rigid base transforms, skinning
weights that sum to one); 200 vertices and 100 points (small), 1000 and 1000 (medium)."""

import numpy as np

import tools

PARAMETERS = ("theta",)
SIZES = {"small": (200, 100), "medium": (1000, 1000)}
# each bone's parent: the wrist, the palm, then per finger four bones chained from the palm
PARENTS = (-1, 0, 1, 2, 3, 4, 1, 6, 7, 8, 1, 10, 11, 12, 1, 14, 15, 16, 1, 18, 19, 20)


def euler_rotation(tx, ty, tz):
    Rx = np.eye(3)
    Rx[1, 1] = np.cos(tx)
    Rx[2, 1] = np.sin(tx)
    Rx[1, 2] = -np.sin(tx)
    Rx[2, 2] = np.cos(tx)
    Ry = np.eye(3)
    Ry[0, 0] = np.cos(ty)
    Ry[2, 0] = np.sin(ty)
    Ry[0, 2] = -np.sin(ty)
    Ry[2, 2] = np.cos(ty)
    Rz = np.eye(3)
    Rz[0, 0] = np.cos(tz)
    Rz[1, 0] = np.sin(tz)
    Rz[0, 1] = -np.sin(tz)
    Rz[1, 1] = np.cos(tz)
    return Rz @ Ry @ Rx


def angle_axis_rotation(v):
    n = np.sqrt(np.sum(v**2))
    if n < 0.0001:
        return np.eye(3)
    x = v[0] / n
    y = v[1] / n
    z = v[2] / n
    s = np.sin(n)
    c = np.cos(n)
    R = np.zeros((3, 3))
    R[0, 0] = x * x + (1 - x * x) * c
    R[0, 1] = x * y * (1 - c) - z * s
    R[0, 2] = x * z * (1 - c) + y * s
    R[1, 0] = x * y * (1 - c) + z * s
    R[1, 1] = y * y + (1 - y * y) * c
    R[1, 2] = y * z * (1 - c) - x * s
    R[2, 0] = x * z * (1 - c) - y * s
    R[2, 1] = z * y * (1 - c) + x * s
    R[2, 2] = z * z + (1 - z * z) * c
    return R


def pose_params(theta):
    """(25, 3): global rotation, scale (ones), translation, then one row per bone."""
    pose = np.zeros((25, 3))
    pose[0] = theta[0:3]
    pose[1] = np.ones(3)
    pose[2] = theta[3:6]
    k = 6
    row = 5
    for finger in range(5):
        for joint in range(3):
            pose[row, 0] = theta[k]
            k += 1
            if joint == 0:
                pose[row, 1] = theta[k]
                k += 1
            row += 1
        row += 1
    return pose


def objective(theta, *, base_relatives, inverse_base_absolutes, base_positions, weights, points, correspondences):
    pose = pose_params(theta)
    absolutes = []
    for i, parent in enumerate(PARENTS):
        R = euler_rotation(pose[3 + i, 0], pose[3 + i, 2], pose[3 + i, 1])
        posed = np.eye(4)
        posed[:3, :3] = R
        relative = base_relatives[i] @ posed
        if parent == -1:
            absolutes.append(relative)
        else:
            absolutes.append(absolutes[parent] @ relative)
    transforms = np.stack(absolutes) @ inverse_base_absolutes
    positions = np.einsum("bij,vj->vbi", transforms, base_positions)
    skinned = np.sum(positions * weights[:, :, None], axis=1)[:, :3]
    R = angle_axis_rotation(pose[0]) * pose[1]
    vertices = skinned @ R.T + pose[2]
    residual = points - vertices[correspondences]
    return np.sum(residual**2)


def rigid(rng, angle, offset):
    a, b, c = rng.uniform(-angle, angle, 3)
    transform = np.eye(4)
    transform[:3, :3] = euler_rotation(a, b, c)
    transform[:3, 3] = rng.uniform(-offset, offset, 3)
    return transform


def inputs(size="small", seed=31337):
    vertices, count = SIZES[size]
    rng = np.random.default_rng(seed)
    base_relatives = np.stack([rigid(rng, 0.3, 1.0) for _ in range(22)])
    base_absolutes = []
    for i, parent in enumerate(PARENTS):
        base_absolutes.append(base_relatives[i] if parent == -1 else base_absolutes[parent] @ base_relatives[i])
    weights = rng.uniform(size=(vertices, 22)) ** 8  # a few bones dominate each vertex
    return {"theta": 0.2 * rng.standard_normal(26),
            "base_relatives": base_relatives, "inverse_base_absolutes": np.linalg.inv(np.stack(base_absolutes)),
            "base_positions": np.concatenate([rng.standard_normal((vertices, 3)), np.ones((vertices, 1))], axis=1),
            "weights": weights / np.sum(weights, axis=1, keepdims=True),
            "points": rng.standard_normal((count, 3)), "correspondences": rng.integers(0, vertices, count)}


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS, written=jax_objective)


def jax_objective(jax):
    """The same model as a jax user writes it: matrices built whole (jnp.array of entries) and
    the pose filled by .at[].set, as jax arrays cannot be written into."""
    jnp = jax.numpy

    def euler(tx, ty, tz):
        c, s = jnp.cos, jnp.sin
        Rx = jnp.array([[1.0, 0.0, 0.0], [0.0, c(tx), -s(tx)], [0.0, s(tx), c(tx)]])
        Ry = jnp.array([[c(ty), 0.0, -s(ty)], [0.0, 1.0, 0.0], [s(ty), 0.0, c(ty)]])
        Rz = jnp.array([[c(tz), -s(tz), 0.0], [s(tz), c(tz), 0.0], [0.0, 0.0, 1.0]])
        return Rz @ Ry @ Rx

    def angle_axis(v):  # (the branch as jnp.where: a traced norm cannot choose a Python branch)
        n = jnp.sqrt(jnp.sum(v**2))
        safe = jnp.where(n < 0.0001, 1.0, n)
        x, y, z = v[0] / safe, v[1] / safe, v[2] / safe
        s, c = jnp.sin(safe), jnp.cos(safe)
        R = jnp.array([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                       [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                       [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])
        return jnp.where(n < 0.0001, jnp.eye(3), R)

    def objective(theta, *, base_relatives, inverse_base_absolutes, base_positions, weights, points,
                  correspondences):
        pose = jnp.zeros((25, 3)).at[0].set(theta[0:3]).at[1].set(1.0).at[2].set(theta[3:6])
        k, row = 6, 5
        for finger in range(5):
            for joint in range(3):
                pose = pose.at[row, 0].set(theta[k])
                k += 1
                if joint == 0:
                    pose = pose.at[row, 1].set(theta[k])
                    k += 1
                row += 1
            row += 1
        absolutes = []
        for i, parent in enumerate(PARENTS):
            posed = jnp.eye(4).at[:3, :3].set(euler(pose[3 + i, 0], pose[3 + i, 2], pose[3 + i, 1]))
            relative = base_relatives[i] @ posed
            absolutes.append(relative if parent == -1 else absolutes[parent] @ relative)
        transforms = jnp.stack(absolutes) @ inverse_base_absolutes
        positions = jnp.einsum("bij,vj->vbi", transforms, base_positions)
        skinned = jnp.sum(positions * weights[:, :, None], axis=1)[:, :3]
        vertices = skinned @ (angle_axis(pose[0]) * pose[1]).T + pose[2]
        return jnp.sum((points - vertices[correspondences]) ** 2)
    return objective


def torch_objective(theta, *, base_relatives, inverse_base_absolutes, base_positions, weights, points,
                    correspondences):
    import torch  # start-up: benchmark-only extra

    def euler(tx, ty, tz):
        one, zero = torch.ones((), dtype=torch.float64), torch.zeros((), dtype=torch.float64)
        Rx = torch.stack([torch.stack([one, zero, zero]), torch.stack([zero, torch.cos(tx), -torch.sin(tx)]),
                          torch.stack([zero, torch.sin(tx), torch.cos(tx)])])
        Ry = torch.stack([torch.stack([torch.cos(ty), zero, -torch.sin(ty)]), torch.stack([zero, one, zero]),
                          torch.stack([torch.sin(ty), zero, torch.cos(ty)])])
        Rz = torch.stack([torch.stack([torch.cos(tz), -torch.sin(tz), zero]),
                          torch.stack([torch.sin(tz), torch.cos(tz), zero]), torch.stack([zero, zero, one])])
        return Rz @ Ry @ Rx

    def angle_axis(v):
        n = torch.sqrt(torch.sum(v**2))
        if n < 0.0001:
            return torch.eye(3, dtype=torch.float64)
        x, y, z = v[0] / n, v[1] / n, v[2] / n
        s, c = torch.sin(n), torch.cos(n)
        return torch.stack([torch.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s]),
                            torch.stack([x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s]),
                            torch.stack([x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c])])

    pose = torch.zeros((25, 3), dtype=torch.float64)
    pose[0] = theta[0:3]
    pose[1] = 1.0
    pose[2] = theta[3:6]
    k, row = 6, 5
    for finger in range(5):
        for joint in range(3):
            pose[row, 0] = theta[k]
            k += 1
            if joint == 0:
                pose[row, 1] = theta[k]
                k += 1
            row += 1
        row += 1
    absolutes = []
    for i in range(22):
        posed = torch.eye(4, dtype=torch.float64)
        posed[:3, :3] = euler(pose[3 + i, 0], pose[3 + i, 2], pose[3 + i, 1])
        relative = base_relatives[i] @ posed
        absolutes.append(relative if PARENTS[i] == -1 else absolutes[PARENTS[i]] @ relative)
    transforms = torch.stack(absolutes) @ inverse_base_absolutes
    positions = torch.einsum("bij,vj->vbi", transforms, base_positions)
    skinned = torch.sum(positions * weights[:, :, None], dim=1)[:, :3]
    R = angle_axis(pose[0]) * pose[1]
    vertices = skinned @ R.T + pose[2]
    return torch.sum((points - vertices[correspondences]) ** 2)
