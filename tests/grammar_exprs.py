"""The expressions of the grammar of the array subset (issue 20), drawn with their values.

`ExprGrammar` draws any expression of the subset (see `grammar_programs` for the whole
grammar) over the names a program has bound, and evaluates it, as it is drawn, in one
Python namespace per point the program is checked at (`_Worlds`). A draw that fails at
some point (shapes that do not broadcast, an index past the end) is drawn again; one
larger than LIMIT is squashed with `np.tanh`; one whose kinks come within MARGIN of its
value (a comparison, `max`/`min` of numbers or along an axis, `abs`, a norm) is drawn
again: the probed text (`_gt`, `_reduce`, `_pick`, `_abs`, `_norm` in place of `>`,
`np.max`, `max`, `np.abs`, `np.linalg.norm`) measures them whenever it runs, on every trip
of a loop.
"""

from __future__ import annotations

import copy
import random
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

import grammar_records as records

BOX = 1.2  # parameters are drawn from [-BOX, BOX]
LIMIT = 4.0  # a value larger than this anywhere is squashed (np.tanh) before reuse
MARGIN = 0.1  # least distance from a kink or a branch boundary, at every point
LIST_INDEX_SHARE = 0.25  # integer indices written as a literal list (`v[[0, 1, 1]]`), not np.array
ATOM, POW, UNARY, MUL, ADD, CMP, IFEXP = 100, 14, 13, 12, 11, 6, 1
_MARGINS: list = []  # what the probes measured during one evaluation


@dataclass(frozen=True)
class Expr:
    """Text, the same text with its kinks probed, precedence, and its value at each point."""

    text: str
    probe: str
    prec: int
    values: tuple

    @property
    def shape(self):
        return np.shape(self.values[0])

    @property
    def scalar(self) -> bool:
        """0-d at some point (so not to be indexed or multiplied as a matrix)."""
        return any(np.ndim(v) == 0 for v in self.values)

    @property
    def number(self) -> bool:
        """0-d at every point."""
        return all(np.ndim(v) == 0 for v in self.values)


def wrap(e: Expr, level: int, probe: bool = False) -> str:
    text = e.probe if probe else e.text
    return text if e.prec > level else f"({text})"


# ---- probes: the kinks of a draw, measured when it is evaluated ----------------------------

def _gt(x, c):
    _MARGINS.append(abs(float(x) - c))
    return x > c


def _reduce(name, x, axis=None, keepdims=False):
    """np.max / np.min, measuring the gap between the two largest (smallest) along the axis."""
    x = np.asarray(x, float)
    moved = np.sort(x.reshape(-1) if axis is None else np.moveaxis(x, axis, -1), axis=-1)
    if moved.shape[-1] > 1:
        _MARGINS.append(float(np.min(moved[..., -1] - moved[..., -2]) if name == "max"
                              else np.min(moved[..., 1] - moved[..., 0])))
    return getattr(np, name)(x, axis=axis, keepdims=keepdims)


def _pick(name, *args):
    """Builtin max / min of numbers, measuring the gap between the winner and the rest."""
    ordered = sorted(float(a) for a in args)
    _MARGINS.append(ordered[-1] - ordered[-2] if name == "max" else ordered[1] - ordered[0])
    return max(args) if name == "max" else min(args)


def _abs(x):
    _MARGINS.append(float(np.min(np.abs(x))))
    return np.abs(x)


def _norm(x):
    _MARGINS.append(float(np.linalg.norm(x)))
    return np.linalg.norm(x)


class _Return(Exception):
    """A probed `return` inside a loop (`raise _Return(value)`): it leaves every loop, as the
    return leaves f."""


PROBES = {"_gt": _gt, "_reduce": _reduce, "_pick": _pick, "_abs": _abs, "_norm": _norm, "_Return": _Return}

# ---- same-file functions a program may call ------------------------------------------------

