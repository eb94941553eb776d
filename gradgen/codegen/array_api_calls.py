"""The Array API spelling of one generated statement (gradgen/codegen/array_api.py applies it).

`np.exp(x)` is `xp.exp(x)`, `np.arctan2` is `xp.atan2`, `np.concatenate` is `xp.concat`;
`np.size(a)`, `np.shape(a)` and `np.ndim(a)` read the shape (`math.prod(a.shape)`); a
comparison used as a number (`g * (x == m)`) is cast to the real dtype, since the standard
defines no arithmetic on booleans; a helper gradgen writes into the module gets the
namespace as its first argument. What the standard has no spelling for raises `Refusal`,
with a test that finds the user's own call or write it came from.
"""

from __future__ import annotations

import ast
import copy

from gradgen.codegen import array_api_helpers, emit
from gradgen.frontend.effects import RANDOM_DRAWS

# np.NAME -> xp.NAME, the same name in the standard (2023.12, with its linalg extension)
_SAME = frozenset("""
    abs exp expm1 log log1p log2 log10 sqrt square sin cos tan sinh cosh tanh sign floor ceil trunc maximum minimum
    logaddexp hypot where clip isfinite isnan isinf logical_and logical_or logical_not logical_xor negative positive
    add subtract multiply divide floor_divide remainder copysign signbit sum mean prod max min argmax argmin all any
    zeros ones full empty eye arange linspace zeros_like ones_like full_like empty_like reshape stack broadcast_to
    broadcast_arrays moveaxis flip roll tile repeat matmul tensordot sort argsort meshgrid diff asarray std var
""".split())
_RENAMED = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
            "arctanh": "atanh", "arctan2": "atan2", "power": "pow", "absolute": "abs", "concatenate": "concat",
            "true_divide": "divide", "amax": "max", "amin": "min", "array": "asarray", "mod": "remainder"}
_LINALG = frozenset("cholesky det inv slogdet solve eigh eigvalsh svd svdvals qr matrix_rank pinv matrix_power "
                    "cross outer".split())
_CONSTANTS = {"pi": "pi", "e": "e", "inf": "inf", "nan": "nan", "Inf": "inf", "NaN": "nan"}
_DTYPES = {"float64": "float64", "float32": "float32", "int64": "int64", "int32": "int32", "int16": "int16",
           "int8": "int8", "uint8": "uint8", "bool_": "bool", "complex128": "complex128", "complex64": "complex64"}
_BUILTIN_DTYPES = {"float": "float64", "int": "int64", "bool": "bool", "complex": "complex128"}
_MASKS = frozenset("logical_and logical_or logical_not logical_xor isfinite isnan isinf signbit".split())
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_REDUCTIONS = frozenset("sum mean prod cumulative_sum".split())
_LIBRARIES = frozenset({"math", "logging", "warnings"})  # modules whose calls the generated code keeps


class Refusal(Exception):
    """A construct with no Array API spelling. `match(node, module)` picks the user's node
    it came from (a call by its qualified name, a write), to point the error at."""

    def __init__(self, message, match=None, derived=None):
        super().__init__(message)
        self.message = message
        self.match = match
        self.derived = derived  # the message where the call is the derivative's, not the user's


