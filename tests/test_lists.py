"""Python lists inside the loss (issue 10, item 3): literals, `append`, list comprehensions
and generator expressions (nested, with `if`), `sum(...)`, `np.stack`/`np.array`/`np.sum` of a
list, indexing, `len`, loops over a list. A list's gradient is a list, popped where the
forward pass appended, so `hs[-1]` means the same element forward and backward. Every
gradient here is checked against sympy (where the instance is small) and finite
differences; the unsupported uses are located errors that say what to write."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.verify.check import check_source

SOURCE = textwrap.dedent('''
    import math

    import numpy as np


    def rnn(W, U, h0, xs):
        hs = [h0]
        for t in range(len(xs)):
            hs.append(np.tanh(W @ hs[-1] + U * xs[t]))
        return np.sum(np.stack(hs) ** 2)


    def fibonacci_like(a: float, b: float) -> float:
        ys = [a, b * a]
        for k in range(3):
            ys.append(math.sin(ys[-1]) + ys[-2] * b)
        return sum(ys) + sum(y * y for y in ys if y > 0) + ys[2] * len(ys)


    def comprehensions(w: float, xs) -> float:
        residuals = [w * x - 1.0 for x in xs]
        pairs = sum(r * s for r in residuals for s in residuals if r < s)
        return sum(r ** 2 for r in residuals) + pairs + np.sum(np.array([np.sin(w * x) for x in xs]))


    def states(w: float, xs) -> float:
        states = []
        s = w
        for x in xs:
            s = math.tanh(s * x + w)
            states.append(s)
        total = 0.0
        for state in states:
            total = total + state ** 2
        return total + np.mean(states) * states[0]


    def unused_append(a: float, b: float) -> float:
        items = [a]
        first = items[-1] * b
        items.append(b * 3.0)
        return first + items[0]
''')

POINTS = {
    "rnn": {"W": np.array([[0.3, -0.2], [0.1, 0.4]]), "U": np.array([0.5, -0.3]), "h0": np.array([0.2, -0.1]),
            "xs": np.array([0.7, -0.4, 1.1])},
    "fibonacci_like": {"a": 0.7, "b": 1.3},
    "comprehensions": {"w": 0.7, "xs": np.array([0.5, -1.0, 2.0])},
    "states": {"w": 0.4, "xs": np.array([0.9, -0.6, 1.5, 0.2])},
    "unused_append": {"a": 0.8, "b": -1.7},
}


@pytest.mark.parametrize("name", sorted(POINTS))
def test_lists_match_sympy_and_finite_differences(name):
    [report] = check_source(SOURCE, "lists.py", [name], at=POINTS[name], wrt="all")
    assert report.ok and report.points, name
    rows = report.points[0].rows
    assert all(row.ok for row in rows)
    if name in ("fibonacci_like", "comprehensions", "unused_append"):
        assert all(row.sympy is not None for row in rows), name  # sympy follows the lists too


def _grad_text(name):
    text = compile_source(SOURCE, "lists.py", functions=[name], wrt="all").text
    return text.split(f"def {name}_grad(", 1)[1].split(f"def {name}_value_and_grad(", 1)[0]


def test_the_backward_pass_pops_where_the_forward_pass_appended():
    grad = _grad_text("rnn")
    assert ("        hs_tanh = np.tanh(W @ hs_item + U * xs[t])\n        hs_tanh_stack.append(hs_tanh)\n"
            "        hs.append(hs_tanh)\n") in grad
    assert "    drnn_dhs = list(drnn_dhs_1)\n" in grad or "    drnn_dhs = list(" in grad
    assert "        drnn_dhs_popped = drnn_dhs.pop()\n" in grad
    assert "        drnn_dhs[-1] = drnn_dhs[-1] + drnn_dhs_item\n" in grad
    assert "    drnn_dh0 = drnn_dhs[0]\n" in grad


def test_an_append_whose_value_nobody_reads_still_pops():
    """items[-1] is read before the append: backward, the gradient list is made as long as
    the list ends (2), the append pops, and then items[-1] is entry 0, as it was forward."""
    grad = _grad_text("unused_append")
    assert "dunused_append_ditems = zeros_like_tree(items)" in grad
    assert "dunused_append_ditems_popped = dunused_append_ditems.pop()" in grad
    module = load_module(compile_source(SOURCE, "lists.py", functions=["unused_append"], wrt="all").text, "lists_grad")
    value, (da, db) = module.unused_append_value_and_grad(0.8, -1.7)
    assert value == 0.8 * -1.7 + 0.8 and (da, db) == (-1.7 + 1.0, 0.8)


def test_comprehension_variables_are_their_own():
    """The comprehension's `x` is not the caller's: a caller's x is unchanged after it."""
    source = ("def f(w: float, xs, x: float) -> float:\n    ys = [w * x for x in xs]\n"
              "    return sum(ys) + x\n")
    module = load_module(compile_source(source, "c.py", wrt="all").text, "c_grad")
    value, grads = module.f_value_and_grad(2.0, np.array([1.0, 3.0]), 10.0)
    assert value == 18.0
    assert grads[0] == 4.0 and grads[2] == 1.0
    np.testing.assert_array_equal(grads[1], [2.0, 2.0])


