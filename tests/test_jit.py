"""`gradgen compile --jit numba` (gradgen/codegen/numba_jit.py, gradgen/codegen/numba_check.py): the generated text
(golden, and the plain text plus only the jit's edits), the same values and gradients as the
plain module on the seed network and the scalar corpus with loops, the descending ranges,
the placeholders' types, the exact refusals, the header and the command.

numba is in the test extra (`pip install "gradgen[numba]"` for the generated modules); the
tests that run numba skip, saying so, where it is not installed.
"""

import ast
import importlib.util
import inspect
import itertools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from gradgen import api, compile_source, load_module
from gradgen.tools import cli
from gradgen.codegen import freshness
from gradgen.errors import CompileError
from gradgen.codegen.numba_jit import recorded
from gradgen.codegen.numba_spell import descending

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden_jit"
CONTROL = ROOT / "tests" / "corpus" / "control"
HAS_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (pip install 'gradgen[numba]')")
JIT_LINE = "# Jit: numba (each function is compiled by numba.njit on its first call; needs numba)."


def both(source, filename, **options):
    """(the plain module, the --jit numba module) of `source`."""
    stem = re.sub(r"\W", "_", Path(filename).stem)
    return (load_module(compile_source(source, filename, **options).text, f"{stem}_plain"),
            load_module(compile_source(source, filename, jit="numba", **options).text, f"{stem}_numba"))


def assert_same(got, want):
    """Equal to rtol 1e-12, tuple for tuple; the njit'd function returns numbers."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    assert isinstance(got, (float, int, bool, np.floating, np.integer, np.bool_))
    np.testing.assert_allclose(float(got), float(want), rtol=1e-12, atol=0)


def functions_of(compiled):
    return [n for f in compiled.functions for n in (f.grad_name, f.value_and_grad_name) if n]


# --- the generated text -------------------------------------------------------------------------

def test_generated_text_is_the_golden_file():
    source = (ROOT / "examples" / "ode_fit.py").read_bytes()
    golden = (GOLDEN / "ode_fit_grad.py").read_bytes()
    assert compile_source(source, "examples/ode_fit.py", jit="numba").text.encode("utf-8") == golden, (
        "the --jit numba text changed: look at it, then write compile_source(..., jit='numba').text of "
        "examples/ode_fit.py to tests/golden_jit/ode_fit_grad.py")


def test_the_jit_text_is_the_plain_text_plus_only_its_edits():
    """Undo the jit's edits (header line, decorators, import, docstring's last clause, the
    descending ranges) and the plain module's body comes back, byte for byte."""
    source = (ROOT / "examples" / "ode_fit.py").read_bytes()
    # (the plain module as --jit writes it: module constants stay globals, which numba compiles
    # as constants, rather than keyword arguments with defaults, which numba does not fill in)
    plain = api._compile_source(source, "examples/ode_fit.py", None, None, guarded=False).text
    jitted = compile_source(source, "examples/ode_fit.py", jit="numba").text
    assert jitted.count("@numba.njit(cache=False, boundscheck=True)\ndef ") == 2 and "reversed" not in jitted
    undone = jitted.split(JIT_LINE + "\n")[1].replace("@numba.njit(cache=False, boundscheck=True)\n", "").replace("import numba\n\n", "")
    undone = undone.replace("range(N_STEPS - 1, -1, -1)", "reversed(range(N_STEPS))")
    undone = undone.replace("; each function\nis compiled by numba.njit on its first call.", ".")
    assert undone == plain.split("\n", 5)[5]


def test_the_header_records_the_jit_the_command_and_the_new_body():
    text = compile_source((ROOT / "examples" / "ode_fit.py").read_bytes(), "examples/ode_fit.py", jit="numba").text
    lines = text.split("\n")
    assert lines[1] == "# Do not edit: run `gradgen compile --jit numba examples/ode_fit.py` again instead."
    assert lines[3:6] == ["# Compiled: loss.", "# Differentiated (the default, the first parameter, or all of them when every "
                          "parameter has a number default): loss with respect to a, b, x0.", JIT_LINE]
    header = freshness.read_header(text.encode("utf-8"))
    assert header.body_ok and header.source == "examples/ode_fit.py"


