"""Corpus: loops nested in loops, branches in loops, loops in branches."""

import math


def double_loop(x=0.3, y=0.7):
    s = 0.0
    for i in range(4):
        for j in range(3):
            s += x**i * y**j
    return s


def triangular_loop(x=0.5, n=5):
    s = 0.0
    for i in range(n):
        for j in range(i):
            s += x * (j + 1) + s * 0.01
    return s


def branch_in_loop(x=0.25):
    y = x
    for i in range(10):
        if y > 1.0:
            y = y / 2.0
        else:
            y = y * 1.7 + x
    return y


def elif_in_loop(x=0.3, y=0.45):
    s = 0.0
    for i in range(8):
        t = x * i - y
        if t > 1.0:
            s += math.log(t)
        elif t > 0.0:
            s += t * t
        else:
            s -= t * y
    return s


def loop_in_branch(x=0.4, n=6):
    if x > 0.5:
        s = x
        for i in range(n):
            s = s * 0.9 + x
    else:
        s = 1.0
        k = 0
        while s > 0.1 and k < 50:
            s = s * (0.5 + 0.1 * x * x)
            k += 1
    return s


def while_in_for(x=0.7):
    total = 0.0
    for i in range(4):
        y = x * (i + 2.0)
        while y > 1.0:
            y = y * 0.6
        total += y
    return total


def for_in_while(x=0.55):
    y = x
    rounds = 0
    while y < 3.0 and rounds < 20:
        for j in range(3):
            y = y + 0.05 * math.exp(-y) + 0.1 * x
        rounds += 1
    return y


def triple_nested_with_branch(x=0.2, y=0.35):
    s = 0.0
    for i in range(3):
        for j in range(3):
            for k in range(2):
                if (i + j + k) % 2 == 0:
                    s += x * y * (i + 1)
                else:
                    s += math.sin(x * j + y * k)
    return s


def last_assigned_in_branch(x=0.25):
    last = x
    for i in range(8):
        t = math.sin(x * i) - 0.3
        if t > 0.0:
            last = t * x
    return last * last


def loop_in_branch_in_loop(x=0.3, y=0.8):
    s = y
    for i in range(4):
        if x * i > 0.5:
            for j in range(3):
                s += x * s * 0.1 + j * y
        else:
            k = 0
            while s > 1.0 and k < 10:
                s = s * 0.8
                k += 1
            s = s + x
    return s
