"""Corpus: `while` loops whose condition depends on active values."""

import math


def halve_until_small(x=5.3):
    while x >= 1.0:
        x = x / 2.0
    return x


def halve_and_count(x=5.3):
    k = 0.0
    while x >= 1.0:
        x = x / 2.0
        k += 1.0
    return x * (1.0 + k)


def accumulate_to_target(x=0.5):
    s = 0.0
    t = 0.0
    while s < 2.0:
        s += x * x + 0.1
        t += math.sin(s) * x
    return t + s


def square_until_large(x=0.3):
    y = x
    while y < 4.0:
        y = y * y + 1.0
    return y


def counted_while(x=0.6, n=7):
    i = 0
    s = 0.0
    while i < n:
        s = s * x + 1.0
        i += 1
    return s


def compound_condition(x=0.9):
    y = x
    k = 0
    while abs(y) > 0.05 and k < 30:
        y = math.sin(y) * 0.8
        k += 1
    return y


def never_runs(x=0.2):
    y = x * 3.0
    while y > 10.0:
        y = y - 1.0
    return y * x


def newton_cube_root(a=2.0):
    target = 1.0 + a * a
    y = target
    k = 0
    while abs(y * y * y - target) > 1e-9 * target and k < 50:
        y = y - (y * y * y - target) / (3.0 * y * y)
        k += 1
    return y
