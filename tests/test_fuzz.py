"""The fuzzer in CI: 160 generated programs over the whole subset (1,000 under --soak), and
the fuzzer itself (it must find a planted wrong rule, shrink it, and save a reproducer that
fails `check`)."""

import ast
import collections
import dataclasses
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import fuzz
from conftest import budget
from gradgen import cli, primitives
from gradgen.report import Row

ROOT = Path(__file__).resolve().parent.parent
CI_PROGRAMS = budget(160, 1000)  # the 20,000-program soak: python -m tests.fuzz --programs 20000


def test_generated_programs_have_no_mismatch_and_no_internal_error(tmp_path):
    failures = fuzz.fuzz(CI_PROGRAMS, seed=0, jobs=min(2, os.cpu_count() or 1), out_dir=tmp_path)
    report = "\n\n".join(fuzz.reproducer(o) for o in failures)
    assert fuzz.summary(CI_PROGRAMS, failures) == f"{CI_PROGRAMS} programs, 0 mismatches, 0 internal errors", report


def test_the_programs_cover_the_subset():
    """The first 1,000 programs of seed 0 (what `--soak` checks; the suite checks the first
    CI_PROGRAMS of them) use every construct the issue names."""
    calls, nodes = collections.Counter(), collections.Counter()
    kinds = collections.Counter()
    for i in range(1000):
        case = fuzz.generate(0, i)
        kinds[case.kind] += 1
        for node in ast.walk(ast.parse(case.source)):
            nodes[type(node).__name__] += 1
            if isinstance(node, ast.Call):
                func = node.func
                calls[func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")] += 1
            if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.AugAssign)):
                nodes[type(node.op).__name__] += 1
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
                nodes["tuple unpacking"] += 1
                if isinstance(node.value, ast.Call):
                    nodes["tuple helper"] += 1
    assert all(kinds[k] >= 50 for k, _ in fuzz.KINDS), kinds
    scalar = primitives_used_by_scalar_programs()
    missing = sorted(name for name in scalar if calls[name] == 0)
    assert not missing, missing
    constructs = ["Add", "Sub", "Mult", "Div", "Pow", "Mod", "FloorDiv", "MatMult", "USub", "UAdd", "Not",
                  "AugAssign", "IfExp", "If", "For", "While", "Break", "Continue", "BoolOp", "Compare",
                  "tuple unpacking", "tuple helper", "Subscript", "Slice", "keyword", "AnnAssign"]
    assert all(nodes[c] >= 5 for c in constructs), {c: nodes[c] for c in constructs}
    arrays = ["sum", "mean", "prod", "cumsum", "matmul", "dot", "outer", "inner", "transpose", "reshape",
              "ravel", "squeeze", "flip", "expand_dims", "concatenate", "norm", "len"]
    assert all(calls[c] >= 1 for c in arrays), {c: calls[c] for c in arrays}
    helpers = [name for name in calls if name.startswith("_h")]
    assert calls["_h1"] >= 100 and len(helpers) >= 5


def primitives_used_by_scalar_programs():
    """The spellings of every scalar primitive a generated program may call by name."""
    return ["sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "expm1",
            "log", "log2", "log10", "log1p", "sqrt", "erf", "hypot", "pow", "abs", "fabs", "min", "max",
            "floor", "ceil", "trunc", "round", "float", "sign", "sigmoid", "arcsin", "arccos", "arctan",
            "arctan2", "power", "square", "maximum", "minimum", "clip", "where", "reciprocal"]


# The library's scalar rules (gradgen/rules_special.py; erfc beside erf): sympy.diff checks each
# in tests/test_rules.py and finite differences on arrays in tests/test_library_rules.py; the
# fuzzer's grammar (math and NumPy only, no SciPy import) does not generate them yet.
NOT_YET_FUZZED = {"erfc", "logaddexp", "logaddexp2", "gammaln", "digamma", "polygamma", "xlogy", "log_expit",
                  "norm_logpdf", "norm_pdf", "norm_cdf", "norm_logcdf"}


