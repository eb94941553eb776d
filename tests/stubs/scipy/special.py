"""`scipy.special.expit`, written from its definition (the logistic sigmoid)."""

import numpy as np


def expit(x):
    return 1 / (1 + np.exp(-x))
