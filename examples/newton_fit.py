"""Fit examples/decay_model.py by Newton's method, with gradgen's gradient and Hessian.

    python examples/newton_fit.py

The generated functions come from gradgen's Python API (`gradgen.hessian(loss)` compiles
the loss from its source, as `gradgen compile examples/decay_model.py --emit grad,hessian`
would, and caches the module).

scipy.optimize.minimize(method="trust-exact") takes the generated loss_grad as `jac` and
loss_hessian as `hess`; a trust-region Newton method needs only a handful of iterations
where gradient descent would need thousands.
"""

import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

import gradgen

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decay_model import loss  # noqa: E402 - the source gradgen compiles

# (a, k, c: all three parameters; by default gradgen differentiates the first)
loss_grad, loss_hessian = gradgen.grad(loss, wrt="all"), gradgen.hessian(loss, wrt="all")
loss_value_and_grad = gradgen.value_and_grad(loss, wrt="all")

TRUE = (2.0, 0.7, 0.5)  # a, k, c


def make_data(n=50, noise=0.02, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 6.0, n)
    a, k, c = TRUE
    return t, a * np.exp(-k * t) + c + noise * rng.standard_normal(n)


def fit(start=(1.0, 0.2, 0.0)):
    t, y = make_data()
    result = minimize(
        lambda p: loss_value_and_grad(*p, t=t, y=y)[0],
        np.array(start),
        jac=lambda p: np.array(loss_grad(*p, t=t, y=y)),
        hess=lambda p: loss_hessian(*p, t=t, y=y),
        method="trust-exact",
    )
    return result


if __name__ == "__main__":
    result = fit()
    a, k, c = result.x
    print(f"fitted a = {a:.4f}, k = {k:.4f}, c = {c:.4f} (true {TRUE}) in {result.nit} Newton iterations, "
          f"loss {result.fun:.6f}: {result.message}")
