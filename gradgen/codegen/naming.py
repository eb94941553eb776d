"""Every name gradgen writes into generated code is made here.

Names follow the seeds' chain-rule notation: `dL_dz1` is the derivative of L (the
returned value) with respect to z1. A reassigned user name gets versions `x`, `x_1`,
`x_2`... A made name never collides with any identifier in the user's file, with the
module-level names of the generated file, or with a name already made.
"""

from __future__ import annotations

import ast
import builtins
import keyword

from gradgen.ir.nodes import Call, Const, Var, variables
from gradgen.rules.table import TABLE

# Names the generated module itself relies on.
GENERATED_MODULE_NAMES = {"math", "np", "numpy"}


def identifiers(tree) -> set[str]:
    """Every identifier the user's file mentions, so made names can avoid them all."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
    return found


def top_level_identifiers(tree) -> set[str]:
    """The names a file binds at its top level (functions, classes, imports, assignments,
    loop and `with` targets, and names a function declares `global`)."""
    found = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        else:
            found |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found |= set(node.names)
    return found


def unused(base, taken):
    """A name a rewriter adds to a finished module (the Array API's `xp`, numba's loop
    index): `base`, else `base_2`, `base_3`, ..., the first that is none of `taken`."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


class ModuleNamer:
    """Names at module level of the generated file: functions and helpers."""

    def __init__(self, user_identifiers, module_level, top_level=None):
        self.user = set(user_identifiers)
        # the names the user's file binds at its top level: a documented name (`f_grad`) gives
        # way only to these, never to a parameter or local of some function (`def descend(x0,
        # f_grad)`), whose generated function keeps that parameter
        self.top = self.user if top_level is None else set(top_level)
        # names defined at module level of the generated file (constants, imports, helpers)
        self.module_level = set(module_level) | GENERATED_MODULE_NAMES
        self.taken = set(self.module_level)
        self.helpers = {}

    def _fresh(self, base, avoid=None):
        avoid = self.user if avoid is None else avoid
        name, k = base, 1
        while name in self.taken or name in avoid or keyword.iskeyword(name):
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name

    def grad_function(self, fname):
        return self._fresh(f"{fname}_grad", self.top)

    def value_and_grad_function(self, fname):
        return self._fresh(f"{fname}_value_and_grad", self.top)

    def kind_function(self, fname, kind):
        """`f_jvp`, `f_hvp`, `f_hessian`, `f_vjp`, `f_jacobian` (see gradgen.codegen.derivatives)."""
        return self._fresh(f"{fname}_{kind}")

    def helper(self, wanted):
        """A helper written into the generated module (e.g. the sigmoid), made once."""
        if wanted not in self.helpers:
            self.helpers[wanted] = self._fresh_helper(wanted)
        return self.helpers[wanted]

    def _fresh_helper(self, wanted):
        # the user's own helper name is free to reuse: the user's function is not emitted
        name, k = wanted, 1
        while name in self.taken or keyword.iskeyword(name):
            name, k = f"{wanted}_{k}", k + 1
        self.taken.add(name)
        return name

    def function_namer(self, params):
        return FunctionNamer(self, params)


