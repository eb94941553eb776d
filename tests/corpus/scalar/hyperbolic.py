"""Corpus: sinh, cosh, tanh."""

import math

import numpy as np


def math_sinh_cosh(x=0.4, y=0.6):
    return math.sinh(x) + math.cosh(y)


def tanh_unit(w=0.5, x=0.8, b=0.3):
    return math.tanh(w * x + b)


def hyperbolic_identity(x=0.7):
    one = np.cosh(x) ** 2 - np.sinh(x) ** 2
    return one


def gelu_tanh(x=0.6):
    inner = 0.7978845608028654 * (x + 0.044715 * x**3)
    return 0.5 * x * (1.0 + np.tanh(inner))


def numpy_tanh_squash(x=0.9, y=0.2):
    return np.tanh(x) * np.tanh(y) + np.sinh(x * y)
