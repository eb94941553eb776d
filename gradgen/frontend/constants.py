"""Constant expressions folded while reading a file, never by running it: literals, named
numbers (`math.pi`), arithmetic on them, arrays built from literals (`np.array([...])`,
`np.eye(3)`), and a function of the rule table applied to such values (`np.sqrt(2.0)`,
`np.deg2rad([10.0, 150.0])`: the library's own function on numbers, never the user's code).
Each result is bounded (gradgen.frontend.parse reads module constants through here; a default
and a constant argument are folded by the same function).
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
import warnings

import numpy as np

from gradgen.rules import table as primitives

_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.Pow: operator.pow, ast.FloorDiv: operator.floordiv,
          ast.Mod: operator.mod}
# named numbers of the libraries, wherever a constant may stand (inf is refused where a
# module constant must be finite, and allowed as a default or inside a function)
NAMED = {"math.pi": math.pi, "math.e": math.e, "math.tau": math.tau, "math.inf": math.inf,
         "numpy.pi": math.pi, "numpy.e": math.e, "numpy.inf": math.inf}
MAX_INT_BITS = 13_000  # integer constants: about 3,900 digits (Python prints at most 4,300)
MAX_ARRAY_ELEMENTS = 1_000_000


_ARRAY_BUILDERS = {"numpy.array", "numpy.asarray", "numpy.eye", "numpy.identity", "numpy.linspace",
                   "numpy.zeros", "numpy.ones", "numpy.arange", "numpy.full"}


def _array_constant(node, module):
    """`np.array([[1, 2], [3, 4]])`, `np.eye(3)`, `np.linspace(0, 1, 5)`: NumPy builds it from
    literal numbers only (nothing of the user's runs); anything else is not a constant."""
    if module.qualified(node.func) not in _ARRAY_BUILDERS:
        raise ValueError("not an array constructor")
    args = [_nested(constant_value_or_list(a, module)) for a in node.args]
    kwargs = {}
    for kw in node.keywords:
        if kw.arg != "dtype" or ast.unparse(kw.value) not in ("float", "int", "np.float64", "numpy.float64"):
            raise ValueError("unsupported keyword")
        kwargs["dtype"] = float if "float" in ast.unparse(kw.value) else int
    name = module.qualified(node.func).split(".")[1]
    if _planned_size(name, args) > MAX_ARRAY_ELEMENTS:  # known before NumPy allocates anything
        raise ValueError(f"too large: more than {MAX_ARRAY_ELEMENTS:,} elements")
    try:
        value = getattr(np, name)(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - NumPy refusing literal arguments, whatever its reason
        raise ValueError(str(exc)) from None
    if value.size > MAX_ARRAY_ELEMENTS or value.dtype.kind not in "biuf":
        raise ValueError("too large or not numeric")
    if value.dtype.kind == "f" and not np.isfinite(value).all():
        raise ValueError("not finite")
    return value


def _library_call(node, module):
    """`math.log(2 * math.pi)`, `np.sqrt(2.0)`: a function of the rule table (from math or
    NumPy) applied to constants, folded now. It is the library's own function on numbers,
    never the user's code; the result must be a finite number (or a small array)."""
    qualified = module.qualified(node.func) or (node.func.id if isinstance(node.func, ast.Name) else None)
    found = primitives.lookup(qualified) if qualified else None
    if found is None or node.keywords or not node.args:
        raise ValueError("not a numeric constant")
    library, _, name = qualified.rpartition(".")
    if library not in ("math", "numpy", ""):
        raise ValueError("not a numeric constant")

    function = getattr({"math": math, "numpy": np, "": builtins}[library], name, None)
    args = [constant_value(a, module) for a in node.args]
    if library == "numpy":  # np.deg2rad([-170.0, 150.0]): NumPy's function of the array the list is
        args = [np.array(a) if isinstance(a, tuple) else a for a in args]
    if function is None or any(isinstance(a, tuple) for a in args):
        raise ValueError("not a numeric constant")
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("ignore")
            value = function(*args)
    except (ArithmeticError, ValueError, TypeError, FloatingPointError):
        raise ValueError("arithmetic error") from None
    if isinstance(value, np.ndarray) and value.ndim == 0 or isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("not finite")
    if hasattr(value, "dtype") and (value.dtype.kind not in "biuf" or not np.isfinite(value).all()):
        raise ValueError("not finite")
    if type(value) not in (int, float, bool) and not hasattr(value, "dtype"):
        raise ValueError("not a numeric constant")
    return _bounded(value)


def _planned_size(name, args):
    """How many elements np.<name>(*args) will have, from its arguments alone."""
    def count(shape):
        dims = shape if isinstance(shape, (list, tuple)) else [shape]
        if not all(type(d) is int and d >= 0 for d in dims) or len(dims) > 32:
            raise ValueError("not a shape")
        return math.prod(dims)

    def number(i, default=None):
        value = args[i] if i < len(args) else default
        if type(value) not in (int, float) or not math.isfinite(value):
            raise ValueError("not a number")
        return value

    if name in ("array", "asarray"):
        return 0  # literal numbers written out in the file: as many as the file holds
    if name in ("zeros", "ones", "full"):
        return count(args[0] if args else None)
    if name == "identity":
        return count(args[0] if args else None) ** 2
    if name == "eye":
        return count(args[0] if args else None) * count(args[1] if len(args) > 1 else args[0] if args else None)
    if name == "linspace":
        return count(args[2] if len(args) > 2 else 50)
    if name == "arange":
        start, stop = (0, number(0)) if len(args) == 1 else (number(0), number(1))
        step = number(2, 1)
        if step == 0:
            raise ValueError("zero step")
        return max(0, math.ceil((stop - start) / step))
    raise ValueError("unknown array builder")


def _bounded(value):
    """`value`, unless it is too large to write out (an integer of thousands of digits, an
    array of millions of elements) or not a real number."""
    if isinstance(value, complex):
        raise ValueError("not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueError(f"too large: an integer of more than {MAX_INT_BITS * 3 // 10:,} digits")
    if getattr(value, "size", 0) > MAX_ARRAY_ELEMENTS:
        raise ValueError(f"too large: more than {MAX_ARRAY_ELEMENTS:,} elements")
    return value


def _check_operands(op, left, right):
    """Refuse arithmetic whose result would be too large, before computing it."""
    if hasattr(left, "shape") or hasattr(right, "shape"):
        try:
            shape = np.broadcast_shapes(np.shape(left), np.shape(right))
        except ValueError:
            raise ValueError("shapes do not broadcast") from None
        if math.prod(shape) > MAX_ARRAY_ELEMENTS:
            raise ValueError(f"too large: more than {MAX_ARRAY_ELEMENTS:,} elements")
        if isinstance(op, ast.Pow) and np.any(np.abs(right) > 1024):
            raise ValueError("exponent too large")
        return
    if isinstance(op, ast.Pow) and abs(right) > 1024:
        raise ValueError("exponent too large")
    if isinstance(left, int) and isinstance(right, int):
        bits = left.bit_length()
        if isinstance(op, ast.Pow) and right > 0 and bits > 1 and (bits - 1) * right > MAX_INT_BITS:
            raise ValueError(f"too large: an integer of more than {MAX_INT_BITS * 3 // 10:,} digits")
        if isinstance(op, ast.Mult) and bits + right.bit_length() > MAX_INT_BITS + 1:
            raise ValueError(f"too large: an integer of more than {MAX_INT_BITS * 3 // 10:,} digits")


def constant_value_or_list(node, module):
    if isinstance(node, (ast.List, ast.Tuple)):
        return [constant_value_or_list(e, module) for e in node.elts]
    return constant_value(node, module)


def _nested(value):
    return list(value) if isinstance(value, tuple) else value


def _dict_of_numbers(node, module):
    """`HYPERPARAMS = {"l2": 1e-2, "temperature": 1.5}`: string keys, numbers; a function
    reads its numbers by key (gradgen.frontend.lower folds `HYPERPARAMS["l2"]` to the number)."""
    if not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
        raise ValueError("not a numeric constant")
    values = [constant_value(v, module) for v in node.values]
    if any(isinstance(v, tuple) or hasattr(v, "shape") for v in values):
        raise ValueError("not a numeric constant")
    return {k.value: v for k, v in zip(node.keys, values)}


def constant_value(node, module):
    """The number (or tuple of numbers) a constant expression denotes: literals, named
    constants, + - * / ** on them, and tuples or lists of those.

    Raises ValueError for anything else. Nothing is executed.
    """
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
        return _bounded(node.value)
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts and len(node.elts) <= 100_000:
        values = tuple(constant_value(e, module) for e in node.elts)
        if any(isinstance(v, tuple) for v in values):
            raise ValueError("nested sequences are not numeric constants")
        return values
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = constant_value(node.operand, module)
        if isinstance(value, tuple):
            raise ValueError("a sign on a sequence")
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = constant_value(node.left, module), constant_value(node.right, module)
        if isinstance(left, tuple) or isinstance(right, tuple):
            raise ValueError("arithmetic on sequences")
        _check_operands(node.op, left, right)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NumPy's overflow warnings: the result is checked below
                result = _ARITH[type(node.op)](left, right)
        except (ArithmeticError, ValueError, TypeError):
            raise ValueError("arithmetic error") from None
        if hasattr(result, "dtype") and result.dtype.kind == "f":
            if not np.isfinite(result).all():
                raise ValueError("not finite")
        return _bounded(result)
    if isinstance(node, ast.Name) and node.id in module.constants:
        return module.constants[node.id]
    if isinstance(node, ast.Call):
        if module.qualified(node.func) in _ARRAY_BUILDERS:
            return _array_constant(node, module)
        return _library_call(node, module)
    qualified = module.qualified(node)
    if qualified in NAMED:
        return NAMED[qualified]
    raise ValueError("not a numeric constant")
