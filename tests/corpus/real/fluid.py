"""Finite-difference simulations fitted by gradient descent: an explicit heat-equation
step written into a copy with a slice, a viscous Burgers step written cell by cell with
integer index arithmetic, and a semi-Lagrangian advection step (as in autograd's fluidsim
example) that finds the cells to interpolate with np.floor(...).astype(int)."""

import numpy as np


def heat_step(u, alpha, dx, dt):
    u_new = u.copy()
    u_new[1:-1] = u[1:-1] + alpha * dt / dx**2 * (u[2:] - 2 * u[1:-1] + u[:-2])
    u_new[0] = 0.0
    u_new[-1] = 0.0
    return u_new


def heat_loss(u0, log_alpha, target, num_steps=5, dx=0.1, dt=0.002):
    alpha = np.exp(log_alpha)
    u = u0
    for step in range(num_steps):
        u = heat_step(u, alpha, dx, dt)
    return np.sum((u - target) ** 2)


def inputs_heat_loss():
    rs = np.random.RandomState(0)
    x = np.linspace(0, 1, 8)
    return {
        "u0": np.sin(np.pi * x) + 0.1 * rs.randn(8),
        "log_alpha": np.log(0.5),
        "target": 0.8 * np.sin(np.pi * x),
        "num_steps": 5,
        "dx": 0.1,
        "dt": 0.002,
    }


def burgers_step(u, nu, dx, dt):
    n = len(u)
    u_new = np.zeros(n)
    for i in range(1, n - 1):
        u_new[i] = (u[i]
                    - dt / dx * u[i] * (u[i] - u[i - 1])
                    + nu * dt / dx**2 * (u[i + 1] - 2 * u[i] + u[i - 1]))
    u_new[0] = u_new[n - 2]   # periodic boundary
    u_new[n - 1] = u_new[1]
    return u_new


def burgers_loss(u0, nu, observed, num_steps=3, dx=0.2, dt=0.01):
    u = u0
    for _ in range(num_steps):
        u = burgers_step(u, nu, dx, dt)
    return 0.5 * np.mean((u - observed) ** 2)


def inputs_burgers_loss():
    rs = np.random.RandomState(0)
    return {
        "u0": 1.0 + 0.5 * np.sin(np.linspace(0, 2 * np.pi, 7)),
        "nu": 0.1,
        "observed": 1.0 + 0.1 * rs.randn(7),
        "num_steps": 3,
        "dx": 0.2,
        "dt": 0.01,
    }


def advect(f, vx, dt):
    """Move field f according to the velocity field vx (periodic domain), interpolating
    linearly between the two cells each point lands between."""
    n = f.shape[0]
    cell_xs = np.arange(n)
    center_xs = cell_xs - vx * dt
    left_ix = np.floor(center_xs).astype(int)
    right_ix = left_ix + 1
    right_weight = center_xs - left_ix
    left_ix = np.mod(left_ix, n)
    right_ix = np.mod(right_ix, n)
    return (1 - right_weight) * f[left_ix] + right_weight * f[right_ix]


def simulate_advection(vx, f0, num_steps, dt=0.3):
    f = f0
    for t in range(num_steps):
        f = advect(f, vx, dt)
        f = f + 0.05 * (np.roll(f, 1) - 2 * f + np.roll(f, -1))   # a little diffusion
    return f


def advection_loss(vx, f0, target, num_steps=4):
    final = simulate_advection(vx, f0, num_steps)
    return np.sum((final - target) ** 2)


def inputs_advection_loss():
    rs = np.random.RandomState(0)
    n = 8
    return {
        "vx": 1.3 + 0.2 * rs.rand(n),          # no cell lands exactly on a grid point
        "f0": np.exp(-0.5 * (np.arange(n) - 3.0) ** 2),
        "target": np.exp(-0.5 * (np.arange(n) - 5.0) ** 2),
        "num_steps": 4,
    }
