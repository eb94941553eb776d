"""Corpus: module-level constants, an integer parameter as exponent, an unused parameter."""

import math

SCALE = 2.5
OFFSET = -1.0
N_DIM = 3
RATE = 0.1


def uses_constants(w=0.4):
    return SCALE * w + OFFSET


def integer_constant_exponent(x=0.6):
    return x**N_DIM + RATE * x


def power_int_param(x=0.7, n=3):
    return x**n


def binomial_term(x=0.4, n=4):
    return (1.0 + x) ** n / n


def unused_parameter(x=0.4, unused=0.9):
    return x * x


def constant_heavy(x=0.5, y=0.6):
    r = RATE * math.exp(SCALE * x) - OFFSET * y**N_DIM
    return r


def circle_area(r=0.5):
    return math.pi * r**2


# Module constants written the usual ways, folded at compile time without running the file
# (each carried into the generated module as the exact float Python computes).
import numpy as np

x1, x2 = 1.0, 2.0
LOG_2PI = math.log(2 * math.pi)
SQRT2 = np.sqrt(2.0)
HALF_LOG_2PI = 0.5 * LOG_2PI
COMBINED = SQRT2 * HALF_LOG_2PI - math.exp(-x2) + abs(OFFSET)
TURN = math.tau


def gaussian_log_density(x=0.3, mu=0.1, log_sigma=-0.2):
    z = (x - mu) / math.exp(log_sigma)
    return -0.5 * z * z - log_sigma - HALF_LOG_2PI


def folded_constants(w=0.7):
    return w * x1 + x2 * w * w + COMBINED * math.sin(TURN * w) + np.pi * w + np.e


def named_numbers(w=0.4):
    return min(w, math.inf) * math.tau + max(w, -np.inf)
