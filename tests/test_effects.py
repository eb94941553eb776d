"""print, logging, assert and random draws (issue 10, items 5 and 7): kept in the generated
forward pass as written, run exactly as often as in the original, never in the backward
pass; a draw is data, made once, in the original's order, so the reparameterisation trick
differentiates as the author meant."""

import contextlib
import io
import logging
import textwrap

import numpy as np
import pytest

from gradgen import compile_source, load_module
from gradgen.verify.check import check_source

VAE = textwrap.dedent('''
    import logging

    import numpy as np


    def elbo(mean, log_std, rs, *, x):
        std = np.exp(log_std)
        unused = rs.randn(2)
        eps = rs.randn(*mean.shape)
        z = mean + std * eps
        print("z norm", np.sum(z**2))
        assert np.all(std > 0), "std must be positive"
        recon = np.sum((x - z) ** 2)
        kl = 0.5 * np.sum(std**2 + mean**2 - 1.0 - 2.0 * log_std)
        logging.info("kl=%s", kl)
        return recon + kl + np.sum(np.random.normal(size=3) * mean)
''')


def _point():
    rs = np.random.RandomState(0)
    return {"mean": rs.randn(3), "log_std": 0.1 * rs.randn(3), "rs": np.random.RandomState(1), "x": rs.randn(3)}


def _code(text):
    """The generated text without its comments (which cite the source, draws and all)."""
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("#"))


def _forward(text, function):
    body = text.split(f"def {function}(", 1)[1].split("# backward pass", 1)[0]
    return [line.strip() for line in body.splitlines()[6:] if line.strip() and not line.strip().startswith("#")]


def test_draws_prints_and_asserts_are_kept_in_the_forward_pass_once():
    text = compile_source(VAE, filename="vae.py", wrt="all").text
    assert "import logging\nimport numpy as np\n" in text
    grad = _forward(text, "elbo_grad")
    assert grad == ["std = np.exp(log_std)", "unused = rs.randn(2)", "eps = rs.randn(*mean.shape)",
                    "z = mean + std * eps", 'print("z norm", np.sum(z**2))',
                    'assert np.all(std > 0), "std must be positive"', "recon_diff = x - z",
                    "kl_diff = std**2 + mean**2 - 1.0 - 2.0 * log_std", "kl = 0.5 * np.sum(kl_diff)",
                    'logging.info("kl=%s", kl)', "noise = np.random.normal(size=3)"]
    backward = _code(text.split("def elbo_grad(", 1)[1].split("# backward pass", 1)[1].split("def ", 1)[0])
    assert "randn" not in backward and "normal(" not in backward and "print" not in backward


def test_the_generated_pass_draws_what_the_original_draws():
    module = compile_source(VAE, filename="vae.py", wrt="all")
    generated = load_module(module.text, "vae_grad")
    namespace = {}
    exec(VAE, namespace)  # noqa: S102 - the test's own program
    point = _point()
    np.random.seed(5)
    with contextlib.redirect_stdout(io.StringIO()) as original_out:
        want = namespace["elbo"](**{**point, "rs": np.random.RandomState(1)})
    np.random.seed(5)
    with contextlib.redirect_stdout(io.StringIO()) as generated_out:
        value, (d_mean, d_log_std) = generated.elbo_value_and_grad(**{**point, "rs": np.random.RandomState(1)})
    assert value == want
    assert generated_out.getvalue() == original_out.getvalue() != ""
    # the reparameterisation trick, by hand: z = mean + exp(log_std) * eps with the same eps
    rs = np.random.RandomState(1)
    rs.randn(2)
    eps = rs.randn(3)
    np.random.seed(5)
    noise = np.random.normal(size=3)
    std = np.exp(point["log_std"])
    z = point["mean"] + std * eps
    np.testing.assert_allclose(d_mean, -2 * (point["x"] - z) + point["mean"] + noise, rtol=1e-12)
    np.testing.assert_allclose(d_log_std, -2 * (point["x"] - z) * eps * std + std**2 - 1.0, rtol=1e-12)


def test_check_proves_a_function_that_draws():
    [report] = check_source(VAE, "vae.py", ["elbo"], at=_point(), n_points=1, wrt="all")
    assert report.ok and report.wrt == ["mean", "log_std"]
    assert all(row.sympy is not None for row in report.points[0].rows)


def test_check_samples_a_random_state_parameter_as_a_fresh_random_state():
    """Without --at, `check` draws points; a parameter the function draws from (`rs` of
    `rs.randn()`) gets a seeded np.random.RandomState, not a number it cannot draw from."""
    source = "import numpy as np\n\n\ndef f(a: float, b: float, *, rs):\n    return np.sin(a) * b + 0.1 * rs.randn()\n"
    [report] = check_source(source, "noisy.py", n_points=3, wrt="all")
    assert report.ok and len(report.points) == 3
    states = [p.point["rs"] for p in report.points]
    assert all(isinstance(rs, np.random.RandomState) for rs in states)
    assert len({rs.get_state()[1][0] for rs in states}) == 3  # three seeds


FOLDED = """import numpy as np


def f(a: float, d: float, rs):
    noise = 0.0
    if 2 >= 0.1:
        t = np.sin(a) * d
    else:
        t = a
        noise = noise + d * rs.uniform(-0.5, 0.5)
    return t + noise
"""


