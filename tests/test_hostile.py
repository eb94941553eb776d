"""Hostile and broken input, and the safety of what gradgen writes.

Whatever file `gradgen compile` is given, the outcome is one of two: a compiled module
that parses, imports and (where the original can be run) agrees with the original function
and its finite differences; or one `file:line:col: message` error (source line, caret),
exit status 1, nothing written. Never a traceback, never an internal error (status 2),
never a hang, never the input run, never code injected into the output.

The inputs: hypothesmith's random Python (grammar- and CST-based), a generator of valid but
unsupported programs built from the constructs users try, random bytes and mutations of
good programs, and a list of the cases that broke gradgen once (each with its message).
The run ends with a line saying how many hostile inputs it tried (tests/conftest.py sums
them over pytest-xdist's workers); `--soak` (or GRADGEN_SOAK=1) tries ten times as many.
"""

from __future__ import annotations

import ast
import gc
import inspect
import math
import os
import random
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
import tokenize
import types
import warnings
from collections import Counter
from pathlib import Path

import pytest

from conftest import soaking
from gradgen import limits
from gradgen.tools import cli
from gradgen.frontend import parse
from gradgen.api import HEADER_MARK, compile_source, load_module

ROOT = Path(__file__).resolve().parent.parent
TRIED = Counter()  # hostile inputs tried, by generator
# Processor seconds, far above any input's compile time (a loaded machine does not stretch
# them): a hang fails the test instead of stalling it, and a slow moment does not.
SECONDS_PER_INPUT = 60
WAIT_SECONDS = 60  # wall clock, where the hang to catch is a wait (a FIFO opened to read)
SOAK = soaking()  # `pytest --soak`: the long run
SCALE = 10 if SOAK else 1  # how many times the default budget of random inputs


# ---- the harness ---------------------------------------------------------------------------

def time_limit(seconds, what, clock="cpu"):
    """Fail, naming the input, when gradgen works on it longer than `seconds` (of processor
    time; of the wall clock where it might wait instead of work)."""
    spent = "processor" if clock == "cpu" else "wall-clock"
    return limits.time_limit(seconds, lambda: AssertionError(
        f"gradgen took more than {seconds} {spent} seconds on:\n{what!r}"[:3000]), clock=clock)


LOCATED = re.compile(r"(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<message>.+)")


def check_error(stderr, path, source):
    """One error, `file:line:col: message` + source line + caret, or `file: message`."""
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    lines = stderr.rstrip("\n").split("\n")
    first = lines[0]
    assert first.startswith(f"{path}:"), stderr
    located = LOCATED.fullmatch(first)
    if located is None or located["file"] != str(path):
        assert len(lines) == 1 and first[len(str(path)) + 2:].strip(), stderr  # `file: message`
        return first[len(str(path)) + 2:]
    line, col = int(located["line"]), int(located["col"])
    assert line >= 1 and col >= 1, stderr
    if len(lines) > 1:
        assert len(lines) == 3, stderr
        assert lines[1].startswith("    ") and lines[2] == " " * (4 + col - 1) + "^", stderr
        assert lines[1][4:].isprintable(), stderr
    return located["message"]


SKIP_LINE = re.compile(r"skipped (?P<what>\S.*?) \((line \d+|lines \d+(-\d+)?(, \d+(-\d+)?)*)\): \S.*")


def compile_hostile(source, tmp_path, capsys, kind, name="hostile.py", extra=(), skipped=None):
    """Compile `source` through the command line, in this process; check the outcome.

    Returns the generated module's text, or None when gradgen refused the input. A whole
    file compiled says on stderr, one line each, what it skipped (added to `skipped`)."""
    TRIED[kind] += 1
    path = tmp_path / name
    path.write_bytes(source if isinstance(source, bytes) else source.encode("utf-8", "surrogatepass"))
    out = tmp_path / "out"
    target = out / f"{Path(name).stem}_grad.py"
    if target.exists():
        target.unlink()
    with time_limit(SECONDS_PER_INPUT, source):
        status = cli.main(["compile", str(path), "--out-dir", str(out), *extra])
    captured = capsys.readouterr()
    assert status in (0, 1), f"status {status} on:\n{source!r}\n{captured.err}"
    if status == 1:
        assert captured.out == "", captured.out
        check_error(captured.err, path, source)
        assert not target.exists()
        return None
    lines = captured.err.splitlines()
    assert all(SKIP_LINE.fullmatch(line) and line.isprintable() for line in lines), captured.err
    assert captured.err == "".join(f"{line}\n" for line in lines) and (not lines or not extra), captured.err
    if skipped is not None:
        skipped.extend(SKIP_LINE.fullmatch(line)["what"] for line in lines)
    assert captured.out.startswith(f"wrote {target} ("), captured.out
    text = target.read_text(encoding="utf-8")
    ast.parse(text)
    assert text.startswith(HEADER_MARK)
    load_module(text, "gradgen_hostile_generated")
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no temporary file left
    return text


# ---- hypothesmith: random Python -----------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # libcst's own, on import
        import hypothesmith
except ImportError:  # pragma: no cover - `pip install -e ".[test]"` installs it
    hypothesmith = None

needs_hypothesmith = pytest.mark.skipif(hypothesmith is None, reason="hypothesmith is not installed")


def fast(examples):
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def _in_function(snippet):
    body = textwrap.indent(snippet.strip("\n") or "pass", "    ")
    return f"import math\nimport numpy as np\n\n\ndef f(x=0.5, y=2.0):\n{body}\n    return x\n"


