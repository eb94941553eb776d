"""Corpus: if/elif/else on parameters, on computed values and on constants; nesting;
variables assigned in only some branches; boolean combinations of conditions."""

import math

MODE = 1
SCALE = 2.5
THRESHOLD = 0.5


def sign_split(x=0.7):
    if x > 0.0:
        y = x * x
    else:
        y = -3.0 * x
    return y


def three_way(x=0.2, y=0.9):
    if x > 1.0:
        z = math.exp(x) * y
    elif x > 0.0:
        z = math.sin(x) * y * y
    else:
        z = x * y - 1.0
    return z


def active_condition(x=0.4, w=1.3):
    h = w * x - 0.2
    if h > 0.0:
        out = h * h + x
    else:
        out = 0.1 * h
    return out


def constant_condition(x=0.6):
    if MODE == 1:
        y = x**3
    else:
        y = x
    if SCALE > 2.0:
        y = y * SCALE
    return y


def assigned_in_one_branch(x=0.8, y=0.3):
    t = y
    if x > THRESHOLD:
        t = x * y
        u = math.log(t + 1.0)
    else:
        u = 2.0 * y
    return t * u


def only_if_no_else(x=0.8, y=0.3):
    z = x + y
    if x > y:
        z = z * x
    return z * y


def nested_three_deep(x=0.3, y=0.6, z=0.9):
    if x > 0.0:
        if y > 0.5:
            if z > 1.0:
                r = x * y * z
            else:
                r = x + y * z
        else:
            r = x * x - y
    else:
        if z > 0.0:
            r = z * math.cos(x)
        else:
            r = 1.0 + x
    return r


def boolean_combination(x=0.4, y=0.7):
    if x > 0.0 and y > 0.5:
        r = x * y
    elif x < 0.0 or y < -1.0:
        r = x - y
    else:
        r = x + 2.0 * y
    return r


def chained_comparison(x=0.3):
    if 0.0 < x < 1.0:
        r = x * (1.0 - x)
    else:
        r = 0.5 * x
    return r


def sequential_branches(x=0.6, y=1.2):
    a = x * y
    if a > 0.5:
        a = math.sqrt(a)
    b = a * x
    if not b >= 0.4:
        b = b + y
    return a + b


def piecewise_cubic(x=1.7):
    if x < -1.0:
        y = -x
    elif x < 0.0:
        y = x * x * (1.0 + x) + 1.0
    elif x < 1.0:
        y = 1.0 + x * x
    elif x < 2.0:
        y = 2.0 * x
    else:
        y = x * x - 2.0 * x + 4.0
    return y