def test_a_random_state_drawn_from_only_in_a_branch_folded_away():
    """`if 2 >= 0.1:` is folded, and the draw in its else branch with it: rs is still the
    random state the text draws from, never a parameter to differentiate (soak 60008 #269:
    --wrt all took it, and check refused the RandomState it was given)."""
    [report] = check_source(FOLDED, "folded.py", n_points=2, wrt="all")
    assert report.ok and report.wrt == ["a", "d"]
    assert all(isinstance(p.point["rs"], np.random.RandomState) for p in report.points)
    text = compile_source(FOLDED, "folded.py", wrt="all").text
    assert "Returns (df/da, df/dd)" in text


def test_draws_in_loops_and_branches_and_inside_expressions():
    source = textwrap.dedent('''
        import numpy as np

        def f(x, rs):
            s = 0.0
            for i in range(4):
                if i % 2 == 0:
                    s = s + x * rs.randn()
                else:
                    e = rs.uniform(-1.0, 1.0)
                    s = s + np.sin(x * e)
            return s
    ''')
    text = _code(compile_source(source, filename="f.py", wrt="all").text)
    assert text.count("rs.randn()") == 2 and text.count("rs.uniform(-1.0, 1.0)") == 2  # once per function
    [report] = check_source(source, "f.py", ["f"], at={"x": 0.7, "rs": np.random.RandomState(3)}, n_points=1, wrt="all")
    assert report.ok and report.wrt == ["x"]


def test_a_failing_assert_fails_in_the_generated_code_too():
    source = "import numpy as np\n\ndef f(x):\n    assert x > 0, 'x must be positive'\n    return np.log(x)\n"
    generated = load_module(compile_source(source, filename="f.py", wrt="all").text, "f_grad")
    assert generated.f_grad(2.0) == 0.5
    with pytest.raises(AssertionError, match="x must be positive"):
        generated.f_grad(-1.0)


def test_prints_see_the_value_the_variable_has_there(capsys):
    source = "def f(x):\n    y = x * 2.0\n    print(f'y={y}')\n    y = y + 1.0\n    print('y is', y)\n    return y * y\n"
    generated = load_module(compile_source(source, filename="f.py", wrt="all").text, "f_grad")
    assert generated.f_grad(1.5) == 16.0  # y = 2x + 1, d(y*y)/dx = 4y
    assert capsys.readouterr().out == "y=3.0\ny is 4.0\n"


def test_logging_runs_as_in_the_original(caplog):
    source = "import logging\n\ndef f(x):\n    logging.warning('x=%s', x)\n    return x * x\n"
    generated = load_module(compile_source(source, filename="f.py", wrt="all").text, "f_grad")
    with caplog.at_level(logging.WARNING):
        assert generated.f_grad(3.0) == 6.0
    assert [r.getMessage() for r in caplog.records] == ["x=3.0"]


def test_sympy_follows_a_scalar_program_beside_an_array_draw():
    """(fuzz: an array drawn into a tuple beside numbers left the scalar sympy trace with an
    array it tried to make a constant of, and every row lost its sympy value)"""
    source = "import numpy as np\n\ndef f(a, b, *, rs):\n    z, e = (a, rs.randn(2))\n    return z * b + np.sum(e)\n"
    [report] = check_source(source, "d.py", ["f"], at={"a": 1.5, "b": 0.3, "rs": np.random.RandomState(2)},
                            n_points=1, wrt="all")
    assert report.ok and all(row.sympy is not None for row in report.points[0].rows)


HELPER_STATEMENTS = '''
import numpy as np


def show(ax, x, t, render=False):
    if ax:
        ax.imshow(x)
        if render:
            ax.savefig(f"step{t:03d}.png")


def log_step(t, x):
    print("step", t, round(float(np.sum(x)), 6))


def energy(x):
    return np.sum(x ** 2)


def simulate(w, steps, ax=None):
    x = w
    for t in range(steps):
        show(ax, x, t)
        log_step(t, x)
        energy(x)
        x = np.tanh(x) * 0.9 + 0.1 * w
    show(ax, x, steps)
    return np.sum(x ** 2)
'''


class _Axes:
    def __init__(self):
        self.shown = []

    def imshow(self, x):
        self.shown.append(np.array(x))


def test_a_helper_called_for_what_it_does_is_inlined_and_runs():
    """autograd's wing.py: `plot_matrix(ax, ...)` in a simulation loop was "an expression
    statement does nothing to the result". A helper called as a statement is inlined as any
    call is: its prints and plots run as written, a result it returns is dropped, and one
    without a `return` returns None."""
    w = np.array([0.3, -0.5, 0.8])
    [report] = check_source(HELPER_STATEMENTS, "helpers.py", ["simulate"], wrt=["w"], at={"w": w, "steps": 3})
    assert report.ok and all(row.ok for row in report.points[0].rows)
    module = load_module(compile_source(HELPER_STATEMENTS, "helpers.py", functions=["simulate"], wrt=["w"]).text)
    namespace = {}
    exec(HELPER_STATEMENTS, namespace)  # noqa: S102 - our own source
    printed, axes, original_axes = io.StringIO(), _Axes(), _Axes()
    with contextlib.redirect_stdout(printed):
        module.simulate_grad(w, 3, ax=axes)
    expected = io.StringIO()
    with contextlib.redirect_stdout(expected):
        namespace["simulate"](w, 3, ax=original_axes)
    assert printed.getvalue() == expected.getvalue() and printed.getvalue().count("step") == 3
    assert len(axes.shown) == 4 and all(np.array_equal(a, b) for a, b in zip(axes.shown, original_axes.shown))
