"""Loops over zip(...) and enumerate(...) of arrays, and `a, b, c = array` (issue 10, items 3
and 8): each reads the rows of its sequences by index (`for i in range(min(len(xs),
len(ys))): x = xs[i]; y = ys[i]`), so the gradient flows back row by row; unpacking an
array checks its length as Python does. Checked by gradgen's checker at a point."""

import textwrap

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.verify.check import check_source

rs = np.random.RandomState(0)
PROGRAMS = {
    "zip": ("""
        import numpy as np

        def f(w, *, xs, ys):
            total = 0.0
            for x, y in zip(xs, ys):
                total = total + (np.dot(w, x) - y) ** 2
            return total
        """, {"w": rs.randn(3), "xs": rs.randn(4, 3), "ys": rs.randn(4)}),
    "zip_of_parameters": ("""
        def f(a, b):
            s = 0.0
            for u, v in zip(a, b):
                s = s + u * v * v
            return s
        """, {"a": rs.randn(5), "b": rs.randn(4)}),  # zip stops at the shortest
    "enumerate": ("""
        import numpy as np

        def f(w, *, xs):
            total = 0.0
            for i, x in enumerate(xs):
                total = total + (i + 1) * np.sum(np.tanh(w * x))
            return total
        """, {"w": rs.randn(3), "xs": rs.randn(4, 3)}),
    "nested_zip_of_slices": ("""
        def f(ts, *, ys):
            s = 0.0
            for t0, (t1, y) in zip(ts[:-1], zip(ts[1:], ys)):
                s = s + (t1 - t0) * y ** 2 * t0
            return s
        """, {"ts": np.sort(rs.rand(5)), "ys": rs.randn(4)}),
    "enumerate_of_zip": ("""
        def f(a, *, b):
            s = 0.0
            for k, (u, v) in enumerate(zip(a, b)):
                s = s + k * u * v + u * u
            return s
        """, {"a": rs.randn(3), "b": rs.randn(3)}),
    "unpack_an_array": ("""
        import numpy as np

        def f(log_params, *, X):
            lengthscale, variance = np.exp(log_params)
            return variance * np.sum(np.exp(-X ** 2 / lengthscale))
        """, {"log_params": np.array([0.2, -0.4]), "X": rs.randn(4)}),
    "unpack_slogdet": ("""
        import numpy as np

        def f(K):
            sign, logdet = np.linalg.slogdet(K)
            return sign * logdet + np.sum(K.astype(float) ** 2)
        """, {"K": np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])}),
    "unpack_meshgrid": ("""
        import numpy as np

        def f(x, y):
            X, Y = np.meshgrid(x, y)
            return np.sum(X ** 2 * Y)
        """, {"x": np.array([0.5, -1.0, 2.0]), "y": np.array([0.3, 1.1])}),
    "unpack_a_parameter_in_a_loop": ("""
        def f(state, *, steps):
            total = 0.0
            for i in range(3):
                prey, predator = state
                state = state * 0.9 + prey * predator * 0.01
                total = total + prey - predator
            return total
        """, {"state": np.array([1.2, 0.7]), "steps": 3}),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_matches_sympy_and_finite_differences(name):
    source, point = textwrap.dedent(PROGRAMS[name][0]), PROGRAMS[name][1]
    [report] = check_source(source, f"{name}.py", ["f"], at=point, n_points=1)
    assert report.ok, report
    assert report.points[0].value_generated == pytest.approx(report.points[0].value_original, rel=1e-12)


def test_a_zip_loop_reads_like_an_index_loop():
    text = compile_source(textwrap.dedent(PROGRAMS["zip"][0]), filename="z.py").text
    assert "    for i in range(min(len(xs), len(ys))):\n" in text
    assert "        x = xs[i]\n" in text and "        y = ys[i]\n" in text


def test_unpacking_an_array_of_the_wrong_length_is_pythons_error():
    generated = load_module(compile_source(textwrap.dedent(PROGRAMS["unpack_an_array"][0]), filename="u.py").text,
                            "u_grad")
    with pytest.raises(ValueError, match=r"cannot unpack 3 values into 2 names \(lengthscale, variance\)"):
        generated.f_grad(np.zeros(3), X=np.ones(2))


@pytest.mark.parametrize("source,message", [
    ("def f(a, b):\n    for p in zip(a, b):\n        s = p\n    return 0.0\n",
     "'p' would be a tuple of zip's rows: unpack it in the loop target (`for x, y in zip(xs, ys)`, `for i, x in "
     "enumerate(xs)`)"),
    ("def f(a, b):\n    s = 0.0\n    for x, y in zip(a, b, a):\n        s = s + x\n    return s\n",
     "the loop target unpacks 2 names from zip of 3 sequences"),
    ("def f(a):\n    s = 0.0\n    for i, x in enumerate(a, start=1):\n        s = s + x\n    return s\n",
     "enumerate() takes positional arguments only here (one sequence; no start=)"),
    ("def f(a):\n    s = 0.0\n    for x, y in a * 2.0:\n        s = s + x\n    return s\n",
     "a loop variable must be a plain name, or names unpacking zip(...) or enumerate(...) of arrays or "
     "parameters (`for x, y in zip(xs, ys)`)"),
])
def test_loop_targets_gradgen_refuses(source, message):
    with pytest.raises(CompileError) as caught:
        compile_source(source, filename="bad.py")
    assert caught.value.message == message
