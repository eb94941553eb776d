"""The contributions one statement makes to one variable, added as a person adds them.

`per_sample = np.maximum(z, 0.0) - y * z + np.log1p(np.exp(-np.abs(z)))` sends z three
gradients, each the upstream gradient g times a local derivative. Written one by one they
are three products and three sums back over broadcast axes; a person writes one:
`g * (np.where(...) - y - e / (1 + e) * np.sign(z))`, summed back once. Two rules make that
safe:

- Sums back (`unbroadcast(a, z)`, `np.sum(a, axis=0)`) of gradients that travelled with
  the same broadcast shape (`wide`, recorded where the backward pass made them) add
  inside one sum back: summing is linear, and both terms have that one shape.
- A factor every term shares comes out of the sum (`g * a + g * b` is `g * (a + b)`),
  where the sum that is left is surely of floats (a sum of masks would be a logical or).

Scatters into one index of one array (`d[:-1] += a` then `d[:-1] += b`) become one.
"""

from __future__ import annotations

from gradgen.analysis import sameshape
from gradgen.ir import simplify
from gradgen.ir.nodes import Call, Const


def remember_wide(arrays, call, wide):
    """Record that `call` sums back a gradient of `wide`'s shape (see `combined`)."""
    wides = getattr(arrays, "wides", None)
    if wides is not None and wide is not None:
        wides[id(call)] = (call, wide)  # (the call is kept, so its id stays its own)
    return call


def _wide_of(arrays, call):
    entry = (getattr(arrays, "wides", None) or {}).get(id(call))
    return entry[1] if entry is not None and entry[0] is call else None


def _summing_back(e):
    return isinstance(e, Call) and (e.prim == "unbroadcast" or (e.prim == "sum" and e.params))


def combined(a, b, arrays):
    """a + b, two contributions to one variable from one statement."""
    if _summing_back(a) and _summing_back(b) and a.prim == b.prim and a.args[1:] == b.args[1:] and \
            a.params == b.params:
        wide = _wide_of(arrays, a)
        if wide is not None and wide == _wide_of(arrays, b):
            inner = simplify.add(a.args[0], b.args[0])
            return remember_wide(arrays, Call(a.prim, (inner,) + a.args[1:], a.ns, a.loc, a.params), wide)
    return simplify.add(a, b)


def same_scatter(a, b):
    """Whether a and b add gradients at the same index of the same array."""
    return isinstance(a, Call) and isinstance(b, Call) and a.prim == b.prim == "scatter" and \
        a.args[1:] == b.args[1:] and a.params == b.params


def scattered(a, b):
    """One scatter of both gradients (linear in the gradient: `d[i] += a + b`)."""
    return Call("scatter", (simplify.add(a.args[0], b.args[0]),) + a.args[1:], a.ns, a.loc, a.params)


def factored(e, floats, same_shape=lambda a, b: False, covers=lambda total, ones: False):
    """e with what all the terms of its sums share taken out of them (inside a sum back or a
    scatter too): factors and divisors (`g * a / n + g * b / n` is `g * (a + b) / n`), or a
    number up to its sign. `floats(x)`: whether x surely holds floats; `same_shape(a, b)`:
    whether a and b surely have one shape (then `np.ones_like(a) * b`, there only to make
    a float, is b in a sum that is one already); `covers(total, ones)`: whether the sum
    has the shape of a shared `np.ones_like(...)`, which then drops (the gradient of a mean
    is `(a + b) / n`, never ones times it)."""
    if isinstance(e, Call) and (_summing_back(e) or e.prim == "scatter"):
        inner = factored(e.args[0], floats, same_shape, covers)
        return e if inner is e.args[0] else Call(e.prim, (inner,) + e.args[1:], e.ns, e.loc, e.params)
    parts = terms(e)
    if len(parts) < 2:
        return e
    split = [_one_number(*_factors(t)) for _, t in parts]
    common = _shared([fs for fs, _ in split], lambda f: simplify.number(f) is None)
    over = _shared([ds for _, ds in split], lambda d: True)
    scale = None if common or over else _common_number(split)
    if not common and not over and scale is None:
        return e
    rests = []
    for (sign, _), (factors, divisors) in zip(parts, split):
        rest, below = _less(factors, common), _less(divisors, over)
        if scale is not None:  # the number each term has, as scale times a sign
            at = next(k for k, f in enumerate(rest) if simplify.number(f) is not None and
                      abs(simplify.number(f)) == abs(scale))
            sign = sign if simplify.number(rest[at]) == scale else -sign
            del rest[at]
        rests.append((sign, _product(rest, below)))
    if all(simplify.number(rest) is not None for _, rest in rests) and common:  # `ones * M + ones * M`: 2.0 * M
        value = float(sum(sign * simplify.number(rest) for sign, rest in rests))
        if value == 0:
            return e  # (terms that cancel keep their shape and their floats as written: soak seed 1223 #3918)
        kept = [f for f in common if not (_is_ones(f) and any(
            g is not f and (g == f.args[0] or same_shape(g, f.args[0])) for g in common))]
        product = _product(kept, [])
        # a float number in front keeps the gradient a float, even of integers (`1.0 * M`, never `M`)
        plain_one = abs(value) == 1 and not any(_is_ones(f) for f in kept)
        out = Call("mul", (Const(value), product), "op") if plain_one else simplify.mul(Const(value), product)
        for d in over:
            out = simplify.div(out, d)
        return out
    lead = next((k for k, (sign, rest) in enumerate(rests) if sign > 0 and floats(rest)), None)
    lead = lead if lead is not None else next((k for k, (_, rest) in enumerate(rests) if floats(rest)), None)
    if lead is None:
        return e  # (a sum of masks or of integers: not rewritten)
    first_sign, first = rests[lead]
    total = simplify.neg(first) if first_sign < 0 else first
    for k in [k for k in range(len(rests)) if k != lead]:  # (a float first: then every sum is one)
        sign, rest = rests[k]
        rest = _without_ones(rest, same_shape)
        total = simplify.sub(total, rest) if sign < 0 else simplify.add(total, rest)
    common = [f for f in common if not (_is_ones(f) and covers(total, f))]
    count = _count_of(scale)
    if count is not None:  # `(a - y) / 10000`, as a person divides by the count, not `0.0001 * (a - y)`
        out = simplify.div(simplify.neg(total) if scale < 0 else total, Const(count))
    else:
        outside = [Const(scale)] if scale is not None else common
        out = total if not outside else simplify.mul(_product(outside, []), total)
    for d in over:
        out = simplify.div(out, d)
    return out


