"""Corpus: one value used many times (the gradient is the sum over paths)."""

import math

import numpy as np


def many_uses(x=0.5):
    return x * x * x + x / (1.0 + x) + math.sin(x) * x


def shared_activation(x=0.4):
    h = np.tanh(x)
    return h + h * h + h * h * h


def diamond(x=0.3, y=0.7):
    a = math.exp(x)
    b = a * y
    c = a + y
    return b * c


def ten_times(x=0.9):
    return x + x + x + x + x + x + x + x + x + x


def reused_intermediate(w=0.6, x=0.8):
    z = w * x
    e = math.exp(-z)
    return e * z + e / (1.0 + z) + z
