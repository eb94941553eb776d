"""Acceptance corpus for issue 10: realistic programs, written as ML and scientific authors
write them (lists of (W, b) layers, `nonlinearity=np.tanh`, closures and factories, list
comprehensions, logsumexp, cholesky, random draws from a RandomState parameter, writes into
arrays, print and assert), kept unchanged in tests/corpus/real/. Each loss `f` there has a
builder `inputs_f()` (a dict of keyword arguments, seeded) beside it.

For every (file, function): `gradgen check` at the builder's point must pass: the generated
value equals the original's, every gradient row agrees with finite differences (and sympy
where it applies), both in-process and through the CLI with `--inputs FILE:inputs_f`.

Most of these do not compile yet: that is the issue's work list. BLOCKED names each one
with the message gradgen refuses it with today (the part after `file:line:col: `); those
cases are strict expected failures, so the moment a capability lands the case turns into a
failure and its entry must be removed. test_blocked_reason_is_current keeps the messages
truthful: when the first refusal changes, update the entry to the new message.

The programs themselves are checked to run (a finite number, the same on two calls with
fresh inputs) whatever gradgen does. They import SciPy; under the SciPy stand-in of
tests/stubs (SciPy not installed) the cases that need the missing parts are skipped.
"""

from __future__ import annotations

import ast
import importlib
import math
from pathlib import Path

import numpy as np
import pytest

from gradgen import CompileError, compile_source
from gradgen.tools.cli import main as gradgen_main
from gradgen.verify.check import check_source

# (file, function) -> the message gradgen refuses it with today. Prune as capabilities land.
BLOCKED = {
}

CORPUS = Path(__file__).parent / "corpus" / "real"
VALUE_REL = 1e-9

# The programs the issue's "Done when" names, each by the file that holds it.
REQUIRED_FILES = (
    "mlp.py",            # list of (W, b) layers, nonlinearity= argument
    "rnn.py",            # list of hidden states built in a loop
    "lstm.py",           # the same, with cells
    "vae.py",            # reparameterisation trick, noise from an `rs` parameter
    "gmm.py",            # logsumexp
    "gp.py",             # cholesky and solve
    "bayes_logreg.py",   # norm.logpdf
    "hmm.py",            # forward pass in log space
    "fluid.py",          # integer index arithmetic, writes into arrays
    "factory.py",        # make_objective(X, y) returning a closure
)


def source_of(file_name):
    return (CORPUS / file_name).read_text(encoding="utf-8")