@pytest.mark.parametrize("body,message", [
    ("    hs = [w]\n    hs.pop()\n    return w\n",
     "2:5: 'hs.pop(...)' is not supported: gradgen grows a list with append only (hs.append(x), one element at a time)"),
    ("    hs = [w]\n    return np.sum(hs + [w])\n",
     "2:19: 'hs' is a list: gradgen reads a list by index (hs[i]), len(hs), a loop over it, sum(hs) or np.stack(hs)"),
    ("    hs = [w, w]\n    return np.sum(hs[1:])\n",
     "2:19: slicing the list 'hs' is not supported yet: loop over range(...) and read hs[i], or np.stack(hs) first"),
    ("    hs = [w]\n    hs = w * 2.0\n    return hs\n", "2:5: 'hs' holds a list: give the new value another name"),
])
def test_list_uses_outside_the_subset_are_located(body, message):
    source = f"import numpy as np\n\n\ndef f(w):\n{body}"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "bad.py", wrt="all")
    line, col, text = message.split(":", 2)
    assert (caught.value.line, caught.value.col, caught.value.message) == (int(line) + 4, int(col), text.strip())


def test_only_the_branch_taken_of_a_conditional_expression_runs():
    """`trace[-1] if len(trace) > 0 else 0.0` reads the list only when it is not empty; a
    helper with a body, or a draw, in one branch runs only when that branch is taken (the
    conditional is an `if` whose branches assign one value), as in Python."""
    source = textwrap.dedent('''
        import numpy as np


        def helper(x):
            y = np.log(x)
            return y * 2.0


        def f(a: float, n, *, rs) -> float:
            trace = []
            for i in range(n):
                trace.append(a * i)
            last = trace[-1] if len(trace) > 0 else 0.0
            noise = rs.randn() if a > 0 else 0.0
            z = helper(a) if a > 0 else -a
            return last + a * noise + z + rs.randn()
    ''')
    namespace = {}
    exec(source, namespace)  # noqa: S102 - the test's own source
    module = load_module(compile_source(source, "cond.py", wrt=["a"]).text, "cond_grad")
    for a, n in ((0.5, 3), (-0.5, 0), (0.5, 0)):
        want = namespace["f"](a, n, rs=np.random.RandomState(3))
        value, grad = module.f_value_and_grad(a, n, rs=np.random.RandomState(3))
        assert value == want, (a, n)
        [report] = check_source(source, "cond.py", ["f"], wrt=["a"],
                                at={"a": a, "n": n, "rs": np.random.RandomState(3)})
        assert report.ok, (a, n)


# ---- lists made inside loops and branches: a new list every time that code runs ----------

