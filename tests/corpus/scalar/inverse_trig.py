"""Corpus: asin/arcsin, acos/arccos, atan/arctan."""

import math

import numpy as np


def math_asin(x=0.5):
    return math.asin(x)


def math_acos(x=0.4):
    return math.acos(x)


def math_atan(x=0.7):
    return math.atan(x)


def numpy_arcsin_arccos(x=0.3):
    return np.arcsin(x) * np.arccos(x)


def numpy_arctan_ratio(x=0.6, y=0.8):
    return np.arctan(y / x)


def asin_of_sin(x=0.35):
    return math.asin(math.sin(x)) + math.atan(x * x)
