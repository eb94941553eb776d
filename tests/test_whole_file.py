"""`gradgen compile FILE` on a whole scientific script, unchanged: the functions with a gradient
are compiled, every other function (data builders, `init_params`, plots, training loops,
`main`) and the module-level code get one line each on stderr saying why they were skipped,
the header records both, `check` checks what compile compiled, and the command the header
gives writes the same module again. `--function NAME` stays strict."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.tools import cli

ROOT = Path(__file__).resolve().parent.parent

LOGREG = '''"""Logistic regression on synthetic data, trained by gradient descent."""
import numpy as np
import matplotlib.pyplot as plt

SEED = 0


def make_data(n=200, d=3, seed=SEED):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ np.arange(1.0, d + 1) > 0).astype(float)
    return X, y


def init_params(d):
    return {"w": np.zeros(d), "b": 0.0}


def example_point():
    X, y = make_data(n=20)
    return {"w": np.array([0.3, -0.2, 0.1]), "b": -0.2, "X": X, "y": y}


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def loss(w, b, *, X, y):
    p = sigmoid(X @ w + b)
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))


def train(grad_fn, w, b, X, y, lr=0.5, steps=200):
    for step in range(steps):
        dw, db = grad_fn(w, b, X=X, y=y)
        w, b = w - lr * dw, b - lr * db
        if step % 50 == 0:
            print(f"step {step}: loss {loss(w, b, X=X, y=y):.4f}")
    return w, b


def plot_boundary(w, b, X, y, path="boundary.png"):
    plt.scatter(X[:, 0], X[:, 1], c=y)
    plt.savefig(path)


def main():
    from generated.logreg_grad import loss_grad

    X, y = make_data()
    params = init_params(X.shape[1])
    w, b = train(loss_grad, params["w"], params["b"], X, y)
    plot_boundary(w, b, X, y)
    print(f"final loss {loss(w, b, X=X, y=y):.4f}")


if __name__ == "__main__":
    main()
'''
LOGREG_SKIPPED = [
    "skipped make_data (line 8): returns a tuple, not one number",
    "skipped init_params (line 15): returns a dict, not one number",
    "skipped example_point (line 19): takes no parameters",
    "skipped sigmoid (line 24): its result may be an array, and 'loss' calls it: it is inlined there (annotate "
    "'-> float' if it is a loss too)",
    "skipped train (line 33): takes a function, 'grad_fn', and calls it (a driver, such as a training loop)",
    "skipped plot_boundary (line 42): draws a plot (it uses matplotlib)",
    "skipped main (line 47): takes no parameters",
    'skipped the if __name__ == "__main__" block (line 57): it runs the file as a script; gradgen compiles the '
    "functions it calls",
]

DECAY = '''"""Fit a damped oscillation to noisy observations (a script: it runs when imported)."""
import numpy as np

TRUE = np.array([1.5, 0.3, 2.0])  # amplitude, damping, frequency
NOISE = 0.05


class Fit:
    """What a fit found."""

    def __init__(self, theta, value):
        self.theta, self.value = theta, value


def observations(n=40, seed=1):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 5.0, n)
    return t, model(TRUE, t) + NOISE * rng.normal(size=n)


def model(theta, t):
    a, k, w = theta[0], theta[1], theta[2]
    return a * np.exp(-k * t) * np.cos(w * t)


def penalty(theta):
    return 0.01 * np.sum(theta ** 2)


def loss(theta, *, t, observed):
    r = model(theta, t) - observed
    return 0.5 * np.mean(r ** 2) + penalty(theta)


def grid(n):
    return [i / n for i in range(n)]


def summary(theta):
    return {"amplitude": theta[0], "damping": theta[1], "frequency": theta[2]}


def report(fit):
    print(f"loss {fit.value:.5f} at {summary(fit.theta)}")


def fit(theta, t, observed, lr=0.3, steps=300):
    from generated.decay_grad import loss_value_and_grad

    for _ in range(steps):
        value, g = loss_value_and_grad(theta, t=t, observed=observed)
        theta = theta - lr * g
    return Fit(theta, value)


def point():
    t, observed = observations()
    return {"theta": np.array([1.2, 0.2, 1.9]), "t": t, "observed": observed}


t, observed = observations()
start = np.array([1.0, 0.1, 1.8])
report(fit(start, t, observed, steps=5))
'''
DECAY_SKIPPED = [
    "skipped class Fit (line 8): gradgen compiles top-level functions, not classes",
    "skipped observations (line 15): returns a tuple, not one number",
    "skipped model (line 21): its result may be an array, and 'loss' calls it: it is inlined there (annotate "
    "'-> float' if it is a loss too)",
    "skipped grid (line 35): returns a list, not one number",
    "skipped summary (line 39): returns a dict, not one number",
    "skipped report (line 43): returns nothing, not one number",
    "skipped fit (line 47): calls 'loss_value_and_grad' from generated.decay_grad (a driver, such as a training "
    "loop)",
    "skipped point (line 56): takes no parameters",
    "skipped module-level code (lines 61, 63): it runs when the file runs; gradgen compiles the functions it calls",
]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder holding the scripts and a stand-in for matplotlib (the scripts import it; `check`
    and the scripts themselves run it), the working directory there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "matplotlib").mkdir()
    (tmp_path / "matplotlib" / "__init__.py").write_text("")
    (tmp_path / "matplotlib" / "pyplot.py").write_text(
        "def scatter(*args, **kwargs):\n    pass\n\n\ndef savefig(path):\n    open(path, 'w').close()\n")
    (tmp_path / "logreg.py").write_text(LOGREG)
    (tmp_path / "decay.py").write_text(DECAY)
    yield tmp_path
    for name in [m for m in sys.modules if m.split(".")[0] in ("matplotlib", "generated")]:
        del sys.modules[name]  # (the stand-in and the generated modules the scripts import, from this folder)


def run(capsys, *args):
    status = cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def central(f, point, name, h=1e-6):
    """Central differences of f with respect to point[name], element by element."""
    value = np.asarray(point[name], dtype=float)
    grad = np.zeros_like(value)
    for i in np.ndindex(value.shape):
        up, down = value.copy(), value.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (f(**{**point, name: up}) - f(**{**point, name: down})) / (2 * h)
    return grad


def original(project, name):
    """The user's script, run as Python runs it (its module-level code too)."""
    namespace = {"__name__": f"user_{name}"}
    sys.path.insert(0, str(project))
    try:
        exec(compile((project / f"{name}.py").read_text(), f"{name}.py", "exec"), namespace)
    finally:
        sys.path.remove(str(project))
    return namespace


