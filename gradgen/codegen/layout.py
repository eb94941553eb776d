"""Black's layout without black, for the statements whose layout is certain.

Most generated statements are short assignments (`v3 = 0.5 * b2 + v2`) whose `ast.unparse`
text is already what black writes, or differs only in two spellings black normalises:
the power operator between simple operands hugs (`h**2`), and a float's exponent loses
its plus sign (`1e16`). Such a statement is written here, its text marked `Laid`, and
emit.format_function passes it by; every other statement goes through black as before.
The text is ast.unparse's, so the fast path cannot change what a statement computes: it
only removes the spaces black removes. tests/test_format_layout.py compares it with black
(the same random statements agree with black 23.1, 24.1 and 26.10: where black's versions
lay a statement out differently, it is left to black).
"""

from __future__ import annotations

import ast
import re

LINE_LENGTH = 88  # black's default


class Laid(str):
    """A statement's text that is black's own, wherever it fits on one line (see fits)."""


# The expressions whose unparsed text black keeps as it is (bar the two spellings above).
# Left out: strings (black changes their quotes), comprehensions, lambdas, dicts and sets,
# `yield`, `await`, `:=`, the one-element tuple (its comma), and a power under a unary
# operator (black adds parentheses: `-(x**2)`).
_LEAVES = (ast.Name, ast.Load, ast.Store, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_SIMPLE_BOUND = (ast.Name, ast.Constant)


def laid(node: ast.stmt) -> str:
    """`ast.unparse(node)`, marked `Laid` with black's spellings where black's layout of it
    is certain: `node` is an assignment, augmented assignment, call statement or return
    made of names, numbers, operators, calls, attributes, indexing, lists and tuples."""
    text = ast.unparse(node)
    if not (text.isascii() and _statement_ok(node)):
        return text
    if "**" in text:
        text = _hug_powers(text)
        if text is None:
            return ast.unparse(node)
    if "e+" in text:  # (no strings, so only in a float's exponent: 1e+16)
        text = _EXPONENT.sub(r"\1e\2", text)
    return Laid(text)


def fits(unit: str) -> bool:
    """A `Laid` statement that stays on one line in black: its text with the spaces of every
    `**` put back fits (black before 24.1 measured the line before hugging powers)."""
    return isinstance(unit, Laid) and "\n" not in unit and len(unit) + 2 * unit.count("**") <= LINE_LENGTH


def comment_kept(unit: str) -> bool:
    """A comment line black writes as it is: `# text`, no trailing space, nothing black or a
    line splitter reads specially (`# fmt: off`, tabs, form feeds)."""
    body = unit.lstrip(" ")
    return (body.startswith("# ") and len(body) > 2 and body == body.rstrip() and body.isprintable()
            and "fmt:" not in body and "\n" not in unit)


def _statement_ok(node):
    if isinstance(node, ast.Assign):
        return all(_expr_ok(t) for t in node.targets) and _expr_ok(node.value)
    if isinstance(node, ast.AugAssign):
        return _expr_ok(node.target) and _expr_ok(node.value)
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Call) and _expr_ok(node.value)
    if isinstance(node, ast.Return):
        return node.value is None or _expr_ok(node.value)
    return False


def _expr_ok(e):
    kind = type(e)
    if kind is ast.Name:
        return True
    if kind is ast.Constant:
        return _constant_ok(e.value)
    if kind is ast.BinOp:
        return _expr_ok(e.left) and _expr_ok(e.right)
    if kind is ast.UnaryOp:  # (black writes `-x ** 2` as `-(x**2)`)
        return not (type(e.operand) is ast.BinOp and type(e.operand.op) is ast.Pow) and _expr_ok(e.operand)
    if kind is ast.Call:
        return (_expr_ok(e.func) and all(_argument_ok(a) for a in e.args)
                and all(k.arg is not None and _expr_ok(k.value) for k in e.keywords))
    if kind is ast.Attribute:
        return type(e.value) is not ast.Constant and _expr_ok(e.value)
    if kind is ast.Subscript:
        return _expr_ok(e.value) and _index_ok(e.slice)
    if kind in (ast.Tuple, ast.List):
        return len(e.elts) != 1 and all(_expr_ok(x) for x in e.elts)
    if kind is ast.Compare:
        return _expr_ok(e.left) and all(_expr_ok(x) for x in e.comparators)
    if kind is ast.BoolOp:
        return all(_expr_ok(x) for x in e.values)
    if kind is ast.IfExp:
        return _expr_ok(e.test) and _expr_ok(e.body) and _expr_ok(e.orelse)
    return False


