"""Corpus: `break` and `continue`, under `if`, in for and while loops, in nested loops."""

import math


def break_at_known_iteration(x=0.5):
    p = 1.0
    for i in range(20):
        if i == 4:
            break
        p = p * x
    return p


def break_on_active_threshold(x=0.45):
    s = 0.0
    for i in range(50):
        s += x * (i + 1)
        if s > 3.0:
            break
    return s


def continue_skips_odd(x=0.7, n=9):
    s = 0.0
    for i in range(n):
        if i % 2 == 1:
            continue
        s += x**i
    return s


def continue_on_active_value(x=0.3):
    s = 0.0
    for i in range(10):
        t = math.sin(x * i + 0.5)
        if t < 0.0:
            continue
        s += t * t
    return s


def while_true_with_break(x=0.8):
    y = x
    k = 0
    while True:
        y = 0.5 * y + 0.3 * math.cos(y)
        k += 1
        if k >= 6:
            break
    return y


def break_and_continue(x=0.6, y=0.2):
    s = y
    for i in range(12):
        if i < 2:
            continue
        s = s * x + y
        if s > 0.9:
            break
    return s


def nested_inner_break(x=0.4, y=0.7):
    s = 0.0
    for i in range(5):
        for j in range(5):
            if j > i:
                break
            s += x**j * y
    return s


def nested_continue_and_break(x=0.5):
    s = 0.0
    for i in range(6):
        if i == 1:
            continue
        for j in range(4):
            if j == 2:
                continue
            s = s + x * (i + j) * 0.1
            if s > 4.0:
                break
        if s > 3.0:
            break
    return s


def while_with_continue(x=0.9):
    k = 0
    s = 0.0
    while k < 10:
        k += 1
        if k % 3 == 0:
            continue
        s += math.sqrt(x + k)
    return s


def while_with_break(x=0.8):
    y = x + 2.0
    s = 0.0
    while y > 0.1:
        y = y * 0.7
        s += y * x
        if s > 1.5:
            break
    return s + y
