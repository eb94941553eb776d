"""Corpus: reassignment, augmented assignment, tuple unpacking, conditional expressions."""

import math

THRESHOLD = 0.5
USE_SQUARE = 1


def reassign_many(x=0.7):
    y = x
    y = y * 2.0
    y = y + x
    y = y * y
    y = y - x
    y = y / (1.0 + x)
    return y


def augmented(x=0.6, y=0.8):
    z = x
    z += y
    z -= 0.5 * x
    z *= y
    z /= 1.0 + x
    z **= 2
    return z


def augmented_parameter(x=0.3, y=0.5):
    x += y
    x *= x
    x **= 1.5
    return x


def tuple_unpack(x=0.4, y=0.9):
    a, b = x * y, x + y
    return a / b


def swap(x=0.3, y=0.7):
    a, b = x, y
    a, b = b, a
    return a - 2.0 * b


def swap_chain(x=0.5, y=0.6):
    a, b = x, y
    a, b = b, a * b
    a, b = a + b, a
    return a * b


def conditional_active(x=0.8, y=0.6):
    m = x if x > y else y
    return m * m


def conditional_constant_values(x=0.7):
    s = 2.0 if x > THRESHOLD else 3.0
    return s * x


def conditional_on_constant(x=0.4):
    power = x * x if USE_SQUARE > 0 else x
    return power + math.sin(x)


def conditional_inline(x=0.3, y=0.9):
    return (x * y if x < y else x + y) + 1.0