def _argument_ok(a):
    return _expr_ok(a.value) if type(a) is ast.Starred else _expr_ok(a)


def _constant_ok(value):
    """Numbers as repr writes them (not negative: a minus is an operator), True, False, None."""
    if value is None or value is True or value is False or value is Ellipsis:
        return True
    if type(value) is int:
        return value >= 0
    if type(value) is float:
        return value == value and 0 <= value < float("inf") and str(value)[0] != "-"
    return False


def _index_ok(index):
    """An index black leaves unspaced: plain values, and slices whose bounds are names or
    numbers, negated or not (black spaces the colon of `x[a + 1 :]`)."""
    items = index.elts if type(index) is ast.Tuple else [index]
    if type(index) is ast.Tuple and len(items) < 2:
        return False
    for item in items:
        if type(item) is ast.Slice:
            if not all(b is None or _bound_ok(b) for b in (item.lower, item.upper, item.step)):
                return False
        elif not _expr_ok(item):
            return False
    return True


def _bound_ok(b):
    if type(b) is ast.UnaryOp and type(b.op) is ast.USub:
        b = b.operand
    return type(b) in _SIMPLE_BOUND and (type(b) is ast.Name or type(b.value) in (int, float)) and _expr_ok(b)


_EXPONENT = re.compile(r"(\d)e\+(\d)")
# The tokens of unparsed text without strings: names (keywords among them), numbers, `...`,
# the power operator, and any other operator character by character.
_TOKEN = re.compile(r"(?P<name>[A-Za-z_]\w*)|(?P<number>\d[\d.]*(?:e[+-]?\d+)?j?)|(?P<dots>\.\.\.)"
                    r"|(?P<power>\*\*)|(?P<op>\S)")
_NAME, _NUMBER, _POWER = "name", "number", "power"


def _hug_powers(text):
    """`text` with the spaces around each `**` black hugs removed, or None where black's
    versions disagree (24.1 looks back along a dotted chain; 23.1 back to a bracket)."""
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(text)]
    if any(kind == "dots" for kind, _ in tokens):
        return None  # (black reads `...` as three dots; not worth the care)
    hugged = []
    for i, (kind, _) in enumerate(tokens):
        if kind != _POWER:
            continue
        new, old = _hugs(tokens, i, _simple_before_new), _hugs(tokens, i, _simple_before_old)
        if new != old:
            return None
        if new:
            hugged.append(i)
    if not hugged:
        return text
    # rebuild: the text between tokens is a space or nothing, as unparse wrote it
    out, at = [], 0
    positions = [m.span() for m in _TOKEN.finditer(text)]
    for i in hugged:
        start, end = positions[i]
        before = positions[i - 1][1]
        after = positions[i + 1][0]
        out.append(text[at:before])
        out.append("**")
        at = after
    out.append(text[at:])
    return "".join(out)


def _hugs(tokens, i, simple_before):
    """black's hug_power_op: both operands of the `**` at i are simple."""
    return 0 < i < len(tokens) - 1 and _simple_operand_before(tokens, i - 1, simple_before) and \
        tokens[i - 1][1] != "lambda" and _simple_operand_after(tokens, i + 1)


