"""Corpus: the arithmetic operators + - * / and unary - and +."""


def add_sub(x=0.3, y=0.7):
    return x + y - 2.0 * x


def mul_div(x=0.4, y=0.8):
    harmonic = x * y / (x + y)
    return harmonic


def unary_ops(x=0.5, y=0.6):
    z = -x + (+y) * -(x - y)
    return z


def quadratic_poly(x=0.7):
    p = 3.0 * x * x - 2.0 * x + 1.0
    return p


def rational(x=0.6, y=0.9):
    r = (x - y) / (1.0 + x * y)
    return r


def squared_error_one_sample(w=0.5, b=0.3):
    prediction = w * 1.5 + b
    residual = prediction - 0.8
    loss = residual * residual
    return loss


def nested_affine(a=0.3, b=0.6, c=0.9):
    u = a * b + c
    v = (u - a) / (b + c)
    return u * v - c / a
