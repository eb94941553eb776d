"""Seeded random programs drawn from the grammar of the array subset (issue 20).

The other generators write the idioms we thought of; this one draws every statement from a
small grammar of what gradgen accepts, so any expression may stand on the right of any
assignment, the same name on both sides, in loops and branches:

    module   := constant* helper* "def f(" param+ "):" stmt+ [returning] ["return" total]  [aux]
    param    := scalar | vector | matrix | dict | list | tuple | list of tuples
              | NamedTuple | dataclass (a list of NamedTuples in one; an int and a str field:
                data; declared in the module, annotated with its class or not)
                (any of them nested, unused or partly used; a number default `b=0.0`
                called with a number or with an array)
    stmt     := name "=" expr                      (a new name, or one already bound: `v = v[1:]`)
              | name "+=" expr                     (a number)
              | name "=" np.zeros(..) ; name[index] op= expr ...   (repeated indices too)
              | name[index] "," (name | name[index]) "=" expr "," expr   (also `= swirl(e, e2)`, nested)
              | target "," target "=" expr         (`W0, c0 = layers[0]`)
              | "if" expr ">" number ":" stmt+ ["else:" stmt+]
              | "for" target "in" iterable ":" stmt+   (range, rows, zip, enumerate, a dict,
                                                        .items(), .values(), a list of tuples)
              | name ".append(" expr ")"
    returning := "for" target "in" iterable ":" stmt+ "if" cond ":" "return" total ["if" cond ":" break|continue]
                 stmt*                              (the `return` in a loop nested in it, sometimes)
              | k "= 0" "while True:" k "+= 1" stmt+ "if" cond ":" "return" total ...
                 "if" k ">=" number ":" ("return" total | "break")   (issue 22: a solver's exits)
    expr     := leaf | expr op expr | fn(expr) | reduction(expr, axis, keepdims)
              | expr "@" expr | expr[index] | expr if cond else expr | max(expr, number)
              | np.sum([expr for x in iterable]) | np.array([expr for x in iterable])
              | sum(expr for x in iterable) | np.array([number, expr, ...])
              | helper(expr, ...) | np.stack(list) | np.concatenate([expr, expr])

Every draw is evaluated as it is made, at the program's points: A (the first call), B (a
second call with the batch dimension `n` changed) and, when the module has constants, A
with the constants changed. So each expression has exact shapes and values everywhere: a
draw that fails at some point (shapes that do not broadcast, a loop whose later trips no
longer fit, an index past the end) is drawn again; a value above LIMIT is squashed by
`np.tanh`; a comparison, `max`/`min` or `abs` within MARGIN of its kink at any point (on any
trip of a loop) is drawn again. Every program therefore runs at all its points, inside each
primitive's domain and away from kinks and branch boundaries: a disagreement is gradgen's.
Program `seed` is always the same program.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass

import numpy as np

import grammar_records as records
from grammar_exprs import ATOM, AUX, CONSTANTS, HELPERS, LIMIT, MATRIX_NAMES, MUL, POW, SCALAR_NAMES, \
    STRUCT_NAMES, VECTOR_NAMES, ExprGrammar, _leaf, _numeric, _Worlds, wrap


RETURNING_LOOPS = 0.2  # share of programs whose last loop returns from inside (drawn last: the rest is unchanged)


@dataclass(frozen=True)
class GrammarProgram:
    """A module, the point of its first call, the point of its second call (other shapes),
    and the module constants with the value each is changed to between calls."""

    source: str
    point: dict
    second: dict
    constants: dict
    seed: int


RECORD_RATE = 0.25  # programs with a NamedTuple or dataclass parameter (grammar_records)
# programs whose f takes a module-level record of constants as a default (`settings=SETTINGS`, or
# `settings=None` then `settings = SETTINGS`), read where a parameter is first rebound (its own draws)
RECORD_DEFAULT_RATE = 0.12


class GrammarBuilder(ExprGrammar):
    """Draws one program, statement by statement, evaluating each draw at every point."""

    def __init__(self, seed: int):
        super().__init__(seed)
        self.annotated = {}  # a record parameter -> whether annotated with its class

    # -- parameters and constants ------------------------------------------------------------

    def parameters(self):
        """(signature parts, point A, point B): 1-4 parameters of every structure and rank."""
        dims = {"n": (self.n, self.n2), "d": (self.d, self.d)}
        rng_a, rng_b = np.random.default_rng(self.seed % 2**32), np.random.default_rng(self.seed % 2**32 + 1)
        count = self.choice([1, 2, 2, 3, 3, 4])
        kinds = [self.choice(["vector", "vector", "matrix", "matrix", "scalar", "dict", "list", "tuple",
                              "layers", "nested"]) for _ in range(count)]
        classes = random.Random(f"grammar-records:{self.seed}")  # (its own draws: other programs stay the same)
        if classes.random() < RECORD_RATE:  # a NamedTuple or dataclass (grammar_records)
            kinds[classes.randrange(len(kinds))] = classes.choice(records.KINDS)
        if self.chance(0.35):
            kinds.append("default")
        specs, point, second = [], {}, {}
        for kind in kinds:
            name, shape = self.param_shape(kind)
            a, b = (self.param_value(shape, dims, i, rng) for i, rng in ((0, rng_a), (1, rng_b)))
            point[name], second[name] = a, b
            default = self.choice(["0.0", "1.0", "0.5"]) if kind == "default" else None
            specs.append((name, kind, default))
            self.bind(name, "num" if kind in ("vector", "matrix", "scalar", "default") else "struct")
        if self.chance(0.3):  # data: a keyword-only parameter, not differentiated
            name = self.fresh(("X", "data", "Y"))
            shape = self.choice([("n", "d"), ("n",), ("d",)])
            point[name], second[name] = (self.param_value(shape, dims, i, r) for i, r in ((0, rng_a), (1, rng_b)))
            specs.append((name, "data", None))
            self.bind(name, "num")
        return specs, point, second

    def param_shape(self, kind: str):
        """A fresh name for a parameter of `kind`, and its shape tree in dimension names."""
        vec, mat = self.choice([("n",), ("d",)]), self.choice([("n", "d"), ("d", "d"), ("d", "n")])
        if kind == "vector":
            return self.fresh(VECTOR_NAMES), vec
        if kind == "matrix":
            return self.fresh(MATRIX_NAMES), mat
        if kind == "scalar":
            return self.fresh(SCALAR_NAMES), ()
        if kind == "default":  # a number default, called with a number or with an array
            return self.fresh(("b", "bias", "offset")), self.choice([(), ("n",), ("d",), ("n", "d")])
        if kind in records.KINDS:
            name = self.fresh(records.NAMES)
            self.annotated[name] = self.chance(0.5)  # `lin: Linear`, or read as whatever it holds
            return name, records.RecordShape.drawn(kind, self.choice)
        name = self.fresh(STRUCT_NAMES)
        if kind == "dict":
            return name, {"W": ("d", "d"), "c": ("d",), **({"s": ()} if self.chance(0.3) else {})}
        if kind == "list":
            return name, [self.choice([("d",), ("n",)])] * self.choice([2, 3])
        if kind == "tuple":
            return name, (("d", "d"), ("d",))
        if kind == "layers":
            return name, [(("d", "d"), ("d",))] * self.choice([1, 2])
        return name, {"layer": {"W": ("d", "d"), "b": ("d",)}, "scale": ()}

    def param_value(self, shape, dims, which: int, rng):
        if isinstance(shape, records.RecordShape):
            return shape.value(lambda s: self.param_value(s, dims, which, rng))
        if isinstance(shape, dict):
            return {k: self.param_value(v, dims, which, rng) for k, v in shape.items()}
        if isinstance(shape, list):
            return [self.param_value(v, dims, which, rng) for v in shape]
        if shape and isinstance(shape[0], (tuple, dict, list)):
            return tuple(self.param_value(v, dims, which, rng) for v in shape)
        return _leaf(rng, tuple(dims[s][which] for s in shape))

    # -- statements: each a list of (text, probed text) lines --------------------------------

    def statement(self) -> list | None:
        """One statement, kept only if it runs at every point; None if none fitted."""
        forms = ["assign"] * 8 + ["write", "write", "if", "if", "for", "for", "unpack", "accumulate", "indices",
                                  "list", "append", "inactive", "stack", "copy_update"]
        if self.depth >= 2:
            forms = [f for f in forms if f not in ("if", "for")]
        for _ in range(5):
            saved = (self.worlds.snapshot(), copy.deepcopy(self.scope))
            lines = getattr(self, f"stmt_{self.choice(forms)}")()
            self.target = None
            if lines:
                return lines
            self.worlds.spaces, self.scope = saved
        return None

    def commit(self, pairs: list) -> list | None:
        """`pairs` if its probed text runs at every point (which it then has run). A name they
        write into or update (`s += e`, `y[0] = e`, `(y[:-1], y[1:]) = ...`) is no longer known
        to hold data (soak 39009 #1844 and its class: `e = e - np.sum(H)` after `e = np.ones(...)`)."""
        if not self.worlds.execute("\n".join(p for _, p in pairs)):
            return None
        for text, _ in pairs:
            self.inactive_names.difference_update(_written(text))
        return pairs

    def stmt_assign(self) -> list | None:
        """`name = e`: a new name, or one bound already (e reads its old value often)."""
        frozen = set().union(*self.loop_vars)
        nums = [n for n in self.names("num") if n not in frozen]
        name = self.choice(nums[-4:]) if nums and self.chance(0.55) else self.fresh()
        self.target = name if name in nums else None
        if self.target and self.depth and self.chance(0.35):  # in a loop or branch: a part of itself
            e = self.squashed(self.part_of_itself(name))
        else:
            e = self.expr(self.choice([1, 2, 2, 3]))
        if e is None or e.text == name or not self.reads_variable(e) or all(
                isinstance(v, (int, np.integer)) for v in e.values):
            return None
        if name in self.updated and self.depth and not (e.prec < ATOM and " if " not in e.text):
            return None  # (`k -= e`, then `k = theta[...]` in the same loop: the next trip's `-=` changes theta)
        if e.text in self.updated and self.depth:
            return None  # (`z += e`, then `k = z` in the same loop: the next trip's `+=` changes k's object;
            # z = x @ x is a number there, which gradgen cannot know: soak 64006 #1009)
        self.bind(name, "num")
        self.owned.discard(e.text)  # (`A = R`: R's object has another name now, so `R -= ...` may change A)
        self.owned.discard(name)  # (`z = b` after `z = e`: z holds b's object now, a caller's array maybe)
        # a new number or array, which no other name holds (`+=` may update it); not a conditional
        # expression, whose arm may be a view (`xs[0][-1] if c else 2.0`: `r += r` would change xs)
        if e.prec < ATOM and " if " not in e.text:
            self.owned.add(name)
        return self.commit([(f"{name} = {e.text}", f"{name} = {e.probe}")])

    def stmt_inactive(self) -> list | None:
        """Code outside the subset that no derivative flows through, kept as written (issue 22
        item 1): a function gradgen has no rule for applied to data, a buffer from np.empty, a
        dtype= read from a value, a shape measured from a differentiated value, an f-string."""
        data = [n for n in self.names("num") if self.params.get(n) == "data" or n in self.inactive_names]
        nums = self.names("num")
        if not nums:
            return None
        a = self.choice(nums)
        forms = ["np.ones({a}.shape, dtype={a}.dtype) * 0.5", "np.cumprod(np.ones(np.shape({a}))) / 8.0",
                 "np.full(np.shape({a}), 0.25, dtype={a}.dtype)"]
        if data:
            forms += ["np.percentile({d}, 40.0)", "np.ptp({d}) * 0.1", "np.median({d}, axis=0)",
                      "np.diff({d}, prepend=0.0) * 0.5", "np.quantile({d}, 0.25) + np.zeros(np.shape({a}))",
                      "np.sum(np.ravel({d})[slice(0, 2)]) * 0.1",  # Python's builtins, a lambda:
                      "max(sorted(np.ravel({d}).tolist(), key=lambda v: -abs(v))[:2]) * 0.1",
                      "np.array([v * 0.5 for v in np.ravel({d})[:2]]).sum() + divmod(7, 2)[1]"]
        name = self.fresh()
        d = self.choice(data) if data else a
        text = self.choice(forms).format(a=a, d=d)
        for variables in self.loop_vars if data else ():  # never rebound later in the loop: its next trip would read
            variables.add(d)  # a differentiated value there (soak seed 35000 #1744: `data = row`)
        e = self.make(text)
        if e is None:
            return None
        lines = [(f"{name} = {text}", f"{name} = {text}")]
        if self.chance(0.3):  # a buffer filled from it, and a label only an assert reads
            lines = [(f"{name} = np.empty(np.shape({text}))", f"{name} = np.empty(np.shape({text}))"),
                     (f"{name}[...] = {text}", f"{name}[...] = {text}")]
            tag = self.fresh(("tag", "label"))
            lines.append((f'{tag} = f"{{np.shape({name})}}"', f'{tag} = f"{{np.shape({name})}}"'))
            lines.append((f"assert isinstance({tag}, str), {tag}", f"assert isinstance({tag}, str), {tag}"))
        self.bind(name, "num")
        pairs = self.commit(lines)
        if pairs is not None:
            self.inactive_names.add(name)
        return pairs

    def part_of_itself(self, name: str):
        """`v[1:]`, `v[::-1]`, `h[..., None]`, `np.tanh(h) + h[-1]`, `g + h[-1]`, `h + g[-1]`: the
        name's old value, or a part of it, in a value of the same or another shape (item 9)."""
        others = [n for n in self.names("num") if n != name] or [name]
        other = self.choice(others[-3:])
        form = self.choice(["{t}[1:]", "{t}[:-1]", "{t}[::-1]", "{t}[..., None]", "np.tanh({t}) + {t}[-1]",
                            "{t} + {o}[-1]", "{o} + {t}[-1]", "{t}[1:] * 2.0", "{t}.T", "{t}[-1] * {o}"])
        return self.make(form.format(t=name, o=other))

    def stmt_accumulate(self) -> list | None:
        """`s += e`, `s -= e` or `s = s + e` on a number."""
        scalars = [n for n in self.names("num") if n not in self.params and n not in set().union(*self.loop_vars)
                   and all(np.ndim(s[n]) == 0 for s in self.worlds.spaces)]
        if not scalars:
            return self.stmt_assign()
        name = self.choice(scalars)
        self.target = name
        e = self.scalar_expr(self.choice([1, 2]))
        if e is None:
            return None
        op = self.choice(["+=", "-=", f"= {name} +"] if name in self.owned else [f"= {name} +", f"= {name} -"])
        if op in ("+=", "-=") and re.search(rf"\w\([^()]*\b{name}\b", e.text):
            # (`S -= np.sum(relax(S, ...))`: a helper that keeps its argument on the tape holds S's object,
            # which gradgen, not knowing S a number, refuses to change in place; soak 66000 #955)
            op = f"= {name} {op[0]}"
        if op in ("+=", "-=") and self.depth:
            self.updated.add(name)
        return self.commit([(f"{name} {op} {e.text}", f"{name} {op} {e.probe}")])

    def stmt_indices(self) -> list | None:
        name = self.fresh(("idx", "rows", "sel"))
        values = self.choice([[0, 1, 1, 2], [2, 0, 2], [1, 1, 0], [0, 0], [-1, 0, -1]])
        # (a list made in a loop or branch is new each time and gradgen refuses to read it after:
        # inside one, the index is an array)
        as_list = self.depth == 0 and self.chance(0.5)
        text = f"{name} = {values!r}" if as_list else f"{name} = np.array({values!r})"
        self.bind(name, "index")
        return self.commit([(text, text)])

    def stmt_list(self) -> list | None:
        """`hs = [e]`, or `hs = []` and an append: a list later statements append to and read."""
        name = self.fresh(("hs", "parts", "outs"))
        first = self.expr(1) if self.chance(0.5) else None
        if first is None and self.chance(0.3):  # `hs, cs = [], []`: once a silent zero gradient (GradBench lstm)
            other = self.fresh(("cs", "rows", "keep"))
            made = f"{name}, {other} = [], []"
            lines = self.commit([(made, made)])
            if lines is None:
                return None
            self.bind(name, "list")
            self.bind(other, "list")
            appends = [self.stmt_append(name), self.stmt_append(other)]
            return None if None in appends else lines + appends[0] + appends[1]
        lines = self.commit([(f"{name} = [{first.text}]", f"{name} = [{first.probe}]") if first
                             else (f"{name} = []", f"{name} = []")])
        if lines is None:
            return None
        if first is not None:
            self.owned.discard(first.text)
        self.bind(name, "list")
        if first is None:
            append = self.stmt_append(name)
            return lines + append if append else None
        return lines

    def stmt_append(self, name: str | None = None) -> list | None:
        lists = self.names("list")
        if name is None and not lists:
            return self.stmt_assign()
        name = name or self.choice(lists)
        e = self.expr(self.choice([1, 2]))
        if e is None or (self.depth and e.text in self.updated):
            return None  # (`e -= ...` earlier in this loop: its next trip would change what the list holds, soak 56006 #901)
        self.owned.discard(e.text)  # (the list holds that very object now: `k -= ...` would change it)
        return self.commit([(f"{name}.append({e.text})", f"{name}.append({e.probe})")])

    def stmt_write(self) -> list | None:
        """A new array written into: `y = np.zeros_like(x)` (or a copy), then `y[idx] = e`
        with repeated indices, `y[0] = e`, `y[1:] += e`, `y[:, j] = e`, or a loop writing
        `y[i]`; nothing else holds y's array, and e never reads y."""
        name = self.fresh(("y", "R", "buf", "T"))
        base = self.leaf()
        if base is None or base.scalar:
            return None
        start = self.choice([f"np.zeros_like({base.text})", f"{wrap(base, POW)}.copy()", f"np.copy({base.text})",
                             f"np.zeros({wrap(base, POW)}.shape)", f"np.zeros(len({base.text}))", "np.zeros(2)",
                             "np.zeros(3)"])
        pairs = self.commit([(f"{name} = {start}", f"{name} = {start}")])
        if pairs is None:
            return None
        for _ in range(self.choice([1, 1, 2, 3])):
            write = self.write_into(name)
            if write is not None:
                pairs.append(write)
        self.bind(name, "num")
        if self.chance(0.3):  # the written array under another name (`S = R`)
            alias = self.fresh(("S", "Q", "res"))
            pairs += self.commit([(f"{alias} = {name}",) * 2]) or []
            self.bind(alias, "num")
        return pairs if len(pairs) > 1 else None

    def write_into(self, name: str):
        """One write `name[index] op= e` (or a loop of them, or a tuple of targets), run at every
        point; or None."""
        if self.chance(0.3):
            return self.tuple_write(name)
        ndim = np.ndim(self.worlds.spaces[0][name])
        i = self.fresh(("i", "j", "jj"))
        index = self.choice([self.index_list(), self.index_list(), "0", "-1", "1:", ":-1", i]
                            + [":, 0", "0, 1", ":, -1", f"{self.index_list()}, 0"] * (ndim == 2))
        op = self.choice(["=", "=", "=", "+=", "*="])
        if index == i:
            self.bind(i, "int")
            for space in self.worlds.spaces:
                space[i] = 0
        e = self.expr(self.choice([0, 1, 2]))
        self.scope.kinds.pop(i, None)
        if e is None or name in re.findall(r"\w+", e.text):
            return None
        text, probe = f"{name}[{index}] {op} {e.text}", f"{name}[{index}] {op} {e.probe}"
        if index == i:
            trips = f"range({self.choice(['2', f'len({name})'])})"
            text, probe = f"for {i} in {trips}:\n    {text}", f"for {i} in {trips}:\n    {probe}"
        return (text, probe) if self.worlds.execute(probe) else None

    def tuple_write(self, name: str):
        """Writes into `name` among the targets of one unpacking: `y[0], y[-1] = e, e2`,
        `y[i], t = e, e2`, `(y[0], y[1]) = swirl(e, e2)`, `t, (y[1:], u) = e, (e2, e3)`; the
        values never read y; every new name is bound after."""
        ndim = np.ndim(self.worlds.spaces[0][name])
        index = lambda: self.choice(["0", "-1", "1", "1:", ":-1"] + [":, 0", "0, 1", "-1"] * (ndim == 2))  # noqa: E731
        form = self.choice(["two", "name", "swirl", "nested"])
        # numbers go into the writes (any index takes one); a name takes any value
        kinds = {"two": "ww", "name": "wn", "swirl": "ww", "nested": "nwn"}[form]
        values = [self.scalar_expr(self.choice([0, 1, 2])) if k == "w" else self.expr(self.choice([0, 1, 2]))
                  for k in kinds]
        if any(v is None or name in re.findall(r"\w+", v.text) for v in values):
            return None
        (a, b, c), new = (values + [None])[:3], []

        def fresh():
            new.append(self.fresh(("t", "u", "part")))
            return new[-1]
        if form == "two":
            targets = f"{name}[{index()}], {name}[{index()}]"
            text, probe = f"{targets} = {a.text}, {b.text}", f"{targets} = {a.probe}, {b.probe}"
        elif form == "name":
            write, other = f"{name}[{index()}]", fresh()
            targets = f"{write}, {other}"
            if self.chance(0.5):
                targets, a, b = f"{other}, {write}", b, a
            text, probe = f"{targets} = {a.text}, {b.text}", f"{targets} = {a.probe}, {b.probe}"
        elif form == "swirl":
            targets = f"({name}[{index()}], {name}[{index()}])"
            text, probe = f"{targets} = swirl({a.text}, {b.text})", f"{targets} = swirl({a.probe}, {b.probe})"
        else:
            targets = f"{fresh()}, ({name}[{index()}], {fresh()})"
            text = f"{targets} = {a.text}, ({b.text}, {c.text})"
            probe = f"{targets} = {a.probe}, ({b.probe}, {c.probe})"
        if not self.worlds.execute(probe):
            return None
        for t in new:
            self.bind(t, "num")
        for v in values:  # (`t, (R[1], part) = e, (s, e)`: t and part hold e's object, so `e += ...` changes
            self.owned.discard(v.text)  # them too: gradgen refuses it, rightly; soak 60002 #1134)
        return text, probe

    def stmt_stack(self) -> list | None:
        """A state stack (issue 22): `S = np.stack([e, e, e]) * 1.0` (k + 1 rows of floats), then
        a loop that reads one row (`h = S[t]`, a view) and writes the next (`S[t + 1] = ...`),
        or runs backwards (`h = S[t + 1]`, `S[t] = ...`): a row the write never reaches; the
        view is read again after the write half the time."""
        base, e = self.leaf(), self.expr(self.choice([0, 1, 2]))  # (neither reads S nor h: not bound yet)
        if base is None or e is None:
            return None
        S, h, t = self.fresh(("S", "states", "hist")), self.fresh(("h", "prev", "cur")), self.fresh(("t", "step"))
        k, backwards = self.choice([2, 3]), self.chance(0.3)
        header = f"for {t} in range({k} - 1, -1, -1):" if backwards else f"for {t} in range({k}):"
        read, row = (f"{S}[{t} + 1]", f"{S}[{t}]") if backwards else (f"{S}[{t}]", f"{S}[{t} + 1]")
        acc = self.fresh(("acc", "out")) if self.chance(0.5) else None
        rows = ", ".join([wrap(base, ATOM - 1)] * (k + 1))
        pairs = [(f"{S} = np.stack([{rows}]) * 1.0", f"{S} = np.stack([{', '.join([wrap(base, ATOM - 1, True)] * (k + 1))}]) * 1.0")]
        pairs += [(f"{acc} = 0.0",) * 2] if acc else []
        body = [(f"{h} = {read}",) * 2,
                (f"{row} = np.tanh({h} * 0.5 + {wrap(e, MUL)})", f"{row} = np.tanh({h} * 0.5 + {wrap(e, MUL, True)})")]
        body += [(f"{acc} = {acc} + np.sum({h} * {row})",) * 2] if acc else []
        pairs = self.commit(pairs + [(header, header), *_indent(body)])
        if pairs is None:
            return None
        self.bind(S, "num")
        if acc:
            self.bind(acc, "num")
        return pairs

    def stmt_copy_update(self) -> list | None:
        """`y = X[idx]` with a list or an array of integers (a copy, never a view: issue 22),
        then updated in place (`y *= e`, `y += e`, `y[0] = e`); X may be read again later."""
        space = self.worlds.spaces[0]
        arrays = [n for n in self.names("num") if np.ndim(space[n]) >= 1]
        e = self.expr(self.choice([0, 1]))
        if not arrays or e is None:
            return None
        x, y = self.choice(arrays[-4:]), self.fresh(("y", "sel", "picked"))
        index = self.choice(["[0, 1]", "[1, 0, 1]", "[-1, 0]", "np.array([0, 0])", "np.array([1, 0])", "np.arange(2)"])
        update = self.choice([f"{y} *= ", f"{y} += ", f"{y} -= ", f"{y}[0] = "])
        pairs = self.commit([(f"{y} = {x}[{index}]",) * 2, (update + e.text, update + e.probe)])
        if pairs is None:
            return None
        self.bind(y, "num")
        self.owned.add(y)
        return pairs

    def stmt_unpack(self) -> list | None:
        """`W0, c0 = layers[0]`, `W, b = pair`, `top, rest = e` (e's first axis of length 2)."""
        options = []
        for n in self.names("struct"):
            value = self.worlds.spaces[0][n]
            if isinstance(value, tuple):
                options.append(n)
            if isinstance(value, list) and isinstance(value[0], tuple):
                options.append(f"{n}[{self.choice([0, -1])}]")
            if isinstance(value, records.Stack):
                options.append(f"{n}.layers[{self.choice([0, -1])}]")
        if options and self.chance(0.7):
            text = probe = self.choice(options)
            self.scope.container_use.add(text.split("[")[0].split(".")[0])
            count = len(eval(text, self.worlds.spaces[0]))  # noqa: S307 - a path into a parameter
        else:
            e = self.expr(2)  # (not a parameter: one unpacked is taken for a structure, README)
            if e is None or e.text in self.params or any(np.ndim(v) == 0 or np.shape(v)[0] != 2 for v in e.values):
                return None
            count, text, probe = 2, e.text, e.probe
        targets = ", ".join(self.fresh(("W0", "c0", "first", "second", "top", "rest")) for _ in range(count))
        for t in targets.split(", "):
            self.bind(t, "num")
        return self.commit([(f"{targets} = {text}", f"{targets} = {probe}")])

    def block(self, count: int) -> list:
        self.depth += 1
        pairs = []
        for _ in range(count):
            pairs += self.statement() or []
        self.depth -= 1
        return pairs

    def stmt_if(self) -> list | None:
        """`if e > c:` ... [`else:` ...], each branch drawn as if it were taken (the points
        may take different ones); after the `if`, a name is read only if it was bound before
        or both branches bind it (an array bound on one branch only is used there)."""
        cond = self.condition(self.choice([1, 2]))
        if cond is None:
            return None
        start, scope, owned = self.worlds.snapshot(), copy.deepcopy(self.scope), set(self.owned)
        body = self.block(self.choice([1, 2, 3]))
        kinds, bound, owned_body = dict(self.scope.kinds), _bound(body), self.owned
        self.worlds.spaces, self.scope, self.owned = self.worlds.copy_of(start), copy.deepcopy(scope), set(owned)
        orelse = self.block(self.choice([1, 2])) if self.chance(0.6) else []
        self.worlds.spaces = start
        self.owned &= owned_body  # (a name is its own array after the `if` only if it is after either branch)
        if not body:
            return None
        pairs = [(f"if {cond[0]}:", f"if {cond[1]}:"), *_indent(body)]
        pairs += [("else:", "else:"), *_indent(orelse)] if orelse else []
        if self.commit(pairs) is None:
            return None
        self.scope = scope
        for text, _ in pairs:  # (a branch's `e = np.exp(H)` after `e = np.ones(...)`: e is no data after the `if`;
            self.inactive_names.difference_update(_written(text))  # soak 41005 #1215)
        self.owned &= owned  # (one branch's `v = e` leaves v the caller's on the other path: `v += e` would change it)
        for name in bound & _bound(orelse):
            if kinds.get(name) not in (None, "list"):
                self.bind(name, kinds[name])
        return pairs

    def stmt_for(self) -> list | None:
        """A loop over range, the rows of an array, zip, enumerate, a list or dict parameter,
        its .items() or .values(), or a list of (W, b) pairs; the body rebinds names freely,
        to values of other shapes too (`v = v[1:]`), and every trip runs at every point."""
        form = self.choice(["range", "range", "range", "rows", "enumerate", "zip", "struct", "weights"])
        if self.annotated and form != "struct" and self.chance(0.5):  # (a record parameter: its loops often)
            form = "struct"
        start, scope = self.worlds.snapshot(), copy.deepcopy(self.scope)
        header, first_trip = self.loop_header(form)
        if not self.worlds.execute(first_trip):
            return None
        variables = set(re.findall(r"\w+", header[4:]))  # (and the names it runs over: never assigned in it)
        self.loop_vars.append(variables)
        try:
            body = self.block(self.choice([1, 2, 2, 3]))
        finally:
            self.loop_vars.pop()
        self.worlds.spaces = start
        if not body:
            return None
        pairs = self.commit([(header, header), *_indent(body)])
        if pairs is None or any(_numeric(v) and float(np.max(np.abs(v))) > 3 * LIMIT
                                for space in self.worlds.spaces for v in space.values()):
            return None
        kinds = self.scope.kinds
        self.scope.kinds = {n: k for n, k in kinds.items() if n in scope.kinds
                            or form == "range" and k not in ("list", "int", "key")}
        return pairs

    def loop_header(self, form: str):
        """(`for ... in ...:`, statements binding the loop variables as on the first trip)."""
        space = self.worlds.spaces[0]
        arrays = [n for n in self.names("num") if np.ndim(space[n]) >= 1]
        structs = [n for n in self.names("struct") if isinstance(space[n], (dict, list, tuple))
                   or records.fields(space[n]) is not None and self.record_loop(n, space[n]) is not None]
        if form == "range" or not arrays and form != "struct" or form == "struct" and not structs:
            t = self.fresh(("t", "step", "it"))
            self.bind(t, "int")
            return f"for {t} in range({self.choice([1, 2, 2, 3])}):", f"{t} = 0"
        if form in ("rows", "enumerate", "zip", "weights"):
            m, m2 = self.choice(arrays), self.choice(arrays)
            a, i = self.fresh(("row", "xi", "col")), self.fresh(("i", "j"))
            b = self.fresh(("xb", "ub"))
            self.bind(a, "num")
            if form == "rows":
                return f"for {a} in {m}:", f"{a} = {m}[0]"
            if form == "enumerate":
                self.bind(i, "int")
                return f"for {i}, {a} in enumerate({m}):", f"{i}, {a} = 0, {m}[0]"
            if form == "weights":  # a list written in the loop, zipped with an array's rows (issue 22)
                weights = self.choice([[0.5, 1.5], [2.0, -1.0, 0.25], [1.0, 0.5, 0.5, -0.5]])
                self.bind(b, "num")
                return f"for {b}, {a} in zip({weights!r}, {m}):", f"{b}, {a} = {weights[0]!r}, {m}[0]"
            self.bind(b, "num")
            return f"for {a}, {b} in zip({m}, {m2}):", f"{a}, {b} = {m}[0], {m2}[0]"
        own = [n for n in structs if n in self.annotated]
        p = self.choice(own if own and self.chance(0.7) else structs)
        self.scope.container_use.add(p)
        value = space[p]
        if records.fields(value) is not None and not isinstance(value, tuple) or isinstance(value, records.Pair):
            return self.record_loop(p, value, bind=True)
        if isinstance(value, dict):
            key, val = self.fresh(("key", "name")), self.fresh(("val", "part"))
            style = self.choice(["keys", "items", "values"])
            if style == "keys":
                self.bind(key, "key")
                self.key_of[key] = p
                return f"for {key} in {p}:", f"{key} = list({p})[0]"
            self.bind(val, "struct" if any(isinstance(v, dict) for v in value.values()) else "num")
            if style == "values":
                return f"for {val} in {p}.values():", f"{val} = list({p}.values())[0]"
            return f"for {key}, {val} in {p}.items():", f"{key}, {val} = list({p}.items())[0]"
        if isinstance(value[0], tuple):
            parts = [self.fresh(("Wl", "Wk")), self.fresh(("cl", "bk"))]
            for q in parts:
                self.bind(q, "num")
            return f"for {', '.join(parts)} in {p}:", f"{', '.join(parts)} = {p}[0]"
        item = self.fresh(("item", "leaf", "part"))
        self.bind(item, "num")
        return f"for {item} in {p}:", f"{item} = {p}[0]"

    def record_loop(self, p: str, value, bind: bool = False):
        """A loop a record parameter gives (None if none): `for t in range(lin.steps):` (its
        data field, where `lin` is annotated with its class: without, gradgen cannot know the
        field is an int, and leaves a parameter counted so out), `for W, c in net.layers:`,
        `for layer in net.layers:` (then `layer.W`, `layer[1]`), `for item in pair:`."""
        if isinstance(value, records.Linear):
            if not self.annotated.get(p):
                return None
            if not bind:
                return True
            t = self.fresh(("t", "step", "it"))
            self.bind(t, "int")
            bound = self.choice([f"{p}.steps", f"{p}.steps if {p}.act == 'tanh' else 1"])
            return f"for {t} in range({bound}):", f"{t} = 0"
        if isinstance(value, records.Pair):
            if not bind:
                return True
            item = self.fresh(("item", "leaf", "part"))
            self.bind(item, "num")
            return f"for {item} in {p}:", f"{item} = {p}[0]"
        if not isinstance(value, records.Stack):
            return None
        if not bind:
            return True
        if self.chance(0.5):
            parts = [self.fresh(("Wl", "Wk")), self.fresh(("cl", "bk"))]
            for q in parts:
                self.bind(q, "num")
            return f"for {', '.join(parts)} in {p}.layers:", f"{', '.join(parts)} = {p}.layers[0]"
        layer = self.fresh(("layer", "block"))
        self.bind(layer, "struct")
        return f"for {layer} in {p}.layers:", f"{layer} = {p}.layers[0]"

    # -- a loop f returns from ----------------------------------------------------------------

    def returning_loop(self) -> tuple | None:
        """f's last loop, which returns from inside (item 3 of issue 22): `for` over a range or
        rows (the return in a loop nested in it, sometimes), or `while True:` with a counter,
        left by returning (or by `break`, f then returning after it). The `return` is inside an
        `if`, its value computed in the loop; a `break` or `continue` stands beside it
        sometimes. (pairs, whether f returns after the loop), or None. The probe of a return
        raises _Return, which leaves every loop as the return leaves f."""
        form = self.choice(["for", "for", "nested", "while", "while_break"])
        start, scope = self.worlds.snapshot(), copy.deepcopy(self.scope)
        try:
            pairs = self._returning_loop(form)
        finally:
            self.worlds.spaces = start
        probe, before = "\n".join(p for _, p in pairs or []), self.worlds.snapshot()
        wrapped = "try:\n" + "\n".join("    " + line for line in probe.split("\n")) + "\nexcept _Return:\n    pass"
        if not pairs or not self.worlds.execute(wrapped) or any(
                _numeric(v) and float(np.max(np.abs(v))) > 3 * LIMIT for space in self.worlds.spaces
                for v in space.values()):
            self.worlds.spaces, self.scope = before, scope
            return None
        # after it, the names bound before it (one bound inside may be unbound where it left early)
        self.scope.kinds = {n: k for n, k in self.scope.kinds.items() if n in scope.kinds}
        return pairs, form != "while"

    def _returning_loop(self, form: str) -> list | None:
        if form.startswith("while"):
            k = self.fresh(("trips", "count", "rounds"))
            if not self.worlds.execute(f"{k} = 0\n{k} += 1"):
                return None
            self.bind(k, "int")
            limit = self.choice([1, 2, 3])
            last = (f"if {k} >= {limit}:", f"if {k} >= {limit}:")
            # (no `continue`: the loop would miss its count; no `break` where it leaves only by returning;
            # its variables as a for loop's: data read by code kept as written is never rebound in it, where
            # the next trip would read a differentiated value: soak 53002 #13, `r = (3.0 * u)[...]` after np.diff(r))
            self.loop_vars.append({k})
            try:
                inner = self.returning_body([(f"{k} += 1",) * 2], 2,
                                            {"continue"} | ({"break"} if form == "while" else set()))
            finally:
                self.loop_vars.pop()
            if inner is None:
                return None
            leave = self.returning_exit() if form == "while" else ("break", "break")
            if leave is None:
                return None
            return [(f"{k} = 0",) * 2, ("while True:",) * 2, *_indent(inner + [last, *_indent([leave])])]
        header, first_trip = self.loop_header(self.choice(["range", "range", "rows"]))
        if not self.worlds.execute(first_trip):
            return None
        variables = set(re.findall(r"\w+", header[4:]))
        self.loop_vars.append(variables)
        try:
            if form == "nested":
                before = self.block(self.choice([0, 1]))
                outer = copy.deepcopy(self.scope)
                inner_header, inner_first = self.loop_header("range")
                if not self.worlds.execute(inner_first):
                    return None
                self.loop_vars.append(set(re.findall(r"\w+", inner_header[4:])))
                self.depth += 1
                try:
                    inner = self.returning_body([], 1, set())
                finally:
                    self.depth -= 1
                    self.loop_vars.pop()
                if inner is None:
                    return None
                # (after the inner loop, what was bound before it: its counter is not read after it, and
                # what it bound after an exit may be unbound)
                self.scope.kinds = {n: k for n, k in self.scope.kinds.items() if n in outer.kinds}
                body = before + [(inner_header,) * 2, *_indent(inner)] + self.block(self.choice([0, 1]))
            else:
                body = self.returning_body([], 2, set())
        finally:
            self.loop_vars.pop()
        return None if body is None else [(header, header), *_indent(body)]

    def returning_body(self, first: list, count: int, without: set) -> list | None:
        """A loop body: statements, `if e > c: return ...` (its value read from what the loop
        computed), sometimes `if e > c: break` (or continue) beside it, more statements."""
        body = list(first) + self.block(self.choice(range(1, count + 1)))
        cond = self.condition(self.choice([1, 2]))
        leave = self.returning_exit(body)
        if cond is None or leave is None:
            return None
        body += [(f"if {cond[0]}:", f"if {cond[1]}:"), *_indent([leave])]
        others = sorted({"break", "continue"} - without)
        if others and self.chance(0.4):
            other, cond2 = self.choice(others), self.condition(1)
            if cond2 is not None:
                body += [(f"if {cond2[0]}:", f"if {cond2[1]}:"), ("    " + other,) * 2]
        return body + self.block(self.choice([0, 0, 1]))

    def returning_exit(self, body=()) -> tuple | None:
        """(`return <totals>`, `raise _Return(<totals>)`) of the values the loop has now."""
        ret = self.result(list(body))
        return ret, f"raise _Return({ret[len('return '):]})"

    # -- the program -------------------------------------------------------------------------

    def result(self, body: list):
        """`return` a number: totals of the values bound last (so most of the body reaches
        the result); a structured parameter the body never read is read here half the time
        (else it stays unused, its gradient zeros of its structure)."""
        space = self.worlds.spaces[0]
        nums = [n for n in self.names("num") if n not in self.params] or self.names("num")
        chosen = nums[-self.choice([1, 2, 3, 4, 5]):] + self.rng.sample(nums, min(len(nums), self.choice([0, 1])))
        terms = [self.choice(["np.sum({})", "np.mean({})"] + ["{}.sum()"] * (np.ndim(space[n]) > 0)).format(n)
                 for n in dict.fromkeys(chosen)]
        terms += [f"sum(np.sum(item) for item in {hs})" for hs in self.names("list") if self.chance(0.5)]
        text = "\n".join(t for t, _ in body)
        for name in self.names("struct"):
            if not re.search(rf"\b{name}\b", text) and self.chance(0.5):
                e = self.part(name)
                terms += [f"np.sum({e.text})"] if e is not None else []
        if not terms or not self.worlds.execute(f"_result = {' + '.join(terms)}"):
            read = [self.part(p) if isinstance(space[p], (dict, list, tuple)) or records.fields(space[p]) is not None
                    else self.make(p) for p in self.params]
            terms = [f"np.sum({e.text})" for e in read if e is not None][:1] or ["0.0"]
        return f"return {' + '.join(terms)}"

    def build(self) -> GrammarProgram:
        specs, point, second = self.parameters()
        self.params = {name: kind for name, kind, _ in specs}
        chosen = self.rng.sample(CONSTANTS, self.choice([0, 0, 1, 2]))
        self.constants = {name: new for name, _, new in chosen}
        self.taken |= set(self.constants)
        self.worlds = _Worlds([point, second] + ([point] if chosen else []))
        for k, space in enumerate(self.worlds.spaces):
            space.update({name: new if k == 2 else old for name, old, new in chosen})
            for lines in HELPERS.values():
                exec("\n".join(lines), space)  # noqa: S102 - our own helpers
        body = []
        for _ in range(self.choice([2, 3, 4, 5, 6])):
            body += self.statement() or []
        ending = self.returning_loop() if self.chance(RETURNING_LOOPS) else None
        body += ending[0] if ending else []
        ret = self.result(body) if ending is None or ending[1] else None
        return GrammarProgram(self.source(specs, chosen, body, ret), point, second, dict(self.constants),
                              self.seed)

    def source(self, specs, chosen, body, ret: str) -> str:
        """The module: constants (sometimes one named like a parameter of f, which shadows
        it), the helpers f calls, f, and sometimes an unrelated function whose parameters are
        named like f's generated functions."""
        imports, declared = records.declarations([self.worlds.spaces[0][name] for name, _, _ in specs
                                                  if name in self.worlds.spaces[0]])
        lines = ["import numpy as np", *imports, ""]
        lines += [f"{name} = {old!r}" for name, old, _ in chosen] + ([""] if chosen else [])
        lines += declared
        if self.chance(0.15):  # a module name f's parameter shadows: f never reads it (a number or an array)
            shadowed = self.choice([name for name, _, _ in specs])
            lines += [f"{shadowed} = " + self.choice(["0.75", "np.array([1.0, 2.0])"]), ""]
        text = "\n".join(t for t, _ in body) + "\n" + (ret or "")
        for name in sorted(_helpers_in(text)):
            lines += ["", *HELPERS[name], ""]
        signature, first = self.signature(specs), []
        defaulted = self.record_default(specs, declared)
        if defaulted is not None:
            declaration, keyword, first = defaulted
            lines += declaration
            signature += [keyword] if "*" in signature else ["*", keyword]
        lines += ["", f"def f({', '.join(signature)}):", *first, *(t for t, _ in _indent(body))]
        lines += [f"    {ret}"] if ret else []  # (none after a `while True:` left only by returning)
        if self.chance(0.3):
            lines += ["", "", *self.choice(AUX)]
        return "\n".join(lines) + "\n"

    def record_default(self, specs, declared):
        """(module lines, the keyword parameter, f's first lines) of a record default, or None:
        `SETTINGS = Pair(np.array([...]), 1.0)` read as `w = w * settings.b + 0.0 * np.sum(settings.a)`,
        the same numbers (so every promise of the program holds), through a record the generated
        module must declare again (gradgen/codegen/record_defaults.py)."""
        draws = random.Random(f"grammar-record-default:{self.seed}")  # (its own: other programs stay the same)
        numeric = [name for name, kind, _ in specs if kind in ("vector", "matrix", "scalar")]
        if draws.random() >= RECORD_DEFAULT_RATE or not numeric:
            return None
        target, name = draws.choice(numeric), "settings" if "settings" not in self.taken else "setup"
        values = [round(draws.uniform(-1.0, 1.0), 3) for _ in range(draws.choice([2, 3]))]
        lines = [] if any(line.startswith("Pair = ") for line in declared) else \
            ["", "from collections import namedtuple", "", 'Pair = namedtuple("Pair", "a b")']
        lines += ["", f"SETTINGS = Pair(np.array({values!r}), 1.0)", ""]
        first = [f"    {target} = {target} * {name}.b + 0.0 * np.sum({name}.a)"]
        if draws.random() < 0.5:
            return lines, f"{name}=SETTINGS", first
        return lines, f"{name}=None", [f"    if {name} is None:", f"        {name} = SETTINGS", *first]

    def signature(self, specs) -> list[str]:
        """Positional parameters (a list or tuple read only by position annotated, as the
        README asks), then those with number defaults, then `*, data`."""
        plain, defaults, data = [], [], []
        for name, kind, default in specs:
            value = self.worlds.spaces[0][name] if name in self.worlds.spaces[0] else None
            if kind == "data":
                data.append(name)
            elif self.annotated.get(name):
                plain.append(f"{name}: {type(value).__name__}")
            elif default is not None:
                defaults.append(f"{name}={default}")
            elif isinstance(value, (list, tuple)) and (name not in self.scope.container_use or self.chance(0.3)):
                plain.append(f"{name}: {type(value).__name__}")
            else:
                plain.append(name)
        return plain + defaults + (["*", *data] if data else [])


def _indent(pairs):
    """Each (text, probe) line, multi-line ones split, indented one level."""
    out = []
    for text, probe in pairs:
        out += [("    " + t, "    " + p) for t, p in zip(text.split("\n"), probe.split("\n"))]
    return out


def _bound(pairs) -> set:
    """The names a block assigns (plain or unpacking targets), at any depth."""
    names = set()
    for text, _ in pairs:
        match = re.match(r"^\s*([\w, ]+?)\s*(=|\+=|-=|\*=)(?!=)", text)
        if match:
            names |= {n.strip() for n in match.group(1).split(",") if n.strip().isidentifier()}
    return names


def _written(text: str) -> set:
    """The names a statement's text binds, updates or writes into (`y[0] = e`, `a, (b[1:], c) = ...`)."""
    names = set()
    for line in text.split("\n"):
        match = re.match(r"^\s*(.+?)\s*(=|\+=|-=|\*=|/=)(?!=)", line)
        if match and not line.lstrip().startswith(("if ", "elif ", "while ", "for ", "assert ", "return ")):
            names |= set(re.findall(r"(?<![\w.'\"])([A-Za-z_]\w*)(?=\s*(?:\[|,|\)|$))", match.group(1)))
    return names


def _helpers_in(text: str) -> set:
    return {name for name in HELPERS if re.search(rf"(?<![\w.]){name}\(", text)}


def seeded_grammar_program(seed: int) -> GrammarProgram:
    """Program `seed` of the grammar (always the same program)."""
    return GrammarBuilder(seed).build()