@needs_hypothesmith
@pytest.mark.parametrize("kind,count", [("grammar", 60 * SCALE), ("nodes", 25 * SCALE)])
def test_random_python_from_hypothesmith(kind, count, tmp_path, capsys):
    """Random Python from the grammar and from syntax trees, alone or as a function body."""
    strategy = hypothesmith.from_grammar() if kind == "grammar" else hypothesmith.from_node()

    @fast(count)
    @given(strategy, st.booleans())
    def run(source, wrapped):
        compile_hostile(_in_function(source) if wrapped else source, tmp_path, capsys, f"hypothesmith {kind}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ast.parse inside hypothesmith warns about `1()` and such
        run()


# ---- valid but unsupported programs --------------------------------------------------------

PREAMBLES = [
    "import math", "import numpy as np", "from math import exp, log, sin", "import math as np",
    "import numpy as math", "from math import cos as sin", "from numpy import exp", "import os",
    "from . import helpers", "from os import *", "import math.pi",
    "A = 2.0", "A = 10 ** 400", "A = 1e400", "A = -0.0", "A = 1e400 - 1e400", "A = 10 ** 1000 * 10 ** 1000",
    "A = (1.0, 2.0, 3.0)", "A = 'text'", "A = None", "A = [1, 2]", "A = {'a': 1}", "A = 3j", "A = (-8) ** 0.5",
    "A = float('nan')", "A = np.array([1.0, 2.0])", "A = np.arange(10 ** 9)", "A = np.array([1e400])",
    "A = np.zeros((10 ** 5, 10 ** 5))", "A = 2 ** 1024 ** 2", "A: float = 2.0", "A: float", "A = B = 3.0",
    "A, B = 1.0, 2.0", "A += 1", "(A := 3.0)", "del A", "global A", "A = A", "A = x",
    "def g(t):\n    return t * t", "def g(t, k=2.0):\n    return t * k", "def g(*a):\n    return 1.0",
    "def g(t):\n    yield t", "def g(t):\n    return g(t)", "async def g(t):\n    return t", "class g:\n    pass",
    "g = lambda t: t", "@staticmethod\ndef g(t):\n    return t", "def g(t):\n    global A\n    A = t\n    return t",
    "def g(t):\n    return t, t", "def g(t, /):\n    return t", "def g(t):\n    return sigmoid(t)",
    "def sigmoid(t):\n    return 1 / (1 + math.exp(-t))", "def exp(t):\n    return t * t", "g = 2.0",
    "from math import exp as g", "exp = 2.0", "np = 2.0", "math = 2.0", "for A in range(3):\n    pass",
    "if True:\n    def g(t):\n        return -t", "with open('x') as A:\n    pass",
    "try:\n    A = 1\nexcept Exception:\n    pass", "if __name__ == '__main__':\n    A = 5.0",
    "class C:\n    A = 1\n    def f(self, x):\n        return x", "unbroadcast = 1.0", "scatter = 2.0",
    "f_grad = 1.0", "def f_grad(x):\n    return x", "ü = 1.5", "ﬁ = 2.0", "match A:\n    case 1:\n        pass",
]

SIGNATURES = [
    "def f(x):", "def f(x, y=2.0):", "def f(x=1e400):", "def f(x=-0.0, *, y=1.0):", "def f(x, *args):",
    "def f(x, **kw):", "def f(x, /, y=1.0):", "async def f(x):", "def f(np=1.0, x=2.0):", "def f(math=1.0, x=2.0):",
    "def f(x, abs=1.0):", "def f(x, range=3):", "def f(x, unbroadcast=1.0):", "def f(ü=1.0, x=2.0):",
    "def f(x: float = 1.5) -> float:", "@decorator\ndef f(x):", "def f(x, 𝐱=1.0):", "def f(x, n=3):",
    "def f(x=float('nan')):", "def f(x=10 ** 5000):", "def f(x=3j):", "def f(x=True):", "def f(x, x=1):",
    "def f(x, y=A):", "def f(x=(1, 2)):", "def f(x, reversed=1.0, float=2.0, len=3.0):",
    "def f(__x=1.0):", "def f(x, scatter=1.0, matmul_grad_a=2.0):", "def f(x, f_grad=1.0):",
]

SUPPORTED = [  # so that some programs compile, and are compared with the original
    "y1 = x * x", "y1 = math.sin(x) * A", "y1 = g(x)", "y1 = x if x > 0 else -x", "for i in range(3):\n    x = x * 1.5",
    "while x < 10:\n    x = x * 2 + 1", "x = x + A", "y1 = abs(x) + max(x, 1.0)", "y1 = x ** 2 // 1", "x += 1",
    "y1 = np.exp(x) - np.log(x + 3)", "y1 = sigmoid(x)", "y1 = exp(x)", "y1 = sin(x)", "y1 = x % 2.0",
    "if x > 1:\n    x = x * x\nelse:\n    x = -x", "y1 = min(x, y) * 2", "y1 = float(x) ** 0.5",
    "y1 = x * 10 ** 400 / 10 ** 400", "y1 = x * 1e400", "y1 = x * -0.0", "y1 = x * True", "y1 = int(x) * x",
    "ü = x * 3", "y1 = (x + 1) * (x - 1) / (x * x + 1)", "y1 = pow(x, 3) + pow(2, x)", "y1 = round(x) + x",
]
STATEMENTS = SUPPORTED + [
    "y1 = [t for t in range(3)]", "y1 = sum(t for t in range(3))", "y1 = lambda t: t", "global A", "nonlocal x",
    "try:\n    x = 1 / x\nexcept ZeroDivisionError:\n    pass", "with open('f') as h:\n    pass", "y1 = max(*[x, x])",
    "if (y1 := x) > 0:\n    x = y1", "y1 = f'{x}'", "match x:\n    case 1:\n        x = 2", "del x", "y1 = 'a' + 'b'",
    "y1 = {'a': x}", "y1 = {x}", "y1 = f(x)", "def inner(t):\n    return t", "y1 = g(t=x)", "y1 = g(x, k=x)",
    "y1 = unknown(x)", "y1 = x.real.imag", "y1 = np.linalg.norm(x).foo", "y1 = 3j * x", "y1 = x[0]", "x[0] = 1",
    "assert x", "raise ValueError", "print(x)", "import os", "yield x", "await x", "return", "return x, x",
    "y1 = x @ x", "y1 = x & 1", "y1 = not x", "y1 = x is None", "y1 = x in (1, 2)", "y1 = b'a'", "y1 = ...",
    "y1 = None", "pass", "x: float = 2.0", "y1 = __import__('os')", "y1 = eval('1')", "y1 = round(x, 2)",
    "y1 = float('nan')", "y1 = pow(x, 2, 3)", "break", "continue", "for i in x:\n    pass",
    "for i, j in enumerate([1]):\n    pass", "while True:\n    break", "for i in range(3):\n    return x",
    "for i in range(3):\n    pass\nelse:\n    pass", "y1 = x if x else x", "class K:\n    pass", "x = y1",
    "y1 = np.random.rand()", "y1 = A[0]", "y1 = x.y.z.w", "y1 = (yield)", "async with a:\n    pass",
    "y1 = [*x]", "y1 = {**x}", "a, *b = x, x", "x, y = y", "x = y = z = 1.0", "y1 = 1 if x else 2 if y else 3",
    "y1 = x < y < A", "y1 = -(-(-x))", "y1 = 0 ** -1 * x", "y1 = x / 0", "y1 = (lambda: x)()", "y1 = g",
    "y1 = math", "y1 = np.pi * x", "y1 = math.inf * x", "y1 = x.T @ x", "y1 = range(3)", "y1 = len(x)",
]

RETURNS = ["return x", "return y1", "return x * A", "return x + y", "return g(x) * x", "return x", "return y1 * x",
           "return None", "return 'x'", "return (x, y)", ""]


def _deep(rng):
    n = rng.choice([10, 49, 51, 120, 199, 201, 400, 1000])
    return rng.choice([
        "return " + "(" * n + "x" + ")" * n,
        "return " + "-" * n + "x",
        "return " + " + ".join(f"x * {i}" for i in range(n)),
        "return " + " * ".join("x" for _ in range(n)),
        "return " + "math.sin(" * min(n, 150) + "x" + ")" * min(n, 150),
        "return " + "x * (" * min(n, 150) + "x" + ")" * min(n, 150),
        "return " + "abs(" * min(n, 150) + "x" + ")" * min(n, 150),
        "return x if " + " and ".join(f"x > {i}" for i in range(n)) + " else -x",
        "y1 = x\n" + "".join(f"y1 = y1 * 1.01 + {i}\n" for i in range(n)) + "return y1",
    ])


def unsupported_program(rng):
    """A program mixing the constructs users try, supported or not (most are valid Python)."""
    tame = rng.random() < 0.4  # mostly what gradgen supports, with a twist or two
    parts = rng.sample(PREAMBLES, rng.randint(0, 1 if tame else 3))
    if tame or rng.random() < 0.5:
        parts.insert(0, "import math\nimport numpy as np\nA = 1.25\n\n\ndef g(t):\n    return t * A + 1\n\n\n"
                        "def sigmoid(t):\n    return 1 / (1 + math.exp(-t))")
    signature = rng.choice(SIGNATURES) if rng.random() < (0.2 if tame else 0.6) else "def f(x, y=2.0):"
    body = rng.sample(SUPPORTED if tame else STATEMENTS, rng.randint(1, 4))
    body.append(_deep(rng) if rng.random() < 0.12 else rng.choice(RETURNS[:7] if tame else RETURNS))
    text = "\n".join(body)
    if rng.random() < 0.15:  # statements nested in branches and loops
        for _ in range(rng.randint(1, 6)):
            text = rng.choice(["if x > 0:\n", "for i in range(2):\n", "while x > 100:\n"]) + textwrap.indent(text, "    ")
        text += "\nreturn x"
    function = signature + "\n" + textwrap.indent(text, "    ")
    parts.insert(rng.randint(0, len(parts)), function)
    return "\n\n".join(parts) + "\n"


def test_valid_but_unsupported_programs(tmp_path, capsys):
    """Each compiles to a module that imports and agrees with the original, or is refused."""
    rng = random.Random(20240507)
    outcomes = Counter()
    for _ in range(300 * SCALE):
        source = unsupported_program(rng)
        skipped = []
        text = compile_hostile(source, tmp_path, capsys, "unsupported programs", skipped=skipped)
        outcomes["compiled" if text else "refused"] += 1
        if text is not None:
            outcomes[agrees_with_the_original(source, text, skipped)] += 1
            capsys.readouterr()  # (what the original and the generated f print)
    # (a whole file compiles what it can: f refused beside a helper that compiles is skipped, not fatal)
    assert outcomes["compiled"] >= 150 and outcomes["refused"] >= 100 and outcomes["compared"] >= 40, outcomes
    assert outcomes["f not compiled"] >= 30, outcomes


def agrees_with_the_original(source, text, skipped):
    """No silent wrong gradient: value and gradient of the generated `f` against the original
    `f` (run here: the programs are ours) and its central differences at the defaults; an `f`
    not compiled must be one compile said it skipped."""
    original = types.ModuleType("hostile_original")
    if "np.arange(10 ** 9)" in source:  # (running it allocates 8 GB: half this test's time, for nothing f reads)
        return "not run"
    try:
        with time_limit(5, source), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, "hostile.py", "exec"), original.__dict__)
            f = original.f
            if inspect.iscoroutinefunction(f):
                return "f not compiled"
            code = f.__code__
            names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            defaults = dict(zip(code.co_varnames[:code.co_argcount][-len(f.__defaults__ or ()):], f.__defaults__ or ()))
            defaults.update(f.__kwdefaults__ or {})
            point = {n: defaults.get(n, 0.75) for n in names}
            value = f(**point)
    except Exception:  # noqa: BLE001 - the original itself fails here: nothing to compare
        return "original fails"
    generated = load_module(text, "gradgen_hostile_agree")
    made = {fn.__doc__.split(" with respect to")[0]: fn for fn in vars(generated).values()
            if isinstance(fn, types.FunctionType) and fn.__doc__}  # f_grad may be called f_grad_1
    if "Gradient of f" not in made:  # `async def f`, or f skipped: the others alone were compiled
        assert "async def f" in source or "f" in skipped, (source, skipped)
        return "f not compiled"
    f_grad, f_value_and_grad = made["Gradient of f"], made["Value and gradient of f"]
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "not finite"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gen_value, grads = f_value_and_grad(**point)
    assert gen_value == pytest.approx(value, rel=1e-9, abs=1e-12), source
    grads = grads if isinstance(grads, tuple) else (grads,)
    doc = f_grad.__doc__.split("with respect to ")[1].split(".")[0]
    wrt = [] if doc == "no parameters" else [w.strip() for w in doc.split(",")]
    assert len(wrt) == len(grads), (source, doc)
    for name, grad in zip(wrt, grads):
        estimates = []
        for h in (1e-5, 1e-6):
            try:
                up, down = dict(point), dict(point)
                up[name] += h
                down[name] -= h
                estimates.append((f(**up) - f(**down)) / (2 * h))
            except Exception:  # noqa: BLE001
                return "original fails nearby"
        if not all(math.isfinite(e) for e in estimates) or not math.isclose(*estimates, rel_tol=1e-4, abs_tol=1e-6):
            continue  # a kink or a branch boundary within the step: no derivative to compare with
        assert float(grad) == pytest.approx(estimates[1], rel=1e-4, abs=1e-6), (source, name)
    return "compared"