def _count_of(scale):
    """n where `scale` is 1 / n (or -1 / n) for a whole n > 1, else None."""
    if not isinstance(scale, float) or scale == 0 or abs(scale) >= 1:
        return None
    n = round(1 / abs(scale))
    return n if n > 1 and abs(1 / n - abs(scale)) <= 1e-15 * abs(scale) else None


def _one_number(factors, divisors):
    """(factors, divisors) with their numbers multiplied into one factor (`x / 10000` is
    `0.0001 * x`, as tidy folds some terms and not others), so that a number every term has
    is seen."""
    value, rest, below = 1, [], []
    for f in factors:
        n = simplify.number(f)
        if n is None or isinstance(n, bool):
            rest.append(f)
        else:
            value *= n
    for d in divisors:
        n = simplify.number(d)
        if n is None or isinstance(n, bool) or n == 0:
            below.append(d)
        else:
            value /= n
    if value == 1 and not isinstance(value, float):
        return rest, below
    short = float(repr(value)) if isinstance(value, float) and len(repr(value)) <= 12 else None
    if isinstance(value, float) and short is None:
        return factors, divisors  # (a number that prints long: the terms stay as written)
    return [Const(value)] + rest, below


def _is_ones(f):
    return isinstance(f, Call) and ((f.prim == "ones_like" and dict(f.params).get("dtype") is not None) or
                                    (f.prim == "ones" and len(f.args) == 1 and isinstance(f.args[0], Call)
                                     and f.args[0].prim == "shape"))


def _shared(lists, allowed):
    """The items (with repeats) every list holds, among the `allowed` ones of the first."""
    out = []
    rest = [list(x) for x in lists[1:]]
    for item in lists[0]:
        if allowed(item) and all(item in r for r in rest):
            out.append(item)
            for r in rest:
                r.remove(item)
    return out


def _less(items, taken):
    out = list(items)
    for t in taken:
        out.remove(t)
    return out


def _without_ones(e, same_shape):
    """A term less a factor `np.ones_like(a, dtype=float)` where another factor has a's shape."""
    factors, divisors = _factors(e)
    for k, f in enumerate(factors):
        if isinstance(f, Call) and f.prim == "ones_like" and dict(f.params).get("dtype") is not None and any(
                j != k and (g == f.args[0] or same_shape(g, f.args[0])) for j, g in enumerate(factors)):
            return _product(factors[:k] + factors[k + 1:], divisors)
    return e


def _common_number(split):
    """A number (other than 1) every term has as a factor, up to its sign: `-2 * a * x -
    2 * b` has 2 (as -2 where most terms have it negative); or None."""
    values = []
    for factors, _ in split:
        numbers = [simplify.number(f) for f in factors if simplify.number(f) is not None]
        if len(numbers) != 1 or abs(numbers[0]) in (0, 1) or isinstance(numbers[0], bool):
            return None
        values.append(numbers[0])
    if len({abs(v) for v in values}) != 1:
        return None
    return values[0]


def terms(e, sign=1):
    """[(sign, term)] of a sum a + b - c."""
    if isinstance(e, Call) and e.prim == "add":
        return terms(e.args[0], sign) + terms(e.args[1], sign)
    if isinstance(e, Call) and e.prim == "sub":
        return terms(e.args[0], sign) + terms(e.args[1], -sign)
    if isinstance(e, Call) and e.prim == "neg":
        return terms(e.args[0], -sign)
    return [(sign, e)]


def _factors(e):
    """(factors, divisors) of a product a * b / c, its sign a factor -1 (sameshape._factors)."""
    sign, factors, divisors = sameshape._factors(e)
    return ([Const(-1)] if sign < 0 else []) + factors, divisors


def _product(factors, divisors):
    out = None
    for f in factors:
        out = f if out is None else simplify.mul(out, f)
    out = Const(1) if out is None else out
    for d in divisors:
        out = simplify.div(out, d)
    return out
