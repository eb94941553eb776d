"""Corpus: erf, hypot, atan2, log with a base, log2, log10, log1p, expm1, fabs, pow."""

import math

import numpy as np


def normal_cdf(x=0.4):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def polar_radius(x=0.3, y=0.4):
    return math.hypot(x, y)


def polar_angle(x=0.6, y=0.5):
    return math.atan2(y, x)


def polar_norm_angle(x=0.7, y=0.2):
    r = np.hypot(x, y)
    theta = np.arctan2(y, x)
    return r * theta


def log_base_two(x=0.6):
    return math.log(x, 2)


def log_variable_base(x=0.7, b=3.0):
    return math.log(x, b)


def log2_log10(x=0.5, y=0.8):
    return math.log2(x) + math.log10(y)


def numpy_log2_log10(x=0.3, y=0.9):
    return np.log2(x) * np.log10(y)


def log1p_expm1(x=0.4):
    return math.log1p(x) + math.expm1(x)


def numpy_log1p_expm1(x=0.3, y=0.6):
    return np.log1p(x * y) - np.expm1(-y)


def fabs_of_difference(x=0.3, y=0.8):
    return math.fabs(x - y) + np.fabs(x * y)


def math_pow(x=0.5, y=0.7):
    return math.pow(x, y) + math.pow(y, 2)
