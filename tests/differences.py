"""Central differences of a function of one array, element by element: the reference the
issue-20 regression tests compare gradients with; and of a structured argument (lists,
dicts, NamedTuples), leaf by leaf. `compiled_beside` gives the two modules compared: the
generated one and the user's own, run as written."""

import importlib.util
import itertools
from pathlib import Path

import numpy as np

from gradgen import compile_source, load_module

_imports = itertools.count()


def compiled_beside(folder, source, function, wrt="all", prefix="user"):
    """(the generated module, the user's module run as written, the generated text) for
    `function` of `source`, written as a file in `folder`."""
    path = Path(folder) / f"{prefix}_{next(_imports)}.py"
    path.write_text(source)
    text = compile_source(source, str(path), functions=[function], wrt=wrt).text
    spec = importlib.util.spec_from_file_location(path.stem, path)
    user = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(user)
    return load_module(text), user, text


def central(f, x, h=1e-6):
    """df/dx at x, one element at a time ((f(x + h e) - f(x - h e)) / 2h), shaped like x."""
    x = np.asarray(x, dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def central_leaves(f, kwargs, name, leaves_of, replaced, h=1e-6):
    """d f / d each element of each leaf of kwargs[name] (its arrays and numbers, as
    `leaves_of` lists them; `replaced(value, leaves)` puts new ones in their places)."""
    leaves = [np.array(leaf, dtype=float) for leaf in leaves_of(kwargs[name])]
    out = []
    for k, leaf in enumerate(leaves):
        grad = np.zeros_like(leaf)
        for index in np.ndindex(leaf.shape):
            values = []
            for sign in (1, -1):
                moved = [x.copy() for x in leaves]
                moved[k][index] += sign * h
                parts = [m if np.ndim(m) else float(m) for m in moved]
                values.append(f(**{**kwargs, name: replaced(kwargs[name], parts)}))
            grad[index] = (values[0] - values[1]) / (2 * h)
        out.append(grad)
    return out
