"""Corpus: inlined helpers that rebind their own parameters or reuse the caller's names,
called inside loops and branches. A helper's variables are its own: inlining must never
overwrite the caller's (issue: `s = s + helper(a, x)` in a loop gave 78 instead of 18)."""

import math


def scaled(a=2.0, x=3.0):
    a = a * x
    return a


def sum_of_scaled(a=2.0, x=3.0):
    s = 0.0
    for i in range(3):
        s = s + scaled(a, x)
    return s


def decay(a=0.7, n=3):
    for k in range(n):
        a = a * 0.9 + 0.1
    if a > 0.5:
        a = a * 2.0
    return a


def decays_in_loop(a=0.7, b=1.3):
    t = 0.0
    for j in range(2):
        t = t + decay(a, 3) * b + decay(1.5, 2)
    return t * a


def bump(h=0.4, s=0.2):
    h += s
    h = math.tanh(h)
    return h


def same_names_in_branch(h=0.3, s=0.5):
    total = 0.0
    for i in range(3):
        if h > 0.0:
            total = total + bump(h, s) * h
        else:
            total = total - bump(s, h)
    return total + h + s


def outer_rebinds(a=0.6, x=1.1):
    a = scaled(a, x) + a
    for i in range(2):
        a = a * 0.5
    return a


def nested_rebinding(a=0.6, x=1.1):
    y = 0.0
    k = 0
    while k < 3:
        y = y + outer_rebinds(a, x) * a
        k = k + 1
    return y


def swap_scale(r=1.2, t=0.4):
    r = r * 2.0
    t = t + r
    return r * math.cos(t), r * math.sin(t)


def tuple_helper_in_loop(r=1.2, t=0.4):
    acc = 0.0
    for i in range(2):
        u, v = swap_scale(r, t)
        acc = acc + u * v + r * t
    return acc
