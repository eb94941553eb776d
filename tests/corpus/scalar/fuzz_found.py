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
