"""Corpus: exp, log and sqrt from math and NumPy."""

import math

import numpy as np

LOG_2PI = 1.8378770664093453


def softplus(x=0.3):
    return math.log(1.0 + math.exp(x))


def exp_times_log(x=0.4, y=0.7):
    return math.exp(x) * math.log(y)


def euclidean_norm(x=0.3, y=0.4):
    n = math.sqrt(x * x + y * y)
    return n


def log_sum_exp(a=0.2, b=0.9):
    return np.log(np.exp(a) + np.exp(b))


def gaussian_log_likelihood(x=0.4, mu=0.6, sigma=0.7):
    z = (x - mu) / sigma
    ll = -np.log(sigma) - 0.5 * LOG_2PI - 0.5 * z**2
    return ll


def numpy_sqrt_exp(x=0.5):
    return np.sqrt(x) * np.exp(-x)


def entropy_term(p=0.3):
    h = -p * math.log(p) - (1.0 - p) * math.log(1.0 - p)
    return h
