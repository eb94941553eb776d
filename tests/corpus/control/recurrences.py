"""Corpus: Euler integration, values carried across iterations, recurrences."""

import math

DT = 0.02


def euler_cubic(a=0.5, b=0.3, x0=1.0):
    x = x0
    for i in range(50):
        x = x + DT * (a * x - b * x**3)
    return x


def logistic_map(r=2.5, x0=0.3):
    x = x0
    for i in range(30):
        x = r * x * (1.0 - x)
    return x


def fibonacci_like(x=0.6, y=0.4, n=12):
    a = x
    b = y
    for i in range(n):
        a, b = b, a + x * b
    return b


def fibonacci_temp(x=0.6, y=0.4, n=12):
    a = x
    b = y
    for i in range(n):
        t = a + x * b
        a = b
        b = t
    return b


def symplectic_oscillator(w=1.2, q0=1.0):
    q = q0
    v = 0.0
    for i in range(40):
        v = v - DT * 10.0 * w * w * q
        q = q + DT * 10.0 * v
    return q * q + v * v


def exp_series(x=0.7, n=15):
    term = 1.0
    s = 1.0
    for k in range(1, n):
        term = term * x / k
        s += term
    return s


def exponential_moving_average(x=0.4):
    m = 0.0
    for i in range(25):
        m = 0.9 * m + 0.1 * math.sin(x * i)
    return m


def midpoint_method(a=0.7, x0=0.5):
    x = x0
    h = 0.05
    for i in range(20):
        mid = x + 0.5 * h * (a * x - x * x)
        x = x + h * (a * mid - mid * mid)
    return x


def carried_previous(x=0.3):
    prev = 0.0
    cur = x
    s = 0.0
    for i in range(10):
        nxt = 0.5 * cur + 0.25 * prev + 0.1 * x
        s += cur * prev
        prev = cur
        cur = nxt
    return s + cur
