"""The seed lesson's tiny network: one sigmoid neuron, one linear output, squared error.

At the seed point (the defaults) L = 1 and dL/d(w1, w2, b1, w3, b2) = (1, 2, 1, 1, 2).
"""

import numpy as np

x1 = 1.0
x2 = 2.0
y = 0.0


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def loss(w1=0.5, w2=-0.5, b1=0.5, w3=2.0, b2=0.0):
    z1 = w1 * x1 + w2 * x2 + b1
    h = sigmoid(z1)
    yhat = w3 * h + b2
    L = (yhat - y) ** 2
    return L
