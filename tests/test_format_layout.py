"""The formatter's fast path (gradgen/codegen/layout.py) writes exactly what black writes.

A statement marked `Laid` that fits on a line skips black; these tests hold it to black's
text: on random statements over every expression kind (those the fast path takes and those
it must leave to black), on the fuzzer's programs compiled both ways, and on the exact
spellings black normalises (powers, exponents) and the cases black's versions disagree on.
"""

import ast
import importlib.util
import random
from pathlib import Path

import black
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fuzz
from conftest import budget
from gradgen import compile_source
from gradgen.codegen import emit, layout
from gradgen.errors import CompileError

ROOT = Path(__file__).resolve().parent.parent
MODE = black.Mode()
NAMES = ("x", "y", "h", "v12", "dL_dz1", "np", "a_rather_long_name_for_a_gradient", "W1")
NUMBERS = (0, 1, 2, 10, 12345678901234567890, 0.5, 0.1, 1e-05, 1e16, 2.5e-07, 1e300, 3.0)


class Random:
    """Random statements over every expression kind ast.unparse writes, laid out or not."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def expr(self, depth=0):
        r = self.rng
        if depth > 3 or r.random() < 0.3:
            return self.leaf()
        kind = r.choice(["bin", "bin", "pow", "pow", "unary", "call", "attr", "sub", "slice", "tuple", "list",
                         "compare", "boolop", "ifexp", "string", "lambda", "dict", "starred_tuple"])
        sub = lambda: self.expr(depth + 1)  # noqa: E731
        if kind == "bin":
            op = r.choice([ast.Add, ast.Sub, ast.Mult, ast.Div, ast.MatMult, ast.FloorDiv, ast.Mod, ast.LShift,
                           ast.BitOr, ast.BitAnd, ast.BitXor])
            return ast.BinOp(sub(), op(), sub())
        if kind == "pow":
            return ast.BinOp(sub(), ast.Pow(), sub())
        if kind == "unary":
            return ast.UnaryOp(r.choice([ast.USub, ast.UAdd, ast.Invert, ast.Not])(), sub())
        if kind == "call":
            func = r.choice([ast.Name("f"), ast.Attribute(ast.Name("np"), "sum"), sub()])
            args = [sub() for _ in range(r.randrange(3))]
            if r.random() < 0.2:
                args.append(ast.Starred(sub()))
            keywords = [ast.keyword(r.choice(["axis", "keepdims"]), sub())] if r.random() < 0.3 else []
            if r.random() < 0.05:
                keywords.append(ast.keyword(None, sub()))
            return ast.Call(func, args, keywords)
        if kind == "attr":
            return ast.Attribute(sub(), r.choice(["T", "real", "shape"]))
        if kind == "sub":
            index = sub() if r.random() < 0.6 else ast.Tuple([sub() for _ in range(r.randrange(1, 4))])
            return ast.Subscript(sub(), index)
        if kind == "slice":
            parts = [self.bound() if r.random() < 0.6 else None for _ in range(3)]
            items = [ast.Slice(*parts)] + ([self.leaf()] if r.random() < 0.3 else [])
            return ast.Subscript(sub(), items[0] if len(items) == 1 else ast.Tuple(items))
        if kind in ("tuple", "list"):
            elts = [sub() for _ in range(r.choice([0, 1, 2, 3]))]
            return ast.Tuple(elts) if kind == "tuple" else ast.List(elts)
        if kind == "compare":
            ops = [r.choice([ast.Lt, ast.GtE, ast.Eq, ast.Is, ast.IsNot, ast.In, ast.NotIn])()
                   for _ in range(r.randrange(1, 3))]
            return ast.Compare(sub(), ops, [sub() for _ in ops])
        if kind == "boolop":
            return ast.BoolOp(r.choice([ast.And, ast.Or])(), [sub() for _ in range(r.randrange(2, 4))])
        if kind == "ifexp":
            return ast.IfExp(sub(), sub(), sub())
        if kind == "string":
            return ast.Constant(r.choice(["W", "it's", 'say "hi"', ""]))
        if kind == "lambda":
            return ast.Lambda(ast.arguments([], [ast.arg("t")], None, [], [], None, []), sub())
        if kind == "dict":
            return ast.Dict([self.leaf()], [sub()])
        return ast.Tuple([ast.Starred(sub()), sub()])

    def leaf(self):
        r = self.rng
        choice = r.random()
        if choice < 0.55:
            return ast.Name(r.choice(NAMES))
        if choice < 0.9:
            return ast.Constant(r.choice(NUMBERS))
        return ast.Constant(r.choice([True, None, Ellipsis, -1, -0.0, 1j]))

    def bound(self):
        r = self.rng
        b = r.choice([self.leaf, self.leaf, lambda: self.expr(2)])()
        return ast.UnaryOp(ast.USub(), b) if r.random() < 0.3 else b

    def statement(self):
        r = self.rng
        kind = r.choice(["assign", "assign", "aug", "expr", "return", "if"])
        target = r.choice([ast.Name("v"), ast.Subscript(ast.Name("d"), self.expr(2)), ast.Attribute(ast.Name("s"), "w"),
                           ast.Tuple([ast.Name("a"), ast.Name("b")])])
        if kind == "assign":
            return ast.Assign([target], self.expr(), lineno=0)
        if kind == "aug":
            target = target if not isinstance(target, ast.Tuple) else ast.Name("v")
            return ast.AugAssign(target, r.choice([ast.Add, ast.Sub, ast.Mult, ast.Pow])(), self.expr())
        if kind == "expr":
            return ast.Expr(ast.Call(ast.Name("f"), [self.expr()], []))
        if kind == "return":
            return ast.Return(self.expr() if r.random() < 0.9 else None)
        return ast.If(self.expr(), [ast.Pass()], [])


def fast_units(seed, count):
    """(statement, its Laid unit) for the random statements of `seed` the fast path takes."""
    gen, taken = Random(seed), []
    for _ in range(count):
        node = ast.fix_missing_locations(gen.statement())
        text = layout.laid(node)
        # the fast path changes no statement's meaning: its text parses to unparse's tree
        assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(ast.unparse(node))), text
        unit = layout.indented(text)
        if layout.fits(unit):
            taken.append((node, unit))
    return taken


def assert_black_agrees(units):
    """black leaves every unit as it is (checked all at once, then the first that differs)."""
    source = "def f():\n" + "".join(u + "\n" for u in units)
    if black.format_str(source, mode=MODE) != source:
        for unit in units:
            alone = "def f():\n" + unit + "\n"
            assert black.format_str(alone, mode=MODE) == alone
        pytest.fail("black changes the statements together but no one alone")


@settings(max_examples=budget(25, 400), deadline=None, derandomize=True)
@given(st.integers(0, 2**32))
def test_random_statements_the_fast_path_takes_are_blacks_text(seed):
    taken = fast_units(seed, 300)
    assert_black_agrees([unit for _, unit in taken])


def test_the_fast_path_takes_most_random_statements_and_every_kind():
    taken = fast_units("coverage", 3000)
    assert len(taken) > 600
    seen = {type(n).__name__ for node, _ in taken for n in ast.walk(node)}
    assert {"BinOp", "Pow", "UnaryOp", "Call", "Starred", "Attribute", "Subscript", "Slice", "Tuple", "List",
            "Compare", "BoolOp", "IfExp", "Return", "AugAssign", "Assign", "Expr"} <= seen
    hugged = [unit for _, unit in taken if "**" in unit and " ** " not in unit]
    spaced = [unit for _, unit in taken if " ** " in unit]
    assert len(hugged) > 20 and len(spaced) > 20
    assert_black_agrees([unit for _, unit in taken])


@pytest.mark.parametrize("source, laid", [
    ("y = 1 - h ** 2", "y = 1 - h**2"),
    ("y = np.pi ** 2 * x ** -1", "y = np.pi**2 * x ** (-1)"),
    ("y = x ** y ** z", "y = x**y**z"),
    ("y = f(x) ** 2 + x[0] ** 2 + (a + b) ** 2", "y = f(x) ** 2 + x[0] ** 2 + (a + b) ** 2"),
    ("y = (-x) ** 2 - x ** 2", "y = (-x) ** 2 - x**2"),
    ("y = x ** f(z) + x ** a.b", "y = x ** f(z) + x**a.b"),
    ("y = 1e+16 * x + 1e-05", "y = 1e16 * x + 1e-05"),
    ("d[1:, ::-1] += g[:n]", "d[1:, ::-1] += g[:n]"),
    ("return (a, b)", "return (a, b)"),
    ("a, b = (c, d)", "a, b = (c, d)"),
])
def test_spellings_black_normalises(source, laid):
    text = layout.laid(ast.parse(source).body[0])
    assert isinstance(text, layout.Laid) and text == laid
    assert black.format_str(text + "\n", mode=MODE) == laid + "\n"


@pytest.mark.parametrize("source", [
    "y = 'W'",  # black's quotes
    "y = (a,)",  # a one-element tuple's comma
    "y = x[a,]",
    "y = x[a + 1:]",  # black spaces this colon
    "y = x[f(a):]",
    "y = lambda t: t",
    "y = {a: b}",
    "y = [i for i in x]",
    "y = f(**k)",
    "y = (1).real",
    "y = f(x) and z ** 2",  # black 23 spaces this `**`, black 24 on hugs it
    "y = x[...] ** 2",
    "y = -x ** 2",  # black: -(x**2)
    "y = f(~a.b ** 2)",
    "y = xÄ + 1",  # (width: black counts some characters as two)
    "if x:\n    pass",
    "import numpy as np",
    "del x",
])
def test_statements_left_to_black(source):
    assert not isinstance(layout.laid(ast.parse(source).body[0]), layout.Laid)


def test_a_line_too_long_goes_to_black_with_powers_measured_unhugged():
    text = layout.laid(ast.parse("y = " + " + ".join(["h ** 2"] * 11)).body[0])
    assert isinstance(text, layout.Laid)
    unit = layout.indented(text)
    assert len(unit) <= layout.LINE_LENGTH < len(unit) + 2 * unit.count("**")
    assert not layout.fits(unit)
    assert layout.fits(layout.indented(layout.laid(ast.parse("y = x + 1").body[0])))


@pytest.mark.parametrize("comment, kept", [
    ("    # forward pass", True), ("    # line 3: y = 'a'  ", False), ("    #x", False), ("    # fmt: off", False),
    ("    # tab\there", False), ("    # ", False),
])
def test_comments_black_keeps(comment, kept):
    assert layout.comment_kept(comment) is kept
    if kept:
        source = f"def f():\n{comment}\n    x = 1\n"
        assert black.format_str(source, mode=MODE) == source


def _compiled(source, fast):
    saved = layout.independent
    if not fast:
        layout.independent = lambda units: False
    emit._black.cache_clear()
    try:
        return compile_source(source, "fuzzed.py").text
    except CompileError as e:
        return f"refused: {e}"
    finally:
        layout.independent = saved


@pytest.mark.parametrize("index", range(budget(12, 200)))
def test_fuzzed_programs_compile_to_the_same_bytes_with_and_without_the_fast_path(index):
    case = fuzz.generate(23, index)
    assert _compiled(case.source, fast=True) == _compiled(case.source, fast=False)


def _scaling():
    """benchmarks/compile_scaling.py, for its straight-line programs."""
    spec = importlib.util.spec_from_file_location("compile_scaling", ROOT / "benchmarks" / "compile_scaling.py")
    scaling = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scaling)
    return scaling


def test_a_long_straight_line_program_is_the_same_with_and_without_the_fast_path():
    source = _scaling().program(600, seed=3)
    assert _compiled(source, fast=True) == _compiled(source, fast=False)


@pytest.mark.parametrize("unit, alone", [
    ("    if x > 0:\n        y += 1", True),
    ("    print('a')  # note", True),
    ("    def inner(t):\n        return t", False),  # black puts blank lines around a nested def
    ("    import math", False),  # and after an import
    ("    @staticmethod", False),
    ("    'a string statement'", False),  # first in a stand-in def, black would read a docstring
    ("    x = 1\n\n    y = 2", False),  # the user's blank line
    ("    x = 1  # fmt: skip", False),
    ("        y = 1", False),  # a loop's body apart from its header (derivatives' jacobian)
    ("    define = f(x)", True),
])
def test_which_bodies_black_formats_statement_by_statement(unit, alone):
    units = ["    x = 1", unit, "    return x"]
    assert layout.independent(units) is alone


def test_black_formats_only_what_is_not_laid_out_already(monkeypatch):
    scaling = _scaling()
    formatted = []
    monkeypatch.setattr(emit, "_black", lambda text: formatted.append(text) or black.format_str(text, mode=MODE))
    text = compile_source(scaling.program(600, seed=4), "chain.py").text
    assert len(text.splitlines()) > 3000
    assert sum(len(t.splitlines()) for t in formatted) < 100  # the header, docstrings, helpers, returns
