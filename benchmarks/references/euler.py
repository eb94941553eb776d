"""Fit the growth model x' = a*x - b*x**3 to a target level: 200 explicit Euler steps, the
time-integrated squared distance to TARGET."""

N_STEPS = 200
DT = 0.02
TARGET = 1.2


def loss(a, b, x0):
    x = x0
    total = 0.0
    for step in range(N_STEPS):
        x = x + DT * (a * x - b * x**3)
        total += DT * (x - TARGET) ** 2
    return total
