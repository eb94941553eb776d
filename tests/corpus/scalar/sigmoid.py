"""Corpus: the logistic sigmoid, written as a same-file helper (np.exp and math.exp)."""

import math

import numpy as np

x1 = 1.0
x2 = 2.0
y = 0.0
LABEL = 1.0


def sigmoid(x=0.3):
    return 1 / (1 + np.exp(-x))


def logistic(t=0.4):
    return 1.0 / (1.0 + math.exp(-t))


def seed_loss(w1=0.5, w2=-0.5, b1=0.5, w3=2.0, b2=0.0):
    z1 = w1 * x1 + w2 * x2 + b1
    h = sigmoid(z1)
    yhat = w3 * h + b2
    L = (yhat - y) ** 2
    return L


def logistic_loss_one_sample(w=0.5, b=0.3):
    z = w * 1.5 + b
    p = sigmoid(z)
    loss = -(LABEL * np.log(p) + (1.0 - LABEL) * np.log(1.0 - p))
    return loss


def math_sigmoid_gate(a=0.6, c=0.2):
    gate = logistic(a)
    return gate * math.tanh(c)


def sigmoid_of_sigmoid(x=0.7):
    return sigmoid(sigmoid(x))