class Respell(ast.NodeTransformer):
    """Rewrites statements of one generated function; `xp` is its namespace's name."""

    def __init__(self, xp, takes_xp, imported, lists, masks, numbers=False, number_names=frozenset()):
        self.xp = xp
        self.number_names = number_names  # names that never hold arrays (a comparison of them is a bool)
        self.numbers = numbers  # a function of numbers: NumPy's calls stay, helpers get `np`
        # name -> the name its comparison reads (`m = x == top`: x); cast where used, or where made
        self.masks = {name: ref for name, (ref, made) in masks.items() if not made}
        self.cast_where_made = {name for name, (ref, made) in masks.items() if made}
        self.takes_xp = takes_xp  # module functions whose first parameter is the namespace
        self.imported = imported
        self.lists = lists  # names bound to Python lists: writing into one is fine
        self.helpers = set()  # backend_helpers the rewritten code calls
        self.uses_math = False
        self.uses_xp = False
        self.uses_numpy = False  # (a function of numbers passes np to a helper)
        self.changed = False

    def statement(self, node):
        """A rewritten copy of `node` (a statement or an expression), or None if it needs none."""
        self.changed = False
        if not self.numbers:
            self._refuse_writes(node)
        new = self.visit(copy.deepcopy(node))
        if not self.numbers and isinstance(new, ast.Assign) and isinstance(new.targets[0], ast.Name) and \
                new.targets[0].id in self.cast_where_made:
            new.value = self._real(new.value)
        return new if self.changed else None

    # --- the namespace and the names it writes --------------------------------------------

    def _ns(self, *attrs):
        self.uses_xp = self.changed = True
        node = ast.Name(self.xp)
        for attr in attrs:
            node = ast.Attribute(node, attr)
        return node

    def _call(self, func, args, keywords=()):
        self.changed = True
        return ast.Call(func, list(args), list(keywords))

    def _helper(self, name, *args):
        self.helpers.add(name)
        return self._call(ast.Name(name), [self._ns(), *args])

    def _math(self, attr):
        self.uses_math = self.changed = True
        return ast.Attribute(ast.Name("math"), attr)

    # --- writes -----------------------------------------------------------------------------

    def _refuse_writes(self, node):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store) and _root(sub) not in self.lists:
                    raise Refusal(f"the code for this line writes into an array in place (`{ast.unparse(sub)} "
                                  f"{'+' if isinstance(node, ast.AugAssign) else ''}= ...`), which not every array "
                                  "library allows (JAX arrays are immutable); compile with --backend numpy",
                                  _is_write)

    # --- expressions ------------------------------------------------------------------------

    def visit_Attribute(self, node):
        chain = _dotted(node)
        if chain and chain[0] == "np" and not self.numbers:
            name = ".".join(chain[1:])
            if name in _CONSTANTS:
                return self._math(_CONSTANTS[name])
            if name == "newaxis":
                self.changed = True
                return ast.Constant(None)
            if name in _DTYPES:
                return self._ns(_DTYPES[name])
            raise _unknown(name)
        return self.generic_visit(node)

    def visit_Call(self, node):
        chain = _dotted(node.func)
        if chain and chain[0] == "np" and not self.numbers:
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return self._numpy(node, ".".join(chain[1:]))
        if chain and len(chain) > 1 and chain[0] in self.imported and chain[0] not in _LIBRARIES:
            qualified = ".".join(chain)
            owner = "SciPy" if chain[0] == "scipy" else chain[0]
            raise Refusal(f"{qualified} is {owner}'s, and the Array API standard has no equivalent; compile with "
                          "--backend numpy", _calls(qualified),
                          f"the gradient of this line calls {qualified}, which is {owner}'s, and the Array API "
                          "standard has no equivalent; compile with --backend numpy")
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id == "einsum_matmul":  # np.einsum (gradgen.codegen.spellings)
            raise _unknown("einsum")
        if isinstance(func, ast.Name) and (func.id in self.takes_xp or func.id in emit.HELPERS):
            if func.id not in self.takes_xp and func.id not in array_api_helpers.HELPERS:
                raise Refusal(f"the code generated here needs gradgen's NumPy helper '{func.id}', which has no "
                              "Array API version; compile with --backend numpy")
            if func.id in array_api_helpers.HELPERS:
                self.helpers.add(func.id)
            if func.id in self.takes_xp:
                node.args.insert(0, self._ns() if not self.numbers else ast.Name("np"))
                self.changed = self.uses_numpy = True
        elif isinstance(func, ast.Attribute) and func.attr in RANDOM_DRAWS and isinstance(func.value, ast.Name):
            raise Refusal(f"the random draw {ast.unparse(func)}(...) makes NumPy arrays; pass the noise in as a "
                          "parameter, or compile with --backend numpy", _draws(func.attr))
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, _ARITHMETIC):
            node.left, node.right = self._real(node.left), self._real(node.right)
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            node.operand = self._real(node.operand)
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.op, _ARITHMETIC):
            node.value = self._real(node.value)
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        if not self.numbers and node.arg == "dtype" and isinstance(node.value, ast.Name) and node.value.id in _BUILTIN_DTYPES:
            node.value = self._ns(_BUILTIN_DTYPES[node.value.id])
        return node

    def _real(self, node):
        """A boolean mask used as a number, as 0.0/1.0 in the real dtype of what it compares."""
        if self.numbers or not self._is_mask(node):
            return node
        ref = next((n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id not in (self.xp, "math")), None)
        if isinstance(node, ast.Name):
            ref = ast.Name(self.masks[node.id]) if self.masks[node.id] else None
        dtype = self._helper("real_dtype", ref) if ref is not None else self._ns("float64")
        return self._call(self._ns("astype"), [node, dtype])

    def _is_mask(self, node):
        if isinstance(node, ast.Compare):
            return not all(isinstance(n, ast.Constant) or (isinstance(n, ast.Name) and n.id in self.number_names)
                           or isinstance(n, (ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.cmpop,
                                             ast.expr_context)) or n is node for n in ast.walk(node))
        if isinstance(node, ast.Name) and node.id in self.masks:
            return True
        chain = _dotted(node.func) if isinstance(node, ast.Call) else None
        return chain is not None and len(chain) == 2 and chain[0] == self.xp and chain[1] in _MASKS

    # --- NumPy's functions --------------------------------------------------------------

    def _numpy(self, node, name):
        args, kw = node.args, {k.arg: k.value for k in node.keywords}
        special = getattr(self, "_np_" + name.replace(".", "_"), None)
        if special is not None:
            out = special(node, args, kw)
            if out is not None:
                return out
        if name in _SAME or name in _RENAMED:
            call = self._call(self._ns(_RENAMED.get(name, name)), args, node.keywords)
            if _RENAMED.get(name, name) in _REDUCTIONS and args:
                call.args[0] = self._real(call.args[0])
            return call
        if name.startswith("linalg.") and name[7:] in _LINALG:
            return self._call(self._ns("linalg", name[7:]), args, node.keywords)
        raise _unknown(name)

    def _np_size(self, node, args, kw):
        if len(args) == 2 or "axis" in kw:
            axis = args[1] if len(args) == 2 else kw["axis"]
            return ast.Subscript(self._attr(args[0], "shape"), axis)
        return self._call(self._math("prod"), [self._attr(args[0], "shape")])

    def _np_shape(self, node, args, kw):
        return self._attr(args[0], "shape")

    def _np_ndim(self, node, args, kw):
        return self._attr(args[0], "ndim")

    def _attr(self, value, attr):
        self.changed = True
        return ast.Attribute(value, attr)

    def _np_broadcast(self, node, args, kw):
        """np.broadcast(a, b) (a value's shape, from the arrays it is made of): the first of
        the broadcast arrays, a view of that shape."""
        return ast.Subscript(self._call(self._ns("broadcast_arrays"), args), ast.Constant(0))

    def _np_ones(self, node, args, kw):
        return self._of_shape(args, kw, "real_ones_like")

    def _np_zeros(self, node, args, kw):
        return self._of_shape(args, kw, "real_zeros_like")

    def _of_shape(self, args, kw, helper):
        """np.ones(np.shape(v)) (float64, as NumPy makes it): ones like v, in v's library and
        of its real dtype."""
        if len(args) != 1 or kw:
            return None
        shape = args[0]
        if isinstance(shape, ast.Attribute) and shape.attr == "shape":
            return self._helper(helper, shape.value)
        if isinstance(shape, ast.Call) and _dotted(shape.func) in ([self.xp, "shape"], ["np", "shape"]) and \
                len(shape.args) == 1:
            return self._helper(helper, shape.args[0])
        return None

    def _np_ones_like(self, node, args, kw):
        return self._like(node, args, kw, "real_ones_like")

    def _np_zeros_like(self, node, args, kw):
        return self._like(node, args, kw, "real_zeros_like")

    def _like(self, node, args, kw, helper):
        dtype = kw.get("dtype")
        if len(args) == 1 and len(kw) == 1 and _dotted(dtype) == [self.xp, "float64"]:  # dtype=float, respelled
            return self._helper(helper, args[0])
        return None

    def _np_copy(self, node, args, kw):
        return self._call(self._ns("asarray"), args, [ast.keyword("copy", ast.Constant(True))])

    def _np_expand_dims(self, node, args, kw):
        """One xp.expand_dims per axis (the standard's takes one int): an integer axis as it
        is (a reduction's gradient putting its axis back); a tuple's axes in an order that
        puts each where NumPy would, non-negative ones ascending, negative ones from -1 down."""
        axis = args[1] if len(args) > 1 else kw.get("axis")
        elements = axis.elts if isinstance(axis, ast.Tuple) else [axis]
        axes = [_integer(a) for a in elements]
        if None in axes or (min(axes) < 0 <= max(axes)):
            what = "a mix of negative and non-negative axes" if None not in axes else "an axis not written as a number"
            raise Refusal(f"{ast.unparse(node)}: xp.expand_dims adds one axis at a time, and {what} cannot be "
                          "put back one by one without the array's ndim; write one np.expand_dims per axis, or "
                          "compile with --backend numpy", _calls("numpy.expand_dims"),
                          f"the gradient of this line puts the reduced axes {ast.unparse(axis)} back with "
                          f"np.expand_dims, and the standard's xp.expand_dims adds one axis at a time: {what} cannot "
                          "be put back one by one without the array's ndim; write the axes all non-negative (or all "
                          "negative), or compile with --backend numpy")
        out = args[0]
        for a in sorted(axes, reverse=axes[0] < 0):
            out = self._call(self._ns("expand_dims"), [out], [ast.keyword("axis", _constant(a))])
        return out

    def _np_swapaxes(self, node, args, kw):
        if len(args) == 3 and {_integer(a) for a in args[1:]} == {-1, -2}:
            return self._call(self._ns("matrix_transpose"), args[:1])
        raise _unknown("swapaxes")

    def _np_where(self, node, args, kw):
        if len(args) != 3:
            raise _unknown("where")
        args[1], args[2] = self._real(args[1]), self._real(args[2])
        return None

    def _np_transpose(self, node, args, kw):
        if len(args) == 2 or "axes" in kw:
            return self._call(self._ns("permute_dims"), [args[0], args[1] if len(args) == 2 else kw["axes"]])
        if isinstance(args[0], ast.Name):  # all axes reversed
            reverse = ast.parse(f"tuple(range({args[0].id}.ndim))[::-1]", mode="eval").body
            return self._call(self._ns("permute_dims"), [args[0], reverse])
        return None

    def _np_outer(self, node, args, kw):
        column = self._call(self._ns("reshape"), [args[0], ast.Tuple([ast.Constant(-1), ast.Constant(1)])])
        row = self._call(self._ns("reshape"), [args[1], ast.Tuple([ast.Constant(-1)])])
        return ast.BinOp(column, ast.Mult(), row)

    def _np_cumsum(self, node, args, kw):
        axis = args[1] if len(args) > 1 else kw.get("axis")
        if axis is None:
            flat = self._call(self._ns("reshape"), [args[0], ast.Tuple([ast.Constant(-1)])])
            return self._call(self._ns("cumulative_sum"), [flat])
        return self._call(self._ns("cumulative_sum"), [self._real(args[0])], [ast.keyword("axis", axis)])

    def _np_std(self, node, args, kw):
        node.keywords = [ast.keyword("correction", k.value) if k.arg == "ddof" else k for k in node.keywords]
        return None

    _np_var = _np_std

    def _np_round(self, node, args, kw):
        if len(args) > 1 or kw:
            raise Refusal(f"{ast.unparse(node)}: the standard's round has no decimals; compile with --backend "
                          "numpy", _calls("numpy.round"))
        return self._call(self._ns("round"), args)

    def _np_squeeze(self, node, args, kw):
        if len(args) < 2 and "axis" not in kw:
            raise Refusal(f"{ast.unparse(node)}: the standard's squeeze needs the axis; write "
                          "np.squeeze(x, axis=...), or compile with --backend numpy", _calls("numpy.squeeze"))
        return self._call(self._ns("squeeze"), args, node.keywords)

    def _np_linalg_norm(self, node, args, kw):
        if len(args) > 1 or "ord" in kw:
            raise Refusal(f"{ast.unparse(node)}: only the 2-norm (no ord) has a standard spelling, "
                          "xp.linalg.vector_norm; compile with --backend numpy", _calls("numpy.linalg.norm"))
        return self._call(self._ns("linalg", "vector_norm"), args, node.keywords)


