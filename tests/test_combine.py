"""How one statement's contributions are added (gradgen/transform/reverse/factoring.py, reverse_merge.py) and
values only measured are left uncomputed (sameshape.measured_elsewhere): the text a person
would write, and, on programs built to break each rule, the gradient sympy and finite
differences give."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.verify.check import check_source


def _function(text, name):
    start = text.index(f"def {name}(")
    end = text.find("\ndef ", start + 1)
    return text[start:end if end > 0 else None]


def _code(text, name):
    """The statements of a generated function, without its docstring and comments."""
    body = _function(text, name).split('"""')[2]
    return [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]


LOGISTIC = """
import numpy as np


def loss(w, b, *, X, y):
    z = X @ w + b
    per_sample = np.maximum(z, 0.0) - y * z + np.log1p(np.exp(-np.abs(z)))
    return np.mean(per_sample)
"""


def test_one_statements_contributions_are_one_sum_over_the_mean_count():
    text = compile_source(LOGISTIC, "logistic.py", wrt="all").text
    grad = " ".join(_code(text, "loss_grad"))
    assert "per_sample =" not in grad  # only measured: through np.broadcast(z, y)
    assert "dloss_dz = unbroadcast( ( np.where(z == 0.0, 0.5, z > 0.0) - y - exp_neg_abs_z * np.sign(z) / " \
           "(1 + exp_neg_abs_z) ) / np.size(np.broadcast(z, y)), z, )" in grad
    assert "ones" not in grad
    assert "per_sample = " in " ".join(_code(text, "loss_value_and_grad"))  # (the value needs it)


def test_a_mean_of_a_parameter_gives_a_fresh_writable_array():
    m = load_module(compile_source("import numpy as np\n\n\ndef f(x):\n    return np.mean(x)\n", wrt="all").text, "mean_grad")
    x = np.arange(6.0).reshape(2, 3)
    g = m.f_grad(x)
    g += 1.0  # (an optimiser updates in place)
    np.testing.assert_array_equal(g, np.full((2, 3), 1 / 6 + 1.0))


def test_scatters_into_one_slice_are_one_write_and_the_first_assigns():
    text = compile_source("import numpy as np\n\n\ndef f(x):\n"
                          "    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)\n", wrt="all").text
    code = _code(text, "f_grad")
    assert code[-3:] == ["df_dx[1:] = df_ddiff", "df_dx[:-1] -= 2 * (df_ddiff * x[:-1] + (1.0 - x[:-1]))",
                         "return df_dx"]


# Programs whose contributions come from different broadcast shapes, masks, repeated
# indices and means of broadcast values: each rule has a case here where misapplying it
# gives a wrong number.
PROGRAMS = {
    "two stretch origins": ("""
        def f(a, b, c):
            return np.sum(np.sum(a * b, axis=0) * c + a * c)
        """, dict(a=(2, 3), b=(4, 2, 3), c=(3,))),
    "row and column": ("""
        def f(r, c):
            return np.sum(np.sin(r + c) + r * c)
        """, dict(r=(1, 3), c=(4, 1))),
    "mean of a broadcast value": ("""
        def f(z, y):
            return np.mean(np.tanh(z) - y * z)
        """, dict(z=(3,), y=(2, 3))),
    "mean where one term misses the wide operand": ("""
        def f(z, y):
            return np.mean(2.0 * z + 0.0 * y)
        """, dict(z=(3,), y=(2, 3))),
    "masks do not add": ("""
        def f(x):
            return np.sum(np.clip(x, -0.5, 0.5) + np.maximum(x, 0.1) + np.abs(x))
        """, dict(x=(5,))),
    "repeated index": ("""
        def f(x):
            idx = np.array([0, 2, 0, 1])
            return np.sum(x[idx] ** 2) + np.sum(x[1:] * x[:-1])
        """, dict(x=(4,))),
    "shared scalar factor": ("""
        def f(s, v):
            return np.sum(s * np.exp(v) + s * v ** 2)
        """, dict(s=(), v=(4,))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradients_of_programs_built_to_break_the_rules(name):
    body, shapes = PROGRAMS[name]
    source = "import numpy as np\n\n" + textwrap.dedent(body)
    rng = np.random.default_rng(5)
    point = {k: float(rng.uniform(0.3, 1.7)) if s == () else rng.uniform(-1.5, 1.5, s) for k, s in shapes.items()}
    [report] = check_source(source, "rules.py", ["f"], at=point, n_points=1, wrt="all")
    assert report.ok, [row for p in report.points for row in p.rows if not row.ok]


def test_terms_that_cancel_or_differ_by_one_keep_float_gradients():
    """Soak seed 1223 #3918: `b - (b - a)` sent b the terms ones - ones, which added as
    numbers to an integer 0; and `2 * M * s - M * s` must not become an integer `M * s`."""
    cancel = load_module(compile_source("import numpy as np\n\n\ndef f(a, b):\n    y = b - (b - a)\n"
                                        "    return np.sum(y)\n", wrt="all").text, "cancel_grad")
    da, db = cancel.f_grad(np.array([[-1.0, 0.75]]), 0.8)
    assert np.asarray(db).dtype == np.float64 and db == 0.0
    np.testing.assert_array_equal(da, [[1.0, 1.0]])
    one = load_module(compile_source("import numpy as np\n\n\ndef f(M, s):\n    return np.sum(2 * M * s - M * s)\n", wrt="all"
                                     ).text, "one_grad")
    dM, ds = one.f_grad(np.arange(4).reshape(2, 2), 3)
    assert np.asarray(dM).dtype == np.asarray(ds).dtype == np.float64
    np.testing.assert_array_equal(dM, np.full((2, 2), 3.0))
    assert ds == 6.0
