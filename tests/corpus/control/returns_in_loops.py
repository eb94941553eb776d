"""Corpus: `return` inside loops (issue 22, item 3): in `for` and `while True:`, in an `if`,
in a nested loop (it leaves both), beside `break` and `continue`, in a helper inlined into
a loop, several exits of a solver."""

import math


def first_crossing(x=0.4, n=6):
    y = x
    for i in range(n):
        y = y * 1.3 + 0.1 * x
        if y > 1.0:
            return y * y
    return y + x


def newton_sqrt(a=2.0, x0=1.0):
    # a solver's two exits: converged, or gave up
    x = x0
    it = 0
    while True:
        x_new = 0.5 * (x + a / x)
        it += 1
        if abs(x_new - x) < 1e-6:
            return x_new
        if it >= 4:
            return x_new * 1.0
        x = x_new


def fall_to_axis(h=1.0, v=0.3, g=9.81, dt=0.05):
    # "hit the axis": the fraction of the last step that reaches y = 0, interpolated
    y = h
    t = 0.0
    while True:
        y_next = y + v * dt
        v = v - g * dt
        if y_next < 0.0:
            return t + dt * y / (y - y_next)
        y = y_next
        t = t + dt
        if t > 3.0:
            return t


def nested_exit(x=0.3, n=3, m=4):
    s = x
    for i in range(n):
        for j in range(m):
            s = s * 1.1 + 0.2 * x
            if s > 1.5:
                return s * x + j
        s = s - 0.3
    return s


def beside_break_and_continue(x=0.5, n=8):
    total = 0.0
    for i in range(n):
        total = total + x * i
        if total > 6.0:
            return total * x
        if i % 2 == 1:
            continue
        if total < -4.0:
            break
        total = total + math.sin(x)
    return total - x


def value_computed_in_loop(x=0.7, y=0.2, n=5):
    p = x
    for i in range(n):
        q = math.exp(p) - y
        if q > 3.0:
            r = q * y + p
            return r * r
        p = p + 0.2 * q
    return p * y


def settle(z=0.5, k=3):
    for i in range(k):
        z = math.tanh(z) + z
        if z > 2.0:
            return z * 0.5
    return z


def helper_in_a_loop(x=0.4, n=4):
    t = 0.0
    for i in range(n):
        t = t + settle(x + 0.3 * t, 3)
    return t


def return_in_else(x=0.5, n=4):
    y = x
    for i in range(n):
        if y < 0.8:
            y = y * 1.4
        else:
            return y - x
    return y * 2.0
