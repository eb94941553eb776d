"""`gradgen.grad(gradgen.grad(f))` where the generated gradient cannot be read again as source.

A derivative of a derivative first compiles the module gradgen generated (gradgen/live/again.py).
Where that module keeps a tape (`x_stack.append(x)` in a loop, popped in the backward pass:
a `while` loop, a fixed-point iteration), its list is no value gradgen differentiates, and the
second derivative comes from forward mode over the gradient instead, as JAX's `jacfwd(jacrev)`:
d/dp_j (df/dp_i) is the p_j part of f's Hessian-vector product along p_i. The inner gradient
must be one number (p_i a number, as `grad` needs of any function): checked on every call.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from gradgen.errors import CompileError


def made_from(g):
    """(f, wrt) of a gradient gradgen made (`gradgen.grad(f, wrt)`), else None."""
    while g is not None:  # (through wrappers: a checker's, or gradgen's own for shapes and closures)
        found = getattr(g, "derivative_of", None)
        if found is not None:
            return found
        g = getattr(g, "__wrapped__", None)
    return None


def through_hvp(g, wrt, role, hvp):
    """grad(g) (or value_and_grad) for g = gradgen.grad(f, inner): f's hvp along the inner
    parameter, read at the parameters `wrt` (None: the default, as for f)."""
    f, inner = made_from(g)
    probe = hvp(f, inner)
    inner_names = _directions(probe)
    if len(inner_names) != 1:
        raise CompileError(f"gradgen.{role}({g.__name__}): {g.__name__} returns a tuple (the gradient with respect "
                           f"to {', '.join(inner_names)}), and a gradient needs one number: gradgen.hessian("
                           f"{f.__name__}) gives every second derivative", g.__name__)
    signature = inspect.signature(f)
    outer = [name for name in signature.parameters if name in set(wrt or _default(f))]  # (in parameter order, as grad's)
    wanted = set(inner_names) | set(outer)
    names = [name for name in signature.parameters if name in wanted]  # (the hvp's own order: the parameters')
    product = hvp(f, tuple(names))
    tangents = _directions(product)
    (first,) = inner_names

    @functools.wraps(g)
    def second(*args, **kwargs):
        values = signature.bind(*args, **kwargs)
        values.apply_defaults()
        if np.ndim(values.arguments[first]) != 0:
            raise ValueError(f"gradgen.{role}({g.__name__}): {g.__name__} returns an array (the gradient with "
                             f"respect to '{first}', an array here), and a gradient needs one number: "
                             f"gradgen.hessian({f.__name__}) gives every second derivative")
        along = {tangents[n]: 1.0 if n == first else np.zeros_like(values.arguments[n], dtype=float)
                 for n in names}
        out = product(*args, **kwargs, **along)
        parts = dict(zip(names, out if len(names) > 1 else (out,)))
        picked = tuple(parts[n] for n in outer)
        result = picked[0] if len(picked) == 1 else picked
        return (g(*args, **kwargs), result) if role == "value_and_grad" else result

    second.source = getattr(product, "source", None)
    return second


def _directions(product):
    """{parameter: the keyword of its direction} of a generated hvp, in parameter order."""
    keywords = [p.name for p in inspect.signature(product).parameters.values()
                if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    params = [p for p in inspect.signature(product).parameters.values() if p.kind is not p.KEYWORD_ONLY]
    found = {p.name: f"d{p.name}" for p in params if f"d{p.name}" in keywords}
    if len(found) != len(keywords):  # (a direction named otherwise, to keep clear of another name)
        raise CompileError(f"the directions of {product.__name__} ({', '.join(keywords)}) are not named "
                           "d<parameter>: take the second derivative with gradgen.hvp or gradgen.hessian")
    return found


def _default(f):
    """gradgen's default parameters: the first, or all when every one has a number default."""
    params = [p for p in inspect.signature(f).parameters.values() if p.kind in (p.POSITIONAL_ONLY,
                                                                              p.POSITIONAL_OR_KEYWORD)]
    numbers = all(isinstance(p.default, (int, float)) and not isinstance(p.default, bool) for p in params)
    return [p.name for p in params] if params and numbers else [p.name for p in params[:1]]
