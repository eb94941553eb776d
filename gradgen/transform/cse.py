"""Stage 5b, share: every forward value is computed once.

The rules of the primitive table re-read forward subexpressions (`np.exp(shifted)` for the
gradient of `np.log(np.sum(np.exp(shifted)))`, `np.max(logits)` for the max trick), and a
statement may spell one call twice. This pass runs over one generated function (its
forward statements, then its backward ones, as one program) and binds each call that is
computed more than once to a name, where it is first computed, as a person would:
`exp_shifted = np.exp(shifted)` before the forward statement that uses it, `exp_shifted`
wherever it is needed again.

A reuse must mean the same number (common subexpression elimination on available
expressions): a binding is reused only at the same level of the program or inside a block
after it, never from one branch in another nor from one loop trip in the next; any
assignment to a name it reads (an overwrite, a value popped back, an in-place write) ends
it; a loop sees only what its body never changes. Nothing that only one branch of a
conditional expression evaluates is moved out of it, nor any random draw.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from gradgen.analysis.arrays import may_be_array
from gradgen.ir.nodes import (
    Assign, Call, Cond, For, If, IndexAdd, Init, Restore, Var, While, subexpressions, variables, walk
)
from gradgen.rules.table import TABLE

# Calls never shared: facts about shapes (cheap, and read for the shape alone), makers of
# fresh arrays (a gradient may be written into one in place), views and signs (as cheap as
# a name), and calls that change something.
_NEVER = {"shape", "ndim", "size", "len", "broadcast", "tuple", "range", "range_slice", "zeros_like", "ones_like", "zeros", "ones",
          "eye", "arange", "linspace", "full", "array", "list", "list_zeros", "zeros_like_tree", "T", "neg", "pos",
          "float", "getitem", "list_get", "tree_get", "tree_whole", "tree_data", "tree_len", "tree_keys", "not"}
_IMPURE = {"draw", "verbatim", "pop", "append", "setitem"}
# backward helpers that solve for every input's gradient at once, each rule taking its own
# (odeint's adjoint solve, gradgen.rules.integrate): shared though they read adjoints
_SOLVES = {"odeint_vjp"}
_ARITHMETIC = {"add", "sub", "mul", "div", "neg", "pow"}  # make a new array of their operands
_LAZY = {"and", "or"}  # only the first operand surely runs


def _known_array(arrays, name, e):
    """A name made for an array is one of the names that may hold arrays, for the stages
    after this one (forward mode over the gradient stretches a tangent to an array's shape:
    soak-found class, `unbroadcast(-np.log(rate) + digamma(shape) - log_x, shape)`)."""
    if isinstance(arrays, set) and may_be_array(e, arrays):
        arrays.add(name)


def share(forward, backward, namer, arrays, backward_names, targets_stay=True):
    """(forward, backward) with each call computed more than once bound to a name once.

    `backward_names`: the adjoints (values of the backward pass; expressions reading them
    are not forward values). `targets_stay`: no forward array is changed in place, so a
    forward statement's own name may stand for its value later."""
    split = _Split()
    program = list(forward) + [split] + list(backward)
    counting = _Sharer(namer, arrays, backward_names, targets_stay, None)
    counting.block(program, _Available())
    used = {site for site, uses in counting.uses.items() if uses}
    out = _Sharer(namer, arrays, backward_names, targets_stay, used).block(program, _Available())
    at = next(i for i, s in enumerate(out) if s is split)
    return out[:at], out[at + 1:]


class _Available(dict):
    """Expressions whose value a name holds here (expression -> name), with an index from
    each name to the expressions that read it or are held by it, so that an assignment
    ends exactly those."""

    def __init__(self, *args):
        super().__init__(*args)
        self.readers = {}
        for e, name in self.items():
            self._index(e, name)

    def __setitem__(self, e, name):
        super().__setitem__(e, name)
        self._index(e, name)

    def setdefault(self, e, name):
        if e not in self:
            self[e] = name
        return self[e]

    def _index(self, e, name):
        for n in _names(e) | ({name} if isinstance(name, str) else set()):
            self.readers.setdefault(n, []).append(e)

    def copy(self):
        return _Available(self)

    def kill(self, names):
        for n in names:
            for e in self.readers.pop(n, ()):
                self.pop(e, None)


class _Split:
    """Where the forward statements end and the backward ones begin."""