def test_the_plain_module_is_unchanged():
    for path in [ROOT / "examples" / "ode_fit.py", CONTROL / "break_continue.py"]:
        source = path.read_bytes()
        plain = compile_source(source, str(path)).text
        assert compile_source(source, str(path), jit="none").text == plain
        assert "import numba" not in plain and "@numba" not in plain  # (the path may hold the word)
    assert compile_source((ROOT / "examples" / "ode_fit.py").read_bytes(), "examples/ode_fit.py").text == (
        ROOT / "generated" / "ode_fit_grad.py").read_text()


def test_placeholders_start_at_a_zero_of_their_type():
    text = compile_source((CONTROL / "break_continue.py").read_bytes(), "break_continue.py", jit="numba").text
    assert " = None" not in text
    nested = text.split("def nested_inner_break_grad(")[1].split("\n\n\n")[0]
    assert "    iterations = 0\n    iterations_stack = []\n" in nested
    assert "        for j in range(iterations - 1, -1, -1):\n" in nested
    active = text.split("def continue_on_active_value_grad(")[1].split("\n\n\n")[0]
    assert "    t_stack = []\n    for i in range(10):\n        t = math.sin(x * i + 0.5)\n        t_stack.append(t)\n" in active
    helpers = compile_source((CONTROL / "helper_hygiene.py").read_bytes(), "helper_hygiene.py", jit="numba").text
    decays = helpers.split("def decays_in_loop_grad(")[1].split("\n\n\n")[0]
    assert "    a_1 = 0.0\n    t = 0.0\n" in decays  # (a branch's decision, saved once made, needs none)
    assert "        branch = a_1 > 0.5\n        branch_stack.append(branch)\n" in decays


TUPLE_LOOP = """COEFFS = (1.0, -0.5, 0.25, -0.125)


def horner_stop(x=0.3):
    s = 0.0
    for c in COEFFS:
        s = s * x + c
        if s < 0.5:
            break
    return s
"""


def test_a_tuple_loop_that_stopped_early_runs_back_by_index():
    text = compile_source(TUPLE_LOOP, "horner.py", jit="numba").text
    grad = text.split("def horner_stop_grad(")[1].split("\n\n\n")[0]
    assert ("    for c_index in range(iterations - 1, -1, -1):\n        c = COEFFS[c_index]\n"
            "        s = s_stack.pop()\n") in grad


def test_descending_ranges_are_the_reversed_ranges():
    """`descending` against reversed(range(a, b, s)[:count]) for every small a, b, step (a
    literal of either sign, or a name) and count."""
    for a, b, step in itertools.product(range(-4, 5), range(-4, 5), (1, 2, 3, -1, -2, -3)):
        numbers = range(a, b, step)
        spelled = ast.Constant(step) if step > 0 else ast.UnaryOp(ast.USub(), ast.Constant(-step))
        for step_node in (spelled, ast.Name("s")):
            for count in [None, *range(len(numbers) + 1)]:
                node = descending([ast.Name("a"), ast.Name("b"), step_node],
                                  None if count is None else ast.Name("count"))
                got = list(eval(ast.unparse(node), {"a": a, "b": b, "s": step, "count": count}))
                assert got == list(reversed(numbers[:count])), ast.unparse(node)


@pytest.mark.parametrize("args, count, text", [
    (["n"], None, "range(n - 1, -1, -1)"),
    (["lo", "hi"], None, "range(hi - 1, lo - 1, -1)"),
    ([2, 7], None, "range(6, 1, -1)"),
    ([8, 0, -2], None, "range(2, 10, 2)"),
    (["N_STEPS // 2", "2 * N_STEPS - 5", "START"], None,
     "range(N_STEPS // 2 + (len(range(N_STEPS // 2, 2 * N_STEPS - 5, START)) - 1) * START, N_STEPS // 2 - START, "
     "-START)"),
    ([20], "iterations", "range(iterations - 1, -1, -1)"),
])
def test_descending_ranges_read_as_written_by_hand(args, count, text):
    nodes = [ast.parse(str(a), mode="eval").body for a in args]
    assert ast.unparse(descending(nodes, ast.Name(count) if count else None)) == text


# --- values and gradients under numba -------------------------------------------------------------

@needs_numba
def test_the_functions_are_numba_dispatchers_and_the_euler_gradient_agrees():
    import numba

    plain, jitted = both((ROOT / "examples" / "ode_fit.py").read_bytes(), "examples/ode_fit.py")
    assert isinstance(jitted.loss_grad, numba.core.registry.CPUDispatcher)
    assert_same(jitted.loss_grad(), plain.loss_grad())
    assert_same(jitted.loss_value_and_grad(1.1, 0.4, 0.9), plain.loss_value_and_grad(1.1, 0.4, 0.9))
    assert jitted.loss_grad.nopython_signatures  # compiled in nopython mode


