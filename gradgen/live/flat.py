"""Derivatives of a function `gradgen.flatten_func` made (gradgen/trees.py), composed here.

`flat_f(vector, *args)` is `flatten(f(unflatten(vector), *args))[0]`, so its gradient at a
vector is `flatten(grad(f)(unflatten(vector), *args))[0]`, and its Hessian times a vector
`v` is `flatten(hvp(f)(unflatten(vector), *args, dp=unflatten(v)))[0]`: gradgen compiles `f`
(with respect to its first parameter, the structured one) and these functions flatten what
the generated function returns. flat_f's own source (a closure inside gradgen) is never read.
"""

from __future__ import annotations

import inspect

from gradgen.errors import CompileError

ROLES = ("grad", "value_and_grad", "hvp")  # the derivatives composed here


def made(f):
    """(f, unflatten) of a function flatten_func made, else None."""
    found = getattr(f, "gradgen_flattened", None)
    return found if isinstance(found, tuple) and len(found) == 2 else None


def derivative(flat_f, wrt, role, derive):
    """The derivative `role` of `flat_f`, from `derive(f, wrt_of_f)`: gradgen's own of `f`."""
    from gradgen.trees import flatten  # (start-up: NumPy, only where flatten_func was used)

    func, unflatten = made(flat_f)
    call = f"gradgen.{role}({flat_f.__name__})"
    if role not in ROLES:
        raise CompileError(f"{call}: a function flatten_func made has a grad, value_and_grad, hvp and "
                           f"hessian_vector_product; for a {role}, call gradgen.{role} on "
                           f"'{getattr(func, '__name__', func)}' itself", call)
    vector = next(iter(inspect.signature(flat_f).parameters))
    if wrt is not None and tuple(wrt) != (vector,):
        raise CompileError(f"{call}: a function flatten_func made is differentiated with respect to its vector "
                           f"(its first argument, '{vector}'), not {', '.join(map(repr, wrt))}", call)
    names = list(inspect.signature(func).parameters)
    if not names:
        raise CompileError(f"{call}: '{func.__name__}' takes no parameters to differentiate", call)
    inner = derive(func, (names[0],))

    if role == "grad":
        def flat_grad(vector, *args, **kwargs):
            return flatten(inner(unflatten(vector), *args, **kwargs))[0]
        made_here = flat_grad
    elif role == "value_and_grad":
        def flat_value_and_grad(vector, *args, **kwargs):
            value, gradient = inner(unflatten(vector), *args, **kwargs)
            return flatten(value)[0], flatten(gradient)[0]
        made_here = flat_value_and_grad
    else:
        tangent = _tangent_keyword(inner, names[0])

        def flat_hvp(vector, *args, **kwargs):
            direction = kwargs.pop(f"d{_vector_name(flat_f)}")
            return flatten(inner(unflatten(vector), *args, **{tangent: unflatten(direction)}, **kwargs))[0]
        made_here = _with_tangent(flat_hvp, flat_f)
    made_here.__name__ = made_here.__qualname__ = f"{flat_f.__name__}_{role}"
    made_here.__doc__ = (f"gradgen.{role} of {func.__name__}, at unflatten(vector), flattened (flatten_func)."
                         f"\n\n{inner.__doc__ or ''}")
    made_here.source = getattr(inner, "source", None)
    return made_here


def _vector_name(flat_f):
    return next(iter(inspect.signature(flat_f).parameters))


def _with_tangent(function, flat_f):
    """`function(vector, *args, *, d<vector>)`: the signature gradgen.hvp's functions have
    (what hessian_vector_product reads to call it as autograd does)."""
    vector = _vector_name(flat_f)
    function.__signature__ = inspect.Signature([
        inspect.Parameter(vector, inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
        inspect.Parameter(f"d{vector}", inspect.Parameter.KEYWORD_ONLY),
        inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])
    return function


def _tangent_keyword(product, name):
    """The keyword gradgen's hvp of `f` takes the direction of parameter `name` by."""
    keywords = [p.name for p in inspect.signature(product).parameters.values() if p.kind is p.KEYWORD_ONLY]
    return next((k for k in keywords if k == f"d{name}"), None) or next(k for k in keywords if k.startswith(f"d{name}"))