HELPERS = {
    "act": ["def act(z, slope=0.1):", "    return np.tanh(z) + slope * z"],
    "affine": ["def affine(x, W, c=0.0):", "    return x @ W + c"],
    "smooth": ["def smooth(h, steps=2):", "    for _ in range(steps):", "        h = np.tanh(h) + 0.5 * h",
               "    return h"],
    "penalty": ["def penalty(w, f_grad=0.5):", "    return f_grad * np.sum(w ** 2)"],
    "rms": ["def rms(v, eps=1.0):", "    return np.sqrt(np.mean(v * v) + eps)"],
    # returns inside loops (no kink: the exits are taken on counts)
    "settle": ["def settle(h, stop=1):", "    for k in range(3):", "        h = np.tanh(h) + 0.5 * h",
               "        if k == stop:", "            return h * 2.0", "    return h"],
    "relax": ["def relax(h, rate=0.5):", "    k = 0", "    while True:", "        h = h - rate * np.tanh(h)",
              "        k += 1", "        if k >= 2:", "            return h"],
    "swirl": ["def swirl(a, b):", "    return a * 0.5 + b, b - 0.25 * a"],  # (a tuple: for `y[0], y[1] = ...`)
    # a number made by a contraction, in a helper (issue 22: a loss of its own too)
    "dot": ["def dot(a, b):", "    return np.einsum('i,i->', np.ravel(a), np.ravel(b))"],
}
# functions f never calls, whose parameters take the names of f's generated functions
AUX = [["def descend(x0, f_grad):", "    x = x0", "    for i in range(3):", "        x = x - 0.1 * f_grad(x)",
        "    return np.sum(x)"],
       ["def objective(w, f_value_and_grad=1.0):", "    return f_value_and_grad * np.sum(np.tanh(w))"],
       ["def report(f_grad, f_value_and_grad):", "    return np.sum(f_grad * f_value_and_grad)"],
       # a whole file: what no derivative is asked of, beside the loss (issue 22, item 2)
       ["def make_inputs(n=3):", "    rng = np.random.default_rng(0)", "    return {'x': rng.normal(size=n)}"],
       ["def train(w, f_grad, steps=3):", "    for _ in range(steps):", "        w = w - 0.1 * f_grad(w)",
        "    return w"],
       ["def summary(values):", "    print(f'{len(values)} values')"],
       # a factory calling f (another library's version of it, a benchmark's harness): skipped,
       # so f, left to it as a helper where its result may be an array, compiles on its own
       ["def f_elsewhere(backend):", "    def there(*args):", "        return f(*args) * 1.0", "    return there"],
       ["if __name__ == '__main__':", "    print(make_inputs())", "", "", "def make_inputs():",
        "    return {'n': 3}"]]
# array makers whose values are an active value's, their counts constant (np.full's fill,
# np.linspace's start, np.arange's start: a silent zero gradient while taken for constants)
MAKERS = ["np.full(np.shape({0}), np.mean({0}))", "np.sum(np.linspace(np.mean({0}), 1.0, 4))",
          "np.sum(np.arange(0.25 + 0.2 * np.tanh(np.mean({0})), 3.0, 1.0))"]
CONSTANTS = [("SCALE", 0.3, 0.8), ("SHIFT", 0.5, -0.25), ("DECAY", 0.01, 0.2), ("TEMP", 1.5, 0.75)]

# parameter kinds -> (names to take, how to build its value from dimensions (n, d, k))
VECTOR_NAMES, MATRIX_NAMES, SCALAR_NAMES = ("x", "v", "h", "w", "u"), ("W", "A", "M", "H"), ("s", "c", "alpha")
STRUCT_NAMES = ("params", "p", "layers", "xs", "pair", "theta")
LOCAL_NAMES = ("y", "z", "g", "r", "q", "k", "S", "R", "out", "acc", "m", "e")


def _leaf(rng, shape):
    return float(rng.uniform(-BOX, BOX)) if shape == () else rng.uniform(-BOX, BOX, shape)


class _Worlds:
    """The program's variables at each point, as Python namespaces, drawn together."""

    def __init__(self, points: list):
        self.spaces = [{"np": np, **PROBES, **copy.deepcopy(point)} for point in points]

    def evaluate(self, probe: str):
        """The value of `probe` at every point, or None where it fails or comes near a kink."""
        out = []
        for space in self.spaces:
            value = _run(lambda: eval(probe, space))  # noqa: S307 - generated text
            if value is None or not _numeric(value):
                return None
            out.append(value)
        return tuple(out)

    def execute(self, probe: str) -> bool:
        return all(_run(lambda s=space: exec(probe, s) or True) for space in self.spaces)  # noqa: S102

    def snapshot(self):
        return self.copy_of(self.spaces)

    @staticmethod
    def copy_of(spaces):
        """Copies of namespaces (their arrays and lists too: statements write into them)."""
        return [{k: copy.deepcopy(v) if isinstance(v, (list, dict, np.ndarray)) else v for k, v in s.items()}
                for s in spaces]


