"""Corpus: programs the fuzzer (tests/fuzz.py) found failing, shrunk, now fixed."""

import numpy as np


def negated_clip(a=0.4):
    # the rule's mask times a gradient of -1 was emitted as `-np.logical_and(...)`: an
    # error on NumPy bools (and a bare mask would be a bool gradient)
    v = np.clip(a, 0.0, 1.0)
    return -v


def clip_through(a=0.4, b=0.3):
    return np.clip(a, 0.0, 1.0) + b * np.clip(b, -1.0, 2.0)
