"""Python loops as people write them over data: `for x, y in zip(xs, ys)`, `enumerate`
for per-example weights, `sum(... for ...)`, a helper that returns a tuple, and a list
of predictions turned into an array."""

import numpy as np


def predict_with_confidence(w, b, x):
    mean = np.dot(w, x) + b
    log_var = 0.5 * np.tanh(np.dot(w, x))
    return mean, log_var


def heteroscedastic_nll(w, b, xs, ys):
    total = 0.0
    for x, y in zip(xs, ys):
        mean, log_var = predict_with_confidence(w, b, x)
        total += 0.5 * (log_var + (y - mean) ** 2 / np.exp(log_var))
    return total / len(xs)


def inputs_heteroscedastic_nll():
    rs = np.random.RandomState(0)
    return {"w": rs.randn(3), "b": 0.1, "xs": rs.randn(5, 3), "ys": rs.randn(5)}


def weighted_squared_error(w, b, xs, ys, sample_weights):
    loss = 0.0
    for i, x in enumerate(xs):
        residual = np.dot(w, x) + b - ys[i]
        loss = loss + sample_weights[i] * residual ** 2
    return loss / np.sum(sample_weights)


def inputs_weighted_squared_error():
    rs = np.random.RandomState(1)
    return {
        "w": rs.randn(2),
        "b": -0.3,
        "xs": rs.randn(6, 2),
        "ys": rs.randn(6),
        "sample_weights": rs.uniform(0.5, 1.5, size=6),
    }


def huber_total(params, xs, ys, delta=1.0):
    w, b = params
    residuals = [np.dot(w, x) + b - y for x, y in zip(xs, ys)]
    return sum(0.5 * r ** 2 if abs(r) <= delta else delta * (abs(r) - 0.5 * delta)
               for r in residuals)


def inputs_huber_total():
    rs = np.random.RandomState(2)
    return {"params": (rs.randn(2), 0.2), "xs": rs.randn(6, 2), "ys": 2.0 * rs.randn(6), "delta": 1.0}


def polynomial_fit(coeffs, ts, ys):
    """Horner's rule over the coefficient list, the predictions collected with a list
    comprehension and compared with np.array of them."""
    def poly(t):
        result = 0.0
        for c in reversed(coeffs):
            result = result * t + c
        return result
    predictions = np.array([poly(t) for t in ts])
    return np.mean((predictions - ys) ** 2)


def inputs_polynomial_fit():
    rs = np.random.RandomState(3)
    ts = np.linspace(-1.0, 1.0, 7)
    return {"coeffs": [0.5, -0.2, 0.3], "ts": ts, "ys": np.sin(2 * ts) + 0.05 * rs.randn(7)}