LOOP_SOURCE = textwrap.dedent('''
    import numpy as np


    def make(v):
        return [v * j for j in range(3)]


    def over_range(w, x):
        s = 0.0
        for i in range(3):
            parts = [w * x[i], np.sin(w) * x[i] ** 2]
            s = s + np.sum(np.stack(parts))
        return s


    def over_rows(W, X):
        total = 0.0
        for row in X:
            hs = [np.tanh(W @ row)]
            hs.append(np.tanh(W @ hs[-1]))
            total = total + np.sum(np.stack(hs) ** 2) + hs[0][1]
        return total


    def in_while(a: float, b: float) -> float:
        k = 0
        s = 0.0
        while k < 3:
            ys = [a * k, b]
            ys.append(ys[0] * ys[1])
            s = s + sum(ys) + ys[-1] * a
            k = k + 1
        return s


    def comprehension_in_loop(w: float, X) -> float:
        total = 0.0
        for x in X:
            feats = [np.tanh(w * v) for v in x]
            total = total + np.sum(np.array(feats)) + feats[0] * feats[-1]
        return total


    def nested_appends(w, X):
        total = 0.0
        for x in X:
            acc = []
            for v in x:
                acc.append(w * v)
                for j in range(2):
                    acc.append(np.sin(acc[-1]) * w)
            total = total + np.sum(np.concatenate(acc))
        return total


    def lists_of_arrays(W, X):
        total = 0.0
        for x in X:
            hs = [x]
            for k in range(2):
                hs.append(np.tanh(W @ hs[-1]))
            stacked = np.stack(hs)
            total = total + np.sum(stacked[1:] * stacked[:-1])
        return total


    def branch_in_loop(w, xs):
        s = 0.0
        for x in xs:
            if x > 0:
                parts = [w * x, np.sin(w)]
            else:
                parts = [np.cos(w * x)]
                parts.append(x * w * w)
            s = s + np.sum(np.stack(parts)) * parts[-1]
        return s


    def in_one_branch(a: float, b: float) -> float:
        if a > 0:
            parts = [a * b, a]
            s = parts[0] + parts[1] ** 2
        else:
            s = b
        return s


    def in_both_branches(a: float, b: float) -> float:
        if a > 0:
            parts = [a * k for k in range(3)]
        else:
            parts = [b, b * b]
            parts.append(a * b)
        return sum(parts) * parts[1]


    def helper_in_loop(w: float, n) -> float:
        s = 0.0
        for i in range(n):
            hs = make(w * i)
            s = s + hs[1] * hs[2]
        return s


    def with_break(w: float, n) -> float:
        s = w
        for i in range(n):
            ys = [w * i, w * w]
            if i > 2:
                break
            s = s * ys[1] + ys[0]
        return s
''')

_RS = np.random.RandomState(7)
LOOP_POINTS = [
    ("over_range", {"w": 0.7, "x": _RS.randn(3)}),
    ("over_rows", {"W": _RS.randn(2, 2), "X": _RS.randn(3, 2)}),
    ("in_while", {"a": 0.7, "b": -0.4}),
    ("comprehension_in_loop", {"w": 0.6, "X": _RS.randn(2, 3)}),
    ("nested_appends", {"w": 0.6, "X": _RS.randn(2, 3, 2)}),
    ("lists_of_arrays", {"W": _RS.randn(2, 2), "X": _RS.randn(3, 2)}),
    ("branch_in_loop", {"w": 0.7, "xs": np.array([0.5, -1.0, 2.0])}),
    ("branch_in_loop", {"w": -0.4, "xs": np.array([-0.5, -1.0])}),
    ("in_one_branch", {"a": 0.7, "b": -0.4}),
    ("in_one_branch", {"a": -0.7, "b": -0.4}),  # the other path never made the list: nothing reads it
    ("in_both_branches", {"a": 0.7, "b": -0.4}),
    ("in_both_branches", {"a": -0.7, "b": 0.4}),
    ("helper_in_loop", {"w": 0.7, "n": 3}),
    ("helper_in_loop", {"w": 0.7, "n": 0}),
    ("with_break", {"w": 0.7, "n": 6}),
    ("with_break", {"w": 0.7, "n": 2}),
]


