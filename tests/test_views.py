"""The views and writes people write (issue 22, item 4): a row read from a state stack
(`h = s[t]`) while later rows are written (`s[t + 1] = e`), an integer bookkeeping array
counted in a loop beside the loss, a fancy-index read (`y = X[idx]`, a copy) updated in
place, and a number made by np.einsum, np.vdot or np.inner (also inside a helper).

A write into an array is refused only where the backward pass reads numbers the write
destroys (a view of the rows it writes, read again), and then the advice in the message is
applied to the program and the rewrite is checked: it compiles and its gradient is right.
Every gradient is checked against sympy and central finite differences (check_source)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from gradgen import CompileError, compile_source
from gradgen.verify.check import check_source

HEAD = "import numpy as np\n\n\n"

STACKS = textwrap.dedent('''
    def sigmoid(x):
        return 1 / (1 + np.exp(-x))


    def lstm(Wx, Wh, b, *, X, y):
        T, d = X.shape
        n = Wh.shape[0]
        s = np.zeros((T + 1, n))
        c = np.zeros(n)
        for t in range(T):
            h = s[t]
            z = X[t] @ Wx + h @ Wh + b
            f = sigmoid(z[:n])
            i = sigmoid(z[n:2 * n])
            g = np.tanh(z[2 * n:3 * n])
            o = sigmoid(z[3 * n:])
            c = f * c + i * g
            s[t + 1] = o * np.tanh(c)
        return np.sum((s[T] - y) ** 2)


    def read_after_the_write(W, U, *, X, y):
        T = X.shape[0]
        s = np.zeros((T + 1, U.shape[0]))
        out = 0.0
        for t in range(T):
            h = s[t]
            s[t + 1] = np.tanh(X[t] @ W + h @ U)
            out = out + np.sum(h * s[t + 1])
        return out + np.sum((s[T] - y) ** 2)


    def backwards_in_time(W, U, *, X, y):
        T = X.shape[0]
        s = np.zeros((U.shape[0], T + 1))
        s[:, T] = y
        for t in range(T - 1, -1, -1):
            h = s[:, t + 1]
            s[:, t] = np.tanh(X[t] @ W + h @ U)
        return np.sum(s[:, 0] ** 2)


    def written_then_read(W, U, *, X, y):
        T = X.shape[0]
        s = np.zeros((T, U.shape[0]))
        h = np.zeros(U.shape[0])
        for t in range(T):
            s[t] = h
            h = np.tanh(X[t] @ W + s[t] @ U)
        return np.sum((h - y) ** 2) + np.sum(s ** 2)


    def first_row_kept(W, U, *, X, y):
        T = X.shape[0]
        s = np.zeros((T + 1, U.shape[0]))
        s[0] = y
        h0 = s[0]
        for t in range(T):
            h = s[t]
            s[t + 1] = np.tanh(X[t] @ W + h @ U + h0)
        return np.sum(s[T] ** 2)


    def one_stack_per_sequence(W, U, *, X, y):
        total = 0.0
        for k in range(2):
            s = np.zeros((X.shape[0] + 1, U.shape[0]))
            s[0] = y * (k + 1)
            for t in range(X.shape[0]):
                h = s[t]
                s[t + 1] = np.tanh(X[t] @ W + h @ U)
            total = total + np.sum(s ** 2)
        return total
''')


def _point(seed=1, d=3, n=2, T=4, gates=1):
    rng = np.random.default_rng(seed)
    return {"W": rng.normal(size=(d, gates * n)) * 0.5, "U": rng.normal(size=(n, gates * n)) * 0.5,
            "X": rng.normal(size=(T, d)), "y": rng.normal(size=n)}


def _lstm_point():
    p = _point(gates=4)
    return {"Wx": p["W"], "Wh": p["U"], "b": np.linspace(-0.2, 0.3, 8), "X": p["X"], "y": p["y"]}


STACK_POINTS = {"lstm": _lstm_point(), **{name: _point() for name in (
    "read_after_the_write", "backwards_in_time", "written_then_read", "first_row_kept", "one_stack_per_sequence")}}


def _checked(source, name, at):
    [report] = check_source(source, "views.py", [name], at=at)
    assert report.ok and report.points, (name, report)
    assert all(row.ok for row in report.points[0].rows), name


@pytest.mark.parametrize("name", sorted(STACK_POINTS))
def test_a_row_read_from_a_state_stack_while_later_rows_are_written(name):
    """`h = s[t]` is a view of row t; the writes go to rows the view never covers (a later
    row on this trip and later ones, a counter that falls with writes below it, a row
    written before the view is made, a fixed first row below every moving one, one fresh
    stack per run of the inner loop): no refusal, and the gradient is right."""
    _checked(HEAD + STACKS, name, STACK_POINTS[name])


def test_the_state_stack_is_written_in_place_as_you_wrote_it():
    text = compile_source(HEAD + STACKS, "views.py", functions=["lstm"]).text
    forward = text.split("def lstm_grad(", 1)[1].split("# backward pass", 1)[0]
    assert "        h = s[t]\n" in forward and "        s[t + 1] = o * tanh_c\n" in forward
    assert "copy" not in forward


# a view whose rows a later write reaches: (the program's loop, what the message says to write)
REACHED = {
    "the same row": ("    for t in range(T):\n        h = s[t]\n        s[t] = np.tanh(X[t] @ W + h @ U)\n",
                     "h = s[t].copy()", "10:9", "9"),
    "the row below, next trip": ("    for t in range(1, T):\n        h = s[t]\n        s[t - 1] = np.tanh(X[t] @ W + h @ U)\n",
                                 "h = s[t].copy()", "10:9", "9"),
    "the loop run again": ("    for k in range(2):\n        for t in range(T):\n            h = s[t]\n"
                           "            s[t + 1] = np.tanh(X[t] @ W + h @ U)\n", "h = s[t].copy()", "11:13", "10"),
}


def _reached(loop):
    return (HEAD + "def f(W, U, *, X, y):\n    T = X.shape[0]\n    s = np.zeros((T + 1, U.shape[0]))\n"
            f"    s[0] = y\n{loop}    return np.sum(s ** 2)\n")


@pytest.mark.parametrize("case", sorted(REACHED))
def test_a_write_into_rows_a_view_the_gradient_reads_is_refused_and_the_advice_works(case):
    loop, advice, where, line = REACHED[case]
    source = _reached(loop)
    with pytest.raises(CompileError) as caught:
        compile_source(source, "views.py")
    assert caught.value.format().splitlines()[0] == (
        f"views.py:{where}: 's[...] = ...' would change the numbers of 'h' (a view of 's', line {line}), which the "
        f"gradient reads as they were; make it a copy where it is made ('{advice}')")
    _checked(source.replace("h = s[t]\n", advice + "\n"), "f", _point())


COUNTS = textwrap.dedent('''
    def counted(w, *, X, labels, k=3):
        counts = np.zeros(k, dtype=int)
        total = 0.0
        for j in range(len(labels)):
            counts[labels[j]] += 1
            total = total + np.sum((X[j] * w - labels[j]) ** 2)
        return total / len(labels) + np.sum(counts) * 0.0


    def class_means(w, *, X, labels, k=3):
        counts = np.zeros(k, dtype=int)
        sums = np.zeros((k, X.shape[1]))
        for j in range(len(labels)):
            c = labels[j]
            counts[c] += 1
            sums[c] = sums[c] + np.tanh(X[j] * w)
        means = sums / np.maximum(counts, 1)[:, None]
        return np.sum(means ** 2)


    def running_mean(w, *, X, labels, k=3):
        counts = np.zeros(k, dtype=int)
        total = 0.0
        for j in range(len(labels)):
            c = labels[j]
            counts[c] += 1
            total = total + np.sum(np.tanh(X[j] * w)) / counts[c]
        return total


    def seen_before(w, *, X, labels):
        counts = np.zeros(3, dtype=int)
        total = 0.0
        for j in range(len(labels)):
            c = labels[j]
            before = counts[c]
            counts[c] += 1
            total = total + np.sum(np.tanh(X[j] * w)) / (before + 1)
        return total
''')
COUNT_POINT = {"w": np.array([0.3, -0.7]), "X": np.random.default_rng(0).normal(size=(6, 2)),
               "labels": np.array([0, 2, 1, 2, 0, 2])}


@pytest.mark.parametrize("name", ["counted", "class_means", "running_mean", "seen_before"])
def test_an_integer_bookkeeping_array_counted_in_a_loop(name):
    _checked(HEAD + COUNTS, name, COUNT_POINT)


def test_a_row_of_counts_read_before_its_increment_is_copied_as_advised():
    """`row = counts[c]` of a 2-D counts array is a view: `counts[c] += 1` changes the numbers
    the backward pass divides by. Refused, naming the view; the advised copy is right."""
    source = HEAD + textwrap.dedent('''
        def f(w, *, X, labels):
            counts = np.zeros((3, 2), dtype=int)
            total = 0.0
            for j in range(len(labels)):
                c = labels[j]
                row = counts[c]
                total = total + np.sum(np.tanh(X[j] * w) / (row + 1))
                counts[c] += 1
            return total
    ''')
    with pytest.raises(CompileError) as caught:
        compile_source(source, "views.py")
    assert caught.value.format().splitlines()[0] == (
        "views.py:12:9: 'counts[...] = ...' would change the numbers of 'row' (a view of 'counts', line 10), "
        "which the gradient reads as they were; make it a copy where it is made ('row = counts[c].copy()')")
    _checked(source.replace("row = counts[c]\n", "row = counts[c].copy()\n"), "f", COUNT_POINT)
    # a copy of counts just before the write (the advice where no one view is named) works
    # too; before the loop it does not (the view of the next trip shares the copy)
    _checked(source.replace("        counts[c] += 1\n", "        counts = counts.copy()\n        counts[c] += 1\n"),
             "f", COUNT_POINT)
    with pytest.raises(CompileError):
        compile_source(source.replace("    total = 0.0\n", "    counts = counts.copy()\n    total = 0.0\n"), "views.py")


FANCY = textwrap.dedent('''
    def listed(X, w):
        y = X[[0, 2]]
        y *= w
        return np.sum(y ** 2) + np.sum(X)


    def masked(X, w):
        y = X[X[:, 0] > 0]
        y *= w
        return np.sum(y ** 2) + np.sum(X)


    def ranged(X, w):
        idx = np.arange(2)
        y = X[idx]
        y *= w
        return np.sum(y ** 2) + np.sum(X)


    def sorted_rows(X, w):
        idx = np.argsort(X[:, 1])[:2]
        y = X[idx]
        y *= w
        return np.sum(y ** 2) + np.sum(X)


    def written(X, w):
        y = X[np.array([2, 0])]
        y[0] = w[0]
        return np.sum(y ** 2) + np.sum(X)


    def named_mask(X, w):
        mask = X > 0.5
        y = X[mask]
        y *= w[0]
        return np.sum(y ** 2) + np.sum(X * X)


    def annotated(X, w, *, idx: "Int[np.ndarray, 'k']"):
        y = X[idx]
        y *= w
        return np.sum(y ** 2) + np.sum(X)
''')
FANCY_POINT = {"X": np.array([[0.3, -0.7], [1.1, 0.4], [0.9, 0.2]]), "w": np.array([0.5, -1.5])}


@pytest.mark.parametrize("name", ["listed", "masked", "ranged", "sorted_rows", "written", "named_mask", "annotated"])
def test_a_fancy_index_read_is_a_copy(name):
    """`y = X[idx]` with idx an array, a list or a mask copies: updating y in place changes
    no X, so X read afterwards is no reason to refuse."""
    at = {**FANCY_POINT, **({"idx": np.array([2, 1, 2])} if name == "annotated" else {})}
    _checked(HEAD + FANCY, name, at)


def test_an_index_that_may_be_a_number_may_still_view():
    """`X[i]` with an unannotated i may be row i, a view: updating it changes X."""
    source = HEAD + "def f(X, w, *, i):\n    y = X[i]\n    y *= w\n    return np.sum(y ** 2) + np.sum(X)\n"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "views.py")
    assert "'y *= ...' would change an array that may share memory with another name" in str(caught.value)


NUMBERS = textwrap.dedent('''
    def dot(a, b):
        return np.einsum('i,i->', a, b)


    def through_a_helper(w, *, X, y):
        r = X @ w - y
        return dot(r, r) / len(y)


    def inside_a_helper(w, *, X, y):
        return np.log(1.0 + dot(X @ w, y) ** 2)


    def written_inline(w, *, X, y):
        r = X @ w - y
        return np.einsum('i,i->', r, r) + np.einsum('i,i', r, y)


    def products(w, *, X, y):
        r = X @ w - y
        return np.dot(r, r) + r @ r + np.vdot(r, y) + np.inner(r, r) + r.sum()


    def of_matrices(w, *, X, y):
        A = np.outer(X @ w, y)
        return np.vdot(A, A.T) + np.sum(np.inner(A, A) * np.inner(X, X)[:3, :3])
''')
NUMBER_POINT = {"w": np.array([0.4, -0.3, 0.8]), "X": np.random.default_rng(3).normal(size=(3, 3)),
                "y": np.array([0.5, -1.0, 0.25])}


@pytest.mark.parametrize("name", ["dot", "through_a_helper", "inside_a_helper", "written_inline", "products",
                                  "of_matrices"])
def test_a_number_made_by_a_contraction_is_a_number(name):
    """np.einsum('i,i->', ...) is one number wherever it is written (the helper `dot` is a
    loss of its own); np.dot and @ of vectors, np.vdot, np.inner of vectors and .sum() too;
    np.inner of matrices is a matrix (its gradient sums over the other's rows)."""
    at = {"a": np.array([0.5, -1.0, 2.0]), "b": np.array([1.5, 0.3, -0.2])} if name == "dot" else NUMBER_POINT
    _checked(HEAD + NUMBERS, name, at)


MORE = textwrap.dedent('''
    def stack_in_a_branch_of_a_loop(W, U, *, X, y):
        total = 0.0
        for k in range(2):
            if k >= 0:
                s = np.zeros((X.shape[0] + 1, U.shape[0]))
                s[0] = y * (k + 1)
                for t in range(X.shape[0]):
                    h = s[t]
                    s[t + 1] = np.tanh(X[t] @ W + h @ U)
                total = total + np.sum(s ** 2)
        return total


    def stack_rebound_after_its_loop(W, U, *, X, y):
        s = np.stack([y, y, y]) * 1.0
        for t in range(2 - 1, -1, -1):
            h = s[t + 1]
            s[t] = np.tanh(h * 0.5 + X[t] @ W)
        first = s[0]
        s = first
        return np.sum(s * (y @ U))


    def copy_through_a_part(pair, w):
        z = pair["c"]
        sel = z[np.array([0, 0])]
        sel += w
        return np.sum(sel * z)


    def copy_in_a_loop(w, *, X):
        total = 0.0
        for row in X:
            y = X[np.array([1, 0])]
            y -= row * w
            total = total + np.sum(y ** 2) + np.sum(X * w)
        return total
''')
MORE_POINTS = {
    "stack_in_a_branch_of_a_loop": _point(), "stack_rebound_after_its_loop": _point(),
    "copy_through_a_part": {"pair": {"c": np.array([0.4, -0.9]), "W": np.eye(2)}, "w": np.array([1.5, 0.3])},
    "copy_in_a_loop": {"w": np.array([0.5, -1.5]), "X": FANCY_POINT["X"]},
}


@pytest.mark.parametrize("name", sorted(MORE_POINTS))
def test_what_the_grammar_fuzzer_drew(name):
    """A stack made fresh in a branch of the outer loop (before the inner one on every way
    there), one rebound after its loop (where no write follows), a copy read through a
    structured parameter's part, and one in a loop (whose index a name holds there)."""
    _checked(HEAD + MORE, name, MORE_POINTS[name])


def test_a_stack_rebound_to_a_view_inside_its_loop_is_refused():
    """`s = s[1:]` between the view and the write shifts the rows: row j of which array?"""
    source = HEAD + textwrap.dedent('''
        def f(W, *, X, y):
            s = np.stack([y, y, y, y]) * 1.0
            for t in range(2):
                h = s[t + 1]
                s = s[1:]
                s[t] = np.tanh(h * 0.5 + X[t] @ W)
            return np.sum(s ** 2)
    ''')
    with pytest.raises(CompileError) as caught:
        compile_source(source, "views.py")
    assert "would change the numbers of 'h' (a view of 's', line 8), which the gradient reads as they were; make " \
           "it a copy where it is made ('h = s[t + 1].copy()')" in str(caught.value)
    _checked(source.replace("h = s[t + 1]\n", "h = s[t + 1].copy()\n"), "f", _point())