# ---- random bytes and broken text ----------------------------------------------------------

GOOD = [
    b"import math\n\n\ndef f(x=0.5, y=2.0):\n    z = math.sin(x) * y\n    return z * z\n",
    b"def f(x, n=3):\n    for i in range(n):\n        x = x * 1.5 + i\n    return x\n",
    b"import numpy as np\n\n\ndef f(w, *, X):\n    return np.sum((X @ w) ** 2)\n",
    b"A = 2.0\n\n\ndef g(t):\n    return t * A\n\n\ndef f(x):\n    if x > 1:\n        x = g(x)\n    return x\n",
]
SPECIAL = [b"\x00", b"\xff", b"\xef\xbb\xbf", b"\r", b"\r\n", b"\t", b"    ", b"\n", b"# -*- coding: latin-1 -*-\n",
           b"# coding: utf-16\n", b"\xed\xa0\x80", b"\xc3", b"\\", b'"""', b"'", b"\x0c", b"\xe2\x80\xa8", b"\x1b[31m",
           b"\x85", b"(", b")", b":", b"def", b"return", b"\xf0\x9d\x90\xb1", b"9" * 5000, b"1e400", b"lambda: 0",
           b"\t\n", b"\x7f", b"\xc0\x80", b"\xf4\x90\x80\x80", b"#", b"\\\n"]


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(data))
        roll = rng.random()
        if roll < 0.35:
            data[at:at] = rng.choice(SPECIAL)
        elif roll < 0.55 and data:
            del data[at:at + rng.randint(1, 8)]
        elif roll < 0.75:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
        elif roll < 0.85:
            data = data[:at]
        elif roll < 0.93:
            data = bytearray(bytes(data).replace(b"    ", b"\t", rng.randint(1, 3)))
        else:
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
    return bytes(data)


def test_random_bytes_and_mutated_programs(tmp_path, capsys):
    rng = random.Random(7)
    inputs = [b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf", b"\x00" * 10, b"\xff\xfe" + "def f(x):\n".encode("utf-16-le")]
    inputs += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))) for _ in range(40 * SCALE)]
    inputs += [bytes(rng.choice(b"def f(x):\n return x*+-()[]=,.:1e9 \t") for _ in range(rng.randint(1, 200)))
               for _ in range(40 * SCALE)]
    inputs += [mutate(rng, rng.choice(GOOD)) for _ in range(220 * SCALE)]
    for data in inputs:
        compile_hostile(data, tmp_path, capsys, "random bytes and mutations")


# ---- the cases that broke gradgen once, with their messages --------------------------------

def refused(source, tmp_path, capsys, name="bad.py", extra=()):
    """The message for `source` (path prefix removed); it must be refused."""
    path = tmp_path / name
    path.write_bytes(source if isinstance(source, bytes) else source.encode())
    with time_limit(SECONDS_PER_INPUT, source):
        status = cli.main(["compile", str(path), "--out-dir", str(tmp_path / "out"), *extra])
    captured = capsys.readouterr()
    TRIED["known cases"] += 1
    assert status == 1, captured.err
    check_error(captured.err, path, source)
    assert not (tmp_path / "out" / f"{path.stem}_grad.py").exists()
    return captured.err[len(str(path)):]


def long_int(digits):
    return "1" + "0" * (digits - 1)