def test_a_training_script_compiles_unchanged_its_loss_alone_and_says_why_for_the_rest(project, capsys):
    status, out, err = run(capsys, "compile", "logreg.py", "--wrt", "all")  # (the script trains w and b)
    assert (status, out) == (0, "wrote generated/logreg_grad.py (loss_grad, loss_value_and_grad)\n"
                                "  loss: d/d(w, b); not X, y (keyword-only data)\n")
    assert err.splitlines() == LOGREG_SKIPPED
    text = (project / "generated" / "logreg_grad.py").read_text()
    lines = text.split("\n")  # (the stand-in matplotlib beside the script is what Python imports: read, recorded)
    assert [line.split(" (sha256 ")[0] for line in lines[3:5]] == ['# Imported "matplotlib/__init__.py"',
                                                                   '# Imported "matplotlib/pyplot.py"']
    assert lines[5] == (
        "# Compiled: loss. Skipped (gradgen compile says why): make_data (line 8), init_params (line 15), "
        "example_point (line 19), sigmoid (line 24), train (line 33), plot_boundary (line 42), main (line 47).")
    module = load_module(text)
    assert sorted(n for n in vars(module) if n.endswith("_grad")) == ["loss_grad", "loss_value_and_grad"]
    # the gradient, against central differences of the user's own function
    user = original(project, "logreg")
    point = user["example_point"]()
    dw, db = module.loss_grad(point["w"], point["b"], X=point["X"], y=point["y"])
    np.testing.assert_allclose(dw, central(user["loss"], point, "w"), rtol=1e-7, atol=1e-10)
    assert db == pytest.approx(float(central(user["loss"], point, "b")), rel=1e-7)
    # `check` checks what compile compiled, at the point the script's own builder makes
    status, out, err = run(capsys, "check", "logreg.py", "--inputs", "logreg.py:example_point", "--wrt", "all")
    assert (status, err) == (0, "") and out.startswith("loss: gradient with respect to w, b\n")
    assert out.endswith("all gradients match (1 point(s) checked)\n")
    # and the script trains with the generated gradient
    ran = subprocess.run([sys.executable, "logreg.py"], cwd=project, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    losses = [float(line.rsplit(" ", 1)[1]) for line in ran.stdout.splitlines()]
    assert losses[0] > losses[-1] and losses[-1] < 0.2 and (project / "boundary.png").exists()


def test_a_script_with_module_level_code_classes_and_a_helper_that_is_a_loss_too(project, capsys):
    status, out, err = run(capsys, "compile", "decay.py")
    assert (status, out) == (0, "wrote generated/decay_grad.py (penalty_grad, penalty_value_and_grad, loss_grad, "
                                "loss_value_and_grad)\n  penalty: d/d(theta)\n  loss: d/d(theta); not t, observed "
                                "(keyword-only data)\n")
    assert err.splitlines() == DECAY_SKIPPED
    module = load_module((project / "generated" / "decay_grad.py").read_text())
    user = original(project, "decay")  # (its module-level code runs a short fit: the module works)
    point = user["point"]()
    np.testing.assert_allclose(module.loss_grad(**point), central(user["loss"], point, "theta"), rtol=1e-7)
    assert user["fit"](point["theta"], t=point["t"], observed=point["observed"], steps=50).value < user["loss"](**point)
    theta = point["theta"]
    np.testing.assert_allclose(module.penalty_grad(theta), 0.02 * theta, rtol=1e-15)
    status, out, err = run(capsys, "check", "decay.py", "--inputs", "decay.py:point")
    assert (status, err) == (0, "") and "all gradients match" in out and "penalty: gradient" in out


def test_the_command_the_header_gives_writes_the_same_module_after_an_edit(project, capsys):
    assert run(capsys, "compile", "logreg.py")[0] == 0
    target = project / "generated" / "logreg_grad.py"
    command = re.search(r"run `(gradgen compile [^`]*)` again", target.read_text())[1]
    assert command == "gradgen compile logreg.py"
    source = project / "logreg.py"
    source.write_text(LOGREG.replace("    return -np.mean(y", "    return 0.01 * np.sum(w ** 2) - np.mean(y"))
    assert run(capsys, "status")[:2] == (
        1, "stale  generated/logreg_grad.py (from logreg.py; compiled loss; 7 functions skipped): the source "
           "changed since it was generated; run `gradgen compile logreg.py`\n1 stale\n")
    status, out, err = run(capsys, *shlex.split(command)[1:])
    assert status == 0 and err.splitlines() == LOGREG_SKIPPED
    again = target.read_bytes()
    assert again.count(b"    dloss_dw = 0.02 * w\n") == 2  # the edit is in both functions
    assert run(capsys, "compile", "logreg.py", "--out-dir", "fresh")[0] == 0
    assert again == (project / "fresh" / "logreg_grad.py").read_bytes()  # byte for byte
    status, out, err = run(capsys, "status", "--json", "logreg.py")
    assert status == 0 and json.loads(out)[0]["compiled"] == ["loss"]
    assert json.loads(out)[0]["skipped"] == ["make_data", "init_params", "example_point", "sigmoid", "train",
                                             "plot_boundary", "main"]


def test_a_recompile_refuses_to_drop_a_function_the_module_has(project, capsys):
    """The loss edited into something gradgen refuses: a plain recompile (the pre-commit hook)
    must not write the module without loss_grad and succeed; it says what to do."""
    assert run(capsys, "compile", "logreg.py")[0] == 0
    target = project / "generated" / "logreg_grad.py"
    before = target.read_bytes()
    (project / "logreg.py").write_text(LOGREG.replace("    p = sigmoid(X @ w + b)\n",
                                                      "    p = sigmoid(X @ w + b)\n    print(sigmoid(b))\n"))
    status, out, err = run(capsys, "compile", "logreg.py")
    assert (status, out) == (1, "")
    assert err == (
        "logreg.py:30:11: 'print(...)' may use the function's variables, module constants and library functions; "
        "'sigmoid' is none of these here ('loss' has a gradient in the module compiled from this file before: fix "
        "this, or delete that module to compile the file without it)\n        print(sigmoid(b))\n              ^\n")
    assert target.read_bytes() == before
    # a fresh compile (no module to keep) compiles what it can: here nothing, so the refusal stands
    status, out, err = run(capsys, "compile", "logreg.py", "--out-dir", "fresh")
    assert status == 1 and err.startswith("logreg.py:30:11: 'print(...)' may use ") and "compiled from" not in err


def test_a_function_named_stays_strict_and_is_recorded_for_the_recompile(project, capsys):
    status, out, err = run(capsys, "compile", "decay.py", "--function", "loss")
    assert (status, err) == (0, "")
    target = project / "generated" / "decay_grad.py"
    lines = target.read_text().split("\n")
    assert lines[1] == "# Do not edit: run `gradgen compile decay.py --function loss` again instead."
    assert lines[3] == "# Compiled: loss."
    before = target.read_bytes()
    assert run(capsys, "compile", "decay.py") == (0, "wrote generated/decay_grad.py (loss_grad, "
                                                     "loss_value_and_grad)\n  loss: d/d(theta); not t, observed "
                                                     "(keyword-only data)\n", "")
    assert target.read_bytes() == before  # still loss alone: penalty is not added
    # each function a whole file skips is refused, located, when named
    assert run(capsys, "compile", "logreg.py", "--function", "init_params")[1:] == (
        "", 'logreg.py:16:12: dicts are not supported\n        return {"w": np.zeros(d), "b": 0.0}\n'
            "               ^\n")
    assert run(capsys, "compile", "logreg.py", "--function", "train")[2].startswith(
        "logreg.py:33:1: 'train' calls its parameter 'grad_fn', a function known only where 'train' is called")


def test_a_file_of_drivers_only_is_an_error_naming_each(project, capsys):
    source = ROOT / "examples" / "inputs.py"
    status, out, err = run(capsys, "compile", source, "--out-dir", "out")
    assert (status, out) == (1, "") and not (project / "out").exists()
    assert err == (f"{source}: no function here has a gradient of its own: logistic_regression (line 9): takes no "
                   "parameters; mlp (line 15): takes no parameters; gaussian_process (line 24): takes no parameters; "
                   "vae (line 31): takes no parameters; rnn (line 39): takes no parameters; mlp_typed (line 48): "
                   "takes no parameters\n")
    # a training script whose functions are all refused or skipped: the first refusal, located
    status, out, err = run(capsys, "compile", ROOT / "examples" / "newton_fit.py", "--out-dir", "out")
    assert status == 1 and err.splitlines()[0] == (
        f"{ROOT / 'examples' / 'newton_fit.py'}:39:15: the default value of 'start' must be a number")


def test_the_api_reports_the_module_level_code_left_to_run():
    compiled = compile_source(DECAY, "decay.py")
    assert compiled.top_level == [
        ("class Fit", [(8, 8)], "gradgen compiles top-level functions, not classes"),
        ("module-level code", [(61, 61), (63, 63)], "it runs when the file runs; gradgen compiles the functions "
                                                    "it calls")]
    assert list(compiled.skipped) == ["observations", "model", "grid", "summary", "report", "fit", "point"]
    assert compile_source(DECAY, "decay.py", functions=["loss"]).top_level == []
    with pytest.raises(CompileError) as caught:
        compile_source(DECAY, "decay.py", functions=["summary"])
    assert caught.value.format() == ('decay.py:40:12: dicts are not supported\n    '
                                     '    return {"amplitude": theta[0], "damping": theta[1], "frequency": theta[2]}\n'
                                     "               ^")


FORMS = '''import numpy as np
import seaborn as sns
import logreg_grad as grads
from generated.mlp_grad import loss_value_and_grad


def init_layers(sizes, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        params.append((rng.normal(size=(m, n)), np.zeros(n)))
    return params


def init_dict(d):
    params = {}
    params["w"] = np.zeros(d)
    return params


def either(x, flag):
    out = {}
    if flag:
        out = x
    return out


def label(x):
    return f"x = {x}"


def batches(X, size):
    for i in range(0, len(X), size):
        yield X[i:i + size]


def train(w, X, steps=10):
    for _ in range(steps):
        w = w - 0.1 * grads.loss_grad(w, X=X)
    return w


def train_mlp(params, X):
    value, g = loss_value_and_grad(params, X=X)
    return value


def heatmap(w):
    sns.heatmap(w)


def show(w):
    print(w)


def apply(f, x):
    return f(x)


def total(*xs):
    return xs[0] + xs[1]


async def fetch(x):
    return x


def loss(w, *, X):
    return np.sum((X @ w) ** 2) + total(w[0], w[1]) + apply(np.tanh, w[0])
'''


def test_each_form_of_a_function_that_is_no_loss_is_named():
    compiled = compile_source(FORMS, "forms.py")
    # either: one return, two kinds of value (the {} runs as written): a number when flag is set
    assert [f.name for f in compiled.functions] == ["either", "loss"]
    assert compiled.skipped == {
        "init_layers": "returns a list, not one number",
        "init_dict": "returns a dict, not one number",
        "label": "returns a string, not one number",
        "batches": "is a generator (it yields), not a function returning one number",
        "train": "calls 'grads.loss_grad' from logreg_grad (a driver, such as a training loop)",
        "train_mlp": "calls 'loss_value_and_grad' from generated.mlp_grad (a driver, such as a training loop)",
        "heatmap": "draws a plot (it uses seaborn)",
        "show": "returns nothing, not one number",
        "apply": "calls its parameter 'f' (it is inlined where a loss passes a function)",
        "total": "takes the *args its callers pass (it is inlined where a loss calls it)",
    }
    assert compiled.top_level == [("async def fetch", [(64, 64)], "gradgen compiles plain functions, not coroutines")]
    module = load_module(compiled.text)
    w, X = np.array([0.3, -0.7]), np.array([[1.0, 2.0], [0.5, -1.0]])
    expected = 2 * X.T @ (X @ w) + np.array([1.0 + 1.0 / np.cosh(w[0]) ** 2, 1.0])
    np.testing.assert_allclose(module.loss_grad(w, X=X), expected, rtol=1e-14)


def test_a_long_functions_line_keeps_the_options_after_it(tmp_path, monkeypatch, capsys):
    """The header's functions line of a file of many functions is long; the backend line after
    it is still read, so a plain recompile keeps the backend."""
    monkeypatch.chdir(tmp_path)
    source = "import numpy as np\n\n\n" + "".join(f"def make_{i}():\n    return {i}.0\n\n\n" for i in range(300))
    Path("many.py").write_text(source + "def loss(w):\n    return np.sum(w ** 2)\n")
    assert run(capsys, "compile", "many.py", "--backend", "array-api")[0] == 0
    assert len(Path("generated/many_grad.py").read_text().split("\n")[3]) > 4096
    status, out, err = run(capsys, "compile", "many.py")
    assert status == 0 and "backend: array-api (the backend of the module it replaced" in out
    assert len(err.splitlines()) == 300


def test_a_local_variable_named_like_a_function_does_not_make_it_a_helper():
    """Fuzz seed 2011 #659: `f, g = ...` in another function made the loss `f` that function's
    helper, and a whole-file compile skipped it ("its result may be an array")."""
    source = ("import numpy as np\n\n\ndef cell(a, b):\n    f, g = np.sin(a), b\n    return f * g\n\n\n"
              "def f(a, b):\n    return np.sin(a) * b\n")
    compiled = compile_source(source, "local.py")
    assert [fn.name for fn in compiled.functions] == ["cell", "f"]
    assert compiled.skipped == {}


def test_a_plain_recompile_keeps_every_option_the_module_was_made_with(tmp_path, monkeypatch, capsys):
    """Issue 24 item 2: compiled with --function --wrt --emit, then the source edited and
    compiled again as the header (and status, and the pre-commit hook) say: once the module
    became every function with every parameter (the gradient a tuple, the Hessian 1003x1003)."""
    from gradgen import load_module

    monkeypatch.chdir(tmp_path)
    source = ("import numpy as np\n\n\ndef fit(beta, X, y):\n    return np.sum((X @ beta - y) ** 2)\n\n\n"
              "def other(v):\n    return np.sum(v ** 2)\n")
    (tmp_path / "ridge.py").write_text(source)
    assert run(capsys, "compile", "ridge.py", "--function", "fit", "--wrt", "beta", "--emit", "grad,hessian")[0] == 0
    target = tmp_path / "generated" / "ridge_grad.py"
    command = "# Do not edit: run `gradgen compile ridge.py --function fit --wrt beta --emit grad,hessian` again instead."
    assert target.read_text().split("\n")[1] == command
    (tmp_path / "ridge.py").write_text(source.replace("** 2)\n\n\ndef other", "** 2) + 0.5 * beta @ beta\n\n\ndef other"))
    assert run(capsys, "compile", "ridge.py")[0] == 0
    text = target.read_text()
    assert text.split("\n")[1] == command
    module = load_module(text)
    X, y, beta = np.arange(12.0).reshape(4, 3) / 10, np.ones(4), np.array([0.1, -0.2, 0.3])
    assert module.fit_grad(beta, X, y).shape == (3,)  # beta's gradient alone, not a tuple
    np.testing.assert_allclose(module.fit_hessian(beta, X, y), 2 * X.T @ X + np.eye(3))
    assert not hasattr(module, "other_grad")
