"""A gradient specialised on the shapes it is called with, as jax.jit traces for its inputs.

Compiled from its text alone, `gradgen.grad(f)` cannot know that `y[t]` is a number: `y` may
be a matrix, so the scalar arithmetic of a loop is wrapped in `unbroadcast` and its tape keeps
what only a shape needs (a Kalman filter's gradient costs 17x its forward pass). The first call
says what the arguments are: the function handed out compiles `f` again for those shapes, as
`gradgen compile --shapes` would (each length a letter, so any lengths of the same ranks use
the same module; the module checks them on entry), keeps one module per signature, and reads
the signature of every call (ranks, which lengths are equal, dtype kinds) to pick its module.
A signature the shaped compile refuses gets the plain module, which serves any shapes.
"""

from __future__ import annotations

import functools

from gradgen.errors import CompileError

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def signature(names, args, kwargs):
    """((parameter, its shape with each length but 1 a letter, its kind), ...) of the numbers
    and arrays a call passes by position (`names` in order) or by keyword; other values
    (lists, records, None) are not stated and serve any shape."""
    letters, out = {}, []
    for name, value in zip(names, args):
        _add(out, letters, name, value)
    for name, value in kwargs.items():
        _add(out, letters, name, value)
    return tuple(out)


def _add(out, letters, name, value):
    kind = type(value)
    if kind is float or kind is int:
        out.append((name, (), kind.__name__))
    elif getattr(kind, "__module__", None) == "numpy" and kind.__name__ not in ("bool", "bool_") and hasattr(value, "dtype"):
        # (an ndarray or a NumPy scalar, told apart without importing NumPy: gradgen.live stays light)
        dims = tuple(d if d == 1 else letters.setdefault(d, _letter(len(letters))) for d in value.shape)
        out.append((name, dims, value.dtype.kind))


def _letter(k):
    return _LETTERS[k % 26] + ("" if k < 26 else str(k // 26))


# what the plain module writes where it cannot tell a number from an array, or a matrix from a
# vector: only a module with one of these gains from knowing its shapes (others are served as they are)
_UNSURE = ("unbroadcast(", "matmul_grad_", "np.ones_like(", "np.size(")


def helps(text):
    """Whether compiling again for the shapes of a call can give simpler code than `text`."""
    return any(marker in text for marker in _UNSURE)


def specialising(plain, names, compile_for):
    """The function handed out: `plain` (the module for any shapes) until a call says its
    signature; then the module `compile_for(shapes)` writes for it, or `plain` where the
    shaped compile refuses. It is `plain` to a reader: its name, signature, source, display."""
    modules = {}

    @functools.wraps(plain)
    def specialised(*args, **kwargs):
        key = signature(names, args, kwargs)
        g = modules.get(key)
        if g is None:
            g = modules[key] = _for(key, plain, compile_for)
        return g(*args, **kwargs)

    specialised.modules = modules  # (signature -> the generated function that serves it)
    return specialised


def kinds_help(message):
    """Whether knowing the kinds of the arguments (a list of arrays) may let a refused
    compile through: recursion whose depth an isinstance test decides."""
    return message.startswith("recursive call to ") and "depth known only when it runs" in message


def by_kinds(f, error, compile_for):
    """The function handed out for `f`, which compiles only for the kinds of its arguments
    (`isinstance(data, list)` decides a recursion's depth): each call's kinds (a list, a tuple,
    a dict, an array; and those of their items) pick the module `compile_for(kinds)` writes,
    compiled once per kinds; `error` where the arguments state none."""
    names = [n for n in f.__code__.co_varnames[:f.__code__.co_argcount]]
    modules = {}

    @functools.wraps(f)
    def by_kind(*args, **kwargs):
        key = tuple((name, chain) for name, chain in ((n, _chain(v)) for n, v in [*zip(names, args), *kwargs.items()])
                    if chain)
        if not key:
            raise error.with_traceback(None)
        g = modules.get(key)
        if g is None:
            g = modules[key] = compile_for(key)
        return g(*args, **kwargs)

    by_kind.modules = modules
    return by_kind


def _chain(value, depth=0):
    """("list", "ndarray") for a list of arrays: the kind of `value` and of its items."""
    kind = type(value)
    head = {list: "list", tuple: "tuple", dict: "dict"}.get(kind)
    if head is None:
        return ("ndarray",) if getattr(kind, "__module__", None) == "numpy" and kind.__name__ == "ndarray" else ()
    items = list(value.values() if head == "dict" else value)
    inner = {_chain(v, depth + 1)[:1] for v in items} if depth == 0 else set()
    return (head, *inner.pop()) if len(inner) == 1 else (head,)


def _for(key, plain, compile_for):
    shapes = tuple((name, dims) for name, dims, _ in key)
    if not shapes:
        return plain
    try:
        return compile_for(shapes)
    except CompileError:
        return plain  # (a shape the analysis cannot follow: the plain module serves every shape)