@pytest.mark.parametrize("name,point", LOOP_POINTS, ids=[f"{n}-{k}" for k, (n, _) in enumerate(LOOP_POINTS)])
def test_lists_made_in_loops_and_branches_match_finite_differences(name, point):
    [report] = check_source(LOOP_SOURCE, "loops.py", [name], at=point, wrt="all")
    rows = [row for p in report.points for row in p.rows]
    assert report.ok and rows and all(row.ok for row in rows), name
    if all(np.ndim(v) == 0 for v in point.values()) and name != "with_break":
        assert all(row.sympy is not None for row in rows), name  # sympy unrolls the loops too


def _loop_grad_text(name):
    text = compile_source(LOOP_SOURCE, "loops.py", functions=[name], wrt="all").text
    return text.split(f"def {name}_grad(", 1)[1].split(f"def {name}_value_and_grad(", 1)[0]


def test_a_list_made_in_a_loop_is_saved_per_iteration_and_its_gradient_made_afresh():
    """Forward, each iteration's list is pushed once it is made (the loop binds it nowhere
    else); backward, each iteration makes its gradient list anew (never carried from the
    iteration after) and pops its list back as it starts."""
    grad = _loop_grad_text("over_range")
    assert "        parts = [w * x[i], sin_w * x[i] ** 2]\n        parts_stack.append(parts)\n" in grad
    backward = grad.split("# backward pass", 1)[1]
    loop = backward.split("    for i in reversed(range(3)):\n", 1)
    assert len(loop) == 2 and "ds_dparts" not in loop[0]  # no gradient list before the loop
    assert "        ds_dparts = list(np.ones_like(np.stack(parts), dtype=float))\n" in loop[1]
    assert "        parts = parts_stack.pop()\n" in loop[1]


def test_appending_to_a_list_saves_nothing():
    """`acc.append(v)` keeps the same list under the name: nothing to push or pop for it."""
    grad = _loop_grad_text("nested_appends")
    assert grad.count("acc_stack.append(acc)") == 1 and grad.count("acc = acc_stack.pop()") == 1
    assert "            acc.append(w * v)\n" in grad


@pytest.mark.parametrize("body,message", [
    ("    for i in range(2):\n        hs = [w]\n    return hs[0]\n",
     "4:12: the list 'hs' is made inside the loop at line 9, so it is read after that loop here: make it before the "
     "loop and append to it there"),
    ("    s = 0.0\n    for i in range(2):\n        for j in range(2):\n            hs = [w * j]\n"
     "        s = s + hs[0]\n    return s\n",
     "6:17: the list 'hs' is made inside the loop at line 11, so it is read after that loop here: make it before the "
     "loop and append to it there"),
    ("    s = 0.0\n    for i in range(2):\n        if i > 0:\n            s = s + hs[0]\n        hs = [w * i]\n"
     "    return s\n",
     "5:21: the list 'hs' is read before it is made: a list made inside a loop or branch is new each time, so read it "
     "after it is made, or make it before the loop or branch and append to it there"),
    ("    if w > 0:\n        hs = [w]\n    return hs[0]\n",
     "4:12: the list 'hs' is made on only one path through the 'if' at line 9: make it before the 'if' and append to "
     "it there, or make it in both branches"),
    ("    if w > 0:\n        hs = make(w)\n    else:\n        hs = [w]\n    return hs[0]\n",
     "6:12: the list 'hs' is made in both branches of the 'if' at line 9, by a helper's call in one of them: make it "
     "there with a list literal or comprehension, or before the 'if'"),
    ("    hs = 1.0\n    for i in range(2):\n        hs = [w]\n    return w\n",
     "4:9: 'hs' holds a value from before the loop at line 10, and a list is made under its name inside it: give the "
     "list a name of its own"),
    ("    hs = [w]\n    if w > 0:\n        hs = [w * 2.0]\n    return hs[0]\n",
     "4:9: 'hs' holds a value from before the 'if' at line 10, and a list is made under its name inside it: give the "
     "list a name of its own"),
    ("    hs = [w]\n    for i in range(2):\n        ys = make(w)\n        hs = ys\n    return w\n",
     "5:14: 'ys' is a list: gradgen reads a list by index (ys[i]), len(ys), a loop over it, sum(ys) or np.stack(ys)"),
])
def test_lists_made_in_loops_and_branches_refusals(body, message):
    source = f"import numpy as np\n\n\ndef make(v):\n    return [v * j for j in range(3)]\n\n\ndef f(w):\n{body}"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "bad.py", functions=["f"], wrt="all")
    line, col, text = message.split(":", 2)
    assert (caught.value.line, caught.value.col, caught.value.message) == (int(line) + 7, int(col), text.strip())