class _Sharer:
    """One walk over a program. Counting (`bind` None), every first surely-evaluated
    occurrence of a candidate is a site and each later occurrence it serves is a use; then
    binding (`bind`: the sites that had uses), those sites get their names."""

    def __init__(self, namer, arrays, backward_names, targets_stay, bind):
        self.namer, self.arrays, self.backward_names = namer, arrays, backward_names
        self.targets_stay, self.bind = targets_stay, bind
        self.uses = {}  # site -> number of later occurrences it serves
        self.written = {}  # id(compound statement) -> names written anywhere in it
        self.forward = True

    # ---- statements ------------------------------------------------------------------
    def block(self, stmts, avail):
        """The statements rewritten; `avail` (expression -> name) is updated in place."""
        out = []
        for stmt in stmts:
            if isinstance(stmt, _Split):
                self.forward = False
                out.append(stmt)
                continue
            bindings = []
            out_stmt = self.statement(stmt, avail, bindings)
            out += bindings
            out.append(out_stmt)
        return out

    def statement(self, stmt, avail, bindings):
        if isinstance(stmt, Assign):
            expr = self.top(stmt.expr, stmt, avail, bindings)
            new = replace(stmt, expr=expr) if expr is not stmt.expr else stmt
            self.kill(avail, {stmt.target})
            if (self.forward and self.targets_stay and not stmt.accumulate and self.candidate(stmt.expr)
                    and stmt.target not in _names(stmt.expr)):
                avail.setdefault(stmt.expr, stmt.target)  # the statement's own name stands for its value
            return new
        if isinstance(stmt, IndexAdd):
            value = self.expr(stmt.value, stmt, avail, bindings, True)
            index = tuple(self.expr(i, stmt, avail, bindings, True) for i in stmt.index)
            self.kill(avail, {stmt.target})
            return replace(stmt, value=value, index=index)
        if isinstance(stmt, If):
            test = self.expr(stmt.test, stmt, avail, bindings, True)
            body = self.block(stmt.body, avail.copy())
            orelse = self.block(stmt.orelse, avail.copy())
            self.kill(avail, self.writes(stmt))
            return replace(stmt, test=test, body=body, orelse=orelse)
        if isinstance(stmt, For):
            it = self.expr(stmt.iter, stmt, avail, bindings, True)
            self.kill(avail, self.writes(stmt))  # what the body sees on every trip
            body = self.block(stmt.body, avail.copy())
            return replace(stmt, iter=it, body=body)
        if isinstance(stmt, While):
            self.kill(avail, self.writes(stmt))
            test = self.expr(stmt.test, stmt, avail, [], False)  # tested before every trip: nothing bound here
            body = self.block(stmt.body, avail.copy())
            return replace(stmt, test=test, body=body)
        if isinstance(stmt, (Restore, Init)):
            self.kill(avail, {stmt.name})
        return stmt

    def writes(self, stmt):
        key = id(stmt)
        if key not in self.written:
            names = set()
            for s in walk([stmt]):
                if isinstance(s, (Assign, For, IndexAdd)):
                    names.add(s.target)
                elif isinstance(s, (Restore, Init)):
                    names.add(s.name)
            self.written[key] = names
        return self.written[key]

    @staticmethod
    def kill(avail, names):
        avail.kill(names)

    # ---- expressions -----------------------------------------------------------------
    def top(self, expr, stmt, avail, bindings, sure=True):
        """A statement's whole expression (or a branch of it that is the whole when taken):
        its parts may be shared, never the whole (the statement's name would then hold the
        very array another name holds, and an in-place write into one change both)."""
        if isinstance(expr, Call):
            args = tuple(self.expr(a, stmt, avail, bindings, sure and (expr.prim not in _LAZY or i == 0))
                         for i, a in enumerate(expr.args))
            return replace(expr, args=args) if args != expr.args else expr
        if isinstance(expr, Cond):
            test = self.expr(expr.test, stmt, avail, bindings, sure)
            body = self.top(expr.body, stmt, avail, bindings, False)
            orelse = self.top(expr.orelse, stmt, avail, bindings, False)
            return Cond(test, body, orelse) if (test, body, orelse) != (expr.test, expr.body, expr.orelse) else expr
        return expr

    def expr(self, e, stmt, avail, bindings, sure, operand=False):
        """`e` with available values replaced by their names; a candidate met where it
        surely runs becomes a site (and, when bound, a name of its own). `operand`: e is
        an operand of arithmetic, which makes a new array of it."""
        if isinstance(e, Cond):
            test = self.expr(e.test, stmt, avail, bindings, sure)
            body = self.expr(e.body, stmt, avail, bindings, False)
            orelse = self.expr(e.orelse, stmt, avail, bindings, False)
            return Cond(test, body, orelse) if (test, body, orelse) != (e.test, e.body, e.orelse) else e
        if not isinstance(e, Call):
            return e
        candidate = self.candidate(e, operand)
        if candidate and e in avail:
            name = avail[e]
            if isinstance(name, tuple):  # a site being counted
                self.uses[name] += 1
                return e
            return Var(name)
        args = tuple(self.expr(a, stmt, avail, bindings, sure and (e.prim not in _LAZY or i == 0),
                               e.prim in _ARITHMETIC) for i, a in enumerate(e.args))
        new = replace(e, args=args) if args != e.args else e
        if candidate and sure:
            site = (id(stmt), e)
            if self.bind is None:
                self.uses.setdefault(site, 0)
                avail[e] = site
            elif site in self.bind:
                name = self.namer.made(self.namer.value_base(new, _feeds(stmt) if self.forward else None))
                _known_array(self.arrays, name, new)
                bindings.append(Assign(name, new, getattr(stmt, "line", None), getattr(stmt, "source", None)))
                avail[e] = name
                return Var(name)
        return new

    def two_arrays(self, e):
        """Arithmetic worth a name: it combines two arrays or more (`x[1:] - x[:-1] ** 2`);
        with numbers alone (`lengthscale ** 2`, `0.5 * y`) it costs about what a name does."""
        return _array_leaves(e, self.arrays) >= 2

    def gather(self, e):
        """`A[rows, permutations]`: an index of two arrays or more copies what it picks (no view),
        as costly as arithmetic: worth a name where the backward pass reads it again (det by
        permutations gathered its 5,040 x 7 entries twice)."""
        return e.prim == "getitem" and sum(may_be_array(a, self.arrays) for a in e.args[1:]) >= 2

    def candidate(self, e, operand=False):
        """A call worth one name: a function of forward values, pure, not a shape fact nor
        a fresh array (but ones an arithmetic operation reads, which it never changes); an
        operator only on arrays (on numbers it costs what a name does)."""
        if not isinstance(e, Call) or e.prim not in TABLE or not _hashable(e):
            return False
        if e.prim in _NEVER and not (operand and e.prim in ("ones_like", "zeros_like")) and not self.gather(e):
            return False
        prim = TABLE[e.prim]
        if prim.kind not in ("smooth", "piecewise", "helper") or not e.args:
            return False
        if (e.ns == "op" or not prim.names) and prim.operator is not None and not self.two_arrays(e):
            return False
        names = _names(e)
        if not names or not _reads_numbers(e) \
                or not self.backward_names.isdisjoint(names) and e.prim not in _SOLVES:
            return False
        return not any(isinstance(c, Call) and c.prim in _IMPURE for c in subexpressions(e))


