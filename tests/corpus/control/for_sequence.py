"""Corpus: `for` over module-level tuples and lists of numbers."""

import math

COEFFS = (1.0, -0.5, 0.25, -0.125)
WEIGHTS = [0.2, 0.3, 0.5]
NODES = (0.1, 0.4, 0.9)


def horner(x=0.3):
    s = 0.0
    for c in COEFFS:
        s = s * x + c
    return s


def weighted_exponentials(x=0.5):
    s = 0.0
    for w in WEIGHTS:
        s += w * math.exp(w * x)
    return s


def least_squares(a=0.8, b=0.1):
    loss = 0.0
    for t in NODES:
        r = a * t + b - math.sin(t)
        loss += r * r
    return loss


def branch_on_element(x=0.7):
    s = 0.0
    for c in COEFFS:
        if c > 0.0:
            s += c * x
        else:
            s -= c * x * x
    return s


def sequence_in_sequence(x=0.4, y=0.9):
    s = 0.0
    for w in WEIGHTS:
        for t in NODES:
            s += w * math.tanh(x * t + y * w)
    return s
