"""Corpus: programs the fuzzer (tests/fuzz.py) found failing, shrunk, now fixed."""

import numpy as np


def negated_clip(a=0.4):
    # the rule's mask times a gradient of -1 was emitted as `-np.logical_and(...)`: an
    # error on NumPy bools (and a bare mask would be a bool gradient)
    v = np.clip(a, 0.0, 1.0)
    return -v


def clip_through(a=0.4, b=0.3):
    return np.clip(a, 0.0, 1.0) + b * np.clip(b, -1.0, 2.0)


def where_then_updated_in_a_loop(a=-1.1775130937609743, c=0.39721163346518473):
    # np.where of numbers is a 0-d array: `b += ...` in place changed the value already
    # pushed on the stack for the backward sweep (every saved b was the final one)
    b = np.where(3 <= c, a, a * c)
    for i in range(2):
        b += np.cos(b)
    return b


def float_parameter_copied_then_updated(a: float = -0.6534040818505419, b: float = -0.8103594269548661):
    # a is a number on entry (annotated float), only later an np.where 0-d array: the copy u
    # shares nothing, and `u -= 2.0` was refused as if it did
    u = a
    t = 0.25
    u -= 2.0
    if t >= t or t >= t:
        a = np.where(2 >= a + u <= +u, u, a)
    return t + a * u + b


def number_conditional_copied_then_updated(a: float = 0.3, b: float = 0.4):
    # `3.0 if ... else b + b` is a number, not an array, though v is an np.where array on
    # another path: `v -= ...` with the copy s read after was refused
    if b > 0.0:
        v = 3.0 if a > a + b else b + b
        for i in range(2):
            s = 1.25 if v > v + 0.1 else v
            v -= 0.5 * np.tanh(v + s)
            s += s
    else:
        v = np.where(a > 0.0, a, b)
    return v