def _simple_operand_before(tokens, i, simple_before):
    kind = tokens[i][0]
    return kind in (_NAME, _NUMBER) and simple_before(tokens, i)


def _simple_operand_after(tokens, i):
    kind, value = tokens[i]
    if kind in (_NAME, _NUMBER):
        return _simple_after(tokens, i)
    if value in "+-~" and i + 1 < len(tokens) and tokens[i + 1][0] in (_NAME, _NUMBER):
        return _simple_after(tokens, i + 1)
    return False


def _simple_after(tokens, i):
    while i < len(tokens):
        kind, value = tokens[i]
        if value in ("(", "["):
            return False
        if not (kind == _NAME or value == ".") or value == "for":
            return True
        i += 1
    return True


def _simple_before_old(tokens, i):
    """black 23.1 to 24.x: back over names and dots until a closing bracket (not simple)."""
    while i >= 0:
        kind, value = tokens[i]
        if value in (")", "]"):
            return False
        if not (kind == _NAME or value == ".") or value == "for":
            return True
        i -= 1
    return True


def _simple_before_new(tokens, i):
    """black since (at least) 25.1: back along the chain `name.name`, stopping where it ends."""
    chain, barred = [], False
    while i >= 0:
        current = tokens[i]
        chain.append(current)
        barred = barred or current[1] in (")", "]")
        if not _chained(chain):
            return not barred
        i -= 1
    return True


def _chained(chain):
    if len(chain) < 2:
        return True
    (past_kind, past), (kind, current) = chain[-2], chain[-1]
    if past_kind == _NAME:
        return current == "."
    if past in (")", "]"):
        return current in ("]", ")")
    if past in ("(", "["):
        return kind == _NAME or current in ("(", "[")
    return False


def indented(text: str) -> str:
    """`text` four spaces in, still `Laid` if it was."""
    lines = "\n".join("    " + line if line else line for line in text.split("\n"))
    return Laid(lines) if isinstance(text, Laid) else lines


# A statement after which, or before which, black may add a blank line (imports, nested
# `def`s and classes, decorators), a blank line of the user's, a `# fmt:` switch, or a
# string statement (black reads one that comes first in a block as a docstring): black
# reads those across statements, so a function that has one is formatted whole, as before.
_CONTEXTUAL = re.compile(r"^\s*(?:(?:def|async|class|import|from)\b|@|[rbuf]*['\"])|fmt:|^\s*$|__gradgen_next__",
                         re.MULTILINE | re.IGNORECASE)
_NEXT = "    __gradgen_next__()\n"  # between statements black formats together, to part them again


def independent(units) -> bool:
    """Whether black lays out each of `units` (a function body's statements, one per unit,
    each whole: not a loop's header apart from its body) by itself, so those already in
    black's layout can be left out of its input."""
    return bool(units) and all(u.startswith("    ") and u[4:5].strip() for u in units) and \
        not any(not fits(u) and _CONTEXTUAL.search(u) for u in units)


def format_body(head, units, black, chunk):
    """`head` (the `def` line and docstring) and `units`, formatted: the head with the first
    statement (as in its file) by `black`; each other statement that `fits`, or is a comment
    black keeps as it is, as it is; the rest by `black`, up to `chunk` at a time inside a
    stand-in `def`, each after a call to `__gradgen_next__` that parts them again."""
    first = black(head + units[0] + "\n")
    rest = [None if fits(u) or comment_kept(u) else u for u in units[1:]]
    slow = [u for u in rest if u is not None]
    formatted = []
    for start in range(0, len(slow), chunk):
        batch = slow[start:start + chunk]
        text = black("def _():\n" + "".join(_NEXT + u + "\n" for u in batch))
        parts = text.split(_NEXT)
        assert parts[0] == "def _():\n" and len(parts) == len(batch) + 1, "black parts the statements as given"
        formatted += parts[1:]
    formatted.reverse()
    return first + "".join(u + "\n" if s is None else formatted.pop() for u, s in zip(units[1:], rest))