def masks(fdef):
    """The names `fdef` binds to a boolean mask (`logits_mask = logits == max_logits`): name
    -> (the first name its comparison reads, whose dtype the mask takes as a number; whether
    every use is as a number, so that it is cast once, where it is made)."""
    found, parents = {}, {}
    for node in ast.walk(fdef):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            chain = _dotted(node.value.func) if isinstance(node.value, ast.Call) else None
            if isinstance(node.value, ast.Compare) or (chain and chain[0] == "np" and chain[-1] in _MASKS):
                ref = next((n.id for n in ast.walk(node.value) if isinstance(n, ast.Name) and n.id != "np"), None)
                found[node.targets[0].id] = ref
    numeric = {name: True for name in found}
    for node, parent in parents.items():
        if isinstance(node, ast.Name) and node.id in found and isinstance(node.ctx, ast.Load):
            numeric[node.id] &= _used_as_number(node, parent)
    return {name: (ref, numeric[name]) for name, ref in found.items()}


def _used_as_number(node, parent):
    if isinstance(parent, ast.BinOp):
        return isinstance(parent.op, _ARITHMETIC)
    if isinstance(parent, ast.UnaryOp):
        return isinstance(parent.op, (ast.USub, ast.UAdd))
    chain = _dotted(parent.func) if isinstance(parent, ast.Call) else None
    return bool(chain) and chain[0] == "np" and chain[-1] in ("sum", "mean", "prod") and parent.args[:1] == [node]