def test_scalar_primitives_are_all_generated():
    """Every smooth scalar primitive of the rule table is in the list above (or is an operator,
    a named constant, or a NumPy-only spelling generated elsewhere)."""
    spelled = set(primitives_used_by_scalar_programs())
    operators = {"add", "sub", "mul", "div", "pow", "neg", "pos", "mod", "logb", "floordiv"}
    for name, prim in primitives.TABLE.items():
        if prim.kind != "smooth" or name in primitives.ARRAY_RULES or not primitives.is_scalar_rule(prim):
            continue
        if name in NOT_YET_FUZZED:  # checked by tests/test_rules.py and tests/test_library_rules.py
            continue
        spellings = {q.split(".")[-1] for q, (p, _) in primitives.SPELLINGS.items() if p == name}
        assert name in operators | spelled or spellings & spelled, name


def test_the_fuzzer_finds_shrinks_and_saves_a_wrong_rule(tmp_path, monkeypatch):
    """With tanh's rule off by 0.1%, the fuzzer reports mismatches; each is shrunk to a few
    lines and saved as a module that `gradgen check` fails on (and passes once fixed)."""
    wrong = dataclasses.replace(primitives.TABLE["tanh"], vjp=(lambda g, out, x: g * (1 - out**2) * 1.001,))
    monkeypatch.setitem(primitives.TABLE, "tanh", wrong)
    failures = fuzz.fuzz(10, seed=0, jobs=1, out_dir=tmp_path)
    assert failures and all(o.status == "mismatch" for o in failures)
    saved = sorted(tmp_path.iterdir())
    assert [p.name for p in saved] == sorted(f"mismatch-seed0-{o.case.index}.py" for o in failures)
    for outcome, path in zip(failures, saved):
        code = ast.parse(path.read_text()).body
        fnode = next(n for n in code if isinstance(n, ast.FunctionDef) and n.name == "f")
        assert len(fnode.body) <= 4 and len(ast.unparse(fnode)) < 200, path.read_text()
        assert "tanh" in path.read_text()  # (in f, or in a helper f calls)
    scalar = next(p for p in saved if "inputs_f" not in p.read_text())
    assert cli.main(["check", str(scalar), "--function", "f"]) == 1
    monkeypatch.undo()
    assert cli.main(["check", str(scalar), "--function", "f"]) == 0


def test_an_internal_error_is_caught_shrunk_and_saved(tmp_path, monkeypatch):
    """An exception inside gradgen is an internal error (never a crash of the fuzzer)."""
    broken = dataclasses.replace(primitives.TABLE["tanh"], vjp=(lambda g, out, x: 1 / 0,))
    monkeypatch.setitem(primitives.TABLE, "tanh", broken)
    failures = fuzz.fuzz(8, seed=0, jobs=1, out_dir=tmp_path)
    internal = [o for o in failures if o.status == "internal"]
    assert internal and "ZeroDivisionError" in internal[0].problems[0]
    saved = (tmp_path / f"internal-seed0-{internal[0].case.index}.py").read_text()
    assert saved.count("def ") <= 2 and "tanh" in saved, saved


def test_the_same_seed_gives_the_same_programs():
    def programs(seed):
        return [(c.kind, c.source, repr(c.point), c.wrt) for c in map(lambda i: fuzz.generate(seed, i), range(30))]

    assert programs(7) == programs(7)
    assert len({source for _, source, _, _ in programs(7)}) == 30
    assert fuzz.generate(7, 0).source != fuzz.generate(8, 0).source


def test_soak_command_prints_one_summary_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tests.fuzz", "--programs", "6", "--seed", "3", "--jobs", "2",
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "6 programs, 0 mismatches, 0 internal errors\n"
    assert "6/6" in done.stderr and "0 mismatches" in done.stderr  # the progress bar
    assert not any(tmp_path.iterdir())