def _array_leaves(e, arrays):
    """How many operands that may be arrays an expression of operators combines."""
    if isinstance(e, Call) and e.prim in TABLE and TABLE[e.prim].operator is not None and e.ns in ("op", None) \
            and e.prim not in ("getitem",):
        return sum(_array_leaves(a, arrays) for a in e.args)
    return 1 if may_be_array(e, arrays) else 0


_SHAPE_FACTS = {"shape", "ndim", "size", "len", "tree_len", "tree_keys", "broadcast"}


def _reads_numbers(e):
    """Whether `e` reads a value's numbers, not only shapes (`min(len(xs), len(ys))` is a
    shape query, as cheap written twice as named once)."""
    if isinstance(e, Var):
        return True
    if isinstance(e, Call):
        return e.prim not in _SHAPE_FACTS and any(_reads_numbers(a) for a in e.args)
    if isinstance(e, Cond):
        return any(_reads_numbers(x) for x in (e.test, e.body, e.orelse))
    return False


def _hashable(e):
    """(A constant array, `b=np.array([...])`, is no key: such a call is left as it is.)"""
    try:
        hash(e)
    except TypeError:
        return False
    return True


def _feeds(stmt):
    """The variable a forward statement assigns, if the user named it (not a `return`)."""
    if isinstance(stmt, Assign) and not (stmt.source or "").startswith("return "):
        return stmt.target
    return None


@functools.lru_cache(maxsize=65536)
def _names(e):
    return frozenset(v.name for v in variables(e))


# ---- inside loops: name what the backward sweep re-reads, so the saves keep it -----------------

def name_loop_values(fn, namer, active, arrays):
    """Before the reverse pass: in every loop body, a call whose array the backward pass
    would compute again (`np.tanh(x @ W + h @ U + b)` appended to a list, whose derivative
    reads its value; `np.sin(x)` multiplied by a parameter, whose derivative reads it) is
    bound to a name of its own, as a person would write it. The reverse pass then keeps that
    name's value for each trip on its list (Tapenade's "to be recorded") instead of
    recomputing the call in the backward sweep. A number (`math.sin(x)`) is recomputed, as
    by hand: that costs less than keeping it. `active`: names that carry a gradient; only
    statements reading one are split; `arrays` (names that may be arrays) gains each name
    that is one. Returns what it named: (name, value, the statement's target) each."""
    named = []
    fn.body = _split_block(fn.body, False, namer, (active, arrays), named)
    return named