def _unknown(name):
    if name.startswith("random."):
        return Refusal(f"np.{name} draws NumPy random numbers; pass the noise in as a parameter, or compile with "
                       "--backend numpy", _calls(f"numpy.{name}"))
    where = " (nor in its linalg extension)" if name.startswith("linalg.") else ""
    return Refusal(f"np.{name} is not in the Array API standard{where}; compile with --backend numpy",
                   _calls(f"numpy.{name}"), f"the gradient of this line calls np.{name}, which is not in the Array "
                                            f"API standard{where}; compile with --backend numpy")


def _dotted(node):
    """["np", "linalg", "solve"] for `np.linalg.solve`, or None if not names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id] + parts[::-1]


def _integer(node):
    """The int a constant like `-1` stands for, else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _integer(node.operand)
        return None if inner is None else -inner
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _constant(value):
    """The expression of an int (a negative one as the parser writes it: -(1))."""
    return ast.UnaryOp(ast.USub(), ast.Constant(-value)) if value < 0 else ast.Constant(value)


def _root(node):
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _calls(qualified):
    """A test for the user's call of `qualified` (however the file imported it)."""
    def match(node, module):
        return isinstance(node, ast.Call) and module.qualified(node.func) == qualified
    return match


def _draws(method):
    def match(node, module):
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
    return match


def _is_write(node, module):
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, ast.AugAssign) else []
    return any(isinstance(t, ast.Subscript) for t in targets)