REFUSED = [
    ("null byte", b"def f(x):\n    return x\x00 + 1\n",
     ":2:13: the file contains a null byte\n        return x  + 1\n                ^\n"),
    ("repeated parameter (only the compiler sees it)", "def f(x, x):\n    return x\n",
     ":1:10: syntax error: duplicate argument 'x' in function definition\n    def f(x, x):\n             ^\n"),
    ("unicode name that normalises to another", "def f(x, 𝐱=1.0):\n    return x\n",
     ":1:10: syntax error: duplicate argument 'x' in function definition\n    def f(x, 𝐱=1.0):\n             ^\n"),
    ("nonlocal of a parameter", "def f(x):\n    nonlocal x\n    return x\n",
     ":2:5: syntax error: name 'x' is parameter and nonlocal\n        nonlocal x\n        ^\n"),
    ("await outside async", "def f(x):\n    return await x\n",
     ":2:12: syntax error: 'await' outside async function\n        return await x\n               ^\n"),
    ("return outside a function", "return 1\ndef f(x):\n    return x\n",
     ":1:1: syntax error: 'return' outside function\n    return 1\n    ^\n"),
    ("integer literal past Python's limit", f"def f(x):\n    return x * {long_int(5000)}\n",
     ":2:1: syntax error: an integer literal longer than 4300 digits\n"),
    ("module constant that grows past every limit", "A = 10 ** 1000\nB = A ** 1000\nC = B ** 1000\n"
     "def f(x):\n    return x * C\n",
     ":5:16: module-level 'C' is not a numeric constant; pass it to the function as a parameter\n"
     "        return x * C\n                   ^\n"),
    ("integer constant too large to print", "A = 10 ** 1000\nB = A * A * A * A * A\ndef f(x):\n    return x * B\n",
     ":4:16: module-level 'B' is too large: an integer of more than 3,900 digits; pass it to the function "
     "as a parameter\n        return x * B\n                   ^\n"),
    ("complex constant from a power", "A = (-10) ** 0.5\ndef f(x):\n    return x * A\n",
     ":3:16: module-level 'A' is not a real number; pass it to the function as a parameter\n"
     "        return x * A\n                   ^\n"),
    ("array constant of a billion elements", "import numpy as np\nA = np.arange(10 ** 9)\n"
     "def f(x):\n    return np.sum(x * A)\n",
     ":4:23: module-level 'A' is too large: more than 1,000,000 elements; pass it to the function as a "
     "parameter\n        return np.sum(x * A)\n                          ^\n"),
    ("array constant broadcast to a billion", "import numpy as np\nA = np.ones((1000, 1, 1))\n"
     "B = np.ones((1, 1000, 1)) * A * np.ones((1, 1, 1000))\ndef f(x):\n    return np.sum(x * B)\n",
     ":5:23: module-level 'B' is too large: more than 1,000,000 elements; pass it to the function as a "
     "parameter\n        return np.sum(x * B)\n                          ^\n"),
    ("array constant holding inf", "import numpy as np\nA = np.array([1e400, 1.0])\n"
     "def f(x):\n    return np.sum(x * A)\n",
     ":4:23: module-level 'A' is not finite; pass it to the function as a parameter\n"
     "        return np.sum(x * A)\n                          ^\n"),
    ("default too large to print", f"def f(x, n={long_int(4200)}):\n    return x * n\n",
     ":1:12: the default value of 'n' must be a number\n"),
    ("expression nested too deeply", "def f(x):\n    return " + "x * (" * 60 + "x" + ")" * 60 + "\n",
     ":2:262: expression nested more than 50 levels deep; split it into several assignments\n"),
    ("expression too long", "def f(x):\n    return " + " + ".join(f"x * {i}" for i in range(250)) + "\n",
     ":2:12: expression too long: more than 200 operations in one expression; split it into several "
     "assignments\n"),
    ("parser recursion", "def f(x):\n    return " + "-" * 5000 + "x\n",
     ":2:1: this statement is too long or nested too deeply for Python's parser (RecursionError); split it "
     "into several statements\n"),
    ("helpers doubling at every level", "def f(x):\n    return g39(x)\ndef g0(x):\n    return x * 1.01\n"
     + "".join(f"def g{i}(x):\n    return g{i - 1}(x) + g{i - 1}(x)\n" for i in range(1, 40)),
     ":8:12: inlining the helpers 'f' calls copies more than 100,000 syntax nodes; gradgen stops here\n"
     "        return g1(x) + g1(x)\n               ^\n"),
    ("star import", "from math import *\ndef f(x):\n    return sin(x)\n",
     ":1:1: 'from math import *' is not supported: gradgen must know every name; import the names you use\n"
     "    from math import *\n    ^\n"),
    ("a constant rebound by a function through global", "A = 2.0\ndef f(x):\n    return A * x\n"
     "def h():\n    global A\n    A = 5.0\n    return A\n",
     ":3:12: module-level 'A' is rebound through 'global' (line 5); pass it to the function as a parameter\n"),
    ("a function rebound after its def", "def f(x):\n    return x * x\nf = 2.0\n",
     ":3:1: 'f' (the 'def' at line 1) is rebound here: gradgen compiles a function only as its 'def' wrote it\n"
     "    f = 2.0\n    ^\n"),
    ("a decorated function applied by hand", "def twice(h):\n    return h\ndef f(x):\n    return x * x\n"
     "f = twice(f)\n",
     ":5:1: 'f' (the 'def' at line 3) is rebound here: gradgen compiles a function only as its 'def' wrote it\n"
     "    f = twice(f)\n    ^\n"),
    ("a parameter hiding numpy", "import numpy\ndef f(x, np=2.0):\n    return numpy.sin(x) * np\n",
     ":2:10: parameter 'np' would hide NumPy (the generated code imports numpy as np); rename the parameter\n"
     "    def f(x, np=2.0):\n             ^\n"),
    ("a parameter hiding math", "from math import sin\ndef f(x, math=2.0):\n    return sin(x) * math\n",
     ":2:10: parameter 'math' would hide the math module (the generated code imports math); rename the "
     "parameter\n    def f(x, math=2.0):\n             ^\n"),
    ("a parameter hiding a builtin the backward pass calls",
     "def f(x, reversed=1.0):\n    for i in range(3):\n        x = x * x\n    return x * reversed\n",
     ":1:10: parameter 'reversed' would hide the function 'reversed' the generated code calls; rename the "
     "parameter\n    def f(x, reversed=1.0):\n             ^\n"),
    ("a default that is a call", "def f(x=float('nan')):\n    return x\n",
     ":1:9: the default value of 'x' must be a number\n    def f(x=float('nan')):\n            ^\n"),
    ("a constant replacing a generated helper", "import numpy as np\nunbroadcast = 2.0\n\n\n"
     "def f(w, b):\n    return np.sum((w + b) * unbroadcast)\n",
     ":2:1: module-level 'unbroadcast' would replace the helper 'unbroadcast' gradgen writes into the generated "
     "module; rename it\n    unbroadcast = 2.0\n    ^\n"),
    ("a constant replacing numpy in the generated module", "import numpy\nnp = 2.0\n"
     "def f(x):\n    return numpy.sin(x) * np\n",
     ":2:1: module-level 'np' would replace NumPy (the generated code imports numpy as np); rename it\n"
     "    np = 2.0\n    ^\n"),
]