def _split_block(stmts, in_loop, namer, facts, named):
    active, arrays = facts
    out = []
    for stmt in stmts:
        if isinstance(stmt, (For, While)):
            stmt.body = _split_block(stmt.body, True, namer, facts, named)
        elif isinstance(stmt, If):
            stmt.body = _split_block(stmt.body, in_loop, namer, facts, named)
            stmt.orelse = _split_block(stmt.orelse, in_loop, namer, facts, named)
        elif in_loop and isinstance(stmt, Assign) and not active.isdisjoint(_names(stmt.expr)) \
                and isinstance(stmt.expr, Call) and _hashable(stmt.expr):
            pieces = []
            expr = _split_root(stmt.expr, pieces, (namer, arrays, active), stmt.target)
            out += [Assign(name, value, stmt.line, stmt.source, col=stmt.col, overwrites=True)
                    for name, value in pieces]
            named += [(name, value, stmt.target) for name, value in pieces]
            stmt.expr = expr
        out.append(stmt)
    return out


def _split_root(expr, pieces, how, target):
    """The statement's expression (never named itself: its target names it); the value a
    list append or an array write stores is as re-read as any argument."""
    stores = expr.prim in ("append", "setitem")
    args = tuple(_split(a, pieces, how, target, expr.prim not in _LAZY or i == 0,
                        stores and i == 1 or _rereads(expr, i, how[2])) for i, a in enumerate(expr.args))
    return replace(expr, args=args) if args != expr.args else expr


def _split(e, pieces, how, target, sure, reread):
    if not isinstance(e, Call) or e.prim in _IMPURE or e.prim == "draw":
        return e
    args = tuple(_split(a, pieces, how, target, sure and (e.prim not in _LAZY or i == 0), _rereads(e, i, how[2]))
                 for i, a in enumerate(e.args))
    e = replace(e, args=args) if args != e.args else e
    namer, arrays, active = how
    if sure and (reread or (_uses_out(e.prim) and not active.isdisjoint(_names(e)))) and may_be_array(e, arrays) \
            and _worth_keeping(e):
        named = dict((value, name) for name, value in pieces)  # (one name for one call in a statement)
        if e not in named:
            named[e] = namer.made(namer.value_base(e, target))
            _known_array(arrays, named[e], e)
            pieces.append((named[e], e))
        return Var(named[e])
    return e


def _worth_keeping(e):
    """A function (not an operator, not a shape fact, a view or a fresh array), pure."""
    prim = TABLE.get(e.prim)
    if prim is None or prim.kind != "smooth" or prim.operator is not None or not prim.names or e.prim in _NEVER:
        return False
    if e.prim in ("sum", "mean", "reshape", "transpose", "squeeze", "expand_dims", "ravel", "flip", "broadcast_to"):
        return False  # (their gradients read only shapes)
    return _hashable(e) and not any(isinstance(c, Call) and (c.prim in _IMPURE or c.prim == "draw")
                                    for c in subexpressions(e))


def _uses_out(prim):
    """Whether a derivative rule of `prim` reads the primitive's own value (exp: g * out)."""
    return any("__out__" in _probe(prim, j) for j in range(_arity(prim)))


def _arity(prim):
    entry = TABLE.get(prim)
    if entry is None:
        return 0
    return entry.arity if entry.arity is not None else max(entry.min_args, 2)


@functools.lru_cache(maxsize=None)
def _probe(prim, j):
    """The variables the rule of `prim` for its argument j reads, tried on variables
    `__arg0__`, `__arg1__`..., `__out__` (a rule that needs its static parameters: all)."""
    entry = TABLE.get(prim)
    if entry is None or entry.kind != "smooth" or entry.vjp is None:
        return frozenset()
    args = [Var(f"__arg{i}__") for i in range(_arity(prim))]
    rule = entry.vjp[0](j) if entry.arity is None else entry.vjp[j] if j < len(entry.vjp) else None
    if rule is None:
        return frozenset()
    try:
        return _names(rule(Var("__g__"), Var("__out__"), *args))
    except Exception:  # noqa: BLE001
        return frozenset({"__out__"} | {a.name for a in args})


def _rereads(e, i, active):
    """Whether the derivative of call `e` reads its argument i: the rule of an argument that
    carries a gradient reads it (`k * np.sin(x)`: k's rule reads np.sin(x); `np.sin(x * w)`:
    its own rule reads x * w)."""
    if not isinstance(e, Call) or e.prim in _LAZY:
        return False
    return any(f"__arg{i}__" in _probe(e.prim, j) for j, a in enumerate(e.args[:_arity(e.prim)])
               if not active.isdisjoint(_names(a)))
