"""The Rosenbrock function in n dimensions: a valley whose floor is hard to follow.

    gradgen compile examples/rosenbrock.py --emit grad,jvp,hvp,hessian

examples/forward_vs_reverse.py times its gradient both ways: n forward-mode passes (one per
unit direction) against one reverse pass.
"""

import numpy as np


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
