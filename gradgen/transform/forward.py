"""Forward mode: the function's own statements, each followed by its tangent line.

`dz1 = dw1 * x1 + dw2 * x2 + db1` is the seed lesson's dual number spelled out: every
value `v` that depends on a differentiated parameter gets a tangent `dv`, its derivative
along the direction the caller gives (`dw1`, `dw2`, ...). One pass, no stacks: control
flow runs as in the original, with the tangents alongside.

The same transformation applied to a gradient function (its forward and backward pass)
gives the Hessian-vector product: forward over reverse (gradgen.codegen.derivatives). Saved values get
saved tangents, restored values restored tangents. Which values get a tangent is the activity
analysis's answer (gradgen.analysis.activity.varied), handed to `Forward` as `active`.
"""


from __future__ import annotations

from dataclasses import replace

from gradgen.analysis.activity import no_rule_message, varied_target
from gradgen.analysis.arrays import may_be_array
from gradgen.analysis.sameshape import covers
from gradgen.errors import CompileError
from gradgen.ir import simplify
from gradgen.ir.nodes import (
    Assign, Call, Comment, Cond, Const, For, If, IndexAdd, Init, Restore, Save, Var, While, expressions,
    subexpressions, variables, walk, writes_whole_of_any_rank
)
from gradgen.rules import tangents as rules_forward
from gradgen.rules.lists import LIST_MAKERS
from gradgen.rules.table import TABLE, primitive
from gradgen.transform.reverse.expression import _in_namespace

# The tangent of an expression kept as written that a tangent reaches: an error if anything
# still needs it once dead code is gone (refuse_needed), else nothing at all.
REFUSED = "refused_tangent"
primitive(REFUSED, None, kind="opaque", min_args=0)

# primitives whose value is a Python list (or a tree of them): their zero is a tree of zeros
_MADE_ZEROS = {"zeros_like", "zeros", "zero_gradient", "zeros_like_tree", "list_zeros"}
LIST_VALUES = set(LIST_MAKERS) | {"unstack", "add_lists", "list_zeros", "zeros_like_tree", "shaped_like",
                                 "unconcatenate", "unjoin"}
# primitives whose result may share its argument's memory (a view, or the object itself)
VIEWS = {"reshape", "getitem", "T", "transpose", "ravel", "squeeze", "expand_dims", "broadcast_to", "atleast_1d",
         "atleast_2d", "atleast_3d", "flip", "pos", "diag", "tree_get", "list_get", "unbroadcast", "take"}


def in_place(stmts):
    """Whether `stmts` change an array in place (`x[i] = v`, `x += v`, an addition into an
    array, an append): then a tangent that is another tangent's array must be a copy."""
    return any(isinstance(s, IndexAdd) or (isinstance(s, Assign) and (s.augmented or s.accumulate or (
        isinstance(s.expr, Call) and s.expr.prim in ("setitem", "append")))) for s in walk(stmts))


def _writes_in_place(s):
    return (isinstance(s.expr, Call) and s.expr.prim == "setitem" and s.augmented
            and s.expr.args[0] == Var(s.target))


def _reads(expr):
    return {v.name for v in variables(expr)}


def _shaped_as(e):
    """An expression of e's shape that computes less: the argument a gradient helper sums back
    to (its rule's `shaped_as`: kmeans' hvp measured `np.shape(matmul_grad_a(g, 2 * centroids,
    points.T))`, a (k, n) by (n, d) product computed only for its shape), through a number's
    multiple, quotient or negation."""
    while isinstance(e, Call):
        shaped = TABLE[e.prim].shaped_as if e.prim in TABLE else None
        if shaped is not None and len(e.args) > shaped:
            e = e.args[shaped]
        elif e.prim == "mul" and len(e.args) == 2 and isinstance(e.args[0], Const):
            e = e.args[1]
        elif e.prim in ("mul", "div") and len(e.args) == 2 and isinstance(e.args[1], Const):
            e = e.args[0]
        elif e.prim == "neg" and len(e.args) == 1:
            e = e.args[0]
        else:
            break
    return e


