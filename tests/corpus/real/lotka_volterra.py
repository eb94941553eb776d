"""Fitting the Lotka-Volterra predator-prey model to observed populations: a hand-written
fourth-order Runge-Kutta integrator that takes the vector field as an argument, the
trajectory collected in a list over zip(ts[:-1], ts[1:]), the state unpacked as a tuple."""

import numpy as np


def lotka_volterra(state, t, params):
    prey, predator = state
    alpha, beta, delta, gamma = params
    dprey = alpha * prey - beta * prey * predator
    dpredator = delta * prey * predator - gamma * predator
    return np.array([dprey, dpredator])


def rk4_step(f, y, t, dt, params):
    k1 = f(y, t, params)
    k2 = f(y + dt / 2 * k1, t + dt / 2, params)
    k3 = f(y + dt / 2 * k2, t + dt / 2, params)
    k4 = f(y + dt * k3, t + dt, params)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def odeint_rk4(f, y0, ts, params):
    ys = [y0]
    for t0, t1 in zip(ts[:-1], ts[1:]):
        ys.append(rk4_step(f, ys[-1], t0, t1 - t0, params))
    return np.stack(ys)


def fit_loss(log_params, log_y0, ts, observations):
    params = np.exp(log_params)
    y0 = np.exp(log_y0)
    trajectory = odeint_rk4(lotka_volterra, y0, ts, params)
    return np.mean((np.log(trajectory) - np.log(observations)) ** 2)


def inputs_fit_loss():
    rs = np.random.RandomState(0)
    ts = np.linspace(0.0, 2.0, 6)
    observations = np.exp(0.1 * rs.randn(6, 2)) * np.array([1.0, 0.5])
    return {
        "log_params": np.log(np.array([1.1, 0.4, 0.1, 0.4])),
        "log_y0": np.log(np.array([1.0, 0.5])),
        "ts": ts,
        "observations": observations,
    }


def euler_fit_loss(theta, y0, observations, dt=0.1, steps_per_obs=2):
    """A damped pendulum integrated by forward Euler, compared with every
    `steps_per_obs`-th state; integer arithmetic picks the states to compare."""
    damping, stiffness = theta
    angle, velocity = y0
    states = []
    for step in range(len(observations) * steps_per_obs):
        angle, velocity = angle + dt * velocity, velocity - dt * (damping * velocity + stiffness * np.sin(angle))
        if (step + 1) % steps_per_obs == 0:
            states.append(angle)
    return np.sum((np.array(states) - observations) ** 2)


def inputs_euler_fit_loss():
    rs = np.random.RandomState(0)
    return {
        "theta": np.array([0.3, 2.0]),
        "y0": np.array([1.0, 0.0]),
        "observations": np.cos(np.linspace(0.2, 1.0, 4)) + 0.05 * rs.randn(4),
        "dt": 0.1,
        "steps_per_obs": 2,
    }
