"""Control flow that gradgen replays in reverse: if/elif/else, a while loop, a break."""

import math


def huber(prediction=2.5, target=1.0, delta=1.0):
    """Huber loss: quadratic near the target, linear far from it, on either side."""
    r = prediction - target
    if r > delta:
        loss = delta * (r - 0.5 * delta)
    elif r < -delta:
        loss = -delta * (r + 0.5 * delta)
    else:
        loss = 0.5 * r**2
    return loss


def doubling(rate=0.3, principal=1.0):
    """Compound interest until the balance passes 10: the trip count depends on the rate."""
    balance = principal
    years = 0.0
    while balance < 10.0:
        balance = balance * (1 + rate)
        years += 1.0
    return balance / years


def settle(k=0.8, x0=3.0):
    """Damped iteration that stops early once the step is small."""
    x = x0
    for i in range(100):
        step = k * math.sin(x)
        x = x - step
        if abs(step) < 1e-3:
            break
    return x * x
