"""Python lists inside the loss: their primitives, registered into the one rule table of
gradgen.rules.table.

A list the loss builds (`hs = [h]`, `hs.append(h)`, `[f(x) for x in xs]`) is a value of its
own, and its gradient is a list too, one entry per element (0.0 until a gradient reaches
it). The backward pass mirrors the forward one: where the forward pass appended, the
backward pass pops (`dh = dhs.pop()`), so at every point of the backward sweep the gradient
list is exactly as long as the list was at the same point forward; `hs[-1]` then means the
same element in both, and `dhs[-1] = dhs[-1] + g` adds to it. An element is read into a
variable of its own (`h_prev = hs[-1]`), so the backward pass never reads a list whose later
appends changed its length. `np.stack(hs)` gives its gradient back as the list of its rows.

Only these uses compile (see gradgen.frontend.lower): a list bound once, grown by `append`, read by
index, by `len`, by `for x in hs`, and stacked by `np.stack`/`np.array`; anything else that
would change a list (`hs[i] = e`, `pop`, a second name for it) is a located CompileError.
"""

from __future__ import annotations

from gradgen.ir.nodes import Assign, Call, Const, Var, walk
from gradgen.rules.table import ARRAY_RULES, helper, primitive

_ITEM = (("index", ("i",)),)


def _element(g, i):
    return Call("getitem", (g, Const(i)), "op", params=_ITEM)


# `[e0, e1, ...]`: element i's gradient is the gradient list's entry i
primitive("list", None, min_args=0, elementwise=False, tangent="linear",
          vjp=(lambda i: lambda g, out, *xs, **p: _element(g, i),))
# `hs.append(v)`: the list's gradient passes on; v's is popped from it (gradgen.transform.reverse.backward)
primitive("append", 2, elementwise=False, tangent="linear",
          vjp=(lambda g, out, xs, v: g, lambda g, out, xs, v: Call("pop", (g,), None)))
# `hs[i]` (one index): the gradient added at entry i of the gradient list
primitive("list_get", 2, elementwise=False, tangent="linear",
          vjp=(lambda g, out, xs, i: Call("list_add_at", (g, xs, i), None), None))
# `np.stack(hs, axis)` / `np.array(hs)` of a list variable: its rows, as a list
for _name in ("stack_list", "array_list"):
    primitive(_name, 1, keywords=("axis",), elementwise=False, tangent="linear",
              vjp=(lambda g, out, xs, **p: Call("unstack", (g,), None, params=(("axis", p.get("axis", 0)),)),))

# `np.concatenate(parts, axis)` of a list variable (`[np.ravel(p) for p in params]`): its pieces, as a list
primitive("concatenate_list", 1, keywords=("axis",), elementwise=False, tangent="linear",
          vjp=(lambda g, out, xs, **p: Call("unconcatenate", (g, xs), None, params=(("axis", p.get("axis", 0)),)),))
helper("unconcatenate", '''def unconcatenate(g, parts, axis=0):
    """The pieces of g that the parts of np.concatenate(parts, axis) became, as a list."""
    ends = np.cumsum([np.shape(part)[axis] for part in parts])
    return np.split(g, ends[:-1], axis=axis)
''', tangent="linear_in_first")

# `np.vstack(parts)` / `np.hstack(parts)` of a list variable: its pieces, each in its part's shape
for _name in ("vstack_list", "hstack_list"):
    primitive(_name, 1, elementwise=False, tangent="linear",
              vjp=(lambda how: lambda g, out, xs: Call("unjoin", (g, xs, Const(how)), None))(_name[0]))
helper("unjoin", '''def unjoin(g, parts, how):
    """The pieces of g that the parts of np.vstack ("v") or np.hstack ("h") became."""
    if how == "v":
        shaped, axis = [np.atleast_2d(p) for p in parts], 0
    else:
        shaped = [np.atleast_1d(p) for p in parts]
        axis = 0 if np.ndim(shaped[0]) == 1 else 1
    ends = np.cumsum([np.shape(p)[axis] for p in shaped])
    pieces = np.split(g, ends[:-1], axis=axis)
    return [np.reshape(piece, np.shape(p)) for piece, p in zip(pieces, parts)]
''', tangent="linear_in_first")

# Backward-only pieces (no derivative of their own): gradient lists made, grown and read; in
# forward mode (a Hessian-vector product) unstack and pop carry their list's tangent, a made
# list of zeros has none, and list_add_at is refused.
for _name, _arity, _tangent in (("list_add_at", 3, None), ("unstack", 1, "linear"), ("pop", 1, "linear"),
                                ("list_zeros", 1, "zero")):
    primitive(_name, _arity, kind="piecewise", keywords=("axis",) if _name == "unstack" else (), tangent=_tangent,
              value_slots=(0,) if _tangent == "linear" else None)

helper("add_lists", '''def add_lists(a, b):
    """Two gradients of one list, entry by entry."""
    return [x + y for x, y in zip(a, b)]
''', tangent="linear")


ARRAY_RULES.update({"list", "append", "list_get", "stack_list", "array_list", "concatenate_list", "vstack_list", "hstack_list"})
LIST_MAKERS = {"list", "append"}  # the primitives whose value is a list
# the primitives that take a list variable as an argument (any other is given np.array(xs))
LIST_READERS = LIST_MAKERS | {"list_get", "stack_list", "array_list", "concatenate_list", "vstack_list",
                              "hstack_list", "len"}


def list_names(stmts):
    """Names bound to Python lists in `stmts`: made by a list primitive, or given one (`value =
    items`: a helper that returns a list on each of several paths, `[...] if c else [...]`)."""
    assigns = [s for s in walk(stmts) if isinstance(s, Assign)]
    names = {s.target for s in assigns if isinstance(s.expr, Call) and s.expr.prim in LIST_MAKERS}
    size = -1
    while size != len(names):
        size = len(names)
        names |= {s.target for s in assigns if isinstance(s.expr, Var) and s.expr.name in names}
    return names
