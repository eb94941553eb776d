"""The Rosenbrock function of n variables, the textbook vectorised one-liner."""

import numpy as np


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
