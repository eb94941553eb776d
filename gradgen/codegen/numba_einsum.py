"""np.einsum under `--jit numba` (issue 23, item 3): numba has no np.einsum, and gmm's and ht's
gradients are einsums ("kij,nkj->nki" forward, "nki,nkj->kij" back). The subscripts are
constants of the generated code, so each einsum becomes a loop nest written for its
subscripts when compiling: `einsum_matmul("kij,nkj->nki", Ls, centered)` is
`einsum_kij_nkj_to_nki(Ls, centered)`, a function of the module that numba compiles: loops
over n, k and i, each summing `x0[k, i, j] * x1[n, k, j]` over j into `out[n, k, i]`:
the output's letters outside, the summed ones inside. A letter of two lengths (np.einsum
stretches a length 1) is a ValueError when it runs: the plain module takes it.
"""

from __future__ import annotations

import ast

SPELLINGS = ("einsum_matmul", "np.einsum")  # the generated code's einsums (gradgen.codegen.spellings)


def subscripts(node):
    """The subscripts of an einsum call of the generated code ("kij,nkj->nki"), or None for
    another call, or one numba cannot take (keywords, operands other than the letters say)."""
    if ast.unparse(node.func) not in SPELLINGS or node.keywords or not node.args:
        return None
    first = node.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str) and "->" in first.value):
        return None
    inputs, output = first.value.split("->")
    parts = inputs.split(",")
    if len(parts) != len(node.args) - 1 or not all(p.isalpha() and len(set(p)) == len(p) for p in parts) \
            or not (output == "" or output.isalpha()):
        return None
    return first.value


def helper_name(spec):
    """`einsum_kij_nkj_to_nki` for "kij,nkj->nki" (`einsum_i_i_to_number` for "i,i->")."""
    inputs, output = spec.split("->")
    return f"einsum_{inputs.replace(',', '_')}_to_{output or 'number'}"


def respelled(node):
    """The einsum call `node` as its helper's call (the operands alone)."""
    return ast.Call(ast.Name(helper_name(subscripts(node))), list(node.args[1:]), [])


def helpers(specs):
    """The text of the helper of each of `specs`, in a fixed order."""
    return [_helper(spec) for spec in sorted(specs)]


def _helper(spec):
    inputs, output = spec.split("->")
    parts = inputs.split(",")
    operands = [f"x{k}" for k in range(len(parts))]
    lines = [f"@numba.njit(cache=False)", f"def {helper_name(spec)}({', '.join(operands)}):",
             f'    """np.einsum("{spec}", {", ".join(operands)}) as loops (numba has no np.einsum)."""']
    first = {}  # letter -> (operand, axis) where its length is read
    for k, part in enumerate(parts):
        new = [(axis, c) for axis, c in enumerate(part) if c not in first]
        for axis, c in new:
            first[c] = (k, axis)
        if len(new) == len(part):
            lines.append(f"    {', '.join(f'n_{c}' for c in part)}{',' if len(part) == 1 else ''} = {operands[k]}.shape")
        else:
            lines += [f"    n_{c} = {operands[k]}.shape[{axis}]" for axis, c in new]
    checks = [f"{operands[k]}.shape[{axis}] != n_{c}" for k, part in enumerate(parts)
              for axis, c in enumerate(part) if first[c] != (k, axis)]
    if checks:
        lines += [f"    if {' or '.join(checks)}:",
                  f'        raise ValueError("np.einsum(\'{spec}\'): a letter of two lengths (--jit numba)")']
    summed = [c for c in dict.fromkeys("".join(parts)) if c not in output]
    product = " * ".join(f"{x}[{', '.join(part)}]" for x, part in zip(operands, parts))
    if output:
        lines.append(f"    out = np.empty(({', '.join(f'n_{c}' for c in output)}{',' if len(output) == 1 else ''}))")
    depth = 1
    for c in output:
        lines.append(f"{'    ' * depth}for {c} in range(n_{c}):")
        depth += 1
    lines.append(f"{'    ' * depth}total = 0.0")
    inner = depth
    for c in summed:
        lines.append(f"{'    ' * depth}for {c} in range(n_{c}):")
        depth += 1
    lines.append(f"{'    ' * depth}total += {product}")
    if output:
        lines.append(f"{'    ' * inner}out[{', '.join(output)}] = total")
        lines.append("    return out")
    else:
        lines.append("    return total")
    return "\n".join(lines) + "\n"