def test_forward_mode_follows_a_list_made_in_a_loop():
    """jvp is the gradient along t; hvp is the central difference of the gradient along t
    (the gradient list of np.concatenate(acc) is a list: its zero tangent a list of zeros)."""
    compiled = compile_source(LOOP_SOURCE, "loops.py", functions=["nested_appends"], emit_kinds=("grad", "jvp", "hvp"), wrt="all")
    module = load_module(compiled.text, "loops_kinds")
    rs = np.random.RandomState(11)
    w, X, dw, dX = 0.6, rs.randn(2, 3, 2), 0.7, rs.randn(2, 3, 2)
    gw, gX = module.nested_appends_grad(w, X)
    _, tangent = module.nested_appends_jvp(w, X, dw=dw, dX=dX)
    assert tangent == pytest.approx(gw * dw + np.sum(gX * dX), rel=1e-12)
    hw, hX = module.nested_appends_hvp(w, X, dw=dw, dX=dX)
    eps = 1e-5
    (pw, pX), (mw, mX) = (module.nested_appends_grad(w + s * eps * dw, X + s * eps * dX) for s in (1, -1))
    assert hw == pytest.approx((pw - mw) / (2 * eps), rel=1e-6)
    np.testing.assert_allclose(hX, (pX - mX) / (2 * eps), rtol=1e-6, atol=1e-8)


ZIPPED = textwrap.dedent('''
    import numpy as np


    def weighted(x, y):
        parts = [np.sum(x ** 2), np.sum(np.sin(x) * y)]
        total = 0.0
        for w, p in zip([0.5, 1.0], parts):
            total = total + w * p
        return total


    def weighted_arrays(x, y):
        parts = [x * 2.0, np.sin(y)]
        total = 0.0
        for p, w in zip(parts, (0.5, 1.0)):
            total = total + w * np.sum(p ** 2)
        return total


    def counted(x, y):
        parts = [x * 2.0, np.sin(y)]
        total = 0.0
        for i, (w, p) in enumerate(zip([0.5, x[0]], parts)):
            total = total + w * np.sum(p ** 2) + i
        return total


    def numbered(x, y):
        for i, c in enumerate((1.0, 2.0)):
            x = x * c + i
        return np.sum(x * y)
''')


@pytest.mark.parametrize("name", ["weighted", "weighted_arrays", "counted", "numbered"])
def test_a_literal_list_zipped_with_a_list_of_arrays(name):
    """`for w, p in zip([0.5, 1.0], parts)`: the literal list is a list of its own, read by
    index beside parts (an expression in it is differentiated too)."""
    at = {"x": np.array([0.3, -0.5, 1.2]), "y": np.array([0.7, 0.1, -0.4])}
    [report] = check_source(ZIPPED, "zipped.py", [name], at=at, wrt="all")
    assert report.ok and report.points, report
    assert all(row.ok for row in report.points[0].rows)