@pytest.mark.parametrize("source, expected", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_known_hostile_input_is_refused_with_its_message(source, expected, tmp_path, capsys):
    message = refused(source, tmp_path, capsys)
    if expected.count("\n") == 1:  # the first line only (the source line is too long to spell here)
        message = message.split("\n")[0] + "\n"
    assert message == expected


CHAIN = "".join(f"def g{i}(x):\n    return g{i + 1}(x) * 1.01\n" for i in range(80)) + "def g80(x):\n    return x\n"
DEEP = "helpers call helpers more than 50 deep here; gradgen inlines each call and stops there"


def test_helpers_inlined_too_deep_are_refused_and_a_whole_file_compiles_the_shallow_ones(tmp_path, capsys):
    """g0 calls g1 ... calls g80: the first 30 inline more than 50 deep (refused, located; in
    a whole file, skipped with that reason), the rest compile, each a loss in its own right."""
    assert refused(CHAIN, tmp_path, capsys, extra=["--function", "g0"]) == (
        f":102:12: {DEEP}\n        return g51(x) * 1.01\n               ^\n")
    skipped = []
    text = compile_hostile(CHAIN, tmp_path, capsys, "known cases", skipped=skipped)
    assert skipped == [f"g{i}" for i in range(30)]
    module = load_module(text)
    assert module.g30_grad(1.0) == pytest.approx(1.01 ** 50, rel=1e-14) and module.g80_grad(2.0) == 1.0
    reasons = compile_source(CHAIN, "chain.py").skipped  # (the reasons, as the API gives them)
    assert reasons["g0"] == f"{DEEP} (line 102)"
    assert reasons["g1"] == f"inlined where 'g0' calls it; alone: {DEEP} (line 104)"


def test_a_whole_file_has_one_inlining_budget(tmp_path, capsys):
    """A loss, then helpers that double at every level: each function tried would copy up to
    the bound for one function (100,000 syntax nodes), forty times over; the file has one
    such budget, so once f has spent it the rest are not tried (and say so)."""
    doubling = "def f(x):\n    return g39(x)\ndef g0(x):\n    return x * 1.01\n" + "".join(
        f"def g{i}(x):\n    return g{i - 1}(x) + g{i - 1}(x)\n" for i in range(1, 40))
    source = "def loss(x):\n    return x * x\n\n\n" + doubling
    (tmp_path / "w.py").write_text(source)
    start = time.process_time()
    assert cli.main(["compile", str(tmp_path / "w.py"), "--out-dir", str(tmp_path / "out")]) == 0
    spent = time.process_time() - start
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("skipped f (line 5): inlining the helpers 'f' calls copies more than 100,000 syntax nodes; "
                      "gradgen stops here (line 12)")
    assert err[1:] == [f"skipped g{i} (line {7 + 2 * i}): not tried: the functions before it inlined helpers of "
                       "more than 100,000 syntax nodes in all, gradgen's bound for one file; compile it alone "
                       f"(--function g{i})" for i in range(40)]
    assert spent < 8, spent  # (trying each of the forty took 15 s)


def test_reading_what_is_not_a_file(tmp_path, capsys):
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "folder.py").mkdir()
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * (parse.MAX_SOURCE_BYTES // 6 + 1))
    cases = {str(tmp_path / "pipe.py"): "cannot read: not a regular file",  # would block forever if opened plainly
             str(tmp_path / "folder.py"): "cannot read: a directory",
             "/dev/zero": "cannot read: not a regular file",  # would never end
             str(tmp_path / "missing.py"): "cannot read: No such file or directory",
             str(big): f"file too large ({big.stat().st_size:,} bytes); gradgen reads at most 2,000,000"}
    for path, message in cases.items():
        TRIED["known cases"] += 1
        with time_limit(WAIT_SECONDS, path, clock="wall"):
            assert cli.main(["compile", path, "--out-dir", str(tmp_path / "out")]) == 1
        assert capsys.readouterr().err == f"{path}: {message}\n"


def test_error_echo_never_drives_the_terminal_and_the_caret_counts_characters(tmp_path, capsys):
    source = "def f(x):\n    é = x\n    y = é + '€\x1b]0;owned\x07'\n    return y\n"
    message = refused(source, tmp_path, capsys)
    assert "\x1b" not in message and "\x07" not in message
    assert message == (":3:13: only real numbers are supported, not str constants\n"
                       "        y = é + '€?]0;owned?'\n                ^\n")


def test_line_numbers_follow_python_not_str_splitlines(tmp_path, capsys):
    """A form feed or U+2028 in a comment is no line break to Python (nor to the error)."""
    source = "# a\x0c b \u2028 c \x1c d\ndef f(x):\n    return unknown(x)\n"
    assert refused(source, tmp_path, capsys) == (
        ":3:12: unknown function 'unknown': gradgen differentiates its known primitives and functions "
        "defined in this file\n        return unknown(x)\n               ^\n")


def test_a_later_import_replaces_an_earlier_def(tmp_path, capsys):
    """Once a silent wrong gradient: the user's `exp` was differentiated, Python calls math's."""
    source = "def exp(t):\n    return t * t\n\n\nfrom math import exp\n\n\ndef f(x):\n    return exp(x)\n"
    text = compile_hostile(source, tmp_path, capsys, "known cases")
    module = load_module(text)
    assert module.f_value_and_grad(1.5) == (math.exp(1.5), math.exp(1.5))


def test_a_later_def_replaces_an_earlier_import(tmp_path, capsys):
    source = "from math import exp\n\n\ndef exp(t):\n    return t * t\n\n\ndef f(x):\n    return exp(x)\n"
    module = load_module(compile_hostile(source, tmp_path, capsys, "known cases"))
    assert module.f_value_and_grad(1.5) == (2.25, 3.0)


def test_non_finite_constants_and_defaults_import_math(tmp_path, capsys):
    """Once a module that did not import: `math.inf` written, `math` never imported."""
    source = "A = 1e400\nB = 1e400 - 1e400\nC = -0.0\n\n\ndef f(x=1e400, y=-1.5):\n    return y * A * C if x > B else y\n"
    text = compile_hostile(source, tmp_path, capsys, "known cases")
    module = load_module(text)
    assert "import math" in text
    assert module.A == math.inf and math.isnan(module.B) and math.copysign(1, module.C) == -1
    assert module.f_grad.__defaults__ == (math.inf, -1.5)
    assert module.f_value_and_grad(2.0, 3.0) == (3.0, 1.0)


def test_huge_output_is_bounded_in_time(tmp_path, capsys):
    """The largest expression gradgen accepts, many times over: it compiles, in bounded time."""
    nested = "x * (" * 45 + "x" + ")" * 45
    source = "def f(x):\n" + "".join(f"    x = {nested} * 0.5\n" for _ in range(3)) + "    return x\n"
    start = time.process_time()  # the work done, whatever the machine's load
    text = compile_hostile(source, tmp_path, capsys, "known cases")
    assert text.count("\n") > 1000 and time.process_time() - start < 30


def test_the_time_limit_stops_a_long_compile_and_writes_nothing(tmp_path, capsys, monkeypatch):
    """The backstop, with a limit short enough to hit: a clean error, status 1, no file."""
    monkeypatch.setattr(cli, "COMPILE_SECONDS", 0.2)
    nested = "x * (" * 45 + "x" + ")" * 45
    source = "def f(x):\n" + "".join(f"    x = {nested} * 0.5\n" for _ in range(20)) + "    return x\n"
    path = tmp_path / "slow.py"
    path.write_text(source)
    start = time.process_time()
    assert cli.main(["compile", str(path), "--out-dir", str(tmp_path / "out")]) == 1
    assert time.process_time() - start < 5
    assert capsys.readouterr().err == (f"{path}: compiling took longer than 0.2 s, so gradgen stopped; "
                                       "nothing was written\n")
    assert not (tmp_path / "out" / "slow_grad.py").exists()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def _spin(seconds):
    """Work (not wait) for `seconds` of processor time."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_processor_time_limit_stops_work_and_not_waiting():
    with pytest.raises(TimeoutError):
        with limits.time_limit(0.2, TimeoutError, clock="cpu"):
            _spin(30)
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    with limits.time_limit(0.05, TimeoutError, clock="cpu"):
        time.sleep(0.3)  # waiting spends no processor time
    with pytest.raises(TimeoutError):
        with limits.time_limit(0.05, TimeoutError):  # the wall clock, the default, counts waiting
            time.sleep(30)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_nothing_fires_after_the_block_is_left():
    for clock in ("cpu", "wall"):
        with limits.time_limit(0.05, TimeoutError, clock=clock):
            pass
        _spin(0.2)
        time.sleep(0.1)


def test_an_expired_limit_never_raises_inside_a_garbage_collection(monkeypatch):
    """Once flaky: the hang detector fired inside hypothesis's garbage-collection callback,
    where an exception cannot propagate (Python reports it as unraisable and goes on). It
    waits for the collection to end, then raises in the guarded code."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def slow_callback(phase, info):
        if phase == "start":
            _spin(0.5)

    gc.callbacks.append(slow_callback)
    after_collection = []
    try:
        with pytest.raises(TimeoutError):
            with limits.time_limit(0.1, TimeoutError, clock="cpu"):
                gc.collect()  # the limit expires in the callback
                after_collection.append(True)
                _spin(30)
    finally:
        gc.callbacks.remove(slow_callback)
    assert unraisable == [] and after_collection == [True]
    assert slow_callback not in gc.callbacks and len(gc.callbacks) == len(set(map(id, gc.callbacks)))


def test_a_swallowed_error_is_raised_again():
    """Code that catches everything does not outlive the limit."""
    caught = 0
    with pytest.raises(TimeoutError):
        with limits.time_limit(0.1, TimeoutError, clock="cpu"):
            while True:
                try:
                    _spin(0.01)
                except TimeoutError:
                    caught += 1
                    if caught == 1:
                        continue
                    raise
    assert caught == 2


# ---- compiling never runs the input --------------------------------------------------------

EVIL_HELPER = "open('marker-imported-module', 'w').close()\n"
EVIL = '''# -*- coding: utf-8 -*-
"""Every executable part of this file creates a marker file."""
import math
import evil_helper
open('marker-top-level', 'w').close()
A = open('marker-constant', 'w').close() or 1.0
B: float = 2.0


def deco(fn):
    open('marker-decorator', 'w').close()
    return fn


def default():
    open('marker-default', 'w').close()
    return 1.0


class Meta(type):
    def __new__(mcs, name, bases, ns):
        open('marker-metaclass', 'w').close()
        return super().__new__(mcs, name, bases, ns)


class Base:
    def __init_subclass__(cls, **kwargs):
        open('marker-init-subclass', 'w').close()


class Child(Base, metaclass=Meta):
    open('marker-class-body', 'w').close()


def annotated(x: open('marker-annotation', 'w').close() or float = 1.0):
    return x


@deco
def decorated(x=default()):
    open('marker-body', 'w').close()
    return x


def f(x=0.5, y=2.0):
    z = math.sin(x) * y
    return z * z


def g(x=default()):
    return x * A


print(f(), open('marker-call', 'w').close(), decorated(), g())
if __name__ == '__main__':
    open('marker-main', 'w').close()
'''
MARKERS = ["annotation", "call", "class-body", "constant", "decorator", "default", "body", "imported-module",
           "init-subclass", "main", "metaclass", "top-level"]


def _markers(folder):
    return sorted(p.name[len("marker-"):] for p in folder.iterdir() if p.name.startswith("marker-"))


def test_compiling_never_runs_any_part_of_the_input(tmp_path, capsys, monkeypatch):
    # the file does create every marker when Python runs it: the test can fail
    ran = tmp_path / "ran"
    ran.mkdir()
    (ran / "evil.py").write_text(EVIL)
    (ran / "evil_helper.py").write_text(EVIL_HELPER)
    subprocess.run([sys.executable, "evil.py"], cwd=ran, capture_output=True, timeout=60, check=True)
    assert _markers(ran) == sorted(MARKERS)

    work = tmp_path / "work"
    work.mkdir()
    (work / "evil_helper.py").write_text(EVIL_HELPER)
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(work))
    text = compile_hostile(EVIL, work, capsys, "never runs", name="evil.py", extra=["--function", "f"])
    assert text is not None and "def f_grad(x=0.5, y=2.0):" in text
    assert refused_in(work, capsys, "evil.py", "--function", "deco") == (
        "evil.py:11:5: an expression statement does nothing to the result")
    assert refused_in(work, capsys, "evil.py", "--function", "g") == (  # a default computed by a call
        "evil.py:50:9: the default value of 'x' must be a number")
    skipped = []  # the whole file: what compiles, and a line for each of the rest, read, never run
    whole = compile_hostile(EVIL, work, capsys, "never runs", name="evil.py", skipped=skipped)
    assert "def f_grad(x=0.5, y=2.0):" in whole and "def annotated_grad(x=1.0):" in whole
    assert skipped == ["module-level code", "deco", "default", "class Meta", "class Base", "class Child",
                       "decorated", "g", 'the if __name__ == "__main__" block']
    # the generated modules carry none of it either
    load_module(text)
    load_module(whole)
    assert _markers(work) == [] and "evil_helper" not in sys.modules