class FunctionNamer:
    """Names inside one generated function: SSA versions and adjoints."""

    def __init__(self, module: ModuleNamer, params):
        self.module = module
        self.used = set(params)
        self.versions = {}
        self.base_of = {p: p for p in params}
        self.tangents = {}  # variable -> its tangent's name (forward mode)

    def _free(self, name):
        return not (
            name in self.used
            or name in self.module.taken
            or keyword.iskeyword(name)
            or name in _BUILTINS
        )

    def define(self, base):
        """A fresh SSA name for a new value of the user's variable `base`."""
        k = self.versions.get(base, 0)
        name = base if k == 0 and self._free(base) else None
        while name is None:
            k = max(k, 1)
            candidate = f"{base}_{k}"
            if self._free(candidate) and candidate not in self.module.user:
                name = candidate
            k += 1
        self.versions[base] = k if name != base else 1
        self.used.add(name)
        self.base_of[name] = base
        return name

    def adjoint(self, of, var):
        """`d{of}_d{var}`: the adjoint of `var` for output `of`."""
        base = f"d{of}_d{var}"
        name, k = base, 1
        while not self._free(name) or (name in self.module.user):
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name

    def tangent(self, var):
        """`d{var}`: the tangent of `var` in forward mode (its derivative along the caller's
        direction), made once per variable; a clash gets a suffix (`dx_1`)."""
        made = self.tangents
        if var not in made:
            base = f"d{var}"
            name, k = base, 1
            while not self._free(name) or (name in self.module.user):
                name, k = f"{base}_{k}", k + 1
            self.used.add(name)
            made[var] = name
        return made[var]

    def made(self, base):
        """A fresh name for a value gradgen names (a shared subexpression): `base` if free,
        else `base_1`, `base_2`..., never an identifier of the user's file."""
        name, k = base, 1
        while not self._free(name) or name in self.module.user:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        self.base_of[name] = base
        return name

    def value_base(self, expr, target=None):
        """What to call a value computed once and reused, from the source: the function and
        what it is applied to (`exp_shifted` for np.exp(shifted), `max_logits`,
        `exp_neg_abs_z`), a comparison's mask (`logits_mask`), and a piece of arithmetic
        after the variable it feeds (`per_sample_diff`)."""
        words = self._describe(expr)
        if words and len(words) <= 4:
            return "_".join(words)
        prim = getattr(expr, "prim", None)
        if prim in _COMPARISONS:
            lead = self._describe(expr.args[0])
            return "_".join((lead or [])[:2] + ["mask"])
        word = _WORDS.get(prim) or self._function_name(expr) or "part"
        if prim in ("ones_like", "zeros_like"):
            word = prim.split("_")[0]  # (np.ones_like(a * b): ones)
        return f"{self.base(target)}_{word}" if target else word

    def _describe(self, e):
        """Words naming `e` (a variable, or a function applied to a described value), or None."""
        if isinstance(e, Var):
            return [self.base(e.name)]
        if not isinstance(e, Call) or e.prim not in TABLE:
            return None
        if e.prim == "neg":
            inner = self._describe(e.args[0])
            return ["neg"] + inner if inner else None
        if e.prim == "pow" and isinstance(e.args[0], Var) and _number(e.args[1]) == 2:
            return [self.base(e.args[0].name), "sq"]
        if self._function_name(e) is None or not e.args:
            return None
        main = next((a for a in e.args if not _constant(a)), None)
        inner = self._describe(main) if main is not None else None
        return [self._function_name(e)] + inner if inner else None

    @staticmethod
    def _function_name(e):
        """`exp` for np.exp, `solve` for np.linalg.solve; None for an operator."""
        prim = TABLE.get(getattr(e, "prim", None))
        if prim is not None and not prim.names and prim.name.endswith("_list"):
            return prim.name[:-len("_list")]  # np.stack(hs) of a Python list: stack
        if prim is None or prim.operator is not None or not prim.names:
            return None
        return (prim.names.get(e.ns) or next(iter(prim.names.values()))).split(".")[-1]

    def stack(self, var):
        """The list that keeps `var`'s overwritten values: `x_stack`."""
        return self.define(f"{var}_stack")

    def underscore(self):
        """The loop variable of a backward loop that only counts."""
        return "_" if self._free("_") and "_" not in self.module.user else self.define("step")

    def base(self, name):
        """The user's name that SSA name `name` versions."""
        return self.base_of.get(name, name)


_BUILTINS = set(dir(builtins)) - {"_"}

_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge", "ge_strict", "le_strict"}
_WORDS = {"add": "sum", "sub": "diff", "mul": "prod", "div": "ratio", "pow": "power", "matmul": "product",
          "mod": "mod", "odeint_vjp": "ode_gradients"}


def _number(e):
    return e.value if isinstance(e, Const) and type(e.value) in (int, float) else None


def _constant(e):
    return not any(True for _ in variables(e))
