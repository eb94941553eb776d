"""The seed lesson's network with all eight numbers as parameters: weights, biases, the two
inputs and the target. The sigmoid is written inline, as the lesson writes it on the board,
and the file imports NumPy as the lesson's notebook does (so nothing says a parameter is a
number but the code itself).
"""

import math

import numpy as np  # noqa: F401  (the notebook's import; the network itself is scalar)


def loss(w1, w2, b1, w3, b2, x1, x2, y):
    z1 = w1 * x1 + w2 * x2 + b1
    h = 1.0 / (1.0 + math.exp(-z1))
    yhat = w3 * h + b2
    return (yhat - y) ** 2
