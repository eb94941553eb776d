"""The default parameters (issue 24, item 3): the first parameter, or all of them when every
parameter has a number default; `compile` prints the choice, the header records it, the
Python API follows the same rule, and `--wrt all` / `wrt="all"` takes every one."""

import sys
import textwrap

import numpy as np
import pytest
import scipy.optimize

import gradgen
from gradgen import compile_source, load_module
from gradgen.tools.cli import main

FIT = textwrap.dedent('''\
    import numpy as np


    def f(x, X, y):
        return np.sum((X @ x - y) ** 2) + 0.1 * np.sum(x ** 2)


    def loss(params, X, y):
        w, b = params
        return np.mean((X @ w + b - y) ** 2)


    def seed(w1=0.5, w2=-0.5, b1=0.5, w3=2.0, b2=0.0):
        h = 1 / (1 + np.exp(-(w1 * 1.0 + w2 * 2.0 + b1)))
        return (w3 * h + b2) ** 2
    ''')
DEFAULT = "the default, the first parameter, or all of them when every parameter has a number default"
NOT_FIRST = "the default is the first parameter: --wrt names others, --wrt all takes every one"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fit.py").write_text(FIT)
    return tmp_path


def test_compile_prints_the_choice_and_the_header_records_it(project, capsys):
    assert main(["compile", "fit.py"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [f"  f: d/d(x); not X, y ({NOT_FIRST})",
                       f"  loss: d/d(params); not X, y ({NOT_FIRST})",
                       "  seed: d/d(w1, w2, b1, w3, b2)"]
    text = (project / "generated" / "fit_grad.py").read_text()
    assert (f"# Differentiated ({DEFAULT}): f with respect to x; loss with respect to params; "
            "seed with respect to w1, w2, b1, w3, b2.\n") in text
    assert "# Do not edit: run `gradgen compile fit.py` again instead." in text


def test_scipy_minimize_takes_the_default_gradient_as_its_jac(project):
    module = load_module(compile_source(FIT, "fit.py").text)
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((20, 3)), rng.standard_normal(20)
    user = {}
    exec(FIT, user)
    fitted = scipy.optimize.minimize(user["f"], np.zeros(3), args=(X, y), jac=module.f_grad, method="BFGS")
    exact = np.linalg.solve(X.T @ X + 0.1 * np.eye(3), X.T @ y)
    assert fitted.success
    np.testing.assert_allclose(fitted.x, exact, rtol=1e-5, atol=1e-7)


def test_the_api_follows_the_same_rule(project):
    sys.path.insert(0, str(project))
    try:
        import fit
    finally:
        sys.path.remove(str(project))
    X, y = np.eye(2), np.array([1.0, -1.0])
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(gradgen.grad(fit.f)(x, X, y), 2 * (x - y) + 0.2 * x)
    dw, db = gradgen.grad(fit.loss)((x, 0.5), X, y)  # the structure of params, alone
    np.testing.assert_allclose(dw, (x + 0.5 - y) @ X)
    assert db == pytest.approx(2 * np.mean(x + 0.5 - y))  # (X = I, n = 2: dw = 2/n X.T r = r)
    assert len(gradgen.grad(fit.seed)()) == 5
    dx, dX, dy = gradgen.grad(fit.f, wrt="all")(x, X, y)
    np.testing.assert_allclose(dy, -2 * (X @ x - y))
    assert dX.shape == (2, 2)


def test_wrt_all_is_recorded_and_kept_by_a_plain_recompile(project, capsys):
    assert main(["compile", "fit.py", "--function", "f", "--wrt", "all"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "  f: d/d(x, X, y)"
    (project / "fit.py").write_text(FIT.replace("0.1 * np.sum", "0.2 * np.sum"))
    assert main(["compile", "fit.py"]) == 0
    text = (project / "generated" / "fit_grad.py").read_text()
    assert "# Do not edit: run `gradgen compile fit.py --function f --wrt all` again instead." in text
    assert "# Differentiated (--wrt all): f with respect to x, X, y.\n" in text
    assert "0.2" in text
