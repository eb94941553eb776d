"""Hypothesis strategy for random NumPy array programs, as source text.

`array_programs()` draws a module holding one `def f(a, b, *, X)`: `a` has shape (n, d), `b`
one of (d,), (1, d), (n, 1), (n, d) or a float, and `X` (data, not differentiated) one of
(n, d), (d, m), (m, n) or (d,), every axis 1..4 long. The body assigns 1-5 array
expressions built from broadcasting arithmetic, elementwise functions, reductions with a
random `axis`/`keepdims` (`np.sum`, `np.mean`, their method forms, `np.prod`, `np.cumsum`),
`@`/`np.dot`/`np.matmul` between operands whose shapes fit (also as `np.einsum`), `np.outer`, `.T`,
`np.transpose`, `.reshape(-1)`, slices and `[:, None]`, `np.expand_dims`, `np.concatenate`,
`np.stack`, `np.sum` over a list and `np.linalg.norm`, sometimes updates a local in place
(`u += e`, `u *= e`), also in a `for` loop, and returns a number (`np.sum`, `np.mean` or a
method form of either) that depends on both `a` and `b`.

Every program is correct input: each expression carries its exact shape (so broadcasting
and `@` always fit) and a bound on its magnitude that holds for inputs in [-BOX, BOX]; only
functions defined everywhere are used (`np.tanh`, `np.sin`, `np.cos`, `np.arctan`,
`np.exp(np.tanh(x))`, `np.log1p(x * x)`, `np.sqrt(1 + x * x)`, `np.exp` of a bounded
argument), divisors are at least 1, and anything whose bound passes LIMIT is squashed before
reuse. Nothing has a kink, so central finite differences are reliable everywhere.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from programs import HypothesisChoices, SeededChoices

BOX = 1.5  # inputs are drawn from [-BOX, BOX]
LIMIT = 6.0  # an expression bounded by more than this is squashed before reuse
LOCALS = ("u", "v", "w", "h", "z", "y", "t", "s")
ATOM, POW, UNARY, MUL, ADD = 100, 14, 13, 12, 11


@dataclass(frozen=True)
class ArrayProgram:
    """A generated module, its inputs, and how to rebuild them."""

    source: str
    point: dict
    seed: int
    shapes: dict

    def __repr__(self) -> str:
        lines = [f"ArrayProgram(seed={self.seed}, shapes={self.shapes!r}, source=", self.source,
                 "inputs:"]
        for name, value in self.point.items():
            text = repr(value.tolist()) if isinstance(value, np.ndarray) else repr(value)
            lines.append(f"  {name} = {'np.array(' + text + ')' if isinstance(value, np.ndarray) else text}")
        return "\n".join(lines) + ")"


@dataclass(frozen=True)
class AExpr:
    """Expression text, its shape, a bound on |every element|, and its precedence."""

    text: str
    shape: tuple
    bound: float
    prec: int = ATOM


def wrap(e: AExpr, level: int) -> str:
    return e.text if e.prec > level else f"({e.text})"


def broadcast(s1: tuple, s2: tuple) -> tuple | None:
    try:
        return tuple(np.broadcast_shapes(s1, s2))
    except ValueError:
        return None


class _ArrayBuilder:
    def __init__(self, choices, shapes: dict):
        self.choices = choices
        self.scope = {name: (shape, BOX) for name, shape in shapes.items()}
        self.recent: list[str] = []
        self.deps = {"a": {"a"}, "b": {"b"}, "X": set()}  # differentiated parameters read
        self.owned: set[str] = set()  # locals holding a new array no other name shares
        self.viewed: set[str] = set()  # of those, the ones a later expression took a view of
        self.helpers: dict[str, list[str]] = {}  # same-file helpers used: name -> lines
        self.helper_rate = 0.0  # how often an expression calls an array-valued helper
        self.loop_rate = 0.0  # how often a statement is one of the loops below
        self.write_rate = 0.0  # how often a statement writes into an array (`y[1:] = e`)
        self.shapes = {}
        self.loops = 0  # loops over a's first axis or calling `predict` so far

    def depends(self, e: AExpr) -> set[str]:
        names = re.findall(r"(?<![.\w])([A-Za-z_]\w*)", e.text)
        return set().union(*(self.deps.get(n, set()) for n in names))

    def choice(self, options):
        return self.choices.choice(list(options))

    def integer(self, lo: int, hi: int) -> int:
        return self.choices.integer(lo, hi)

    def chance(self, p: float) -> bool:
        return self.integer(0, 99) < p * 100

    # -- leaves and squashing ------------------------------------------------------------

    def var(self) -> AExpr:
        if self.recent and self.chance(0.4):
            name = self.choice(self.recent[-2:])
        else:  # the parameters more often than other variables, the data less
            name = self.choice([n for n in ["a", "a", "b", "b", "X"] if n in self.scope]
                               + sorted(set(self.scope) - {"a", "b", "X"}))
        shape, bound = self.scope[name]
        return AExpr(name, shape, bound)

    def leaf(self) -> AExpr:
        if self.chance(0.85):
            return self.var()
        c = self.choice([0.5, 2.0, 1.5, 3, 0.25])
        return AExpr(repr(c), (), abs(c))

    def squash(self, e: AExpr) -> AExpr:
        name = self.choice(["tanh", "sin", "arctan"])
        return AExpr(f"np.{name}({e.text})", e.shape, 1.0 if name != "arctan" else 1.6)

    def small(self, depth: int, limit: float = LIMIT) -> AExpr:
        e = self.expr(depth)
        return self.squash(e) if e.bound > limit else e

    # -- expressions ---------------------------------------------------------------------

    def expr(self, depth: int) -> AExpr:
        if depth <= 0 or self.chance(0.2):
            return self.leaf()
        kind = self.choice(["binary", "binary", "binary", "unary", "unary", "divide", "reduce",
                            "matmul", "shape", "neg", "other", "other"])
        if self.helper_rate and self.chance(self.helper_rate):
            kind = "helper"
        e = getattr(self, f"gen_{kind}")(depth - 1)
        return self.squash(e) if e.bound > LIMIT else e

    def gen_binary(self, depth: int) -> AExpr:
        x = self.small(depth)
        for _ in range(3):  # an operand whose shape broadcasts with x's
            y = self.small(depth)
            shape = broadcast(x.shape, y.shape)
            if shape is not None and len(shape) <= 2:
                break
        else:
            y, shape = self.leaf_of_shape(x.shape), x.shape
        op = self.choice(["+", "-", "*", "*"])
        if op == "*":
            return AExpr(f"{wrap(x, MUL - 1)} * {wrap(y, MUL)}", shape, x.bound * y.bound, MUL)
        if op == "-" and x.text == y.text:
            op = "+"
        return AExpr(f"{wrap(x, ADD - 1)} {op} {wrap(y, ADD)}", shape, x.bound + y.bound, ADD)

    def leaf_of_shape(self, shape: tuple) -> AExpr:
        """A variable whose shape broadcasts into `shape`, or a constant."""
        fits = [n for n in sorted(self.scope) if broadcast(self.scope[n][0], shape) == shape]
        if fits and self.chance(0.7):
            name = self.choice(fits)
            return AExpr(name, *self.scope[name])
        return AExpr("0.5", (), 0.5)

    def gen_neg(self, depth: int) -> AExpr:
        x = self.expr(depth)
        return AExpr(f"-{wrap(x, UNARY - 1)}", x.shape, x.bound, UNARY)

    def gen_unary(self, depth: int) -> AExpr:
        kind = self.choice(["tanh", "sin", "cos", "arctan", "exp_tanh", "log1p_sq", "sqrt_1p",
                            "exp", "square", "pow"])
        x = self.small(depth, limit=2.0 if kind in ("exp", "square", "pow") else LIMIT)
        t = x.text
        if kind in ("tanh", "sin", "cos"):
            return AExpr(f"np.{kind}({t})", x.shape, 1.0)
        if kind == "arctan":
            return AExpr(f"np.arctan({t})", x.shape, 1.6)
        if kind == "exp_tanh":
            return AExpr(f"np.exp(np.tanh({t}))", x.shape, 2.72)
        if kind == "log1p_sq":
            return AExpr(f"np.log1p({wrap(x, MUL)} * {wrap(x, MUL)})", x.shape,
                         float(np.log1p(x.bound**2)))
        if kind == "sqrt_1p":
            return AExpr(f"np.sqrt(1 + {wrap(x, MUL)} * {wrap(x, MUL)})", x.shape,
                         float(np.sqrt(1 + x.bound**2)))
        if kind == "exp":
            return AExpr(f"np.exp({t})", x.shape, float(np.exp(x.bound)))
        if kind == "square":
            if self.chance(0.5):
                return AExpr(f"np.square({t})", x.shape, x.bound**2)
            return AExpr(f"{wrap(x, POW)} ** 2", x.shape, x.bound**2, POW)
        n = self.choice([2, 3])
        return AExpr(f"{wrap(x, POW)} ** {n}", x.shape, x.bound**n, POW)

    def gen_divide(self, depth: int) -> AExpr:
        """x / p with p >= 1 everywhere (and of a shape that broadcasts with x's)."""
        x = self.small(depth)
        y = self.small(depth)
        if broadcast(x.shape, y.shape) is None or len(broadcast(x.shape, y.shape)) > 2:
            y = self.leaf_of_shape(x.shape)
        kind = self.choice(["1+yy", "exp_tanh", "sqrt", "2+sin", "cosh"])
        if kind == "1+yy":
            p = f"(1 + {wrap(y, MUL)} * {wrap(y, MUL)})"
        elif kind == "exp_tanh":
            p = f"np.exp(np.tanh({y.text}) + 1)"
        elif kind == "sqrt":
            p = f"np.sqrt(1 + {wrap(y, MUL)} * {wrap(y, MUL)})"
        elif kind == "2+sin":
            p = f"(2 + np.sin({y.text}))"
        else:
            p = f"np.cosh({self.squash(y).text})"
        return AExpr(f"{wrap(x, MUL - 1)} / {p}", broadcast(x.shape, y.shape), x.bound, MUL)

    def gen_reduce(self, depth: int) -> AExpr:
        x = self.small(depth)
        if not x.shape:
            return x
        ndim = len(x.shape)
        axes = [None] + list(range(ndim)) + list(range(-ndim, 0)) + ([(0, 1)] if ndim == 2 else [])
        axis = self.choice(axes)
        keepdims = self.chance(0.4)
        name = self.choice(["sum", "sum", "mean"])
        reduced = range(ndim) if axis is None else [axis % ndim] if isinstance(axis, int) else axis
        count = int(np.prod([x.shape[i] for i in reduced]))
        if keepdims:
            shape = tuple(1 if i in reduced else s for i, s in enumerate(x.shape))
        else:
            shape = tuple(s for i, s in enumerate(x.shape) if i not in reduced)
        bound = x.bound * count if name == "sum" else x.bound
        args = []
        if axis is not None or self.chance(0.3):
            args.append(f"axis={axis!r}")
        if keepdims:
            args.append("keepdims=True")
        if self.chance(0.3):  # the method form
            return AExpr(f"{wrap(x, POW)}.{name}({', '.join(args)})", shape, bound)
        return AExpr(f"np.{name}({', '.join([x.text] + args)})", shape, bound)

    def gen_matmul(self, depth: int, x: AExpr | None = None, spelling: str = "@") -> AExpr:
        """x @ y for operands whose shapes fit: variables, or their transposes."""
        x = self.small(depth) if x is None else x
        if not x.shape:
            return x
        inner = x.shape[-1]
        options = []
        for name in sorted(self.scope):
            shape, bound = self.scope[name]
            if len(shape) >= 1 and shape[0] == inner:
                options.append(AExpr(name, shape, bound))
            if len(shape) == 2 and shape[1] == inner:
                options.append(AExpr(f"{name}.T", shape[::-1], bound))
        if not options:
            return x
        y = self.choice(options)
        if self.chance(0.5):  # squash the second operand too
            y = AExpr(f"np.tanh({y.text})", y.shape, 1.0)
        shape = x.shape[:-1] + y.shape[1:]
        bound = x.bound * y.bound * inner
        if spelling == "dot":
            if zlib.crc32(f"{x.text}|{y.text}".encode()) % 3 == 0:  # (off the draws: earlier seeds keep their programs)
                return AExpr(_einsum(x, y), shape, bound)
            return AExpr(f"np.{self.choice(['dot', 'matmul'])}({x.text}, {y.text})", shape, bound)
        if self.chance(0.3) and len(x.shape) == 2 and len(y.shape) == 2:
            # the same product with the operands transposed: (y.T @ x.T).T
            return AExpr(f"({wrap(y, POW)}.T @ {wrap(x, POW)}.T).T", shape, x.bound * y.bound * inner)
        if zlib.crc32(f"{x.text}|{y.text}".encode()) % 4 == 0:
            return AExpr(_einsum(x, y), shape, x.bound * y.bound * inner)
        return AExpr(f"{wrap(x, MUL - 1)} @ {wrap(y, MUL)}", shape, x.bound * y.bound * inner, MUL)

    def gen_shape(self, depth: int) -> AExpr:
        """.T, .reshape(-1), x[1:], x[:, 0], x[:-1], x[..., None]."""
        x = self.small(depth)
        options = []
        if len(x.shape) == 2:
            options += ["T", "reshape", "column", "row"]
        if len(x.shape) >= 1 and x.shape[0] >= 2:
            options += ["tail", "head"]
        if len(x.shape) == 1:
            options += ["newaxis", "broadcast_to"]
        if 1 in x.shape:
            options += ["squeeze"]
        if x.shape:
            options += ["ravel", "flip"]
        if not options:
            return x
        kind = self.choice(options)
        t = wrap(x, POW)
        if kind == "squeeze":
            return AExpr(f"np.squeeze({x.text})", tuple(s for s in x.shape if s != 1), x.bound)
        if kind == "ravel":
            text = f"{t}.ravel()" if self.chance(0.5) else f"np.ravel({x.text})"
            return AExpr(text, (int(np.prod(x.shape)),), x.bound)
        if kind == "flip":
            axis = self.integer(0, len(x.shape) - 1)
            return AExpr(f"np.flip({x.text}, axis={axis})", x.shape, x.bound)
        if kind == "broadcast_to":
            rows = self.integer(1, 3)
            return AExpr(f"np.broadcast_to({x.text}, ({rows}, {x.shape[0]}))", (rows,) + x.shape, x.bound)
        if kind == "T":
            return AExpr(f"{t}.T", x.shape[::-1], x.bound)
        if kind == "reshape":
            return AExpr(f"{t}.reshape(-1)", (x.shape[0] * x.shape[1],), x.bound)
        if kind == "column":
            j = self.integer(0, x.shape[1] - 1)
            return AExpr(f"{t}[:, {j}]", (x.shape[0],), x.bound)
        if kind == "row":
            i = self.integer(0, x.shape[0] - 1)
            return AExpr(f"{t}[{i}]", x.shape[1:], x.bound)
        if kind == "tail":
            return AExpr(f"{t}[1:]", (x.shape[0] - 1,) + x.shape[1:], x.bound)
        if kind == "head":
            return AExpr(f"{t}[:-1]", (x.shape[0] - 1,) + x.shape[1:], x.bound)
        return AExpr(f"{t}[:, None]", x.shape + (1,), x.bound)

    def gen_other(self, depth: int) -> AExpr:
        """np.dot, np.outer, np.concatenate, np.stack, np.expand_dims, np.transpose,
        np.cumsum, np.prod, np.linalg.norm, np.sum over a list."""
        x = self.small(depth)
        kind = self.choice(["dot", "dot", "outer", "concatenate", "stack", "expand_dims", "transpose",
                            "cumsum", "prod", "norm", "sum_list", "inner", "count", "count"])
        if kind == "inner" and len(x.shape) == 1:  # np.inner of two vectors of the same length
            same = [n for n in sorted(self.scope) if self.scope[n][0] == x.shape]
            y = x
            if same:
                name = self.choice(same)
                y = AExpr(name, *self.scope[name])
            return AExpr(f"np.inner({x.text}, {y.text})", (), x.bound * y.bound * x.shape[0])
        if kind == "count" and x.shape:  # divided by a count read from a shape: len(x), x.shape[0], x.size
            count = self.choice([(f"len({x.text})", x.shape[0]), (f"{wrap(x, POW)}.shape[0]", x.shape[0]),
                                 (f"{wrap(x, POW)}.size", int(np.prod(x.shape)))])
            return AExpr(f"{wrap(x, MUL - 1)} / {count[0]}", x.shape, x.bound / count[1], MUL)
        if kind == "dot":
            return self.gen_matmul(depth, x, spelling="dot")
        if kind == "outer":
            x, y = _floated(x), _floated(self.small(depth))
            shape = (int(np.prod(x.shape)), int(np.prod(y.shape)))
            return AExpr(f"np.outer({x.text}, {y.text})", shape, x.bound * y.bound)
        if kind in ("concatenate", "stack", "sum_list") and x.shape:
            others = [n for n in sorted(self.scope) if self.scope[n][0] == x.shape]
            y = x
            if others:
                name = self.choice(others)
                y = AExpr(name, *self.scope[name])
            if kind == "concatenate":
                axis = self.integer(0, len(x.shape) - 1)
                shape = tuple(2 * s if i == axis else s for i, s in enumerate(x.shape))
                return AExpr(f"np.concatenate([{x.text}, {y.text}], axis={axis})", shape,
                             max(x.bound, y.bound))
            if kind == "sum_list":
                return AExpr(f"np.sum([{x.text}, {y.text}], axis=0)", x.shape, x.bound + y.bound)
            if len(x.shape) == 1:
                return AExpr(f"np.stack([{x.text}, {y.text}])", (2,) + x.shape, max(x.bound, y.bound))
            return x
        if kind == "expand_dims" and len(x.shape) <= 1:
            x = _floated(x)
            axis = self.choice([0, -1])
            shape = (1,) + x.shape if axis == 0 else x.shape + (1,)
            return AExpr(f"np.expand_dims({x.text}, {axis})", shape, x.bound)
        if kind == "transpose" and len(x.shape) == 2:
            return AExpr(f"np.transpose({x.text})", x.shape[::-1], x.bound)
        if kind == "cumsum" and x.shape:
            axis = self.integer(0, len(x.shape) - 1)
            return AExpr(f"np.cumsum({x.text}, axis={axis})", x.shape, x.bound * x.shape[axis])
        if kind == "prod" and x.shape:
            x = self.squash(x) if x.bound > 1.0 else x
            axis = self.integer(0, len(x.shape) - 1)
            shape = tuple(s for i, s in enumerate(x.shape) if i != axis)
            return AExpr(f"np.prod({x.text}, axis={axis})", shape, x.bound ** x.shape[axis])
        if kind == "norm":  # 2-norm (Frobenius for a matrix), of a vector kept away from 0
            x = self.squash(x) if x.bound > 1.6 else x
            return AExpr(f"np.linalg.norm({wrap(x, ADD)} + 2.0)", (),
                         3.6 * float(np.sqrt(np.prod(x.shape) if x.shape else 1)))
        return _gathered(x)

    # -- array-valued helpers ------------------------------------------------------------
    #
    # Same-file helpers that return an array (`center`, `log_softmax`, ...), called by the
    # scalar loss: gradgen inlines them; on their own they get no `_grad` (only `f` returns
    # a number, and only `f` is checked).

    def gen_helper(self, depth: int) -> AExpr:
        x = self.small(depth)
        if not x.shape:
            return x
        kind = self.choice(sorted(ARRAY_HELPERS))
        name, lines, bound = ARRAY_HELPERS[kind](x)
        self.helpers[name] = lines
        return AExpr(f"{name}({x.text})", x.shape, bound)

    def bind_local(self, name: str, shape: tuple, bound: float, deps: set, owned: bool = False) -> None:
        self.owned.discard(name)
        self.viewed.discard(name)
        if owned:
            self.owned.add(name)
        self.scope[name] = (shape, bound)
        self.deps[name] = deps
        if name in self.recent:
            self.recent.remove(name)
        self.recent.append(name)

    def fresh_local(self, avoid=()) -> str:
        return self.choice([n for n in LOCALS if n not in avoid])

    # -- loops over a's first axis, and the `predict` idiom ---------------------------------

    def rows_loop(self) -> list[str]:
        """`s = 0.0; for row in a: s = s + np.sum(<e of row>)`, or a vector accumulator
        `s = s + np.tanh(<e of row>)`: a's gradient is scattered back row by row."""
        (n, d), _ = self.scope["a"]
        row = self.choice(["row", "r", "x_i"])
        saved = dict(self.scope), dict(self.deps), list(self.recent)
        self.scope[row], self.deps[row] = ((d,), BOX), {"a"}
        self.recent = [row]
        e = self.small(self.choice([1, 2]))
        if row not in re.findall(r"\w+", e.text):
            shape = broadcast(e.shape, (d,))
            if shape is None or len(shape) > 2:
                e = AExpr(f"np.tanh({row})", (d,), 1.0)
            else:
                e = AExpr(f"{wrap(e, MUL - 1)} * {row}", shape, e.bound * BOX, MUL)
        deps = self.depends(e) | {"a"}
        self.scope, self.deps, self.recent = saved
        acc = self.fresh_local(avoid=re.findall(r"\w+", e.text))  # (not a name the term reads)
        if self.chance(0.5):
            term, shape, bound = f"np.sum({self.squash(e).text})", (), float(np.prod(e.shape or (1,)))
        else:
            term, shape, bound = self.squash(e).text, e.shape, 1.0
        update = self.choice([f"{acc} = {acc} + {term}", f"{acc} += {term}", f"{acc} = {term} + {acc}"])
        lines = [f"{acc} = 0.0", f"for {row} in a:", f"    {update}"]
        self.bind_local(acc, shape, bound * n, deps)
        return lines

    def predict_loop(self) -> list[str]:
        """`for i in range(k): h = predict(h, W)` with the neural-net helper
        `def predict(inputs, W): outputs = inputs @ W; inputs = np.tanh(outputs); return inputs`
        (its names drawn to collide with the caller's, its parameter rebound)."""
        if "a" not in self.scope:  # (the stack variant: a is (k, d, d))
            return self.stack_loop()
        (n, d), _ = self.scope["a"]
        if n == d and self.chance(0.5):
            w = self.choice(["a", "a.T"])
        else:
            w = self.choice(["np.tanh(a.T @ a)", "np.sin(a.T @ a) / n_rows"]).replace("n_rows", str(n))
        start = self.start_vector(d)
        self.owned.discard(start[0])  # `h = z`: z's array is the loop's first h (seed 1210 #366)
        h = self.choice([n for n in LOCALS + ("inputs", "outputs") if n not in ("a", "b", "X")])
        name, lines, bias = self.predict_helper(h, start)
        self.helpers[name] = lines
        trips = self.integer(1, 3)
        call = f"{name}({h}, {w}{', b' if bias else ''})"
        out = [f"{h} = {start[0]}", f"for i in range({trips}):", f"    {h} = {call}"]
        deps = {"a"} | start[2] | ({"b"} if bias else set())
        self.bind_local(h, start[1], 1.0 if trips else start[3], deps)
        return out

    def start_vector(self, d: int):
        """(text, shape, deps, bound) of a start value whose last axis is d."""
        options = [(n, self.scope[n][0], self.deps.get(n, set()), self.scope[n][1]) for n in sorted(self.scope)
                   if self.scope[n][0] and self.scope[n][0][-1] == d and len(self.scope[n][0]) <= 2
                   and n not in ("a",)]
        options.append((f"np.tanh(np.ones({d}))", (d,), set(), 1.0))
        text, shape, deps, bound = self.choice(options)
        if text in self.scope and self.chance(0.5):
            text = f"np.tanh({text})"
        return text, shape, deps, bound

    def predict_helper(self, h: str, start):
        """The `predict` helper: names collide with the caller's; the input is rebound."""
        taken = sorted(set(self.scope) | {h})
        inputs = self.choice(["inputs", "inputs", h] + [n for n in taken if n != "X"][:3])
        weight = self.choice(["W", "W", "a", "w"])
        if weight == inputs:
            weight = "W"
        local = self.choice(["outputs", "outputs"] + [n for n in taken if n not in (inputs, weight)])
        bias = broadcast(start[1], self.scope["b"][0]) == start[1] and self.chance(0.4)
        plus = " + bias" if bias else ""
        form = self.choice(["two", "one", "twice"])
        if form == "two":
            body = [f"{local} = {inputs} @ {weight}{plus}", f"{inputs} = np.tanh({local})"]
        elif form == "one":
            body = [f"{inputs} = np.tanh({inputs} @ {weight}{plus})"]
        else:
            body = [f"{inputs} = {inputs} @ {weight}{plus}", f"{inputs} = np.tanh({inputs})"]
        name = f"predict{len(self.helpers) + 1}"
        params = f"{inputs}, {weight}{', bias' if bias else ''}"
        return name, [f"def {name}({params}):", *(f"    {line}" for line in body), f"    return {inputs}"], bias

    def stack_loop(self) -> list[str]:
        """`for W in a:` over a stack of (d, d) weights, a of shape (k, d, d):
        `h = np.tanh(h @ W + b)`, or `h = predict(h, W)`."""
        k, d, _ = self.shapes["a"]
        start = self.start_vector(d)
        h = self.fresh_local()
        reads = re.findall(r"\w+", start[0])
        weight = self.choice(["W", "W", "Wk", "layer"])  # (never a local's name: not read after)
        bias = broadcast(start[1], self.scope["b"][0]) == start[1]
        form = self.choice(["tanh", "tanh", "predict", "residual"])
        deps = {"a"} | start[2]
        if form == "predict":
            name, lines, with_b = self.predict_helper(h, start)
            self.helpers[name] = lines
            update = f"{h} = {name}({h}, {weight}{', b' if with_b else ''})"
            deps |= {"b"} if with_b else set()
            bound = 1.0
        elif form == "residual":  # h + 0.5 * tanh(h @ W): grows by 0.5 a layer
            update = f"{h} = {h} + 0.5 * np.tanh({h} @ {weight})"
            bound = start[3] + 0.5 * k
        else:
            update = f"{h} = np.tanh({h} @ {weight}{' + b' if bias else ''})"
            deps |= {"b"} if bias else set()
            bound = 1.0
        lines = [f"{h} = {start[0]}", f"for {weight} in a:", f"    {update}"]
        if self.chance(0.3):  # and something else of each W
            acc = self.fresh_local(avoid=[h] + reads)
            lines.insert(0, f"{acc} = 0.0")
            lines.append(f"    {acc} = {acc} + np.sum(np.sin({weight}))")
            self.bind_local(acc, (), float(k * d * d), {"a"})
        self.bind_local(h, start[1], bound, deps)
        return lines

    # -- statements ----------------------------------------------------------------------

    def statements(self) -> list[str]:
        """One statement: mostly an assignment; sometimes an in-place update of a fresh
        local (`u += e`), or a `for` loop updating one (`u += np.tanh(...)` per trip)."""
        if self.loop_rate and self.loops < 2 and self.chance(self.loop_rate):
            self.loops += 1
            kinds = ["rows"] * ("a" in self.scope and len(self.scope["a"][0]) == 2) + ["predict"] * 2
            kinds += ["stack", "stack"] * ("a" not in self.scope)
            return getattr(self, f"{self.choice(kinds)}_loop")()
        owned = sorted(self.owned - self.viewed)
        writable = [n for n in owned if self.scope[n][0]]
        if writable and self.write_rate and self.chance(self.write_rate):
            return self.write(self.choice(writable))
        if owned and self.chance(0.15):
            return [self.update(self.choice(owned), self.choice(["+=", "-=", "*="]))]
        if owned and self.chance(0.15):
            return self.loop(self.choice(owned))
        return [self.statement()]

    def update(self, name: str, op: str, trips: int = 1) -> str:
        """`name op= e`, e of a shape that broadcasts into name's (the array keeps its shape)."""
        shape, bound = self.scope[name]
        e = self.squash(self.expr(self.choice([1, 2])))
        if broadcast(shape, e.shape) != shape:
            e = self.squash(self.leaf_of_shape(shape))
        self.note_views(e.text)
        grown = bound * e.bound ** trips if op == "*=" else bound + trips * e.bound
        self.scope[name] = (shape, grown)
        self.deps[name] = self.deps[name] | self.depends(e)
        self.recent = [n for n in self.recent if n != name] + [name]
        return f"{name} {op} {e.text}"

    def write(self, name: str) -> list[str]:
        """`name[k] = e`, `name[lo:] += e`, `name[:, j] *= e`, or `for i in range(k):
        name[i] = e` (issue 10's writes into arrays), into a local no other name shares; e
        broadcasts into the part written (a number, or a value of that part's shape)."""
        shape, bound = self.scope[name]
        n = shape[0]
        forms = ["element", "slice", "loop"] + ["column", "entry"] * (len(shape) == 2)
        form = self.choice(forms)
        if form == "element":
            index, part = str(self.integer(-n, n - 1)), shape[1:]
        elif form == "slice":
            lo = self.integer(0, n - 1)
            index, part = f"{lo}:", (n - lo,) + shape[1:]
        elif form == "column":
            index, part = f":, {self.integer(0, shape[1] - 1)}", (n,)
        elif form == "entry":
            index, part = f"{self.integer(0, n - 1)}, {self.integer(-shape[1], shape[1] - 1)}", ()
        else:
            index, part = "i", shape[1:]
        e = self.squash(self.leaf_of_shape(part if self.chance(0.5) else ()))
        op = self.choice(["=", "=", "+=", "*="])
        self.note_views(e.text)
        grown = {"=": max(bound, e.bound), "+=": bound + n * e.bound, "*=": bound * e.bound ** n}[op]
        self.scope[name] = (shape, grown)
        self.deps[name] = self.deps[name] | self.depends(e)
        self.recent = [r for r in self.recent if r != name] + [name]
        line = f"{name}[{index}] {op} {e.text}"
        if form == "loop":
            trips = self.integer(1, n)
            return [f"for i in range({trips}):", f"    {line}" + (" / (i + 1)" if op != "*=" else "")]
        return [line]

    def loop(self, name: str) -> list[str]:
        """`for i in range(k):` updating `name` in place; the update may read `i`."""
        trips = self.integer(1, 3)
        op = self.choice(["+=", "-=", "*="])
        line = self.update(name, op, trips)
        if op != "*=" and self.chance(0.4):
            line += " / (i + 1)"
        return [f"for i in range({trips}):", f"    {line}"]

    def note_views(self, text: str) -> None:
        """Names that `text` may take a view of (`u.T`, `u[1:]`, `np.squeeze(u)`, ...): an
        in-place update of one would change the view too, which gradgen refuses."""
        for name in list(self.owned):
            if re.search(rf"(?<![\w.]){name}(\.T\b|\[|\.reshape\(|\.ravel\()", text) or \
                    re.search(rf"np\.(transpose|squeeze|ravel|flip|broadcast_to|expand_dims|reshape)\({name}\b", text):
                self.viewed.add(name)

    def statement(self) -> str:
        e = self.expr(self.choice([1, 2, 2, 3]))
        if e.prec == ATOM and e.text in self.scope or e.text.replace(".", "").isdigit():
            e = self.gen_binary(1)  # not a plain copy of a variable or a constant
            e = self.squash(e) if e.bound > LIMIT else e
        name = self.choice(LOCALS)
        self.note_views(e.text)
        if e.prec == ATOM:  # `y = x`: x's array now has two names
            self.owned.discard(e.text)
        self.owned.discard(name)
        self.viewed.discard(name)
        if e.prec != ATOM or _fresh_call(e.text):  # a new array, shared with no other name
            self.owned.add(name)
        self.scope[name] = (e.shape, e.bound)
        self.deps[name] = self.depends(e)
        if name in self.recent:
            self.recent.remove(name)
        self.recent.append(name)
        return f"{name} = {e.text}"

    def result(self) -> str:
        """`return` a number that depends on both `a` and `b`."""
        if self.recent and self.chance(0.6):
            name = self.recent[-1]
            e = AExpr(name, *self.scope[name])
        else:
            e = self.expr(self.choice([1, 2]))
        text = self.total(e)
        for missing in sorted({"a", "b"} - self.depends(e)):
            using = [n for n in sorted(self.scope) if missing in self.deps[n]]
            if not using:  # the parameter was rebound to a value that no longer depends on it
                continue
            name = self.choice(using)
            term = AExpr(name, *self.scope[name])
            if term.bound > 2.0:
                term = self.squash(term)
            text += f" {self.choice(['+', '-'])} {self.total(term)}"
        return f"return {text}"

    def total(self, e: AExpr) -> str:
        """A number from `e`: e itself if it is one, else its sum or mean."""
        if not e.shape and self.chance(0.5):
            return wrap(e, ADD)
        form = self.choice(["np.sum", "np.sum", "np.mean", ".sum", ".mean"])
        if form.startswith("."):
            if not e.shape:
                return f"np{form}({e.text})"
            return f"{wrap(e, POW)}{form}()"
        return f"{form}({e.text})"


def _center(x: AExpr):
    return "center", ["def center(x):", "    return x - np.mean(x)"], 2 * x.bound


def _center_rows(x: AExpr):
    return "center_rows", ["def center_rows(x):", "    mu = np.mean(x, axis=-1, keepdims=True)",
                           "    x = x - mu", "    return x"], 2 * x.bound


def _log_softmax(x: AExpr):
    lines = ["def log_softmax(z):", "    m = np.max(z, axis=-1, keepdims=True)", "    z = z - m",
             "    return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))"]
    return "log_softmax", lines, 2 * x.bound + float(np.log(x.shape[-1])) + 1


def _normalize(x: AExpr):
    return "normalize", ["def normalize(v):", "    s = np.sqrt(np.sum(v * v) + 1.0)", "    return v / s"], x.bound


def _softplus(x: AExpr):
    return "softplus", ["def softplus(z):", "    return np.log1p(np.exp(z))"], x.bound + 1.0


def _standardize(x: AExpr):
    lines = ["def standardize(x):", "    mu = np.mean(x, axis=0)", "    x = x - mu",
             "    s = np.sqrt(np.mean(x * x, axis=0) + 1.0)", "    return x / s"]
    return "standardize", lines, 2 * x.bound


ARRAY_HELPERS = {"center": _center, "center_rows": _center_rows, "log_softmax": _log_softmax,
                 "normalize": _normalize, "softplus": _softplus, "standardize": _standardize}

_VIEW_CALLS = {"transpose", "squeeze", "ravel", "flip", "broadcast_to", "expand_dims", "reshape"}


def _fresh_call(text: str) -> bool:
    """Is `text` one call `np.f(...)` of a function that returns a new array (not a view)?"""
    match = re.match(r"np\.(\w+)\(", text)
    if not match or match.group(1) in _VIEW_CALLS or not text.endswith(")"):
        return False
    depth = 0
    for k, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0 and c == ")":
            return k == len(text) - 1
    return False


VARIANTS = ["plain"] * 6 + ["helpers", "loops", "loops", "stack"]


def build_array_program(choices, max_statements: int = 5) -> ArrayProgram:
    """A random array program and its inputs (see the module docstring), from `choices`
    (`HypothesisChoices` or `SeededChoices` of `programs.py`).

    One program in ten calls array-valued helpers (`center`, `log_softmax`, ...), two loop
    over a's rows (`for row in a:`) or call `h = predict(h, W)` in a loop, one has `a` of
    shape (n, d, d) and loops over it (`for W in a: h = np.tanh(h @ W + b)`). The variant is
    a function of the plain program's draws, so a plain program is exactly the one drawn
    before the variants existed; another variant is drawn after it."""
    program = _build_array_program(choices, max_statements, "plain")
    variant = random.Random(program.seed).choice(VARIANTS)
    writes = random.Random(f"writes:{program.seed}").random() < WRITES_SHARE
    if variant == "plain" and not writes:
        return program
    return _build_array_program(choices, max_statements, variant, writes)


WRITES_SHARE = 0.3  # programs that write into arrays (drawn apart: the others are as they were)


def _build_array_program(choices, max_statements: int, variant: str, writes: bool = False) -> ArrayProgram:
    n, d, m = (choices.integer(1, 4) for _ in range(3))
    b_shape = choices.choice([(d,), (1, d), (n, 1), (n, d), ()])
    x_shape = choices.choice([(n, d), (d, m), (m, n), (d,)])
    if variant == "stack":  # a is a stack of n (d, d) weights, iterated by `for W in a:`
        b_shape = choices.choice([(d,), (1, d), ()])
        x_shape = choices.choice([(m, d), (d,)])
    shapes = {"a": (n, d, d) if variant == "stack" else (n, d), "b": b_shape, "X": x_shape}
    builder = _ArrayBuilder(choices, shapes)
    builder.shapes = shapes
    builder.loop_rate = {"loops": 0.5, "stack": 1.0}.get(variant, 0.0)
    builder.helper_rate = {"helpers": 0.15, "loops": 0.03}.get(variant, 0.0)
    builder.write_rate = 0.5 if writes else 0.0
    if variant == "stack":
        del builder.scope["a"]  # (read only by the loop over its first axis)
    body = [line for _ in range(choices.integer(1, max_statements)) for line in builder.statements()]
    body.append(builder.result())
    helpers = "".join("\n\n" + "\n".join(lines) + "\n" for lines in builder.helpers.values())
    source = ("import numpy as np\n" + helpers + "\n\ndef f(a, b, *, X):\n"
              + "".join(f"    {line}\n" for line in body))
    seed = choices.integer(0, 2**32 - 1)
    rng = np.random.default_rng(seed)
    point = {name: rng.uniform(-BOX, BOX, shape) if shape else float(rng.uniform(-BOX, BOX))
             for name, shape in shapes.items()}
    return ArrayProgram(source, point, seed, shapes)


@st.composite
def array_programs(draw, max_statements: int = 5) -> ArrayProgram:
    """Hypothesis strategy: a random array program and its inputs (see `build_array_program`)."""
    return build_array_program(HypothesisChoices(draw), max_statements)


def seeded_array_program(seed: int, max_statements: int = 5) -> ArrayProgram:
    """The same kind of program from a seed, without hypothesis."""
    return build_array_program(SeededChoices(seed), max_statements)


def _einsum(x: AExpr, y: AExpr) -> str:
    """x @ y as np.einsum: "ij,jk->ik" (the letters x and y keep, the one they sum), for a
    matrix x or a vector (its row); gradgen writes each operand's gradient as an einsum back
    to its letters, and the two-operand einsum in BLAS (tests/test_einsum_matmul.py)."""
    left = "ab"[:len(x.shape) - 1]
    right = "cd"[:len(y.shape) - 1]
    return f"np.einsum('{left}s,s{right}->{left}{right}', {x.text}, {y.text})"


def _floated(x: AExpr) -> AExpr:
    """x, or float(x) where x is a number made of integer literals alone (`-3`, `3 * 3`): an
    array made of it (`np.expand_dims(-3, 0)`) holds integers, and a later `s += np.sin(...)`
    of it raised in the program's own run (soak 64006 #243: the generator's error)."""
    if x.shape or any(c.isalpha() for c in x.text):
        return x
    try:
        value = eval(x.text, {"__builtins__": {}})  # noqa: S307 - the generator's own arithmetic of literals
    except Exception:  # noqa: BLE001 - not a literal expression: as it is
        return x
    return AExpr(f"float({x.text})", x.shape, x.bound) if isinstance(value, int) else x


GATHER = [3, 1]  # (which texts are gathered: crc32 1 modulo 3; the regression seeds of tests/test_fuzz.py keep their programs)


def _gathered(x: AExpr) -> AExpr:
    """x, or (off the draws, by x's text: earlier seeds keep their programs) its entries picked
    by index arrays with repeats and negative indices, in x's shape, `x[np.array([2, 0, 2])]`
    or `x[np.arange(2)[:, None], np.array([[1, -2, 0], [1, 1, 0]])]`, whose gradient adds each
    pick back (index_add: np.bincount, else np.add.at)."""
    h = zlib.crc32(x.text.encode())
    if not x.shape or len(x.shape) > 2 or h % GATHER[0] != GATHER[1]:
        return x
    bits = [(h >> k) & 0xF for k in range(2, 30, 4)]
    n = x.shape[0]
    if len(x.shape) == 1:
        picks = [bits[j % len(bits)] % n - (n if bits[j % len(bits)] & 8 else 0) for j in range(n)]
        return AExpr(f"{wrap(x, POW)}[np.array({picks})]", x.shape, x.bound)
    m = x.shape[1]
    cols = [[bits[(i * m + j) % len(bits)] % m - (m if (i + j) % 3 == 0 else 0) for j in range(m)] for i in range(n)]
    return AExpr(f"{wrap(x, POW)}[np.arange({n})[:, None], np.array({cols})]", x.shape, x.bound)
