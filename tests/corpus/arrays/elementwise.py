"""Array corpus: NumPy elementwise functions applied to whole arrays, each reduced to a
scalar loss. Inputs stay inside every domain and away from kinks (|x| well above zero for
abs, no ties for maximum/minimum, nothing near the clip bounds)."""

import numpy as np


def softplus_sum(x):
    return np.sum(np.log(1.0 + np.exp(x)))


def inputs_softplus_sum():
    rng = np.random.default_rng(101)
    return {"x": rng.standard_normal((3, 4))}


def log1p_expm1(x):
    return np.sum(np.log1p(x**2) + np.expm1(0.5 * x))


def inputs_log1p_expm1():
    rng = np.random.default_rng(102)
    return {"x": rng.standard_normal(7)}


def sqrt_reciprocal(x):
    return np.sum(np.sqrt(x) + np.reciprocal(x))


def inputs_sqrt_reciprocal():
    rng = np.random.default_rng(103)
    return {"x": rng.uniform(0.5, 2.0, (2, 5))}


def trig_mix(x):
    return np.sum(np.sin(x) * np.cos(2.0 * x) + np.tan(0.5 * x))


def inputs_trig_mix():
    rng = np.random.default_rng(104)
    return {"x": rng.uniform(-1.5, 1.5, (4, 3))}


def hyperbolic_mix(x):
    return np.mean(np.tanh(x) + np.sinh(0.5 * x) * np.cosh(0.3 * x))


def inputs_hyperbolic_mix():
    rng = np.random.default_rng(105)
    return {"x": rng.standard_normal((2, 3, 2))}


def inverse_trig(x):
    return np.sum(np.arcsin(x) + np.arccos(0.5 * x) + np.arctan(3.0 * x))


def inputs_inverse_trig():
    rng = np.random.default_rng(106)
    return {"x": rng.uniform(-0.8, 0.8, 6)}


def arctan2_angles(y, x):
    return np.sum(np.arctan2(y, x) ** 2)


def inputs_arctan2_angles():
    rng = np.random.default_rng(107)
    return {"y": rng.standard_normal(5), "x": rng.uniform(0.3, 1.5, 5)}


def abs_times_square(x):
    return np.sum(np.abs(x) * np.square(x) + np.abs(x - 0.1))


def inputs_abs_times_square():
    rng = np.random.default_rng(108)
    sign = rng.choice([-1.0, 1.0], (3, 3))
    return {"x": sign * rng.uniform(0.3, 1.5, (3, 3))}


def power_array_exponent(x, p):
    return np.sum(np.power(x, p))


def inputs_power_array_exponent():
    rng = np.random.default_rng(109)
    return {"x": rng.uniform(0.5, 2.0, (2, 3)), "p": rng.uniform(-1.5, 2.5, (2, 3))}


def power_scalar_exponents(x):
    return np.sum(np.power(x, 3.0) - x**2.5 + x ** (-1))


def inputs_power_scalar_exponents():
    rng = np.random.default_rng(110)
    return {"x": rng.uniform(0.4, 1.8, 8)}


def maximum_minimum(x, y):
    return np.sum(np.maximum(x, y) ** 2 - 2.0 * np.minimum(x, 0.3))


def inputs_maximum_minimum():
    rng = np.random.default_rng(111)
    x = rng.permutation(np.linspace(-1.0, 1.0, 12)).reshape(3, 4) + 0.013
    return {"x": x, "y": x + rng.choice([-0.4, 0.5], (3, 4))}


def where_on_value(x):
    return np.sum(np.where(x > 0, x**2, -(x**3)))


def inputs_where_on_value():
    rng = np.random.default_rng(112)
    sign = rng.choice([-1.0, 1.0], 10)
    return {"x": sign * rng.uniform(0.2, 1.5, 10)}


def where_data_mask(x, *, mask):
    return np.sum(np.where(mask, np.exp(x), np.sin(x) * x))


def inputs_where_data_mask():
    rng = np.random.default_rng(113)
    return {"x": rng.standard_normal((3, 4)), "mask": rng.random((3, 4)) < 0.5}


def clip_interior(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2 + 0.1 * x)


def inputs_clip_interior():
    rng = np.random.default_rng(114)
    sign = rng.choice([-1.0, 1.0], 12)
    # half strictly inside (-0.45, 0.45), half strictly outside (|x| > 0.6)
    inside = rng.uniform(-0.45, 0.45, 6)
    outside = sign[:6] * rng.uniform(0.6, 1.5, 6)
    return {"x": np.concatenate([inside, outside])}


def clip_array_bounds(x, lo, hi):
    return np.sum(np.clip(x, lo, hi) * x)


def inputs_clip_array_bounds():
    rng = np.random.default_rng(115)
    x = rng.uniform(-1.0, 1.0, 9)
    lo = x + rng.choice([-0.3, 0.2], 9)
    hi = lo + rng.choice([0.15, 0.7], 9)
    return {"x": x, "lo": lo, "hi": hi}