class Forward:
    """Interleaves tangent statements with a function's statements.

    `tangent_name(v)` is the name of v's tangent (made by the naming module); `lists`
    are the names that hold Python lists (their zero is a list of zeros)."""

    def __init__(self, active, tangent_name, lists=frozenset(), where=None, arrays=frozenset()):
        self.active = active
        self.arrays = arrays  # values that may be arrays (gradgen.analysis.arrays)
        self.params = set()  # the function's parameters: their tangents are the caller's arrays
        self.writes = False  # the statements write into arrays in place (see `in_place`)
        self.tangent_name = tangent_name
        self.lists = set(lists)
        self.where = where  # (line, col) -> CompileError, for a primitive with no tangent rule
        # the names whose tangent may be nonzero where the statement being transformed runs
        # (None: every active name): an expression kept as written may read data a later loop
        # gives a tangent (fuzz seed 2015 #1428)
        self.nonzero = None

    @property
    def tangent_lists(self):
        return {self.tangent_name(n) for n in self.lists if n in self.active}

    def start(self, params, chosen):
        """Tangents of the parameters that are not differentiated but are reassigned from
        differentiated values (data `x` that a loop turns into `x = np.tanh(x @ W)`): zero
        until then."""
        self.nonzero = set(chosen) & set(self.active)
        return [Assign(self.tangent_name(p.name), self.zero(Var(p.name), Var(p.name)))
                for p in params if p.name in self.active and p.name not in chosen]

    def _reached(self, names):
        """`names` given a tangent by now (inside a loop: by any trip of it)."""
        if self.nonzero is not None:
            self.nonzero |= set(names) & set(self.active)

    def _carried(self, stmts):
        """The names `stmts` give a nonzero tangent, from the ones that have one by now: a
        name bound to data first and to a differentiated value only later (in a later branch,
        or a later loop) has none before (grammar seed 0 #22: `S = <kept as written>` read by
        np.quantile, and `S = np.array([np.sum(p), 0.0, S])` in a later `if`); a loop runs to
        its fixed point (a later trip reads what an earlier one made)."""
        if self.nonzero is None:
            return
        size = -1
        while size != len(self.nonzero):
            size = len(self.nonzero)
            for t in walk(stmts):
                new = varied_target(t, self.nonzero)
                if new is not None and new in self.active:
                    self.nonzero.add(new)

    def block(self, stmts):
        out = []
        for s in stmts:
            out += self.statement(s)
        return out

    def statement(self, s):
        if isinstance(s, (For, While, Save, Restore, Assign, IndexAdd)):
            self._carried([s])
        elif isinstance(s, Init):
            self._reached([s.name])
        if isinstance(s, Assign):
            return self._assign(s)
        if isinstance(s, If):
            return [replace(s, body=self.block(s.body), orelse=self.block(s.orelse))]
        if isinstance(s, For):
            if s.target in self.active:
                raise self._refuse(s.iter, "a loop over a differentiated value")
            return [replace(s, body=self.block(s.body))]
        if isinstance(s, While):
            return [replace(s, body=self.block(s.body))]
        if isinstance(s, Init):
            twin = [Init(self.tangent_name(s.name), s.value)] if s.name in self.active else []
            return [s] + twin
        if isinstance(s, Save):
            if s.name not in self.active:
                return [s]
            return [s, Save(self.tangent_name(s.name), self.tangent_name(s.stack), copy=s.copy)]
        if isinstance(s, Restore):
            if s.name not in self.active:
                return [s]
            return [s, Restore(self.tangent_name(s.name), self.tangent_name(s.stack))]
        if isinstance(s, IndexAdd):
            return self._index_add(s)
        return [s]  # break, continue, comments, effects

    def _assign(self, s):
        if s.target not in self.active:
            return [s]
        target = self.tangent_name(s.target)
        overwrites = s.target in _reads(s.expr) or s.accumulate
        out = Var(s.target) if not overwrites else s.expr
        t = self.expr(s.expr, out)
        if s.accumulate:
            # never `+=` on a tangent: it may be the same object as another tangent (a 0-d array
            # `np.copy` made, taken unchanged by `dda = ddp if a <= u else 0.0`), which `+=` would
            # change too (soak seed 1224 #13760, a wrong hvp)
            tangent = [] if t is None else [Assign(target, simplify.add(Var(target), t), s.line, s.source)]
        elif _writes_in_place(s) and s.target not in self.params and t is not None:
            # `x[i] = v` into x's own array: the tangent's own array too (never a caller's tangent);
            # `x[...] = v` may write a 0-d x, whose tangent `0.0 * x` is a NumPy scalar: an array first
            # (fuzz soak seed 2016 #527)
            whole = writes_whole_of_any_rank(dict(s.expr.params).get("index"))
            tangent = [Assign(target, Call("array", (Var(target),), "numpy"), s.line, s.source)] if whole else []
            tangent.append(Assign(target, t, s.line, s.source, augmented=True))
        elif t == Var(target):  # `x = x - c`: the tangent is unchanged
            tangent = []
        else:
            if isinstance(t, Const) and t.value == 0 and may_be_array(s.expr, self.arrays):
                t = None  # `ds * 0.0` folded to 0: an array's tangent keeps its shape (`0.0 * s`)
            if t is None:  # zeros of the value the statement makes, so after it (`b = data if c else
                # DECAY` rebinding a parameter: `0.0 * b` before it had the old b's shape, soak 50000 #542)
                return [s, Assign(target, self.zero(s.expr, Var(s.target)), s.line, s.source)]
            tangent = [Assign(target, t, s.line, s.source)]
        # a tangent reads the old values of what its statement overwrites: it goes first
        return tangent + [s] if overwrites else [s] + tangent

    def _index_add(self, s):
        if s.target not in self.active:
            return [s]
        t = self.expr(s.value, None)
        if t is None and not s.assign:
            return [s]
        value = t if t is not None else Const(0.0)
        target = self.tangent_name(s.target)
        # a 0-d target's tangent `0.0 * x` is a NumPy scalar: an array first (seed 2021 #1736)
        # (a key of a dict or record has no layout, and an index: not this)
        zero_d = writes_whole_of_any_rank(s.layout) and not s.index and not s.chained
        whole = [Assign(target, Call("array", (Var(target),), "numpy"))] if zero_d else []
        return [s, *whole, replace(s, target=target, value=value)]

    def expr(self, e, out):
        """The tangent of `e` (None: zero), `out` its value where it is named."""
        if isinstance(e, Var):
            return Var(self.tangent_name(e.name)) if e.name in self.active else None
        if isinstance(e, Cond):
            body, orelse = self.expr(e.body, None), self.expr(e.orelse, None)
            if body is None and orelse is None:
                return None
            return Cond(e.test, body if body is not None else self._arm_zero(e.body),
                        orelse if orelse is not None else self._arm_zero(e.orelse))
        if not isinstance(e, Call) or not (_reads(e) & self.active) or e.prim == "draw":
            return None
        if e.prim == "verbatim":  # kept as written (gradgen.frontend.inactive): it has no rule
            measured = dict(e.params)["measured"]
            tangents = self.active if self.nonzero is None else self.nonzero
            reached = next((v.name for v in e.args if v.name in tangents and v.name not in measured), None)
            if reached is None:  # it reads only the shapes of values with tangents
                return None
            return Call(REFUSED, (), params=(("message", no_rule_message(e, reached, None)), ("loc", e.loc)))
        if rules_forward.no_tangent(e.prim):
            return None
        tangents = [self.expr(a, None) for a in e.args]
        if all(t is None for t in tangents):
            return None
        try:
            t = rules_forward.tangent(e, tangents, self._zero_like, out if out is not None else e)
        except rules_forward.NoTangentRule as missing:
            raise self._refuse(e, rules_forward.spelling(missing.prim)) from None
        if t is not None and e.prim in ("add", "sub"):
            t = self._stretched(e, tangents, t)
        if isinstance(t, Call) and t.prim == "T":  # a tangent may be the caller's float: np.transpose takes one
            t = Call("transpose", t.args, "numpy", t.loc)
        if self.writes and t is not None and e.prim not in VIEWS:
            t = self._owned(t)
        return None if t is None else _in_namespace(t, e.ns)

    def _owned(self, t):
        """A new array's tangent is a new array too, where something is written in place:
        `t * 1.0` folds its tangent to `dt` itself, `a.reshape(-1) + 0.5` to a view of `da`
        (the caller's), and a later write into one would change the other (soak seeds 1216
        #2009, 1217 #2551)."""
        if isinstance(t, Var) and t.name not in self.tangent_lists:
            return Call("mul", (t, Const(1.0)), "op")
        if isinstance(t, Call) and t.prim in VIEWS and t.prim not in ("tree_get", "list_get"):
            return Call("copy", (t,), "numpy")
        return t

    def _stretched(self, e, tangents, t):
        """`x + Z` with only x differentiated: its tangent is dx stretched to the sum's shape
        where Z (an array) may be larger (`dx + np.zeros(np.shape(Z))`)."""
        same = getattr(self.arrays, "same", None)
        for arg, tangent in zip(e.args, tangents):
            if tangent is None and may_be_array(arg, self.arrays):
                shaped = _shaped_as(arg)
                if any(t is not None and covers(a, shaped, same) for a, t in zip(e.args, tangents)):
                    continue  # (a term with a tangent holds Z's shape already: kmeans' hvp added zeros to it)
                return t + Call("zeros", (Call("shape", (shaped,), "numpy"),), "numpy")
        return t

    def _zero_like(self, arg):
        return self.zero(arg, arg)

    def _arm_zero(self, arm):
        """The tangent of an arm of `a if t else b` that has none: zeros of the arm's shape
        (the arm itself where it is a zero, as `np.zeros_like(W)` is), never a bare 0.0."""
        return arm if isinstance(arm, Call) and arm.prim in _MADE_ZEROS else self.zero(arm, arm)

    def zero(self, expr, value):
        """An explicit zero tangent for `value`: 0.0 for a constant, a list of zeros for a
        list or a value kept as written (which may be one: `[v * 0.5 for v in x]`), else
        `0.0 * value` (a number stays a number, an array keeps its shape)."""
        if isinstance(expr, Const) or isinstance(value, Const):
            return Const(0.0)
        if isinstance(expr, Call) and expr.prim == "zero_gradient":  # (a zero of its kind: its own tangent)
            return expr
        if (isinstance(value, Var) and value.name in self.lists) or (
                isinstance(expr, Call) and (expr.prim in LIST_VALUES or expr.prim == "verbatim")):
            return Call("zeros_like_tree", (value,))
        return Call("mul", (Const(0.0), value), "op")

    def _refuse(self, node, what):
        loc = getattr(node, "loc", None)
        message = (f"forward mode (jvp, hvp, hessian, jacobian) cannot differentiate {what} yet; "
                   "emit only the gradient here (--emit grad, or grad/vjp), or write it with operations it knows")
        return CompileError(message) if self.where is None else self.where(loc, message)



def refuse_needed(stmts, outs, where):
    """After dead code is gone: a tangent that would have gone through an expression kept as
    written (REFUSED) and is still needed is the located error it holds; one nothing needs
    (the tangent of a value only a branch or an unused name reads) is no error at all."""
    exprs = [e for s in walk(stmts) for e in expressions(s)] + list(outs)
    for e in exprs:
        for c in subexpressions(e):
            if isinstance(c, Call) and c.prim == REFUSED:
                params = dict(c.params)
                raise CompileError(params["message"]) if where is None else where(params["loc"], params["message"])


def tidy(stmts):
    """After dead code is gone: a block left with only provenance comments has nothing to
    run, and an `if` or a loop with nothing to run in it goes too."""
    out = []
    for s in stmts:
        if isinstance(s, If):
            s = replace(s, body=tidy(s.body), orelse=tidy(s.orelse))
            if not s.body and not s.orelse:
                continue
            if not s.body:
                s = replace(s, test=Call("not", (s.test,), "op"), body=s.orelse, orelse=[])
        elif isinstance(s, (For, While)):
            s = replace(s, body=tidy(s.body))
            if not s.body:
                continue
        out.append(s)
    if all(isinstance(s, Comment) for s in out):
        return []
    return out
