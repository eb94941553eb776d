"""What else `--emit` writes beside the gradient: jvp, hvp, grad_and_hvp, hessian, vjp, jacobian.

  jvp       forward mode over the function: each statement followed by its tangent line
  hvp       forward mode over the gradient function (forward over reverse): the derivative
            of the gradient along a direction, for a small multiple of one gradient's cost
  grad_and_hvp  both from that one pass: the gradient it computes on the way and its
            derivative along the direction (as jax.jvp(jax.grad(f)) gives both; a Newton step
            J / H needs the two, and two calls would run the forward and backward passes twice)
  hessian   the full (N, N) matrix, one hvp per unit direction (`scipy.optimize`'s `hess=`)
  vjp       the reverse pass of a function whose result is an array, seeded with the
            caller's cotangent instead of 1
  jacobian  one jvp per unit direction, shaped result.shape + parameter.shape (as jax.jacrev)

Extra inputs are keyword-only, after the function's own parameters: `d<p>` for a tangent
(named by gradgen.codegen.naming), `cotangent` for a vjp.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradgen.analysis import activity
from gradgen.analysis import arrays as array_facts
from gradgen.codegen import emit
from gradgen.errors import CompileError
from gradgen.ir import simplify
from gradgen.ir.nodes import Assign, Call, For, IndexAdd, Param, Save, Var, While, expressions, variables, walk
from gradgen.rules.lists import list_names
from gradgen.rules.table import LIBRARY_HELPERS, helper
from gradgen.transform import cse, forward

BACKWARD = "backward pass: upstream gradient times local gradient, last statement first"

KINDS = ("grad", "jvp", "hvp", "grad_and_hvp", "hessian", "vjp", "jacobian")
FOR_NUMBERS = {"grad", "jvp", "hvp", "grad_and_hvp", "hessian"}  # a function whose result is a number
FOR_ARRAYS = {"vjp", "jacobian", "jvp"}  # a function whose result may be an array
NEEDS = {"hessian": "hvp", "jacobian": "jvp"}  # written with the other one's function

helper("unravel_like", '''def unravel_like(vector, likes):
    """Pieces of a flat vector shaped like each of `likes` (a number for a number), in order."""
    pieces, start = [], 0
    for like in likes:
        size = np.size(like)
        piece = vector[start:start + size]
        pieces.append(piece.reshape(np.shape(like)) if np.ndim(like) else float(piece[0]))
        start += size
    return tuple(pieces)
''')
helper("ravel_all", '''def ravel_all(parts):
    """Every part flattened in C order, one after the other."""
    return np.concatenate([np.ravel(part) for part in parts])
''')
helper("jacobian_parts", '''def jacobian_parts(columns, value, likes):
    """Columns d(value)/d(element k) split per parameter: value.shape + parameter.shape each."""
    matrix = np.stack([np.ravel(c) for c in columns], axis=-1)
    parts, start = [], 0
    for like in likes:
        size = np.size(like)
        parts.append(matrix[:, start:start + size].reshape(np.shape(value) + np.shape(like)))
        start += size
    return tuple(parts)
''')

for _name in ("unravel_like", "ravel_all", "jacobian_parts"):  # (emit copied the table before these)
    emit.HELPERS[_name] = LIBRARY_HELPERS[_name]


def parse_kinds(text):
    """`--emit grad,hvp` -> ("grad", "hvp"); an unknown kind is an error naming the known ones."""
    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise CompileError(f"unknown --emit kind {', '.join(map(repr, unknown)) or '(none)'}: "
                           f"choose from {', '.join(KINDS)} (comma-separated)")
    return kinds


@dataclass
class Made:
    """One generated function: its name and text (what `compile` lists)."""

    kind: str
    name: str
    text: str


def tangent_params(fn, chosen, fnamer):
    """f's parameters, then a keyword-only tangent `d<p>` per differentiated parameter."""
    names = {p: fnamer.tangent(p) for p in chosen}
    return names, list(fn.params) + [Param(names[p], keyword_only=True) for p in chosen]


def call_args(params):
    """How a generated function passes its own parameters on: positional, then `k=k`."""
    return ", ".join(p.name if not p.keyword_only else f"{p.name}={p.name}" for p in params)