LISTS_IN_ONE_LINE = '''import numpy as np


def stacked(w, *, cell):
    total = 0.0
    for t in range(2):
        x = w * 1.0
        hiddens, cells = [], []
        for i in range(2):
            c = cell[i] * x
            x = x * w
            hiddens.append(x)
            cells.append(c)
        cell = np.array(cells)
        total = total + np.sum(x) + np.sum(cell) + np.sum(np.stack(hiddens))
    return total


def chained(w, *, cell):
    a = b = []
    for i in range(2):
        a.append(cell[i] * w)
    return np.sum(np.array(b))
'''


@pytest.mark.parametrize("name", ["stacked", "chained"])
def test_lists_made_in_one_assignment_reach_their_appends(name):
    """`hs, cs = [], []` kept each list under a temporary name, so the appends reached no
    list the gradient knew: d/dw of np.sum(np.array(cs)) was silently 0 (found porting
    GradBench's lstm; np.stack(cs) crashed instead). Against central differences."""
    module = load_module(compile_source(LISTS_IN_ONE_LINE, "lists.py", functions=[name], wrt=["w"]).text)
    namespace = {}
    exec(LISTS_IN_ONE_LINE, namespace)  # noqa: S102 - our own source
    w, cell, h = np.array([0.7, 1.3]), np.array([[1.0, 2.0], [3.0, 4.0]]), 1e-6
    numeric = [(namespace[name](w + h * e, cell=cell) - namespace[name](w - h * e, cell=cell)) / (2 * h)
               for e in np.eye(2)]
    np.testing.assert_allclose(getattr(module, f"{name}_grad")(w, cell=cell), numeric, rtol=1e-6)


def test_a_list_made_in_a_tuple_assignment_that_reads_its_targets_is_refused():
    source = "import numpy as np\n\n\ndef f(w):\n    a = [w]\n    a, b = [], a\n    return np.sum(w)\n"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "f.py", wrt="all")
    assert caught.value.format().splitlines()[0] == (
        "f.py:6:12: a list made in a tuple assignment: make each list in an assignment of its own (hs = [] then "
        "cs = [])")


LIST_ZEROS = '''import numpy as np


def branchy(H, offset):
    hs = [offset]
    S = [H, H, H]
    if np.sum(H) > 1.681:
        return np.sum(S)
    return sum(np.sum(item) for item in hs)


def rows(params, theta):
    outs = [np.array([el for el in params])]
    outs.append(0.25)
    if np.sum(theta) > 0.0:
        return np.sum(theta)
    return sum(np.sum(item) for item in outs)
'''


@pytest.mark.parametrize(("name", "point"), [
    ("branchy", {"H": np.ones((2, 3)) * 0.1, "offset": np.array([0.2, -0.5])}),
    ("rows", {"params": [np.array([0.1, 0.2]), np.array([0.3, 0.4])], "theta": np.array([0.5, 0.1])}),
])
def test_a_list_whose_gradient_starts_as_zeros_gives_each_item_zeros_of_its_shape(name, point):
    """A list's gradient started as `[0.0] * len(S)`: where no derivative reached the list, a
    parameter read through it got 0.0 instead of zeros of its shape (soak seed 2019 #1062),
    and the rows of np.array(list) became list(0.0), a TypeError (seed 2018 #3483)."""
    module = load_module(compile_source(LIST_ZEROS, "zeros.py", functions=[name], wrt="all").text)
    grads = getattr(module, f"{name}_grad")(**point)
    for (param, value), grad in zip(point.items(), grads):
        if isinstance(value, list):
            assert [np.shape(g) for g in grad] == [np.shape(v) for v in value], param
        else:
            assert np.shape(grad) == np.shape(value), param
    if name == "branchy":
        np.testing.assert_array_equal(grads[0], np.zeros((2, 3)))
        np.testing.assert_array_equal(grads[1], np.ones(2))
