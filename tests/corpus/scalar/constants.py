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