def jvp(fn, body, chosen, fnamer, name, emitter, where, display, arrays=frozenset()):
    """`f_jvp(<params>, *, d<p>...)` -> (value, derivative along the d<p>)."""
    tangents, params = tangent_params(fn, chosen, fnamer)
    lists = list_names(body) | {p.name for p in fn.params if p.structured}
    active = activity.varied(body, chosen)
    fwd = forward.Forward(active, fnamer.tangent, lists, where, arrays)
    fwd.params = {p.name for p in fn.params}
    fwd.writes = forward.in_place(body)
    stmts = fwd.start(fn.params, chosen) + fwd.block(body)
    t = fwd.expr(fn.result, fn.result)
    t = t if t is not None else fwd.zero(fn.result, fn.result)
    value = fn.result
    needed = {v.name for e in (value, t) for v in variables(e)}
    stmts = forward.tidy(simplify.dead_code(stmts, needed))
    forward.refuse_needed(stmts, (value, t), where)
    stmts = _computed_once(fn, stmts, fnamer, arrays, set(fnamer.tangents.values()))
    along = ", ".join(tangents[p] for p in chosen) or "nothing"
    doc = (f"Value of {fn.name} and its derivative along ({along}), by forward mode: one pass, each "
           f"statement followed by its tangent line.\n\nReturns ({fn.result_name}, d{fn.result_name}), where "
           f"d{fn.result_name} = sum over the differentiated parameters p of d{fn.result_name}/dp * d<p> ({display}).")
    sections = [("forward pass, each value followed by its tangent", stmts)] if stmts else []
    returns = f"{emit.expr_text(value, emitter)}, {emit.expr_text(t, emitter)}"
    return Made("jvp", name, emit.function_text(name, params, doc, sections, returns, emitter))


def _computed_once(fn, stmts, fnamer, arrays, tangents):
    """Each forward value computed once (gradgen.transform.cse), tangent lines included: a call a
    tangent rule reads again (`np.exp(shifted)`) is named where it is first computed."""
    in_place = any(isinstance(s, Assign) and (s.augmented or getattr(s.expr, "prim", None) in ("setitem", "append"))
                   for s in walk(stmts))
    shared, _ = cse.share(stmts, [], fnamer, arrays, frozenset(tangents), targets_stay=not in_place)
    return shared


def hvp(fn, parts, chosen, fnamer, name, emitter, where, display, arrays=frozenset(), with_grad=False):
    """`f_hvp(<params>, *, d<p>...)`: forward mode over the gradient's own statements;
    `with_grad`: `f_grad_and_hvp`, which returns the gradient those statements compute too."""
    stmts, grads = parts
    tangents, params = tangent_params(fn, chosen, fnamer)
    lists = list_names(stmts) | {p.name for p in fn.params if p.structured}
    lists |= {s.target for s in walk(stmts) if isinstance(s, Assign) and getattr(s.expr, "prim", None) in
              ("zeros_like_tree", "list_zeros", "unstack", "unconcatenate", "unjoin", "add_lists")}
    active = activity.varied(stmts, chosen)
    arrays = array_facts.through(stmts, arrays)
    fwd = forward.Forward(active, fnamer.tangent, lists, where, arrays)
    fwd.params = {p.name for p in fn.params}
    fwd.writes = forward.in_place(stmts)
    body = fwd.start(fn.params, chosen) + fwd.block(stmts)
    outs = [fwd.expr(g, None) for g in grads]
    structured = {p.name for p in fn.params if p.structured}
    outs = [t if t is not None else Call("zeros_like_tree", (Var(p),)) if p in structured else fwd.zero(g, g)
            for t, g, p in zip(outs, grads, chosen)]
    needed = {v.name for t in outs + (list(grads) if with_grad else []) for v in variables(t)}
    needed |= {s.count for s in walk(body) if isinstance(s, (For, While)) and s.count}  # a backward loop's trips
    for s in walk(body):  # an addition into an array is kept, with what it reads
        if isinstance(s, IndexAdd):
            needed |= {s.target} | {v.name for e in expressions(s) for v in variables(e)}
    needed |= {s.name for s in walk(body) if isinstance(s, Save)}  # (kept: it pushes its value)
    body = forward.tidy(simplify.dead_code(body, needed))
    forward.refuse_needed(body, outs, where)
    body = _computed_once(fn, body, fnamer, arrays, set(fnamer.tangents.values()))
    along = ", ".join(tangents[p] for p in chosen)
    doc = (f"Hessian of {fn.name} times the direction ({along}), by forward mode over the gradient.\n\n"
           f"Returns the derivative of the gradient with respect to {', '.join(chosen)} along ({along}), "
           f"in the gradient's structure ({display}).")
    returns = _returned(outs, emitter)
    if with_grad:
        doc = (f"Gradient of {fn.name} and its derivative along ({along}) (the Hessian times the direction), "
               f"from one pass: forward mode over the gradient.\n\nReturns (the gradient with respect to "
               f"{', '.join(chosen)}, its derivative along ({along})), each in the gradient's structure ({display}).")
        returns = f"{_returned(grads, emitter)}, {returns}"
    sections = [("gradient, each value followed by its tangent", body)] if body else []
    return Made("grad_and_hvp" if with_grad else "hvp", name, emit.function_text(name, params, doc, sections, returns,
                                                                                  emitter))


def _returned(values, emitter):
    """The text of `values` returned: one value as it is, several as a tuple."""
    text = ", ".join(emit.expr_text(v, emitter) for v in values)
    return f"({text})" if len(values) != 1 else text