def discover():
    """Every (file, function) with a builder `inputs_<function>` in the same file."""
    cases = []
    for path in sorted(CORPUS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        for name in names:
            if name.startswith("inputs_"):
                assert name[len("inputs_"):] in names, f"{path.name}: {name} builds for nothing"
                cases.append((path.name, name[len("inputs_"):]))
    return cases


CASES = discover()


def case_params(cases):
    params = []
    for file_name, function_name in cases:
        marks = []
        if (file_name, function_name) in BLOCKED:
            marks.append(pytest.mark.xfail(strict=True, reason=BLOCKED[(file_name, function_name)]))
        params.append(pytest.param(file_name, function_name, id=f"{file_name}::{function_name}", marks=marks))
    return params


def missing_import(file_name):
    """The first name the file imports that this Python cannot give (e.g. scipy.stats under
    the SciPy stand-in), or None."""
    tree = ast.parse(source_of(file_name))
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                try:
                    importlib.import_module(alias.name)
                except ImportError:
                    return alias.name
        elif isinstance(node, ast.ImportFrom):
            try:
                module = importlib.import_module(node.module)
            except ImportError:
                return node.module
            for alias in node.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        return f"{node.module}.{alias.name}"
    return None


def skip_without_imports(file_name):
    missing = missing_import(file_name)
    if missing is not None:
        pytest.skip(f"{file_name} needs {missing}, which is not installed (SciPy stand-in?)")


def load_program(file_name):
    """The corpus file run as a module, in a fresh namespace."""
    namespace = {"__name__": "real_" + file_name[:-3]}
    exec(compile(source_of(file_name), str(CORPUS / file_name), "exec"), namespace)
    return namespace


def located_message(file_name, function_name):
    """The message gradgen refuses (file, function) with today, or None if it compiles and
    `check` takes its inputs (check refuses e.g. a structured parameter, at its `def`)."""
    path = str(CORPUS / file_name)
    try:
        compile_source(source_of(file_name), path, functions=[function_name])
        if not missing_import(file_name):
            inputs = load_program(file_name)["inputs_" + function_name]()
            check_source(source_of(file_name), path, functions=[function_name], at=inputs)
    except CompileError as exc:
        assert exc.line is not None, f"the refusal is not located: {exc}"
        return exc.message
    return None


def describe(row):
    return (f"{row.param}: generated={row.generated!r} fd={row.fd!r} sympy={row.sympy!r} "
            f"rel_error={row.rel_error!r} ok={row.ok} note={row.note!r}")


# ---- the corpus itself -------------------------------------------------------------------


def test_corpus_has_the_programs_of_the_issue():
    files = {f for f, _ in CASES}
    for name in REQUIRED_FILES:
        assert name in files, f"{name} is missing from tests/corpus/real"
    assert len(files) >= len(REQUIRED_FILES) + 5
    assert len(CASES) == len(set(CASES))


def test_blocked_names_only_corpus_cases():
    stale = sorted(set(BLOCKED) - set(CASES))
    assert not stale, f"BLOCKED names cases that are not in the corpus: {stale}"
    for reason in BLOCKED.values():
        assert reason and "\n" not in reason


@pytest.mark.parametrize(("file_name", "function_name"),
                         [pytest.param(f, n, id=f"{f}::{n}") for f, n in CASES])
def test_program_runs(file_name, function_name):
    # The corpus is correct Python: each loss returns a finite number at its builder's
    # point, the same number twice (its random draws come from seeded RandomStates).
    skip_without_imports(file_name)
    program = load_program(file_name)
    f, build = program[function_name], program["inputs_" + function_name]
    inputs = build()
    assert isinstance(inputs, dict)
    first = f(**inputs)
    second = f(**build())
    assert np.ndim(first) == 0 and isinstance(float(first), float)
    assert math.isfinite(float(first)), f"{function_name} returned {first!r}"
    assert float(first) == float(second)


@pytest.mark.parametrize(("file_name", "function_name"),
                         [pytest.param(f, n, id=f"{f}::{n}") for f, n in sorted(BLOCKED)])
def test_blocked_reason_is_current(file_name, function_name):
    message = located_message(file_name, function_name)
    assert message is not None, (
        f"{file_name}::{function_name} compiles now: remove it from BLOCKED "
        "(test_real_program then says whether its gradient is right)")
    assert message == BLOCKED[(file_name, function_name)], (
        f"gradgen's first refusal of {file_name}::{function_name} is now {message!r}: update BLOCKED")


# ---- gradgen check on every program -------------------------------------------------------


FIRST_OF_FILE = {}
for _file, _function in CASES:
    FIRST_OF_FILE.setdefault(_file, _function)


@pytest.mark.parametrize(("file_name", "function_name"), case_params(CASES))
def test_real_program(file_name, function_name, capsys):
    skip_without_imports(file_name)
    path = str(CORPUS / file_name)
    program = load_program(file_name)
    inputs = program["inputs_" + function_name]()
    reports = check_source(source_of(file_name), path, functions=[function_name], at=inputs)
    assert [r.name for r in reports] == [function_name]
    (report,) = reports
    assert len(report.wrt) >= 1
    assert len(report.points) == 1
    (point,) = report.points
    problems = []
    a, b = float(point.value_generated), float(point.value_original)
    if not (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= VALUE_REL * max(abs(a), abs(b), 1e-300)):
        problems.append(f"value_generated={a!r} != value_original={b!r}")
    if not point.rows:
        problems.append("no gradient rows")
    for name in report.wrt:
        if not any(row.param == name or row.param.startswith((name + ".", name + " ", name + "["))
                   for row in point.rows):
            problems.append(f"no row for differentiated parameter {name}")
    problems += ["row not ok: " + describe(row) for row in point.rows if not row.ok]
    assert not problems, f"{file_name}::{function_name}\n" + "\n".join(problems)
    assert report.ok
    if function_name != FIRST_OF_FILE[file_name]:
        return  # (the user's path below, once per file: it checks the same again, as long)
    # The user's path: `gradgen check FILE --function F --inputs FILE:inputs_F`.
    status = gradgen_main(["check", path, "--function", function_name,
                           "--inputs", f"{path}:inputs_{function_name}"])
    out = capsys.readouterr()
    assert status == 0, out.out + out.err


# ---- the work list: `python tests/test_real_programs.py` ----------------------------------


def refusals_today():
    """{(file, function): message} for every corpus case gradgen refuses now."""
    found = {}
    for case in CASES:
        message = located_message(*case)
        if message is not None:
            found[case] = message
    return found


def main():
    """Print BLOCKED as it should read for the gradgen imported here, then the work list:
    each program with its first refusal, and how many programs each refusal blocks."""
    from collections import Counter

    today = refusals_today()
    print("BLOCKED = {")
    for (file_name, function_name), message in today.items():
        print(f"    ({file_name!r}, {function_name!r}):\n        {message!r},")
    print("}\n")
    for (file_name, function_name), message in today.items():
        print(f"{file_name}::{function_name}: {message}")
    print(f"\n{len(today)} of {len(CASES)} programs refused; by first refusal:")
    for message, count in Counter(today.values()).most_common():
        print(f"{count:3d}  {message}")
    if today != BLOCKED:
        print("\nBLOCKED differs from this (update it):")
        for case in sorted(set(today) | set(BLOCKED)):
            if today.get(case) != BLOCKED.get(case):
                print(f"  {case}: BLOCKED={BLOCKED.get(case)!r} now={today.get(case)!r}")


if __name__ == "__main__":
    main()
