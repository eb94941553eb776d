"""The names autograd's users reach for, as gradgen's functions (gradgen.live).

- `elementwise_grad(f)`: the gradient of `np.sum(f(x))`, which is autograd's definition (a
  vector-Jacobian product with a cotangent of ones). For an `f` that acts elementwise (each
  element of the result depends on the element of x at the same place: `np.tanh(x)`,
  `x**3 - 2*x`) it is the derivative of each element at its point. gradgen compiles it as
  the gradient of a one-line function it writes beside `f`, `def sum_of_f(x): return
  np.sum(f(x))`, so the result is generated source like any gradient, and differentiable in
  turn (`elementwise_grad(elementwise_grad(f))`).
- `hessian_vector_product(f, argnum)`: autograd's argument order, `(*args, vector)`, over
  gradgen's hvp (`f_hvp(*args, d<p>=vector)`): what scipy.optimize.minimize(hessp=) calls.
- `argnum=` (a position or a tuple of positions) as another spelling of `wrt=`.
"""

from __future__ import annotations

import ast
import copy
import inspect

from gradgen.errors import CompileError


def summed(f, origin, outside, outside_type):
    """`outside` (gradgen.live.outside.Outside, or None for a top-level function read as it
    is) with a function `sum_of_<target>` that returns `np.sum(<target>(<its parameters>))`,
    as the new target: what elementwise_grad differentiates."""
    tree = ast.parse(origin.source)
    target = outside.target if outside is not None else origin.name
    node = outside.functions.get(target) if outside is not None else None
    if node is None:
        node = next((d for d in tree.body if isinstance(d, ast.FunctionDef) and d.name == target), None)
    if node is None:
        raise CompileError(f"gradgen.elementwise_grad: no function '{target}' found in {origin.filename}",
                           origin.filename)
    args = node.args
    if args.vararg or args.kwarg or args.posonlyargs:
        raise CompileError(f"gradgen.elementwise_grad({target}): name each parameter of '{target}' (no *args, "
                           "**kwargs or positional-only parameters)", origin.filename, node.lineno, node.col_offset + 1)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        d.name for d in ast.walk(tree) if isinstance(d, ast.FunctionDef)}
    if outside is not None:
        taken |= set(outside.functions) | set(outside.aliases) | set(outside.constants)
    name, total = _free(f"sum_of_{target}", taken), _free("np_sum", taken)
    call = ast.Call(ast.Name(target, ast.Load()), [ast.Name(a.arg, ast.Load()) for a in args.args],
                    [ast.keyword(a.arg, ast.Name(a.arg, ast.Load())) for a in args.kwonlyargs])
    body = [ast.Return(ast.Call(ast.Name(total, ast.Load()), [call], []))]
    wrapper = ast.FunctionDef(name, copy.deepcopy(args), body, [], None, None, type_params=[])
    for part in ast.walk(wrapper):  # (a refusal in it points at the user's function)
        if "lineno" in part._attributes:
            ast.copy_location(part, node)
    out = copy.copy(outside) if outside is not None else outside_type(target)
    out.functions = {**out.functions, name: wrapper}
    out.aliases = {**out.aliases, total: "numpy.sum"}
    out.target = name
    return out


def _free(name, taken):
    k, free = 1, name
    while free in taken:
        free, k = f"{name}_{k}", k + 1
    taken.add(free)
    return free


def positions(f, wrt):
    """`wrt` with autograd's positions (`argnum=1`, `(0, 1)`) as parameter names of `f`."""
    if wrt is None or isinstance(wrt, str):
        return wrt
    given = [wrt] if isinstance(wrt, int) else list(wrt)
    if not any(isinstance(w, int) for w in given):
        return wrt
    names = list(inspect.signature(f).parameters)
    for w in given:
        if isinstance(w, int) and not -len(names) <= w < len(names):
            raise CompileError(f"argnum {w} of '{getattr(f, '__name__', f)}': it has {len(names)} parameters "
                               f"({', '.join(names)})", f"gradgen({getattr(f, '__name__', f)})")
    return [names[w] if isinstance(w, int) else w for w in given]


def vector_last(product, f, name):
    """gradgen's hvp of `f` along parameter `name`, called as autograd's
    `hessian_vector_product(f)(*args, vector)`."""
    keywords = [p for p in inspect.signature(product).parameters.values() if p.kind is p.KEYWORD_ONLY
                and p.default is p.empty]
    tangent = next((p.name for p in keywords if p.name == f"d{name}"), None) or \
        next(p.name for p in keywords if p.name.startswith(f"d{name}"))

    def hessian_vector_product(*args, **kwargs):
        *args, vector = args
        return product(*args, **{tangent: vector}, **kwargs)

    hessian_vector_product.__name__ = hessian_vector_product.__qualname__ = f"{product.__name__}_last"
    hessian_vector_product.__doc__ = (f"{product.__name__}(*args, {tangent}=vector), called as autograd's "
                                      f"hessian_vector_product: (*args, vector).\n\n{product.__doc__ or ''}")
    hessian_vector_product.source = getattr(product, "source", None)
    return hessian_vector_product