def test_a_refusal_shrinks_only_to_the_same_refusal():
    """Cuts move a refusal's place, not its message; another refusal is another failure."""
    one = "refused: fuzz.py:11:5: 'v *= ...' would change an array\n        v *= K\n        ^"
    moved = "refused: fuzz.py:6:5: 'v *= ...' would change an array\n    v *= K\n    ^"
    other = "refused: fuzz.py:6:5: 'v' is read before it is assigned\n    v *= K\n    ^"
    assert fuzz._signature(one) == fuzz._signature(moved) == "'v *= ...' would change an array"
    assert fuzz._signature(other) != fuzz._signature(one)
    assert fuzz._signature("Traceback ...\nIndexError: tuple index out of range") == "IndexError"


def test_program_3517_of_seed_20261203_is_smooth_not_a_kink():
    """A 5,000-program soak called this a mismatch: its one-sided slopes along a.v1 differ
    by 0.1% (-0.00155299 and -0.00155123), which the kink test took for a kink; f'' is
    -12.5 there, and h·f'' is exactly that gap. Program i of the run is generate(seed, i)."""
    case = fuzz.generate(20261203, 3517)
    assert case.kind == "array"
    assert "w = a + np.arctan(np.prod(np.arctan(a), axis=1))" in case.source
    assert fuzz.run(case) == fuzz.Outcome(case, "ok")


def test_undecided_is_counted_apart_and_is_no_failure():
    case = fuzz.generate(0, 0)
    outcomes = [fuzz.Outcome(case, "undecided", ("a.v1: finite differences cannot decide (...)",))] * 2
    assert fuzz.summary(5000, outcomes) == "5000 programs, 0 mismatches, 0 internal errors, 2 undecided"
    assert fuzz.summary(5000, outcomes + [fuzz.Outcome(case, "mismatch")]) == (
        "5000 programs, 1 mismatches, 0 internal errors, 2 undecided")


def row(generated, sympy, fd, verdict, ok=True, note=""):
    return Row("a.v1", generated, sympy, fd, 0.0, ok, note, verdict)


def test_an_array_row_finite_differences_cannot_decide():
    """Without a sympy value it is undecided; sympy, where it has one, decides."""
    note = "finite differences undecided: stencils give 1 and 1.0002"
    assert fuzz._array_row(row(1.0, None, 1.0, "undecided", note=note)) == (
        [], [f"a.v1: finite differences cannot decide ({note})"])
    assert fuzz._array_row(row(1.0, None, None, "none", False, "no reference value")) == (
        [], ["a.v1: finite differences cannot decide (no reference value)"])
    assert fuzz._array_row(row(1.0, 1.0, 1.0, "kink")) == ([], [])
    assert fuzz._array_row(row(1.0, 1.5, 1.0, "undecided", False)) == (
        ["a.v1: generated 1.0 != sympy 1.5"], [])
    assert fuzz._array_row(row(math.inf, None, 1.0, "undecided", False, "non-finite gradient")) == (
        ["a.v1: not ok (non-finite gradient)"], [])
    assert fuzz._array_row(row(1.0, None, 1.1, "smooth", False, "MISMATCH")) == (
        ["a.v1: generated 1.0 != finite difference 1.1", "a.v1: not ok (MISMATCH)"], [])


def test_a_saved_array_reproducer_runs_with_its_own_command(tmp_path, monkeypatch, capsys):
    """The command in the reproducer's docstring checks f alone (inputs_f returns a dict,
    which gradgen would refuse to differentiate): it fails with the bug, passes without."""
    wrong = dataclasses.replace(primitives.TABLE["tanh"], vjp=(lambda g, out, x: g * (1 - out**2) * 1.001,))
    monkeypatch.setitem(primitives.TABLE, "tanh", wrong)
    outcome = fuzz.run(fuzz.generate(20261203, 3517))
    assert outcome.status == "mismatch"
    path = fuzz.save(outcome, tmp_path / "fuzz failures")
    [command] = [line.removeprefix("Check with: ") for line in path.read_text().splitlines()
                 if line.startswith("Check with: ")]
    assert command == f"gradgen check '{path}' --function f --inputs '{path}:inputs_f'"
    args = shlex.split(command)[1:]
    assert cli.main(args) == 1
    monkeypatch.undo()
    assert cli.main(args) == 0
    assert capsys.readouterr().out.endswith("all gradients match (1 point(s) checked)\n")
