"""Which functions a whole file compiles (issue 22 item 2, as new users wrote their files): a
driver that hands the loss to scipy's minimize, a sampler `draw(n=600, seed=1)`, a penalty
matrix, a dtype parameter, a training loop that passes its gradient on, a data builder
returning a NamedTuple: each skipped with one true line, the loss compiled and right."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.tools import cli
from tests.test_whole_file import central  # (central differences, element by element)

ROOT = Path(__file__).resolve().parent.parent

FIT = '''"""Pharmacokinetics-like fit: a loss, a driver handing it to scipy, a sampler, a design matrix."""
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize


class Track(NamedTuple):
    t: np.ndarray
    y: np.ndarray


def draw(n=600, seed=1):
    rng = np.random.default_rng(seed)
    comp = rng.choice(3, size=n)
    centres = np.array([-2.0, 1.0, 4.0])
    return centres[comp]


def simulate(T=50, dt=0.1, seed=3):
    rng = np.random.default_rng(seed)
    y = np.cumsum(rng.standard_normal(T)) * dt
    return Track(t=np.arange(T) * dt, y=y)


def difference_penalty(n_coef, order=2):
    D = np.eye(n_coef)
    for _ in range(order):
        D = np.diff(D, axis=0)
    return D.T @ D


def features(t, degree=3, dtype=np.float64):
    B = np.empty((len(t), degree + 1), dtype=dtype)
    for d in range(degree + 1):
        B[:, d] = t ** d
    return B


def misfit(w, t, y, sigma=0.1):
    return np.sum((features(t) @ w - y) ** 2) / sigma ** 2


def objective(w, t, y):
    return misfit(w, t, y) + 0.01 * np.sum(w ** 2)


def fit(t, y, grad_fn):
    res = minimize(objective, np.zeros(4), args=(t, y), jac=grad_fn)
    return res.x


def relax(w, t, y, grad_fn, lr=0.01, steps=50):
    for _ in range(steps):
        w = w - lr * grad_fn(w, t, y)
    return w, objective(w, t, y)


def anneal(t, y, grad_fn, restarts=3):
    rng = np.random.default_rng(0)
    best = np.inf
    for _ in range(restarts):
        w, value = relax(rng.normal(size=4), t, y, grad_fn)
        best = min(best, value)
    return best


def point():
    track = simulate(T=12)
    return {"w": np.array([0.3, -0.2, 0.1, 0.05]), "t": track.t, "y": track.y}
'''
FIT_SKIPPED = {
    "draw": "has no parameter to differentiate: n (used only in a random draw, which has no derivative); seed (a "
            "seed: it makes a random generator, and a draw has no derivative)",
    "simulate": "returns a Track, not one number",
    "difference_penalty": "has no parameter to differentiate: n_coef (a size: it gives the shape of an array the "
                          "function makes (np.zeros, np.eye, ...)); order (a count or an index: it reaches range(), "
                          "int() or an index)",
    "features": "its result is an array (it is inlined where a loss calls it)",
    "fit": "passes 'objective' to 'minimize', which calls it (a driver, such as a training loop)",
    "relax": "takes a function, 'grad_fn', and calls it (a driver, such as a training loop)",
    "anneal": "takes a function, 'grad_fn', and passes it to 'relax', which calls it (a driver, such as a training "
              "loop)",
    "point": "takes no parameters",
}


def user(source):
    namespace = {"__name__": "user_file"}
    exec(compile(source, "fit.py", "exec"), namespace)  # noqa: S102 - the test's own program
    return namespace


def test_a_whole_file_compiles_its_losses_and_says_truly_why_it_skips_the_rest():
    compiled = compile_source(FIT, "fit.py")  # (draw's `size=n` once stopped it: "would hide the builtin 'n'")
    assert [f.name for f in compiled.functions] == ["misfit", "objective"]  # misfit: a loss in its own right
    assert compiled.skipped == FIT_SKIPPED
    module = load_module(compiled.text)
    mine = user(FIT)
    at = mine["point"]()
    for name in ("misfit", "objective"):
        got = getattr(module, f"{name}_grad")(**at)
        np.testing.assert_allclose(got, central(mine[name], at, "w"), rtol=1e-6)
    # misfit is a loss for its number default sigma=0.1: its gradient checks that sigma is one
    assert module.misfit_grad(at["w"], at["t"], at["y"], sigma=0.5).shape == (4,)
    with pytest.raises(ValueError, match=r"misfit_grad: sigma has shape \(12,\), but it was written for sigma \(\)"):
        module.misfit_grad(at["w"], at["t"], at["y"], sigma=np.full(12, 0.5))
    assert "check_shapes" not in compiled.text.split("def objective_grad")[1].split("def ")[0]  # (not a helper's)


def test_a_function_with_nothing_to_differentiate_is_refused_when_named():
    with pytest.raises(CompileError) as caught:
        compile_source(FIT, "fit.py", functions=["difference_penalty"])
    assert caught.value.format() == (
        "fit.py:26:1: 'difference_penalty' has no parameter to differentiate: n_coef (a size: it gives the shape of "
        "an array the function makes (np.zeros, np.eye, ...)); order (a count or an index: it reaches range(), int() "
        "or an index)\n    def difference_penalty(n_coef, order=2):\n    ^")
    with pytest.raises(CompileError) as caught:
        compile_source(FIT, "fit.py", functions=["draw"])
    assert caught.value.message.startswith("'draw' has no parameter to differentiate: n (used only in a random draw")
    # a function with one parameter to differentiate still compiles when named, the others left out
    compiled = compile_source("import numpy as np\n\n\ndef f(w, k):\n    return np.sum(w ** 2) + (k > 0)\n",
                              "z.py", functions=["f"], wrt="all")
    np.testing.assert_array_equal(load_module(compiled.text).f_grad(np.array([1.0, 2.0]), 3.0), [2.0, 4.0])


def test_a_dtype_parameter_is_data_passed_on_as_written():
    source = ('import numpy as np\n\n\ndef loss(x, coef, dtype=float, kind=np.float32):\n'
              '    B = np.empty((len(x), 2), dtype=dtype)\n    B[:, 0] = x\n    B[:, 1] = x ** 2\n'
              '    w = np.ones(len(x)).astype(kind)\n    return np.sum(w * np.tanh(B @ coef))\n')
    compiled = compile_source(source, "dtype.py")
    assert compiled.functions[0].left_out == {
        "coef": "the default is the first parameter: --wrt names others, --wrt all takes every one",
        "dtype": "its default is float, not a number: data", "kind": "its default is np.float32, not a number: data"}
    assert "def loss_grad(x, coef, dtype=float, kind=np.float32):" in compiled.text
    assert "    B = np.empty((len(x), 2), dtype=dtype)\n" in compiled.text
    module, mine = load_module(compiled.text), user(source)
    at = {"x": np.array([0.1, 0.5, -0.3]), "coef": np.array([0.5, -1.0])}
    np.testing.assert_allclose(module.loss_grad(**at), central(mine["loss"], at, "x"), rtol=1e-7)


def test_a_record_default_and_its_none_form_both_compile():
    # `arm=DEFAULT_ARM`, and `arm=None` then `arm = DEFAULT_ARM`: the record is declared again
    # in the generated module (gradgen/codegen/record_defaults.py), read as data
    source = ('import collections\n\nimport numpy as np\n\nArm = collections.namedtuple("Arm", ["lengths"])\n'
              'DEFAULT_ARM = Arm(lengths=np.array([1.0, 0.8]))\n\n\n'
              'def reach(q, arm=DEFAULT_ARM):\n    return np.sum(arm.lengths * np.cos(q))\n')
    none = source.replace("arm=DEFAULT_ARM):\n", "arm=None):\n    if arm is None:\n        arm = DEFAULT_ARM\n")
    q, other = np.array([0.3, -0.4]), np.array([2.0, 3.0])
    for text in (source, none):
        module = load_module(compile_source(text, "arm.py").text)
        np.testing.assert_allclose(module.reach_grad(q), -np.array([1.0, 0.8]) * np.sin(q), rtol=1e-14)
        passed = user(text)["Arm"](lengths=other)
        np.testing.assert_allclose(module.reach_grad(q, passed), -other * np.sin(q), rtol=1e-14)


def test_when_nothing_compiles_the_likely_loss_is_blamed_not_a_data_builder():
    source = ('import numpy as np\nfrom scipy.optimize import minimize\n\n\n'
              'def load(n=4, seed=11):\n    return Market(np.random.default_rng(seed).normal(size=n))\n\n\n'
              'def frontier(w, market):\n    p = minimize(np.sum, w)\n    return p.fun\n')
    with pytest.raises(CompileError) as caught:
        compile_source(source, "market.py")
    assert caught.value.format().split("\n")[0] == (
        "market.py:10:9: no derivative rule for 'minimize' on the value of 'w' (a differentiated parameter)")


def test_a_function_whose_generated_text_hides_a_builtin_is_skipped_not_fatal():
    source = ('import numpy as np\n\n\ndef scaled(w, float=2.0):\n    return np.sum(w ** 2) * float\n\n\n'
              'def nll(mu, x):\n    return 0.5 * np.sum((x - mu) ** 2)\n')
    compiled = compile_source(source, "hide.py")
    assert [f.name for f in compiled.functions] == ["nll"]
    assert compiled.skipped == {"scaled": "parameter 'float' would hide the builtin 'float' the generated code uses; "
                                          "rename the parameter"}
    with pytest.raises(CompileError, match="parameter 'float' would hide the builtin 'float'"):
        compile_source(source, "hide.py", functions=["scaled"])


def test_inputs_built_by_a_function_that_imports_inside_its_body(tmp_path, monkeypatch, capsys):
    """Repro 12: the builder's own `from model import SCALE` failed (sys.path was the inputs
    file's only while its top level ran), and the checked file's folder was never on it."""
    work, inputs = tmp_path / "work", tmp_path / "inputs"
    work.mkdir()
    inputs.mkdir()
    (work / "model12.py").write_text("import numpy as np\n\nSCALE = np.array([1.0, 2.0])\n\n\n"
                                     "def loss(w, x):\n    return np.sum((w * x) ** 2)\n")
    (inputs / "build.py").write_text("import numpy as np\n\n\ndef inputs_loss():\n    from model12 import SCALE\n"
                                     "    from helper12 import W\n\n    return {'w': W, 'x': SCALE}\n")
    (inputs / "helper12.py").write_text("import numpy as np\n\nW = np.array([0.5, -1.0])\n")
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(work))])
    status = cli.main(["check", "model12.py", "--function", "loss", "--inputs", f"{inputs / 'build.py'}:inputs_loss"])
    out = capsys.readouterr().out
    assert status == 0 and out.endswith("all gradients match (1 point(s) checked)\n")
    for name in ("model12", "helper12"):  # (the user's modules, imported by their builder)
        sys.modules.pop(name, None)
    # and as the console script runs it: no working directory on sys.path
    script = ("import sys; sys.path.pop(0); from gradgen.tools.cli import main; sys.exit(main(['check', 'model12.py', "
              f"'--function', 'loss', '--inputs', '{inputs / 'build.py'}:inputs_loss']))")
    ran = subprocess.run([sys.executable, "-c", script], cwd=work, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ran.returncode == 0, ran.stderr


TOOLS = '''"""A benchmark's harness beside the loss: a factory for another library's version of it
calls the loss; drivers hand it on (GradBench's ode.py, particle.py, saddle.py as ported)."""
import numpy as np

PARAMETERS = ("x",)


def slope(x, y):
    return np.sin(x) * y


def objective(x, *, s):
    y = slope(x, s) ** 2
    return y[-1]


def other_objective(backend):
    def objective_there(x, *, s):
        return objective(x, s=s) * 1.0
    return objective_there


def other_gradient(args):
    return run_tool(objective, args, PARAMETERS)


def run_tool(f, args, parameters, static=()):
    return f(**args)
'''


def test_a_loss_called_only_by_a_factory_that_is_skipped_compiles_on_its_own():
    """`objective` is called by a factory (skipped: it returns a function) and handed on by
    a driver (refused): it is inlined nowhere, so it is compiled as the loss it is (GradBench's
    ode, particle and saddle compiled nothing); `slope` stays its helper."""
    made = compile_source(TOOLS, "tools_beside.py")
    assert [f.name for f in made.functions] == ["objective"]
    assert made.skipped["other_objective"] == "returns a function (its closure is inlined where a loss calls it)"
    assert made.skipped["slope"] == ("its result may be an array, and 'objective' calls it: it is inlined there "
                                     "(annotate '-> float' if it is a loss too)")
    x, s = np.array([0.3, -1.2]), np.array([2.0, 0.5])
    grad = load_module(made.text).objective_grad(x, s=s)
    np.testing.assert_allclose(grad, [0.0, 2 * np.sin(x[1]) * s[1] ** 2 * np.cos(x[1])], rtol=1e-12)


def test_the_refusal_shown_is_the_losss_not_a_drivers():
    """Nothing compiles: the error shown is the loss's, located in the file, not a driver's."""
    source = TOOLS.replace("    return y[-1]", "    return y[-1] + spin(x, 3)") \
        + "\n\ndef spin(x, n):\n    return x if n == 0 else spin(x * x, int(np.sum(x)))\n"
    with pytest.raises(CompileError) as caught:
        compile_source(source, "tools_beside.py")
    assert caught.value.message == "recursive call to 'spin' on a depth known only when it runs: write it as a loop"


def test_a_recompile_writes_the_module_a_loss_compiled_on_its_own_made(tmp_path, capsys):
    """The loss compiled after the rest (nothing inlined it) is written in the file's order, so
    the recompile (which keeps it: the module has it) writes the same bytes."""
    source = TOOLS + "\n\ndef sharpen(x):\n    return np.sum(x ** 4)\n"
    (tmp_path / "tools_beside.py").write_text(source)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert cli.main(["compile", "tools_beside.py"]) == 0
        first = (tmp_path / "generated" / "tools_beside_grad.py").read_bytes()
        assert cli.main(["compile", "tools_beside.py"]) == 0
        assert (tmp_path / "generated" / "tools_beside_grad.py").read_bytes() == first
    finally:
        os.chdir(cwd)
    assert "wrote generated/tools_beside_grad.py (objective_grad, objective_value_and_grad, sharpen_grad, " \
           "sharpen_value_and_grad)" in capsys.readouterr().out
