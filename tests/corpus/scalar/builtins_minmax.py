"""Corpus: the builtins abs, min, max (two and three arguments)."""

import math

DELTA = 0.5


def absolute_difference(x=0.3, y=0.8):
    return abs(x - y)


def huber(prediction=0.9, target=0.2):
    a = abs(prediction - target)
    quadratic = min(a, DELTA)
    linear = a - quadratic
    return 0.5 * quadratic**2 + DELTA * linear


def relu(x=0.4):
    return max(x, 0.0)


def clamp(x=0.6):
    return min(max(x, 0.2), 0.8)


def max_of_three(x=0.3, y=0.7, z=0.5):
    return max(x, y, z)


def min_of_three(x=0.4, y=0.3, z=0.9):
    return min(x, 2.0 * y, z + 0.1)


def stable_log_sum_exp(a=0.2, b=0.7):
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def hinge_loss(w=0.3, x=0.8):
    score = w * x
    return max(0.0, 1.0 - 1.0 * score)
