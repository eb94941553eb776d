"""GradBench `saddle` (Pearlmutter and Siskind): min over p1 of max over p2 of
f(p1, p2) = (p1_0^2 + p1_1^2) - (p2_0^2 + p2_1^2), the inner max by gradient ascent whose
gradient is itself taken by AD: nested AD, here gradgen's reverse over reverse (the "rr"
variant). What is timed is one gradient of the outer cost max_p2 f(p1, p2) with respect to
p1, the step GradBench's outer argmin repeats; the ascent takes a fixed number of steps (a
fixed rate), where GradBench's solver runs until the gradient is small. Input as GradBench
gives it: start = (1, 1) for both points; 10 ascent steps (small) or 100 (medium)."""

import numpy as np

import gradgen
import tools

PARAMETERS = ("p1",)
SIZES = {"small": 10, "medium": 100}
RATE = 0.1


def f(p1, p2):
    return (p1[0] ** 2 + p1[1] ** 2) - (p2[0] ** 2 + p2[1] ** 2)


def objective(p1, *, start, steps):
    p2 = start
    slope = gradgen.grad(f, wrt="p2")  # (made once: each gradgen.grad call costs ~3 ms)
    for _ in range(steps):
        p2 = p2 + RATE * slope(p1, p2)
    return f(p1, p2)


def inputs(size="small"):
    return {"p1": np.array([1.0, 1.0]), "start": np.array([1.0, 1.0]), "steps": SIZES[size]}


def torch_objective(p1, *, start, steps):
    import torch  # start-up: benchmark-only extra

    def cost(p1, p2):
        return (p1[0] ** 2 + p1[1] ** 2) - (p2[0] ** 2 + p2[1] ** 2)

    p2 = start.clone().requires_grad_(True)
    for _ in range(steps):
        (slope,) = torch.autograd.grad(cost(p1, p2), p2, create_graph=True)
        p2 = p2 + RATE * slope
    return cost(p1, p2)


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS, static=("steps",))


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