def refused_in(folder, capsys, name, *extra):
    """The first line of the error for compiling `name` in `folder`, which must be refused."""
    status = cli.main(["compile", name, "--out-dir", "out2", *extra])
    err = capsys.readouterr().err
    assert status == 1, err
    assert not (folder / "out2").exists()
    return err.split("\n")[0]


# ---- nothing the user writes is injected into the generated module -------------------------

ALLOWED_CALLS = {"range", "reversed", "len", "float", "abs", "max", "min", "pow", "round", "slice", "tuple", "sum",
                 "enumerate", "zip", "int", "unbroadcast", "matmul_shape", "matmul_grad_a", "matmul_grad_b", "scatter",
                 "concatenate_grad", "sigmoid", "append", "pop"}


def assert_only_generated_code(text, functions, constants=()):
    """The module's top level holds the docstring, imports of math/numpy, the expected
    constants, helpers and functions; every comment is one gradgen writes; every call is to
    math, numpy, a builtin or a generated helper."""
    tree = ast.parse(text)
    assert isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant)
    assert tree.body[0].value.value.startswith("Reverse-mode gradients of ")
    defined = set()
    for stmt in tree.body[1:]:
        if isinstance(stmt, ast.Import):
            assert [(a.name, a.asname) for a in stmt.names] in ([("math", None)], [("numpy", "np")]), ast.dump(stmt)
        elif isinstance(stmt, ast.Assign):
            assert [t.id for t in stmt.targets] in [[c] for c in constants], ast.dump(stmt)
        elif isinstance(stmt, ast.FunctionDef):
            defined.add(stmt.name)
        else:
            raise AssertionError(f"unexpected statement: {ast.unparse(stmt)}")
    expected = {n for f in functions for n in (f"{f}_grad", f"{f}_value_and_grad")}
    assert expected <= defined and defined - expected <= ALLOWED_CALLS | {"sigmoid_1"}, defined
    for node in ast.walk(tree):
        assert not isinstance(node, (ast.Import, ast.ImportFrom)) or node in tree.body
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                base = func.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                assert isinstance(base, ast.Name), ast.unparse(node)
                assert base.id in ("math", "np") or func.attr in ("append", "pop"), ast.unparse(node)
            else:
                assert isinstance(func, ast.Name) and func.id in ALLOWED_CALLS | defined, ast.unparse(node)
    header = [line for line in text.split("\n")[:3]]
    assert header[0].startswith(HEADER_MARK) and header[1].startswith("# Do not edit: run `gradgen compile ")
    assert re.fullmatch(r'# Source "[ -~]*"; body sha256 [0-9a-f]{64}\.', header[2]), header[2]
    for tok in tokenize.generate_tokens(iter(text.splitlines(keepends=True)).__next__):
        if tok.type == tokenize.COMMENT and tok.start[0] > 3:
            assert re.fullmatch(r"# (forward pass|backward pass: .*|line \d+: .*)", tok.string) or (
                tok.start[0] <= 7 and re.fullmatch(r"# (Constants copied from [ -~]*|Folded into the code [ -~]*|"
                                                   r"Compiled: [\w, ]+\.( Skipped \([\w ]+\): [\w, ()]+\.)?|"
                                                   r"Differentiated \([\w ,-]+\): [\w ,;]+\.)",
                                                   tok.string)), tok.string
    assert "\r" not in text and "\x0c" not in text


