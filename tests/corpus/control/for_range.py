"""Corpus: `for` over range(...) with one, two or three arguments; bounds from parameters,
constants and computed integers; accumulators and overwritten values."""

import math

N_STEPS = 10
START = 2


def power_by_loop(x=0.7, n=5):
    p = 1.0
    for i in range(n):
        p = p * x
    return p


def sum_of_powers(x=0.6, n=6):
    s = 0.0
    for i in range(n):
        s += x**i
    return s


def range_two_args(x=0.4, lo=2, hi=7):
    s = 0.0
    for i in range(lo, hi):
        s += math.sin(x * i) / i
    return s


def range_three_args(x=0.3, n=11):
    s = 1.0
    for k in range(1, n, 3):
        s = s * (1.0 + x / k)
    return s


def range_negative_step(x=0.5):
    s = 0.0
    for k in range(8, 0, -2):
        s = s * x + k
    return s


def range_constant_bounds(x=0.9):
    s = 0.0
    for i in range(START, N_STEPS):
        s += math.exp(-x * i)
    return s


def range_computed_bound(x=0.5, n=3):
    m = 2 * n + 1
    s = x
    for i in range(m):
        s = 0.5 * s + x * 0.1
    for j in range(n // 2, m - 1, 2):
        s *= x
    return s


def range_inline_computed_bound(x=0.4, n=3):
    s = 0.0
    for i in range(2 * n - 1):
        s = s * x + 1.0
    return s


def range_bounds_from_constants(x=0.6):
    s = 0.0
    for i in range(N_STEPS // 2, 2 * N_STEPS - 5, START):
        s += x / i
        s *= x
    return s


def empty_range(x=0.5, n=5):
    y = x * x
    for i in range(n, 3):
        y = y * 10.0
    return y


def index_in_expression(x=0.2):
    s = 0.0
    for i in range(1, 9):
        s += math.cos(i * x) / (i * i)
    return s


def two_accumulators(x=0.3, y=0.8):
    s = 0.0
    p = 1.0
    for i in range(6):
        s += x * p
        p *= y
    return s * p


def overwritten_every_iteration(x=0.3):
    y = 0.0
    for i in range(7):
        y = math.sin(x + 0.1 * i)
    return y * x


def augmented_operators(x=0.8, y=0.6):
    a = x
    for i in range(4):
        a += y
        a *= x
        a -= 0.1
        a /= 1.0 + y
    return a