def vjp(fn, parts, fnamer, name, cotangent, emitter, display):
    """`f_vjp(<params>, *, cotangent)`: the reverse pass seeded with the caller's cotangent."""
    params = list(fn.params) + [Param(cotangent, keyword_only=True)]
    grads = ", ".join(emit.expr_text(g, emitter) for g in parts.grads) or "()"
    grads = f"({grads})" if len(parts.grads) > 1 else grads
    sections = [(h, b) for h, b in (("forward pass", parts.forward_grad), (BACKWARD, parts.backward)) if b]
    of = fn.result_name
    doc = (f"Vector-Jacobian product of {fn.name} with respect to {', '.join(parts.chosen) or 'nothing'}: "
           f"{cotangent} (shaped like {of}, the value {fn.name} returns) times the Jacobian of {of}, in the "
           f"gradient's structure ({display}).")
    return Made("vjp", name, emit.function_text(name, params, doc, sections, grads, emitter))


def hessian(fn, chosen, fnamer, name, hvp_name, emitter, display, where=None):
    """`f_hessian(<params>)`: one hvp per unit direction, the (N, N) matrix scipy takes."""
    hvp_params, likes, targets, sizes = _directions(fn, chosen, fnamer, emitter, "Hessian", "hvp", where)
    emitter.used_helpers.add("ravel_all")
    size, matrix, k = fnamer.define("size"), fnamer.define("hessian"), fnamer.define("k")
    product = f"{hvp_name}({call_args(hvp_params + emitter.constant_params)})"
    if len(chosen) == 1:
        product = f"({product},)"
    units = [f"    {size} = {sizes}",
             f"    {matrix} = np.zeros(({size}, {size}))",
             f"    for {k} in range({size}):",
             f"        {targets} = unravel_like(np.eye(1, {size}, {k})[0], ({likes}))",
             f"        {matrix}[:, {k}] = ravel_all({product})",
             f"    return {matrix}"]
    doc = (f"Hessian of {fn.name} with respect to {', '.join(chosen)}: an (N, N) array, N the number of their "
           f"elements, each flattened in C order, in parameter order; column k is {hvp_name} along the k-th unit "
           f"direction ({display}). What scipy.optimize.minimize(..., hess=) takes.")
    return Made("hessian", name, _text(name, fn.params, doc, units, emitter))


def jacobian(fn, chosen, fnamer, name, jvp_name, emitter, display, where=None):
    """`f_jacobian(<params>)`: one jvp per unit direction, result.shape + param.shape."""
    jvp_params, likes, targets, sizes = _directions(fn, chosen, fnamer, emitter, "Jacobian", "vjp", where)
    emitter.used_helpers.add("jacobian_parts")
    size, columns, k = fnamer.define("size"), fnamer.define("columns"), fnamer.define("k")
    value, tangent = fnamer.define("value"), fnamer.define("tangent")
    parts = f"jacobian_parts({columns}, {value}, ({likes}))"
    units = [f"    {size} = {sizes}",
             f"    {columns} = []",
             f"    for {k} in range({size}):",
             f"        {targets} = unravel_like(np.eye(1, {size}, {k})[0], ({likes}))",
             f"        {value}, {tangent} = {jvp_name}({call_args(jvp_params + emitter.constant_params)})",
             f"        {columns}.append({tangent})",
             f"    return {parts if len(chosen) > 1 else parts + '[0]'}"]
    doc = (f"Jacobian of {fn.name} with respect to {', '.join(chosen)}: shape result.shape + parameter.shape "
           f"(as jax.jacrev){', a tuple in parameter order' if len(chosen) > 1 else ''}; column k is {jvp_name} "
           f"along the k-th unit direction ({display}).")
    return Made("jacobian", name, _text(name, fn.params, doc, units, emitter))


def _directions(fn, chosen, fnamer, emitter, what, instead, where):
    """What a matrix built one unit direction at a time needs: the per-direction function's
    parameters, the parameters as a tuple, the tangents it unpacks into, their total size."""
    if any(p.structured for p in fn.params if p.name in chosen):
        kind = "NamedTuple or dataclass" if any(p.record for p in fn.params if p.name in chosen) else \
            "list, tuple or dict"
        message = (f"'{fn.name}': a {what} for a {kind} parameter is not written yet; pass its "
                   f"arrays as separate parameters, or emit {instead}")
        raise CompileError(message) if where is None else where(None, message)
    emitter.used_helpers.add("unravel_like")
    emitter.imports.add("numpy")
    tangents, params = tangent_params(fn, chosen, fnamer)
    comma = "," if len(chosen) == 1 else ""
    return (params, ", ".join(chosen) + comma, ", ".join(tangents[p] for p in chosen) + comma,
            " + ".join(f"np.size({p})" for p in chosen))


def _text(name, params, doc, units, emitter):
    params, check = emitter.signature(name, params)
    head = f"def {name}({emit.signature_text(params)}):\n{emit._indent(emit._docstring(doc))}\n"
    return emit.format_function(head, units, check)
