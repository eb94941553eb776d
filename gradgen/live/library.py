"""`gradgen.grad(np.sqrt)`: a derivative of a library function itself (autograd's examples
take `grad(np.tanh)`, `grad(grad(np.sqrt))`).

A NumPy ufunc or a `math` function has no Python source, but when the rule table knows it,
its derivative is that of a one-line function calling it: `def sqrt(x): return np.sqrt(x)`.
`as_function` writes that function (its text kept in linecache, as a notebook cell's is, so
gradgen reads it like any other and a derivative of its derivative compiles as usual);
anything else is left as it is, for source_of's own message.
"""

from __future__ import annotations

import linecache
import math

import numpy as np

from gradgen.rules import table

_PARAMETERS = ("x", "y", "z")


def as_function(f):
    """A Python function calling `f` (a NumPy or math function with a rule), or `f` itself."""
    qualified = _qualified(f)
    found = table.lookup(qualified) if qualified else None
    if found is None or table.TABLE[found[0]].kind not in ("smooth", "piecewise"):
        return f
    arity = table.TABLE[found[0]].arity or 2
    name = qualified.rpartition(".")[2]
    params = ", ".join(_PARAMETERS[:arity])
    library = "np" if qualified.startswith("numpy.") else "math"
    text = f"import {'numpy as np' if library == 'np' else 'math'}\n\n\ndef {name}({params}):\n" \
           f"    return {library}.{name}({params})\n"
    filename = f"<{qualified} as a function>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"__name__": f"gradgen_library_{name}"}
    exec(compile(text, filename, "exec", dont_inherit=True), namespace)  # noqa: S102 - our own one-line function
    return namespace[name]


def _qualified(f):
    """"numpy.sqrt" for np.sqrt, "math.sin" for math.sin, when the module holds that very object."""
    name = getattr(f, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        return None
    for prefix, module in (("numpy", np), ("math", math)):
        if getattr(module, name, None) is f:
            return f"{prefix}.{name}"
    return None