@needs_numba
def test_seed_network():
    plain, jitted = both((ROOT / "examples" / "seed_net.py").read_bytes(), "examples/seed_net.py")
    assert jitted.loss_grad() == (1.0, 2.0, 1.0, 1.0, 2.0)
    assert_same(jitted.loss_value_and_grad(0.3, -0.2, 0.1, 1.5, -0.4), plain.loss_value_and_grad(0.3, -0.2, 0.1,
                                                                                                    1.5, -0.4))
    point = dict(w1=0.5, w2=-0.5, b1=0.5, w3=2.0, b2=0.0, x1=1.0, x2=2.0, y=0.3)
    plain, jitted = both((ROOT / "benchmarks" / "references" / "seed_net.py").read_bytes(), "seed_net.py")
    assert_same(jitted.loss_value_and_grad(**point), plain.loss_value_and_grad(**point))


@needs_numba
@pytest.mark.parametrize("path", sorted(CONTROL.glob("*.py")), ids=lambda p: p.name)
def test_corpus_with_loops_gives_the_plain_values_and_gradients(path):
    """Every function of tests/corpus/control/ (for, while, break/continue, recurrences,
    helpers in loops), at its defaults and at a second point."""
    compiled = compile_source(path.read_bytes(), path.name)
    plain, jitted = both(path.read_bytes(), path.name)
    for name in functions_of(compiled):
        # (the jitted function's parameters: the plain one also takes the constants it reads)
        defaults = {p.name: p.default for p in inspect.signature(getattr(jitted, name)).parameters.values()}
        moved = {k: v * 0.9 + 0.05 if isinstance(v, float) else v for k, v in defaults.items()}
        for point in (defaults, moved):  # (every argument passed: one signature, one compile by numba)
            assert_same(getattr(jitted, name)(**point), getattr(plain, name)(**point))


@needs_numba
def test_jvp_and_hvp_take_every_argument_and_agree():
    source = (CONTROL / "recurrences.py").read_bytes()
    plain, jitted = both(source, "recurrences_kinds.py", emit_kinds=("grad", "jvp", "hvp"))
    text = compile_source(source, "recurrences.py", emit_kinds=("grad", "jvp", "hvp"), jit="numba").text
    assert "def euler_cubic_jvp(a, b, x0, *, da, db, dx0):" in text  # no defaults beside tangents
    point = dict(a=0.5, b=0.3, x0=1.0, da=0.2, db=-0.7, dx0=1.1)
    assert_same(jitted.euler_cubic_jvp(**point), plain.euler_cubic_jvp(**point))
    assert_same(jitted.euler_cubic_hvp(**point), plain.euler_cubic_hvp(**point))


@needs_numba
def test_seeded_control_programs_agree():
    """Random programs of the fuzzer's control-flow generator (if/for/while/break, helpers),
    their parameters annotated as numbers: the njit'd gradient is the plain one."""
    sys.path.insert(0, str(ROOT / "tests"))
    from programs import seeded_control_program

    checked = 0
    for seed in range(8):
        program = seeded_control_program(seed)
        source = re.sub(r"def f\(([^)]*)\)", lambda m: "def f(" + ", ".join(
            p if p == "n" or ":" in p else f"{p}: float" for p in m.group(1).split(", ")) + ")", program.source)
        plain, jitted = both(source, f"program_{seed}.py", wrt=program.wrt)
        assert_same(jitted.f_value_and_grad(**program.point), plain.f_value_and_grad(**program.point))
        checked += 1
    assert checked == 8


# --- refusals -------------------------------------------------------------------------------------

TAIL = ("--jit numba compiles numbers, arrays, if/for/while and the NumPy functions numba has: compile this file "
        "without --jit")

