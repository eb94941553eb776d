"""Corpus: `return` inside branches, several returns in one function."""

import math


def clipped_smooth(x=0.4):
    if x > 1.0:
        return 1.0
    if x < -1.0:
        return -1.0
    return x * (1.5 - 0.5 * x * x)


def guard_then_compute(x=0.6, y=0.2):
    if y > x:
        return y * y
    d = x - y
    return math.log(d) * x


def many_returns(x=0.3, y=0.5):
    s = x + y
    if s > 1.0:
        if x > y:
            return s * x
        return s * y
    elif s > 0.0:
        return math.exp(s) * x
    else:
        t = s * s
        return t + x


def return_in_else(x=0.9, y=0.4):
    a = x * y
    if a < 0.2:
        b = a + 1.0
    else:
        return math.tanh(a) * y
    return b * b


def return_after_loop(x=0.3, n=4):
    if x > 1.0:
        return x * x
    p = x
    for i in range(n):
        p = p * x + 0.1
    if p > 0.5:
        return p - 0.5
    return p * 2.0


def return_on_computed_value(x=0.7, y=0.2):
    h = math.sin(x) - y
    if h > 0.3:
        return h * x
    g = h * h
    if g > 0.01:
        return g * y
    return g + x