MARK_CODE = "open('INJECTED', 'w').close()"
INJECTING_NAMES = [
    f'x\n{MARK_CODE}\n#.py',
    f'x"""\n{MARK_CODE}\n""".py',
    f"x'''\n{MARK_CODE}\n'''.py",
    f'x\r{MARK_CODE}\r#.py',
    f'x\\\n{MARK_CODE}.py',
    'x"; ' + MARK_CODE + '; ".py',
    'x\u2028' + MARK_CODE + '.py',
    'x\x85' + MARK_CODE + '.py',
    'x\x1b[2J.py',
]


@pytest.mark.parametrize("name", INJECTING_NAMES, ids=range(len(INJECTING_NAMES)))
def test_a_filename_cannot_inject_code(name, tmp_path, capsys, monkeypatch):
    """The header and the docstrings cite the source file's name."""
    monkeypatch.chdir(tmp_path)
    source = ("import math\n\n\ndef sigmoid(t):\n    return 1 / (1 + math.exp(-t))\n\n\n"
              "def f(x=0.5):\n    return sigmoid(x) * 2\n")
    text = compile_hostile(source, tmp_path, capsys, "injection", name=name)
    assert_only_generated_code(text, ["f", "sigmoid"])
    load_module(text)
    assert not (tmp_path / "INJECTED").exists()
    # the file name is still recognisable, its dangerous characters replaced
    assert text.split("\n")[0].startswith(f"{HEADER_MARK}0.1.0 from x")


def test_source_text_cannot_inject_code(tmp_path, capsys, monkeypatch):
    """Docstrings, comments and strings inside statements that gradgen cites in comments."""
    monkeypatch.chdir(tmp_path)
    source = textwrap.dedent(r'''
        import math
        A = 2.0  # """ \n MARK
        B = -0.0
        C = 1e400
        LONG = 3.0


        def f(x=0.5, y=-0.0, ü=1e400, *, np_=1.0):
            """Docstring with code: \"""
        MARK
        \""" and \'\'\' and \\ end."""
            z = (x  # a comment with """ and \r and MARK
                 + A * B)
            VERY_LONG = z * LONG if z > 0 else z * C
            unbroadcast = math.sin(VERY_LONG)
            math_ = unbroadcast
            return math_ * y
        ''').replace("MARK", MARK_CODE).replace("VERY_LONG", "v" * 3000).replace("LONG", "L" * 300)
    text = compile_hostile(source, tmp_path, capsys, "injection")
    assert_only_generated_code(text, ["f"], constants=["A", "B", "C", "L" * 300])
    module = load_module(text)
    assert not (tmp_path / "INJECTED").exists()
    assert module.f_grad.__defaults__ == (0.5, -0.0, math.inf) and math.copysign(1, module.f_grad.__defaults__[1]) == -1
    # the constants it reads are keyword arguments defaulting to their copies (gradgen.codegen.guards)
    assert module.f_grad.__kwdefaults__ == {"np_": 1.0, "A": 2.0, "B": -0.0, "C": math.inf, "L" * 300: 3.0}
    assert (module.A, module.C, getattr(module, "L" * 300)) == (2.0, math.inf, 3.0)
    assert math.copysign(1, module.B) == -1
    value, grads = module.f_value_and_grad(0.5, 2.0, 1.0, np_=1.0)
    assert value == math.sin(0.5 * 3.0) * 2.0 and grads == (math.cos(1.5) * 3.0 * 2.0, math.sin(1.5), 0.0)


@pytest.mark.parametrize("value, expected", [
    ("-0.0", -0.0), ("1e400", math.inf), ("-1e400", -math.inf), ("5e-324", 5e-324), ("0.1 + 0.2", 0.1 + 0.2),
    ("2 ** 62", 2 ** 62), (long_int(3000), int(long_int(3000))), ("True", True), ("1e400 - 1e400", math.nan),
    ("(1.0, -2.5, 1e400)", (1.0, -2.5, math.inf)), ("1 / 3", 1 / 3), ("-(2 ** 0.5)", -(2 ** 0.5)),
    ("math.pi * 2", math.pi * 2), ("10 ** 300 * 1.0", 1e300), ("7 // -2", -4), ("-7 % 3", 2),
])
def test_module_constants_arrive_exactly(value, expected, tmp_path, capsys):
    source = f"import math\nK = {value}\n\n\ndef f(x):\n" + (
        "    for k in K:\n        x = x * 2\n    return x\n" if value.startswith("(") else
        "    return x * (1.0 if K != 0 else 2.0)\n")
    text = compile_hostile(source, tmp_path, capsys, "injection")
    assert_only_generated_code(text, ["f"], constants=["K"])
    got = load_module(text).K
    assert type(got) is type(expected)
    same = (lambda a, b: a == b and math.copysign(1, a) == math.copysign(1, b)) if isinstance(expected, float) else (
        lambda a, b: a == b)
    if isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got)
    elif isinstance(expected, tuple):
        assert all(same(a, b) for a, b in zip(got, expected)) and len(got) == len(expected)
    else:
        assert same(got, expected)


# ---- writing the output --------------------------------------------------------------------

SIMPLE = "import math\n\n\ndef f(x=0.5, y=2.0):\n    z = math.sin(x) * y\n    return z * z\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loss.py").write_text(SIMPLE)
    return tmp_path


def compile_loss(capsys, *extra):
    status = cli.main(["compile", "loss.py", *extra])
    captured = capsys.readouterr()
    return status, captured.err


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp") or p.name.startswith("."))


class Boom(OSError):
    pass


