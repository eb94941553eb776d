"""An exponential decay y = a * exp(-k * t) + c, fitted by least squares.

    gradgen compile examples/decay_model.py --emit grad,hessian

writes loss_grad and loss_hessian: the gradient and the 3 x 3 Hessian scipy's Newton
methods take (examples/newton_fit.py gets them from gradgen.hessian(loss)).
"""

import numpy as np


def loss(a, k, c, *, t, y):
    prediction = a * np.exp(-k * t) + c
    residual = prediction - y
    return 0.5 * np.sum(residual**2)
