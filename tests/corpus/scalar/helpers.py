"""Corpus: same-file helpers, a helper calling a helper, defaults and keyword calls."""

import math


def square(t=0.5):
    return t * t


def norm_squared(a=0.3, b=0.4):
    return square(a) + square(b)


def norm(a=0.6, b=0.8):
    return math.sqrt(norm_squared(a, b))


def scaled(t=0.7, k=2.0):
    return k * t


def scaled_defaults_and_keywords(x=0.4):
    return scaled(x) + scaled(x, k=3.0) + scaled(x, 0.5) + scaled(k=x, t=x)


def affine(t=0.2, w=0.9, b=0.1):
    return w * t + b


def two_layer(x=0.5, w1=0.3, w2=0.8):
    h = math.tanh(affine(x, w1))
    out = affine(t=h, w=w2, b=-0.2)
    return out


def multi_statement_softplus(t=0.3):
    e = math.exp(t)
    s = math.log(1.0 + e)
    return s


def helper_fanout(x=0.6, y=0.9):
    return multi_statement_softplus(x * y) * multi_statement_softplus(x - y)
