"""Corpus: each supported import style."""

import math
import numpy
import numpy as np
from math import exp, log


def via_math(x=0.5):
    return math.exp(x) + math.log(x)


def via_np_alias(x=0.5):
    return np.exp(x) + np.log(x)


def via_numpy(x=0.5):
    return numpy.exp(x) + numpy.log(x)


def via_from_import(x=0.5):
    return exp(x) + log(x)


def mixed_styles(x=0.4, y=0.7):
    a = exp(x) * np.sin(y)
    b = numpy.cos(x) + math.sqrt(y)
    return log(a + b)
