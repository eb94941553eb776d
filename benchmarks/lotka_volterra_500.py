"""Fitting the Lotka-Volterra predator-prey model, integrated by 500 fourth-order
Runge-Kutta steps, to observed populations (benchmarks/check_pace.py checks this file).

Scalar throughout: the two populations are numbers, the vector field a helper returning a
pair, and the observations a closed form in time, so sympy's trace follows every one of
the 500 steps (4 field evaluations each).
"""

import math

N_STEPS = 500
DT = 0.01


def field(prey, predator, alpha, beta, delta, gamma):
    return alpha * prey - beta * prey * predator, delta * prey * predator - gamma * predator


def loss(alpha=1.1, beta=0.4, delta=0.1, gamma=0.4, prey0=1.0, predator0=0.5):
    prey, predator = prey0, predator0
    total = 0.0
    for step in range(N_STEPS):
        t = step * DT
        k1x, k1y = field(prey, predator, alpha, beta, delta, gamma)
        k2x, k2y = field(prey + DT / 2 * k1x, predator + DT / 2 * k1y, alpha, beta, delta, gamma)
        k3x, k3y = field(prey + DT / 2 * k2x, predator + DT / 2 * k2y, alpha, beta, delta, gamma)
        k4x, k4y = field(prey + DT * k3x, predator + DT * k3y, alpha, beta, delta, gamma)
        prey = prey + DT / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        predator = predator + DT / 6 * (k1y + 2 * k2y + 2 * k3y + k4y)
        observed_prey = 1.0 + 0.2 * math.sin(t)
        observed_predator = 0.5 + 0.1 * math.cos(t)
        total += (math.log(prey) - math.log(observed_prey)) ** 2 + (math.log(predator) - math.log(observed_predator)) ** 2
    return total / N_STEPS