@pytest.mark.parametrize("where", ["write", "fsync", "replace", "interrupt"])
def test_a_failure_mid_write_keeps_the_old_file_and_leaves_no_temporary(where, project, capsys, monkeypatch):
    assert compile_loss(capsys) == (0, "")
    target = project / "generated" / "loss_grad.py"
    old = target.read_bytes()
    (project / "loss.py").write_text(SIMPLE.replace("z * z", "z * z * z"))
    import gradgen.tools.files as files

    error = KeyboardInterrupt() if where == "interrupt" else Boom(28, "No space left on device")
    if where == "write":
        real_fdopen = os.fdopen

        def fdopen(fd, *args, **kwargs):
            f = real_fdopen(fd, *args, **kwargs)

            class Half:
                def __enter__(self):
                    return self

                def __exit__(self, *exc):
                    f.close()

                def write(self, data):
                    f.write(data[: len(data) // 2])
                    raise error

                def __getattr__(self, name):
                    return getattr(f, name)

            return Half()

        monkeypatch.setattr(files.os, "fdopen", fdopen)
    elif where == "fsync":
        monkeypatch.setattr(files.os, "fsync", lambda fd: (_ for _ in ()).throw(error))
    else:
        monkeypatch.setattr(files.os, "replace", lambda a, b: (_ for _ in ()).throw(error))
    status, err = compile_loss(capsys)
    if where == "interrupt":
        assert (status, err) == (130, "gradgen: interrupted; nothing was written\n")
    else:
        assert (status, err) == (1, "generated/loss_grad.py: cannot write generated/loss_grad.py: "
                                    "No space left on device\n")
    assert target.read_bytes() == old
    assert leftovers(project / "generated") == []


def test_the_written_file_is_readable_by_others_like_any_new_file(project, capsys):
    """mkstemp makes owner-only files; the generated module gets the usual permissions."""
    old = os.umask(0o022)
    try:
        assert compile_loss(capsys) == (0, "")
    finally:
        os.umask(old)
    assert stat.S_IMODE((project / "generated" / "loss_grad.py").stat().st_mode) == 0o644


FOREIGN = [b"", b"\n", b"# Generated by gradgen", b"# generated by gradgen 0.1.0 from loss.py\n",
           b" # Generated by gradgen 0.1.0\n", b"\xef\xbb\xbf# Generated by gradgen 0.1.0\n",
           b"#  Generated by gradgen 0.1.0\n", b"x = 1  # Generated by gradgen 0.1.0\n", b"\xff\xfe\x00"]


@pytest.mark.parametrize("content", FOREIGN, ids=range(len(FOREIGN)))
def test_a_file_without_the_exact_header_is_never_overwritten(content, project, capsys):
    (project / "generated").mkdir()
    target = project / "generated" / "loss_grad.py"
    target.write_bytes(content)
    assert compile_loss(capsys) == (1, "generated/loss_grad.py: this file was not written by gradgen; "
                                       "use --force to overwrite it\n")
    assert target.read_bytes() == content
    assert compile_loss(capsys, "--force") == (0, "")
    assert target.read_text().startswith(HEADER_MARK)
    assert compile_loss(capsys) == (0, "")  # and now it is gradgen's own


def test_what_is_in_the_way_of_the_output(project, capsys):
    (project / "generated").mkdir()
    (project / "generated" / "loss_grad.py").mkdir()
    assert compile_loss(capsys, "--force") == (1, "generated/loss_grad.py: a directory is in the way of the "
                                                  "generated file\n")
    (project / "fifo_dir").mkdir()
    os.mkfifo(project / "fifo_dir" / "loss_grad.py")
    with time_limit(WAIT_SECONDS, "fifo in the way", clock="wall"):  # reading its header would block forever
        assert compile_loss(capsys, "--out-dir", "fifo_dir") == (
            1, "fifo_dir/loss_grad.py: not a regular file; gradgen will not replace it\n")
    (project / "a_file").write_text("x")
    assert compile_loss(capsys, "--out-dir", "a_file") == (1, "a_file: the output folder is not a folder\n")
    assert compile_loss(capsys, "--out-dir", "a_file/sub") == (
        1, "a_file/sub/loss_grad.py: cannot write a_file/sub/loss_grad.py: Not a directory\n")
    assert (project / "a_file").read_text() == "x"


def test_a_symlink_in_the_way_is_judged_by_what_it_points_to(project, capsys):
    (project / "generated").mkdir()
    foreign = project / "mine.py"
    foreign.write_text("my own code\n")
    (project / "generated" / "loss_grad.py").symlink_to(foreign)
    assert compile_loss(capsys)[0] == 1
    assert foreign.read_text() == "my own code\n"
    assert compile_loss(capsys, "--force") == (0, "")
    assert foreign.read_text() == "my own code\n"  # the link is replaced, never the file it pointed to
    assert not (project / "generated" / "loss_grad.py").is_symlink()


def test_an_unwritable_output_folder_is_a_clear_error(project, capsys, monkeypatch):
    import gradgen.tools.files as files

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files.tempfile, "mkstemp", denied)
    assert compile_loss(capsys) == (1, "generated/loss_grad.py: cannot write generated/loss_grad.py: "
                                       "Permission denied\n")
    monkeypatch.undo()
    if os.geteuid() != 0:  # root writes anywhere: the real thing only for other users
        monkeypatch.chdir(project)  # undone above; and back again after the test
        (project / "locked").mkdir(mode=0o500)
        assert compile_loss(capsys, "--out-dir", "locked")[0] == 1
        assert list((project / "locked").iterdir()) == []


RACE = '''
import sys, time
sys.path.insert(0, {root!r})
import gradgen.api, gradgen.tools.cli, black  # imported before the start, so that all start together
start, rounds = float(sys.argv[1]), int(sys.argv[2])
statuses = []
for r in range(rounds):
    while time.time() < start + r * 0.5:
        time.sleep(0.001)
    statuses.append(gradgen.tools.cli.main(["compile", "race.py", "--out-dir", "out"]))
sys.exit(max(statuses))
'''


def test_simultaneous_compiles_leave_one_complete_module(tmp_path):
    """Three processes compile the same file at the same moments, three times over (first
    racing to create the file, then to replace it): none refuses another's file, a reader
    never sees a partial file, the result is byte-identical to a single compile, and no
    temporary file is left."""
    source = "import math\n\n\ndef f(" + ", ".join(f"w{i}=0.{i + 1}" for i in range(8)) + "):\n" + "".join(
        f"    w{i % 8} = math.tanh(w{i % 8} * w{(i + 1) % 8} + {i})\n" for i in range(120)) + "    return w0\n"
    (tmp_path / "race.py").write_text(source)
    expected = compile_source(source.encode(), "race.py").text.encode()
    (tmp_path / "race_runner.py").write_text(RACE.format(root=str(ROOT)))
    start = time.time() + 2.5
    procs = [subprocess.Popen([sys.executable, "race_runner.py", str(start), "3"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    seen, stop = Counter(), threading.Event()

    def read_continuously():
        target = tmp_path / "out" / "race_grad.py"
        while not stop.is_set():
            try:
                data = target.read_bytes()
            except FileNotFoundError:
                seen["absent"] += 1
                continue
            seen["complete" if data == expected else "PARTIAL"] += 1

    reader = threading.Thread(target=read_continuously)
    reader.start()
    try:
        results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    finally:
        stop.set()
        reader.join()
    for out, err, status in results:
        assert status == 0, err
        assert err == "" and out.count("wrote out/race_grad.py (f_grad, f_value_and_grad)\n") == 3
    assert (tmp_path / "out" / "race_grad.py").read_bytes() == expected
    assert leftovers(tmp_path / "out") == []
    assert seen["PARTIAL"] == 0 and seen["complete"] > 0, seen

