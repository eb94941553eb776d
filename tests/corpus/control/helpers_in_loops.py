"""Corpus: same-file helpers called inside loops; the helpers contain control flow."""

import math


def relu(t=0.3):
    if t > 0.0:
        return t
    return 0.0


def soft_clip(t=0.4):
    if t > 1.0:
        return 1.0 + math.log(t)
    elif t < -1.0:
        return -1.0 - math.log(-t)
    return t


def euler_step(x=1.0, a=0.5, dt=0.05):
    return x + dt * (a * x - x**3)


def power(t=0.8, n=3):
    p = 1.0
    for i in range(n):
        p = p * t
    return p


def shrink(t=2.7):
    while t > 1.0:
        t = t * 0.5
    return t


def sum_of_relus(x=0.35):
    s = 0.0
    for i in range(8):
        s += relu(x - 0.1 * i)
    return s


def clipped_iteration(x=0.6, y=0.4):
    z = x
    for i in range(6):
        z = soft_clip(z * 1.8 + y)
    return z


def euler_with_helper(a=0.5, x0=1.0):
    x = x0
    for i in range(40):
        x = euler_step(x, a, 0.05)
    return x


def helper_with_loop_in_loop(x=0.8):
    s = 0.0
    for i in range(1, 5):
        s += power(x, i) / i
    return s


def helper_with_while_in_loop(x=0.9):
    s = 0.0
    for i in range(5):
        s += shrink(x * (i + 1))
    return s


def helper_branch_and_break(x=0.3):
    s = 0.0
    for i in range(20):
        s += relu(math.sin(x * i))
        if s > 1.5:
            break
    return s
