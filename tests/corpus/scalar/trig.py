"""Corpus: sin, cos, tan from math and NumPy."""

import math

import numpy as np

G = 9.81


def sin_times_cos(x=0.3, y=0.7):
    return math.sin(x) * math.cos(y)


def tangent(x=0.4):
    return math.tan(x)


def pendulum_energy(theta=0.5, v=0.8):
    kinetic = 0.5 * v**2
    potential = G * (1.0 - math.cos(theta))
    return kinetic + potential


def rotate_x(x=0.6, y=0.3, t=0.7):
    return x * math.cos(t) - y * math.sin(t)


def pythagorean_identity(x=0.9):
    one = np.sin(x) ** 2 + np.cos(x) ** 2
    return one


def numpy_tan_chain(x=0.5):
    return np.tan(np.sin(x))
