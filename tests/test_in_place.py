"""In-place updates and shared memory: `x += e` on an array changes every name that shares
its memory (a copy `y = x`, a view `y = x[1:]`, a helper's argument). gradgen's gradient
treats `x += e` as a new value of `x`, so it must refuse exactly where that would
differentiate a different program, and compile (with a right gradient) everywhere else.

The oracle is the program itself: run once as written (NumPy's in-place semantics) and once
with every `x op= e` spelled `x = x op e` (value semantics). Where the two differ on an
array, sharing matters and gradgen must refuse; where it compiles, its gradient must match
central finite differences of the program as written.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module

# (how `y` comes from `x`, whether it may share x's memory)
ALIASES = ["y = x", "y = x[1:]", "y = x.T", "y = x.reshape(-1)", "y = x * 1.0", "y = np.flip(x)"]
UPDATES = ["x += np.sin(x)", "y *= 0.5", "x -= y[:1]",
           "for i in range(2):\n        x += np.cos(x)", "for i in range(2):\n        y *= 0.9"]
USES = ["np.sum(x * x)", "np.sum(y * y)", "np.sum(x) + np.sum(y * y)", "np.sum(a * x)"]
STARTS = ["x = a * 2.0", "x = a"]  # a fresh array, or the caller's
HELPERS = [("bump(x)", "def bump(v):\n    v += 1.0\n    return v * 2.0\n\n\n"),
           ("scaled(x)", "def scaled(v):\n    w = v * 3.0\n    w += 1.0\n    return w\n\n\n")]


def program(start, alias, update, use, helper=""):
    return (f"import numpy as np\n\n\n{helper}def f(a):\n    {start}\n    {alias}\n    {update}\n"
            f"    return {use}\n")


def cases():
    for start, alias, update, use in itertools.product(STARTS, ALIASES, UPDATES, USES):
        yield program(start, alias, update, use)
    for start, (call, helper), use in itertools.product(STARTS, HELPERS, USES):
        yield program(start, f"y = {call}", "z = 1.0", use, helper)


def as_values(source):
    """The same program with every `x op= e` written `x = x op e`."""
    return re.sub(r"^(\s*)(\w+) (\+|-|\*|/)= (.*)$", r"\1\2 = \2 \3 (\4)", source, flags=re.MULTILINE)


def run(source, a):
    namespace = {}
    exec(compile(source, "prog.py", "exec"), namespace)
    return namespace["f"](a.copy() if isinstance(a, np.ndarray) else a)


POINT = np.array([[0.3, -0.7], [1.1, 0.4]])


@pytest.mark.parametrize("source", list(cases()))
def test_refused_exactly_where_sharing_changes_the_result(source):
    shared = not np.isclose(run(source, POINT), run(as_values(source), POINT), rtol=1e-12)
    try:
        text = compile_source(source, filename="prog.py").text
    except CompileError as error:
        assert shared, f"refused a program sharing does not affect:\n{source}\n{error}"
        assert "would change an array that may share memory with another name (a copy or a view)" in str(error)
        return
    assert not shared, f"compiled a program whose arrays share memory:\n{source}"
    grad = load_module(text, "prog_grad").f_grad(POINT.copy())
    for index in np.ndindex(POINT.shape):
        step = np.zeros_like(POINT)
        step[index] = 1e-6
        fd = (run(source, POINT + step) - run(source, POINT - step)) / 2e-6
        assert grad[index] == pytest.approx(fd, rel=1e-6, abs=1e-8), (source, index)


def test_the_cases_include_both_answers():
    """The oracle splits the cases: some share memory that matters, most do not."""
    shared = [not np.isclose(run(s, POINT), run(as_values(s), POINT)) for s in cases()]
    assert 10 <= sum(shared) <= len(shared) - 10
    shared = [not np.isclose(run(s, 0.7), run(as_values(s), 0.7)) for s in cases_0d()]
    assert 10 <= sum(shared) <= len(shared) - 10


def test_a_parameter_updated_in_place_compiles_and_changes_the_callers_array_as_yours_does():
    source = "import numpy as np\n\n\ndef f(a):\n    for i in range(2):\n        a += np.cos(a)\n    return np.sum(a * a)\n"
    module = load_module(compile_source(source, filename="prog.py").text, "prog_grad")
    a = POINT.copy()
    mine = POINT.copy()
    run(source, mine)
    module.f_value_and_grad(a)
    np.testing.assert_array_equal(a, mine)


def test_a_loop_over_a_literal_range_runs_at_least_once():
    """`h = y; for i in range(1): h = np.tanh(h)` leaves h a new array, so `y += e` after it
    changes no name that is read; with range(n) the loop may not run and h may still be y."""
    body = "    h = y\n    for i in range({n}):\n        h = np.tanh(h)\n    y += 1.0\n    return np.sum(y * h)\n"
    head = "import numpy as np\n\n\ndef f(x, n):\n    y = x * 2.0\n"
    text = compile_source(head + body.format(n=1), filename="prog.py", wrt=["x"]).text
    x = np.array([0.3, -0.4])
    value, grad = load_module(text, "prog_grad").f_value_and_grad(x.copy(), 1)
    assert value == np.sum((2 * x + 1) * np.tanh(2 * x))
    np.testing.assert_allclose(grad, 2 * np.tanh(2 * x) + (2 * x + 1) * 2 / np.cosh(2 * x) ** 2, rtol=1e-13)
    with pytest.raises(CompileError) as caught:
        compile_source(head + body.format(n="n"), filename="prog.py", wrt=["x"])
    assert str(caught.value).startswith("prog.py:9:5: 'y += ...' would change an array that may share memory")


def test_float_annotation_says_a_local_is_a_number():
    """`u: float = a ** n` with `n` unannotated may be an array, and `h = u; u *= 2.0` with h
    read later is refused, unless the annotation says u is a number (seed 31, program 134
    of the fuzzer: a draw program whose `u: float` gradgen did not believe)."""
    body = "    h = u\n    u *= 2.0\n    return np.tanh(u + h)\n"
    with pytest.raises(CompileError) as caught:
        compile_source(f"import numpy as np\n\n\ndef f(a: float, n):\n    u = a ** n\n{body}", filename="prog.py")
    assert str(caught.value).startswith("prog.py:7:5: 'u *= ...' would change an array that may share memory")
    text = compile_source(f"import numpy as np\n\n\ndef f(a: float, n):\n    u: float = a ** n\n{body}",
                          filename="prog.py", wrt=["a"]).text
    value, grad = load_module(text, "prog_grad").f_value_and_grad(0.7, 2)
    u = 0.7**2
    assert value == np.tanh(u * 2.0 + u)
    assert grad == pytest.approx((1 - np.tanh(3 * 0.49) ** 2) * 3 * 2 * 0.7, rel=1e-14)


def test_float_annotation_says_a_parameter_is_a_number():
    """Without a default or an annotation a parameter may be an array, and `u = a; u += e`
    is refused; `a: float` says it is a number, so the same program compiles."""
    body = "    u = a\n    for i in range(3):\n        u += 0.5 * np.sin(u)\n    return u * a\n"
    with pytest.raises(CompileError) as caught:
        compile_source(f"import numpy as np\n\n\ndef f(a):\n{body}", filename="prog.py")
    assert str(caught.value) == ("prog.py:7:9: 'u += ...' would change an array that may share memory with another "
                                 "name (a copy or a view); write 'u = u + ...'\n"
                                 "            u += 0.5 * np.sin(u)\n            ^")
    text = compile_source(f"import numpy as np\n\n\ndef f(a: float):\n{body}", filename="prog.py").text
    value, grad = load_module(text, "prog_grad").f_value_and_grad(0.7)
    u = 0.7
    du = 1.0
    for _ in range(3):
        du = du * (1 + 0.5 * np.cos(u))
        u = u + 0.5 * np.sin(u)
    assert value == u * 0.7
    assert grad == pytest.approx(du * 0.7 + u, rel=1e-14)
    assert "unbroadcast" not in text


# NumPy makes a 0-d array of a number in np.where, np.ones_like, np.squeeze...: mutable
# like any array, though the function is otherwise scalar
STARTS_0D = ["x = np.where(a > 0.0, a, 2.0 * a)", "x = np.squeeze(a * 2.0)", "x = np.sin(a)"]
ALIASES_0D = ["y = x", "y = x.T", "y = x * 1.0"]
UPDATES_0D = ["x += np.sin(x)", "y *= 0.5", "for i in range(2):\n        x += np.cos(x)"]
USES_0D = ["x * x", "y * y", "x + y * y", "a * x"]


def cases_0d():
    for start, alias, update, use in itertools.product(STARTS_0D, ALIASES_0D, UPDATES_0D, USES_0D):
        # (a float by annotation: a default proves nothing, and an array `a` would share differently)
        yield program(start, alias, update, use).replace("def f(a):", "def f(a: float = 0.7):")


FLOW = {  # where the sharing is depends on the path: branches, a conditional expression, break
    "fresh in the other branch": "    if a > 0.9:\n        b = c\n    else:\n        b = a * 1.0\n        b += a\n",
    "shared in this branch": "    if a > 0.9:\n        b = a * 1.0\n    else:\n        b = c\n        b += a\n",
    "shared by a conditional expression": "    b = c if a > 0.0 else a\n    b += a\n",
    "fresh by a conditional expression": "    b = c * 1.0 if a > 0.0 else a\n    b += a\n",
    "shared at a break": "    b = a * 1.0\n    for i in range(3):\n        if i == 1:\n            b = c\n            break\n"
                         "    b += a\n",
    "rebound after the loop": "    b = c\n    for i in range(2):\n        b = c\n    b = a * 2.0\n    b += a\n",
}


def flow_program(body):
    return f"import numpy as np\n\n\ndef f(a: float = 0.7):\n    c = np.where(a > 0.0, a, 2.0 * a)\n{body}    return b * c\n"


@pytest.mark.parametrize("source", list(cases_0d()) + [flow_program(b) for b in FLOW.values()],
                         ids=[f"0d-{i}" for i in range(len(list(cases_0d())))] + list(FLOW))
def test_zero_d_arrays_are_arrays_too(source):
    shared = not np.isclose(run(source, 0.7), run(as_values(source), 0.7), rtol=1e-12)  # the default, a float
    try:
        text = compile_source(source, filename="prog.py").text
    except CompileError as error:
        assert shared, f"refused a program sharing does not affect:\n{source}\n{error}"
        return
    assert not shared, f"compiled a program whose arrays share memory:\n{source}"
    grad = load_module(text, "prog_grad").f_grad(0.7)
    fd = (run(source, 0.7 + 1e-6) - run(source, 0.7 - 1e-6)) / 2e-6
    assert grad == pytest.approx(fd, rel=1e-6, abs=1e-8), source


def test_the_flow_cases_include_both_answers():
    shared = {name: not np.isclose(run(flow_program(b), 0.7), run(as_values(flow_program(b)), 0.7))
              for name, b in FLOW.items()}
    assert shared == {"fresh in the other branch": False, "shared in this branch": True,
                      "shared by a conditional expression": True, "fresh by a conditional expression": False,
                      "shared at a break": True, "rebound after the loop": False}


def test_a_module_constant_updated_through_a_copy_is_refused():
    source = ("import numpy as np\n\nK = np.array([1.0, 2.0])\n\n\ndef f(a):\n    y = K\n    y += a\n"
              "    return np.sum(K * a)\n")
    with pytest.raises(CompileError) as caught:
        compile_source(source, filename="prog.py")
    assert str(caught.value).startswith("prog.py:8:5: 'y += ...' would change an array that may share memory")


@pytest.mark.parametrize("copy, refused", [("row", True), ("row * 1.0", False)])
def test_a_row_of_a_loop_over_an_array_is_a_view_of_it(copy, refused):
    """`for row in X` gives views of X: updating one in place changes X (a fresh copy does not)."""
    source = ("import numpy as np\n\n\ndef f(w, *, X):\n    s = 0.0\n    for row in X:\n"
              f"        r = {copy}\n        r *= w\n        s = s + np.sum(r)\n    return s + np.sum(X * w)\n")
    if refused:
        with pytest.raises(CompileError) as caught:
            compile_source(source, filename="prog.py")
        assert str(caught.value).startswith("prog.py:8:9: 'r *= ...' would change an array that may share memory")
        return
    X, w = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5, -1.0])
    grad = load_module(compile_source(source, filename="prog.py").text, "prog_grad").f_grad(w.copy(), X=X.copy())
    np.testing.assert_allclose(grad, 2 * X.sum(axis=0), rtol=1e-14)


SAVED_BY_A_HELPER = '''
import numpy as np


def settle(h):
    for k in range(2):
        h = np.tanh(h) + 0.5 * h
    return h


def f(s):
    out = s * s * 1.0
    for step in range(2):
        out += np.sum(settle(out))
        last = out
    return np.sum(out * out)
'''


def test_an_update_whose_array_only_the_tape_and_dead_names_hold_is_made_a_new_array():
    """`out += ...` after `settle(out)` (inlined: h = out, its old value saved for tanh's
    gradient) and `last = out` (never read): in place, it would change the numbers the tape
    keeps; as `out = out + ...` nothing the function shows differs, so it compiles so (soak
    53002 #1074: refused, with advice to write what gradgen can write itself)."""
    text = compile_source(SAVED_BY_A_HELPER, "saved_by_helper.py").text
    assert "        out = out + np.sum(h)\n" in text and "\n        out += " not in text
    module = load_module(text, "saved_by_helper")
    namespace = {}
    exec(SAVED_BY_A_HELPER, namespace)  # noqa: S102 - the test's own source
    for s in (np.array([0.3, -0.5, 0.8]), 0.4):
        h = 1e-6
        want = np.array([(namespace["f"](s + h * e) - namespace["f"](s - h * e)) / (2 * h)
                         for e in np.eye(np.size(s))]).reshape(np.shape(s))
        np.testing.assert_allclose(module.f_grad(s), want, rtol=1e-6, atol=1e-8)


ROWS = '''
import numpy as np


def f(w, *, X):
    first, second = np.cos(X * w)
    if np.sum(w) > -10.0:
        first += np.tanh(first) * w
    return np.sum(first * first) + np.sum(SECOND)
'''


@pytest.mark.parametrize("second, refused", [("second", False), ("np.cos(X * w)[0]", True)])
def test_an_update_of_one_row_leaves_another_row_alone(second, refused):
    """`first, second = rows` then `first += ...`: first is row 0 of the array, second row 1,
    and an update of one changes nothing of the other (soak 55004 #396: refused as if they
    shared memory); a name that may hold the same row is still refused."""
    source = ROWS.replace("SECOND", second)
    point = {"w": np.array([0.3, -0.2]), "X": np.array([[0.5, 1.0], [-0.4, 0.8]])}
    if refused:
        source = source.replace("    if np.sum(w)", "    again = first\n    if np.sum(w)").replace(
            f"np.sum({second})", "np.sum(again)")
        with pytest.raises(CompileError, match="would change an array that may share memory"):
            compile_source(source, "rows.py", wrt=["w"])
        return
    module = load_module(compile_source(source, "rows.py", wrt=["w"]).text, "rows_apart")
    namespace = {}
    exec(source, namespace)  # noqa: S102 - the test's own source
    h = 1e-6
    want = np.array([(namespace["f"](point["w"] + h * e, X=point["X"]) - namespace["f"](point["w"] - h * e, X=point["X"]))
                     / (2 * h) for e in np.eye(2)])
    np.testing.assert_allclose(module.f_grad(**point), want, rtol=1e-6, atol=1e-8)