def _run(thunk):
    """thunk(), or None where it raises, warns, or measures a kink nearer than MARGIN."""
    _MARGINS.clear()
    try:
        with np.errstate(all="raise"), warnings.catch_warnings():
            warnings.simplefilter("error")
            result = thunk()
    except Exception:  # noqa: BLE001 - a draw that does not fit is drawn again
        return None
    return None if _MARGINS and min(_MARGINS) < MARGIN else result


def _numeric(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (float, int, np.floating, np.integer)):
        return abs(float(value)) < 1e6
    return (isinstance(value, np.ndarray) and value.dtype.kind == "f" and 0 < value.size <= 64
            and value.ndim <= 2 and bool(np.all(np.abs(value) < 1e6)))


@dataclass
class _Scope:
    """What the program may read now: name -> kind ("num", "int", "index", "struct", "list",
    "key"), the most recently bound last."""

    kinds: dict = field(default_factory=dict)
    container_use: set = field(default_factory=set)  # parameters used as only a container can be
    # names bound to code kept as written (data; grammar_programs.stmt_inactive): kept with the scope,
    # so that a branch's `g = np.quantile(X, ...)` is forgotten after the `if` with the rest of the
    # branch (soak 39009 #1844: g, differentiated before the `if`, was taken for data after it)
    inactive: set = field(default_factory=set)


