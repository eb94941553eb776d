"""GradBench `particle` (Pearlmutter and Siskind): a charged particle starts at (0, 8) with
velocity (0.75, 0), pushed by the force -grad_x p(x; w) of two fixed charges at (10, 10 - w)
and (10, 0); naive Euler steps (dt = 0.1) run while it stays above the x axis, then a linear
step to the axis gives x(t_f); the cost is x_0(t_f)^2. The force is itself a gradient taken
by AD: nested AD, here gradgen's reverse over reverse (the "rr" variant). What is timed is one
gradient of the cost with respect to w, the step GradBench's argmin repeats. Input as
GradBench gives it: w = 0 (the same at both sizes)."""

import numpy as np

import gradgen
import tools

PARAMETERS = ("w",)
DT = 0.1


def potential(x, w):
    return 1 / np.sqrt((x[0] - 10) ** 2 + (x[1] - 10 + w) ** 2) + 1 / np.sqrt((x[0] - 10) ** 2 + x[1] ** 2)


def objective(w):
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    force = gradgen.grad(potential, wrt="x")  # (made once: each gradgen.grad call costs ~3 ms)
    while True:
        xddot = -force(x, w)
        x_new = x + DT * xdot
        if x_new[1] <= 0:
            break
        x = x_new
        xdot = xdot + DT * xddot
    dt_f = -x[1] / xdot[1]
    x_t_f = x + dt_f * xdot
    return x_t_f[0] ** 2


def inputs(size="small"):
    return {"w": 0.0}


def torch_objective(w):
    import torch  # start-up: benchmark-only extra

    def p(x):
        return 1 / torch.sqrt((x[0] - 10) ** 2 + (x[1] - 10 + w) ** 2) + 1 / torch.sqrt((x[0] - 10) ** 2 + x[1] ** 2)

    x = torch.tensor([0.0, 8.0], dtype=torch.float64)
    xdot = torch.tensor([0.75, 0.0], dtype=torch.float64)
    while True:
        x_req = x if x.requires_grad else x.clone().requires_grad_(True)
        (slope,) = torch.autograd.grad(p(x_req), x_req, create_graph=True)
        x_new = x + DT * xdot
        if x_new[1] <= 0:
            break
        x = x_new
        xdot = xdot - DT * slope
    dt_f = -x[1] / xdot[1]
    return (x + dt_f * xdot)[0] ** 2


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
