"""Corpus: the power operator with constant, variable and negative exponents."""


def square(x=0.6):
    return x**2


def cube_root(x=0.5):
    return x ** (1.0 / 3.0)


def variable_exponent(x=0.5, y=0.7):
    return x**y


def constant_base(x=0.4):
    return 2.0**x


def negative_powers(x=0.8):
    inverse_square = x**-2
    inverse_sqrt = x**-0.5
    return inverse_square + inverse_sqrt


def power_of_sum(x=0.3, y=0.4):
    s = x + y
    return s**3


def sqrt_as_power(x=0.9):
    return x**0.5


def power_tower(x=0.6, y=0.8):
    t = (x**2) ** y
    return t