class ExprGrammar:
    """The expressions of the grammar, each evaluated at every point as it is drawn (the
    statements and the program are `grammar_programs.GrammarBuilder`'s)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.seed = seed
        self.n, self.n2 = self.rng.choice([(2, 3), (3, 2), (3, 4), (4, 2), (2, 4), (3, 5)])
        self.d = self.rng.choice([2, 3])
        self.scope = _Scope()
        self.taken: set = {"np", "f", *HELPERS, "descend", "objective", "report", *PROBES}
        self.target: str | None = None  # the name being assigned (its old value is read often)
        self.depth = 0  # nesting of blocks
        self.key_of: dict = {}  # a dict's key variable -> the dict (`for key in p:` reads p[key])
        self.constants: dict = {}  # module constant -> the value it is changed to
        self.params: dict = {}  # f's parameters -> their kinds
        self.worlds: _Worlds | None = None
        self.owned: set = set()  # names whose value no other name holds (from arithmetic)
        self.updated: set = set()  # names updated in place (`k -= e`) inside a loop or branch
        self.loop_vars: list = []  # per loop being drawn, its variables and what it runs over (never assigned)

    # -- small choices -----------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def choice(self, options):
        return self.rng.choice(list(options))

    def fresh(self, pool=LOCAL_NAMES) -> str:
        for name in self.rng.sample(list(pool), len(pool)):
            if name not in self.taken:
                self.taken.add(name)
                return name
        k = 1
        while f"{pool[0]}{k}" in self.taken:
            k += 1
        self.taken.add(f"{pool[0]}{k}")
        return f"{pool[0]}{k}"

    def names(self, kind: str = "num") -> list[str]:
        return [n for n, k in self.scope.kinds.items() if k == kind]

    @property
    def inactive_names(self) -> set:
        """The names bound to code kept as written, in the current scope (see _Scope.inactive)."""
        return self.scope.inactive

    def bind(self, name: str, kind: str) -> None:
        self.inactive_names.discard(name)  # (rebound: maybe to a differentiated value)
        if name in self.scope.kinds and self.params.get(name) == "data":
            self.params[name] = "data rebound"
        self.scope.kinds.pop(name, None)
        self.owned.discard(name)
        self.scope.kinds[name] = kind

    def make(self, text: str, probe: str | None = None, prec: int = ATOM) -> Expr | None:
        values = self.worlds.evaluate(text if probe is None else probe)
        return None if values is None else Expr(text, text if probe is None else probe, prec, values)

    def squashed(self, e: Expr | None) -> Expr | None:
        if e is None or max(float(np.max(np.abs(v))) for v in e.values) <= LIMIT:
            return e
        return self.make(f"np.tanh({e.text})", f"np.tanh({e.probe})")

    # -- expressions -------------------------------------------------------------------------

    def expr(self, depth: int) -> Expr | None:
        """Any expression of the subset (None where no draw fitted)."""
        for _ in range(4):
            if depth <= 0 or self.chance(0.2):
                e = self.leaf()
            else:
                kind = self.choice(["binary"] * 4 + ["unary"] * 3 + ["divide", "reduce", "reduce", "matmul",
                                    "index", "index", "index", "fancy", "comprehension", "array_of_numbers",
                                    "ifexp", "pick", "helper", "concat", "list_read"])
                e = getattr(self, f"gen_{kind}")(depth - 1)
            e = self.squashed(e)
            if e is not None:
                return e
        return self.leaf()

    def leaf(self) -> Expr | None:
        """A variable (the assigned name's old value often), a part of a structure, a module
        constant, a loop counter, a dict's entry by its key variable, or a number."""
        nums, structs, ints, keys = self.names("num"), self.names("struct"), self.names("int"), self.names("key")
        options = [("target", 3 * (self.target in nums)), ("recent", 3 * bool(nums)), ("num", 2 * bool(nums)),
                   ("struct", (1 + 3 * (not nums)) * bool(structs)), ("constant", 0.5 * bool(self.constants)),
                   ("int", 0.5 * bool(ints)), ("key", 1.5 * bool(keys)), ("number", 0.4)]
        kind = self.rng.choices([k for k, _ in options], [w for _, w in options])[0]
        if kind == "target":
            return self.make(self.target)
        if kind in ("recent", "num"):
            return self.make(self.choice(nums[-3:] if kind == "recent" else nums))
        if kind == "struct":
            return self.part(self.choice(structs))
        if kind == "constant":
            return self.make(self.choice(sorted(self.constants)))
        if kind == "int":
            return self.make(f"({self.choice(ints)} + 1)")
        if kind == "key":
            key = self.choice(keys)
            return self.make(f"{self.key_of[key]}[{key}]")
        return self.make(repr(self.choice([0.5, 2.0, 1.5, 3.0, 0.25])))

    def part(self, name: str) -> Expr | None:
        """A leaf of structured parameter `name`, read by its path (`p['W']`, `layers[1][0]`,
        `net.layers[0].W`, a NamedTuple's field by name or by position)."""
        value = self.worlds.spaces[0][name]
        path = name
        while isinstance(value, (dict, list, tuple)) or records.fields(value) is not None:
            leaves = records.leaf_fields(value)
            if leaves is not None and (not isinstance(value, tuple) or self.chance(0.7)):
                member = self.choice(leaves)  # (a data field, an int or a str, is never a leaf)
                path += f".{member}"
                value = getattr(value, member)
                continue
            key = self.choice(sorted(value)) if isinstance(value, dict) else self.choice(
                [0, len(value) - 1, -1] if len(value) > 1 else [0])
            path += f"[{key!r}]"
            value = value[key]
        return self.make(path)

    def operand(self, depth: int) -> Expr | None:
        return self.expr(depth) if depth > 0 and self.chance(0.6) else self.leaf()

    def gen_binary(self, depth: int) -> Expr | None:
        x = self.operand(depth)
        y = self.operand(depth)
        if x is None or y is None:
            return None
        op = self.choice(["+", "-", "*", "*"])
        if op == "-" and x.text == y.text:
            op = "+"
        level = MUL if op == "*" else ADD
        return self.make(f"{wrap(x, level - 1)} {op} {wrap(y, level)}",
                         f"{wrap(x, level - 1, True)} {op} {wrap(y, level, True)}", level)

    def gen_unary(self, depth: int) -> Expr | None:
        """Functions defined and smooth everywhere; abs only away from 0 (probed)."""
        x = self.operand(depth)
        if x is None:
            return None
        form = self.choice(["np.tanh({})", "np.sin({})", "np.cos({})", "np.arctan({})", "np.exp(np.tanh({}))",
                            "np.log1p({m} * {m})", "np.sqrt(1 + {m} * {m})", "np.square({})", "minus", "abs",
                            "pow", "np.deg2rad({m} * 30.0)", "np.rad2deg(np.tanh({})) / 60.0"])
        if form == "np.square({})":  # (a draw of its own, so that the programs of other draws stay as they were)
            form = self.choice([form, *MAKERS])
        if form == "abs":
            return self.make(f"np.abs({x.text})", f"_abs({x.probe})")
        if form == "pow":
            return self.make(f"{wrap(x, POW)} ** 2", f"{wrap(x, POW, True)} ** 2", POW)
        if form == "minus":
            return self.make(f"-{wrap(x, UNARY)}", f"-{wrap(x, UNARY, True)}", UNARY)
        return self.make(form.format(x.text, m=wrap(x, MUL)), form.format(x.probe, m=wrap(x, MUL, True)))

    def gen_divide(self, depth: int) -> Expr | None:
        """x / p with p >= 1 (or > 0 and bounded away from 0) everywhere."""
        x, y = self.operand(depth), self.operand(depth)
        if x is None or y is None:
            return None
        form = self.choice(["(1 + {m} * {m})", "(2 + np.sin({}))", "np.exp(np.tanh({}) + 1)", "np.cosh({})"])
        return self.make(f"{wrap(x, MUL - 1)} / {form.format(y.text, m=wrap(y, MUL))}",
                         f"{wrap(x, MUL - 1, True)} / {form.format(y.probe, m=wrap(y, MUL, True))}", MUL)

    def gen_reduce(self, depth: int) -> Expr | None:
        x = self.operand(depth)
        if x is None or x.scalar:
            return x
        ndim = len(x.shape)
        axis = self.choice([None, None] + list(range(ndim)) + [-1])
        name = self.choice(["sum", "sum", "mean", "max", "min", "var", "prod", "cumsum", "norm"])
        keep = ", keepdims=True" if axis is not None and name not in ("cumsum", "norm") and self.chance(0.3) else ""
        ax = "" if axis is None else f", axis={axis}"
        if name == "norm":
            return self.make(f"np.linalg.norm({x.text})", f"_norm({x.probe})")
        if name in ("max", "min"):
            return self.make(f"np.{name}({x.text}{ax}{keep})", f"_reduce({name!r}, {x.probe}{ax}{keep})")
        if name == "prod":
            x = self.make(f"np.tanh({x.text})", f"np.tanh({x.probe})")
        if x is not None and name in ("sum", "mean") and self.chance(0.3):  # the method form
            return self.make(f"{wrap(x, POW)}.{name}({ax[2:]}{keep})", f"{wrap(x, POW, True)}.{name}({ax[2:]}{keep})")
        return None if x is None else self.make(f"np.{name}({x.text}{ax}{keep})", f"np.{name}({x.probe}{ax}{keep})")

    def gen_matmul(self, depth: int) -> Expr | None:
        x = self.operand(depth)
        if x is None or x.scalar:
            return x
        fits = [n for n in self.names("num") if np.ndim(self.worlds.spaces[0][n]) >= 1
                and np.shape(self.worlds.spaces[0][n])[0] == x.shape[-1]
                and all(np.ndim(s[n]) >= 1 for s in self.worlds.spaces)]
        fits += [f"{n}.T" for n in self.names("num") if np.ndim(self.worlds.spaces[0][n]) == 2
                 and np.shape(self.worlds.spaces[0][n])[1] == x.shape[-1]]
        if not fits:
            return x
        y = self.choice(fits)
        # `@` only: np.dot of a number is a product, which the original computes and gradgen (which
        # writes np.dot as np.matmul) refuses at run time; a limit noted in the README, not drawn
        return self.make(f"{wrap(x, MUL - 1)} @ {y}", f"{wrap(x, MUL - 1, True)} @ {y}", MUL)

    def gen_index(self, depth: int) -> Expr | None:
        """Basic indexing of a value: `v[1:]`, `v[-1]`, `v[::-1]`, `W[:, 0]`, `x[..., None]`,
        `.T`, `.reshape(-1)`, `W[j]` with a loop counter."""
        x = self.operand(depth) if not (self.target and self.chance(0.4)) else self.make(self.target)
        if x is None or x.scalar:
            return x
        forms = ["[1:]", "[:-1]", "[-1]", "[0]", "[::-1]", ".reshape(-1)", "[..., None]"]
        if len(x.shape) == 2:
            forms += ["[:, 0]", "[:, -1]", ".T", "[1:, :]", "[-1, 1:]"]
        forms += [f"[{t}]" for t in self.names("int")] + [f"[:, {t}]" for t in self.names("int") if len(x.shape) == 2]
        form = self.choice(forms)
        return self.make(f"{wrap(x, POW)}{form}", f"{wrap(x, POW, True)}{form}")

    def index_list(self) -> str:
        """Integer indices with repeats: a literal list, an np.array, or a name bound to one."""
        if self.names("index") and self.chance(0.5):
            return self.choice(self.names("index"))
        values = self.choice([[0, 1, 1, 2], [2, 0, 2], [1, 1], [0, 0, 1], [-1, 0, -1], [1, 0]])
        return repr(values) if self.chance(LIST_INDEX_SHARE) else f"np.array({values!r})"

    def gen_fancy(self, depth: int) -> Expr | None:
        """Integer-array reads with repeated indices: `v[idx]`, `W[0][idx]`, `W[:, idx]`, `W[idx, 0]`."""
        x = self.operand(depth)
        if x is None or x.scalar:
            return x
        idx = self.index_list()
        forms = ["{}[{}]"] + ["{}[0][{}]", "{}[:, {}]", "{}[-1][{}]", "{}[{}, 0]"] * (len(x.shape) == 2)
        form = self.choice(forms)
        return self.make(form.format(wrap(x, POW), idx), form.format(wrap(x, POW, True), idx))

    def iterable(self):
        """(text, the first element's text) of something a comprehension or loop may run over."""
        options = []
        for n in self.names("num"):
            value = self.worlds.spaces[0][n]
            if np.ndim(value) >= 1:
                options.append((n, f"{n}[0]"))
        for n in self.names("struct"):
            value = self.worlds.spaces[0][n]
            if isinstance(value, (list, tuple)) and all(isinstance(v, np.ndarray) for v in value):
                options.append((n, f"{n}[0]"))
            if isinstance(value, dict):
                options.append((f"{n}.values()", f"list({n}.values())[0]"))
        if not options:
            return None
        return self.choice(options)

    def gen_comprehension(self, depth: int) -> Expr | None:
        """np.sum([e for x in xs]), np.array([...]), sum(e for x in xs), np.stack([...]), over the
        elements of an array, the rows of a matrix, a list or a dict's values, or range."""
        source = self.iterable()
        if source is None or self.chance(0.25):
            size = self.choice(["2", "3", "len({})".format(self.choice(self.names("num")))] if self.names("num")
                               else ["2"])
            var = self.fresh(("j", "i", "k2"))
            first, iterable, kind = "0", f"range({size})", "int"
        else:
            iterable, first = source
            var, kind = self.fresh(("xi", "row", "item", "el")), "num"
        for space in self.worlds.spaces:
            space[var] = _run(lambda s=space: eval(first, s))  # noqa: S307
        saved = dict(self.scope.kinds)
        self.bind(var, kind)
        body = self.expr(depth) if depth > 0 else self.gen_binary(0)
        self.scope.kinds = saved
        if body is None:
            return None
        wrapper = self.choice(["np.sum([{}])", "np.array([{}])", "sum({})", "np.stack([{}])", "np.mean([{}])"])
        comp = "{} for {} in {}"
        return self.make(wrapper.format(comp.format(body.text, var, iterable)),
                         wrapper.format(comp.format(body.probe, var, iterable)))

    def reads_variable(self, e: Expr) -> bool:
        return bool(set(re.findall(r"(?<![.\w])[A-Za-z_]\w*", e.text)) - {"np"} - set(self.constants))

    def scalar_expr(self, depth: int) -> Expr | None:
        e = self.expr(depth)
        if e is None or e.number:
            return e
        return self.make(f"np.sum({e.text})", f"np.sum({e.probe})")

    def gen_array_of_numbers(self, depth: int) -> Expr | None:
        """np.array([0.0, c * 0.0, e]): a list of numbers (some constant) as a 1-D array."""
        parts = [self.scalar_expr(depth) if self.chance(0.7) else None for _ in range(self.choice([2, 3]))]
        if all(p is None for p in parts):
            return None
        texts = [p.text if p else "0.0" for p in parts]
        probes = [p.probe if p else "0.0" for p in parts]
        if self.chance(0.3):
            texts[0], probes[0] = f"{wrap(parts[0], MUL)} * 0.0" if parts[0] else "0.0", \
                f"{wrap(parts[0], MUL, True)} * 0.0" if parts[0] else "0.0"
        return self.make(f"np.array([{', '.join(texts)}])", f"np.array([{', '.join(probes)}])")

    def condition(self, depth: int, spread: bool = True):
        """(text, probe, values) of `e > c`, c at least MARGIN from e's value at every point;
        where the points are far enough apart, they sometimes take different branches."""
        e = self.scalar_expr(depth)
        if e is None or not self.reads_variable(e):
            return None
        values = sorted(float(v) for v in e.values)
        cuts = [values[0] - self.choice([0.3, 0.6, 1.0]), values[-1] + self.choice([0.3, 0.6, 1.0])]
        gaps = [(a + b) / 2 for a, b in zip(values, values[1:]) if b - a > 3 * MARGIN]
        if spread and gaps and self.chance(0.6):
            cuts = gaps
        c = round(self.choice(cuts), 3)
        return f"{wrap(e, CMP)} > {c!r}", f"_gt({e.probe}, {c!r})", tuple(float(v) > c for v in e.values)

    def gen_ifexp(self, depth: int) -> Expr | None:
        cond = self.condition(depth)
        x, y = self.operand(depth), self.operand(depth)
        if cond is None or x is None or y is None or x.text == y.text:
            return None
        return self.make(f"{wrap(x, IFEXP)} if {cond[0]} else {wrap(y, IFEXP)}",
                         f"{wrap(x, IFEXP, True)} if {cond[1]} else {wrap(y, IFEXP, True)}", IFEXP)

    def gen_pick(self, depth: int) -> Expr | None:
        """max(e, c) / min(e, c) of numbers, c away from e (`max(np.var(W), 0.5)`)."""
        e = self.scalar_expr(depth)
        if e is None:
            return None
        name = self.choice(["max", "min"])
        values = [float(v) for v in e.values]
        c = round(self.choice([min(values) - 0.4, max(values) + 0.4]), 3)
        return self.make(f"{name}({e.text}, {c!r})", f"_pick({name!r}, {e.probe}, {c!r})")

    def gen_helper(self, depth: int) -> Expr | None:
        name = self.choice(sorted(set(HELPERS) - {"swirl"}))
        x = self.operand(depth)
        if x is None:
            return None
        args, probes = [x.text], [x.probe]
        if name == "affine":
            w = self.gen_matmul_partner(x)
            if w is None:
                return None
            args.append(w)
            probes.append(w)
        if name == "dot":  # (with a value of x's size)
            other = self.choice(["np.tanh({})", "{} * 0.5", "np.sin({}) + 1.0"])
            args.append(other.format(wrap(x, POW)))
            probes.append(other.format(wrap(x, POW, True)))
        extra = {"act": "slope", "affine": "c", "penalty": "f_grad", "rms": "eps", "smooth": None, "settle": None,
                 "relax": "rate", "dot": None}[name]
        if extra and self.chance(0.5):  # the number default given a number or an array
            e = self.operand(depth) if name != "rms" else self.make("1.0 + np.square(" + x.text + ")")
            if e is not None:
                kw = f"{extra}=" if self.chance(0.5) else ""
                args.append(kw + e.text)
                probes.append(kw + e.probe)
        if name == "smooth" and self.chance(0.3):
            args.append(self.choice(["1", "3"]))
            probes.append(args[-1])
        if name == "settle" and self.chance(0.5):  # returns on the first trip, or after the loop
            args.append(self.choice(["0", "2", "5"]))
            probes.append(args[-1])
        return self.make(f"{name}({', '.join(args)})", f"{name}({', '.join(probes)})")

    def gen_matmul_partner(self, x: Expr):
        if x.scalar:
            return None
        fits = [n for n in self.names("num") if np.ndim(self.worlds.spaces[0][n]) == 2
                and np.shape(self.worlds.spaces[0][n])[0] == x.shape[-1]]
        return self.choice(fits) if fits else None

    def gen_concat(self, depth: int) -> Expr | None:
        x, y = self.operand(depth), self.operand(depth)
        if x is None or y is None:
            return None
        form = self.choice(["np.concatenate([{}, {}])", "np.stack([{}, {}])", "np.concatenate([{}, {}], axis=-1)"])
        return self.make(form.format(x.text, y.text), form.format(x.probe, y.probe))

    def gen_list_read(self, depth: int) -> Expr | None:
        lists = self.names("list")
        if not lists:
            return self.gen_binary(depth)
        hs = self.choice(lists)
        form = self.choice(["np.stack({})", "np.sum({}, axis=0)", "{}[-1]", "{}[0]", "sum({})", "np.array({})"])
        return self.make(form.format(hs))
