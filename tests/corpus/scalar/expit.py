"""Corpus: the logistic sigmoid as scipy.special.expit."""

import math

import scipy.special


def expit_plain(x=0.4):
    return scipy.special.expit(x)


def expit_bce(w=0.5, x=0.9, label=0.3):
    p = scipy.special.expit(w * x)
    return -(label * math.log(p) + (1.0 - label) * math.log(1.0 - p))
