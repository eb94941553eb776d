"""Corpus: helpers that return a tuple, unpacked at the call (`a, b = helper(...)`).

The tuple helpers themselves are not differentiated (they do not return one number); the
functions that call them are.
"""

import math


def polar_parts(r, t):
    return r * math.cos(t), r * math.sin(t)


def sum_and_product(p, q):
    s = p + q
    return s, p * q


def from_polar(r=1.3, t=0.4):
    x, y = polar_parts(r, t)
    return x * x + 3.0 * y


def reuses_names(p=0.7, q=-0.4):
    p, q = sum_and_product(p, q)
    p, q = sum_and_product(q, math.tanh(p))
    return p - 2.0 * q


def swapped_through_helper(a=0.3, b=1.1):
    b, a = polar_parts(a, b)
    return a * b + math.exp(a)


def in_a_loop(a=0.5, b=0.2):
    for i in range(3):
        a, b = sum_and_product(math.sin(a), b * 0.5)
    return a + b
