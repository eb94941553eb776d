"""Fit the growth model x' = a*x - b*x**3 to a target level.

The ODE is integrated by 200 explicit Euler steps; the loss is the time-integrated squared
distance to TARGET. Reverse mode runs the 200 steps backwards and keeps one float per step
(the x each step overwrites).
"""

N_STEPS = 200
DT = 0.02
TARGET = 1.2


def loss(a=1.5, b=0.7, x0=0.2):
    x = x0
    total = 0.0
    for step in range(N_STEPS):
        x = x + DT * (a * x - b * x**3)
        total += DT * (x - TARGET) ** 2
    return total
