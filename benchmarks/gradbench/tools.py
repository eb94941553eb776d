"""The other tools each port is timed against, built the same way for every eval.

Each port writes its objective once in NumPy (what gradgen compiles) and, where the same text
runs under another array library, reuses it with `np` rebound (`rebound`): jax.numpy for
jax.jit(jax.grad(...)), autograd.numpy for autograd. PyTorch's spelling differs, so a port
writes its torch objective itself. Every builder returns a zero-argument callable that computes
the gradient of the parameters (a tuple of NumPy arrays), the inputs already converted, so
that what is timed is the gradient alone; a builder raises ImportError where its tool is
missing (the benchmark prints "-"). jax, torch and autograd are benchmark-only extras.
"""

import time
import types

import numpy as np


def rebound(function, numpy_module, **names):
    """`function` with the module-level names `np` and `math` (and any of `names`) bound to
    another array library, and so each helper of its module that it calls: the same source
    text, run under jax.numpy or autograd.numpy (math.exp is their exp)."""
    home = function.__globals__
    scope = dict(home, np=numpy_module, **({"math": numpy_module} if "math" in home else {}), **names)
    for name, value in home.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is home:
            scope[name] = _with_globals(value, scope)
    return _with_globals(function, scope)


class NestedGrad:
    """What `gradgen.grad(f, wrt="x")` inside a port means to another tool: its own grad of
    `f` (rebound to that tool's NumPy) with respect to the argument named `wrt`."""

    def __init__(self, grad):
        self._grad = grad

    def grad(self, f, wrt=None):
        names = f.__code__.co_varnames[:f.__code__.co_argcount]
        return self._grad(f, names.index(wrt) if wrt else 0)


def _with_globals(function, scope):
    return types.FunctionType(function.__code__, scope, function.__name__, function.__defaults__,
                              function.__closure__)


class Skipped(Exception):
    """A tool not measured on these inputs, and why (the table says "skipped")."""


def split(args, parameters):
    return tuple(args[k] for k in parameters), {k: v for k, v in args.items() if k not in parameters}


def jax_gradient(objective, args, parameters, static=(), written=None):
    """jax.jit(jax.grad(objective)) over the parameters, data as traced arguments (`static`:
    the integer inputs that fix shapes or loop counts), warmed up (compiled) before return;
    the callable's `compile_seconds` says how long that took. `written(jax)`: the objective
    as a jax user writes it (a loop as jax.lax.scan), where the NumPy text's Python loop would
    be unrolled into the traced program."""
    import jax  # start-up: a benchmark-only extra, imported only when jax is measured
    import jax.numpy as jnp  # start-up: as above

    jax.config.update("jax_enable_x64", True)
    fixed = {k: args[k] for k in static}
    params, data = split({k: v for k, v in args.items() if k not in static}, parameters)
    params = tuple(jnp.asarray(p, dtype=jnp.float64) for p in params)
    data = {k: jnp.asarray(v) for k, v in data.items()}
    f = written(jax) if written else rebound(objective, jnp, gradgen=NestedGrad(lambda g, i: jax.grad(g, argnums=i)))
    gradient = jax.jit(jax.grad(lambda p, d: f(*p, **d, **fixed)))
    start = time.perf_counter()
    jax.block_until_ready(gradient(params, data))  # compile once, outside the timing

    def run():
        return tuple(np.asarray(g) for g in jax.block_until_ready(gradient(params, data)))
    run.compile_seconds = time.perf_counter() - start
    return run


def autograd_gradient(objective, args, parameters):
    """autograd.grad of the same NumPy text under autograd.numpy."""
    import autograd  # start-up: a benchmark-only extra
    import autograd.numpy as anp  # start-up: as above

    params, data = split(args, parameters)
    f = rebound(objective, anp, gradgen=NestedGrad(lambda g, i: autograd.grad(g, i)))
    gradient = autograd.grad(lambda p: f(*p, **data))
    params = tuple(_float(p) for p in params)

    def run():
        return tuple(np.asarray(g) for g in gradient(params))
    return run


def torch_gradient(objective, args, parameters):
    """PyTorch eager: `objective` (written with torch) on float64 tensors, then
    torch.autograd.grad of the parameters."""
    import torch  # start-up: a benchmark-only extra

    params, data = split(args, parameters)
    params = [torch.tensor(np.asarray(p, dtype=np.float64), requires_grad=True) for p in params]
    data = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in data.items()}

    def run():
        return tuple(g.detach().numpy() for g in torch.autograd.grad(objective(*params, **data), params))
    return run


def _float(value):
    return float(value) if np.ndim(value) == 0 else np.asarray(value, dtype=np.float64)