REFUSALS = [
    ("axis", "import numpy as np\n\n\ndef loss(w, X):\n    return np.sum(np.std(X * w, axis=0))\n",
     "loss.py:5:19: --jit numba: np.std(..., axis=...), which numba does not compile; write np.std without axis= "
     "(a loop, say), or compile this file without --jit\n        return np.sum(np.std(X * w, axis=0))\n"
     "                      ^"),
    ("roll", "import numpy as np\n\n\ndef loss(w, X):\n    return np.sum(np.roll(X @ w, 1) ** 2)\n",
     f"loss.py:5:19: --jit numba: the array function np.roll; {TAIL}\n"
     "        return np.sum(np.roll(X @ w, 1) ** 2)\n                      ^"),
    ("list", "def f(a=0.5, b=1.5):\n    xs = [a, b, a * b]\n    s = 0.0\n    for x in xs:\n        s = s + x * x\n"
     "    return s\n",
     f"loss.py:2:10: --jit numba: a list; {TAIL}\n        xs = [a, b, a * b]\n             ^"),
    ("draw", "import numpy as np\n\n\ndef loss(w, rs):\n    eps = rs.randn()\n    return (w + eps) ** 2\n",
     f"loss.py:5:11: --jit numba: a random draw (rs.randn(...)); {TAIL}\n        eps = rs.randn()\n"
     "              ^"),
    ("keyword-only default", "def f(a=0.5, *, b=1.5):\n    return a * b\n",
     "loss.py:1:17: --jit numba: the keyword-only parameter 'b' has a default, which numba does not fill in; make "
     "it a positional parameter, or compile this file without --jit\n    def f(a=0.5, *, b=1.5):\n"
     "                    ^"),
    ("mixed tuple", "MIX = (1, 2.5, 3)\n\n\ndef f(x=0.5):\n    s = 0.0\n    for c in MIX:\n        s = s * x + c\n"
     "    return s\n",
     "loss.py:1:1: --jit numba: the module-level tuple MIX mixes ints and floats, and numba runs over a tuple of "
     "one type; write each of its numbers as a float (1.0), or compile this file without --jit\n"
     "    MIX = (1, 2.5, 3)\n    ^"),
    ("name", "import math\n\n\ndef f(x=0.5):\n    numba = math.sin(x)\n    return numba * x\n",
     "loss.py:5:5: --jit numba: the name 'numba' would hide the numba module the generated code imports; rename it\n"
     "        numba = math.sin(x)\n        ^"),
]


@pytest.mark.parametrize("name, source, message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_name_the_construct_at_the_users_line(name, source, message):
    filename = "loss.py"
    with pytest.raises(CompileError) as caught:
        compile_source(source, filename, jit="numba")
    assert caught.value.format() == message


def test_refusals_of_a_hessian_and_of_array_api():
    source = "import math\n\n\ndef loss(a=0.5, b=1.5):\n    return math.sin(a) * b\n"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "loss.py", emit_kinds=("grad", "hessian"), jit="numba")
    assert caught.value.format() == (
        "loss.py:4:1: --jit numba: --emit hessian writes an array (loss_hessian); leave hessian out of --emit, or "
        "compile this file without --jit\n    def loss(a=0.5, b=1.5):\n    ^")
    with pytest.raises(CompileError) as caught:
        compile_source(source, "loss.py", backend="array-api", jit="numba")
    assert caught.value.format() == ("loss.py: --jit numba compiles the NumPy backend's module, not --backend "
                                     "array-api's; choose one of them (--jit none, or --backend numpy)")
    with pytest.raises(CompileError) as caught:
        compile_source(source, "loss.py", jit="pypy")
    assert caught.value.format() == "loss.py: unknown jit 'pypy'; the choices are: none, numba"


# --- the command ----------------------------------------------------------------------------------

def test_compile_jit_numba_then_recompiling_keeps_it_and_status_is_fresh(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ode_fit.py").write_bytes((ROOT / "examples" / "ode_fit.py").read_bytes())
    module = tmp_path / "generated" / "ode_fit_grad.py"
    assert cli.main(["compile", "--jit", "numba", "ode_fit.py"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        "wrote generated/ode_fit_grad.py (loss_grad, loss_value_and_grad)", "  jit: numba"]
    assert recorded(module) == "numba"
    assert cli.main(["status"]) == 0
    assert capsys.readouterr().out == "fresh  generated/ode_fit_grad.py (from ode_fit.py)\n1 fresh\n"
    assert cli.main(["compile", "ode_fit.py"]) == 0  # as the pre-commit hook does
    assert "  jit: numba (the jit of the module it replaced; --jit none changes it)" in capsys.readouterr().out
    assert JIT_LINE in module.read_text()
    assert cli.main(["compile", "--jit", "none", "ode_fit.py"]) == 0
    assert recorded(module) == "none" and "numba" not in module.read_text()
