"""gradgen.grad(f) and friends on live functions (gradgen/live.py): values against hand
derivatives, analytic Hessians and Jacobians and finite differences; the cache (memory,
disk, an edited file); `.source` and help(); the errors for what has no compilable source."""

import importlib.util
import inspect
import itertools
import json
import linecache
import pydoc
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest

import gradgen
from gradgen import api, live
from gradgen.errors import CompileError

ROOT = Path(__file__).resolve().parent.parent
_imports = itertools.count()

LOSS = '''\
import numpy as np

SCALE = 3.0
W = np.array([1.0, 2.0])


def helper(v):
    return v * SCALE


def loss(x, y):
    return np.sum(helper(x) ** 2 * W) + y ** 3


def nll(w, b, *, X, t):
    z = X @ w + b
    return np.sum(np.log(1 + np.exp(z)) - t * z)


def rosen2(x, y):
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def log_softmax(z):
    return z - np.log(np.sum(np.exp(z)))
'''

X0, Y0 = np.array([1.0, -2.0]), 0.5


pytestmark = pytest.mark.usefixtures("fresh_cache")  # (tests/conftest.py)


@pytest.fixture
def compiles(monkeypatch):
    """The emit_kinds of every call of the compiler."""
    calls = []
    real = api.compile_source

    def counting(*args, **kwargs):
        calls.append(kwargs["emit_kinds"])
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "compile_source", counting)
    return calls


def write_module(folder, text, stem="userloss"):
    """`text` written to folder/stem.py and imported from there (a new module each time)."""
    path = Path(folder) / f"{stem}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"{stem}_{next(_imports)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def user(tmp_path):
    return write_module(tmp_path, LOSS)


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def softmax(z):
    e = np.exp(z - np.max(z))
    return e / np.sum(e)


def test_grad_of_a_function_in_a_file_sees_its_constants_and_helpers(user):
    # loss = sum(SCALE**2 x**2 W) + y**3: d/dx = 2 * 9 * x * W, d/dy = 3 y**2
    dx, dy = gradgen.grad(user.loss, wrt='all')(X0, Y0)
    np.testing.assert_array_equal(dx, [18.0, -72.0])
    assert dy == 0.75
    assert gradgen.grad(user.loss, wrt='all').__name__ == "loss_grad"


def test_wrt_chooses_the_parameters(user):
    np.testing.assert_array_equal(gradgen.grad(user.loss, wrt="x")(X0, Y0), [18.0, -72.0])
    assert gradgen.grad(user.loss, wrt=["y"])(X0, Y0) == 0.75


def test_value_and_grad(user):
    value, (dx, dy) = gradgen.value_and_grad(user.loss, wrt='all')(X0, Y0)
    assert value == 9.0 * (1.0 * 1.0 + 4.0 * 2.0) + 0.125 == user.loss(X0, Y0)
    np.testing.assert_array_equal(dx, [18.0, -72.0])
    assert dy == 0.75


def test_jvp_is_the_gradient_dotted_with_the_tangent(user):
    tx, ty = np.array([0.3, -1.1]), 2.0
    value, derivative = gradgen.jvp(user.loss, wrt='all')(X0, Y0, dx=tx, dy=ty)
    dx, dy = gradgen.grad(user.loss, wrt='all')(X0, Y0)
    assert value == user.loss(X0, Y0)
    assert derivative == pytest.approx(np.dot(dx, tx) + dy * ty, rel=1e-14)
    # the module constants it reads are keyword arguments (passed their live values), then the tangents
    assert str(inspect.signature(gradgen.jvp(user.loss, wrt='all'))) == "(x, y, *, SCALE=3.0, W=array([1., 2.]), dx, dy)"


def test_hvp_against_finite_differences_of_the_gradient(user):
    """Logistic regression: two differentiated parameters and keyword-only data."""
    rng = np.random.default_rng(0)
    X, t = rng.normal(size=(6, 3)), (rng.random(6) < 0.5).astype(float)
    w, b, v, s = rng.normal(size=3), 0.2, rng.normal(size=3), -0.7
    grad = gradgen.grad(user.nll, wrt='all')
    p = sigmoid(X @ w + b)  # the gradient by hand: X.T (p - t), sum(p - t)
    np.testing.assert_allclose(grad(w, b, X=X, t=t)[0], X.T @ (p - t), rtol=1e-12)
    hw, hb = gradgen.hvp(user.nll, wrt='all')(w, b, X=X, t=t, dw=v, db=s)
    h = 1e-5
    (gw1, gb1), (gw0, gb0) = grad(w + h * v, b + h * s, X=X, t=t), grad(w - h * v, b - h * s, X=X, t=t)
    np.testing.assert_allclose(hw, (gw1 - gw0) / (2 * h), rtol=1e-7)
    assert hb == pytest.approx((gb1 - gb0) / (2 * h), rel=1e-7)


def test_hessian_of_rosenbrock_in_two_variables(user):
    x, y = -1.2, 1.0
    analytic = np.array([[2 - 400 * (y - x ** 2) + 800 * x ** 2, -400 * x], [-400 * x, 200.0]])
    np.testing.assert_allclose(gradgen.hessian(user.rosen2, wrt='all')(x, y), analytic, rtol=1e-13)


def rosen_hessian(x):
    """The analytic Hessian of sum(100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2)."""
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i + 1, i + 1] += 200
        H[i, i + 1] = H[i + 1, i] = -400 * x[i]
    return H


def test_hessian_of_rosenbrock_in_five_variables(user):
    x = np.array([-1.2, 1.0, 0.5, 2.0, -0.3])
    H = gradgen.hessian(user.rosen)(x)
    assert H.shape == (5, 5)
    np.testing.assert_allclose(H, rosen_hessian(x), rtol=1e-13, atol=1e-12)


def test_jacobian_and_vjp_of_log_softmax(user):
    z = np.array([0.3, -1.0, 2.0, 0.5])
    analytic = np.eye(4) - softmax(z)[None, :]  # d log_softmax_i / d z_j = [i == j] - softmax_j
    np.testing.assert_allclose(gradgen.jacobian(user.log_softmax)(z), analytic, rtol=1e-13, atol=1e-15)
    c = np.array([1.0, -2.0, 0.5, 3.0])
    np.testing.assert_allclose(gradgen.vjp(user.log_softmax)(z, cotangent=c), c @ analytic, rtol=1e-13)


def test_an_array_result_has_no_gradient(user):
    with pytest.raises(CompileError, match="'log_softmax' returns an array, and a gradient needs one number"):
        gradgen.hessian(user.log_softmax)


def test_the_same_text_as_the_compiler_writes(user):
    path = Path(user.__file__)
    for kind in ("grad", "jvp", "hvp", "hessian"):
        expected = api.compile_source(path.read_bytes(), str(path), functions=["rosen"], emit_kinds=(kind,)).text
        assert getattr(gradgen, kind)(user.rosen).source == expected
    expected = api.compile_source(path.read_bytes(), str(path), functions=["log_softmax"], emit_kinds=("vjp",))
    assert gradgen.vjp(user.log_softmax).source == expected.text


def test_a_second_call_is_served_from_memory(user, compiles):
    first = gradgen.grad(user.loss, wrt='all')
    assert gradgen.grad(user.loss, wrt='all') is first
    assert compiles == [("grad",)]
    assert gradgen.value_and_grad(user.loss, wrt='all')(X0, Y0)[0] == user.loss(X0, Y0)  # the same module,
    assert compiles == [("grad",), ("grad",)]  # and once for the shapes of the call (gradgen/live/ranks.py)
    first(X0, Y0)
    first(2 * X0, Y0 + 1.0)  # (the same shapes: the same module)
    assert compiles == [("grad",), ("grad",)]
    gradgen.hvp(user.loss, wrt='all')  # another kind is another module
    assert compiles == [("grad",), ("grad",), ("hvp",)]


def test_a_new_process_is_served_from_disk(user, compiles, tmp_path):
    gradgen.grad(user.loss, wrt='all')(X0, Y0)  # the module for any shapes, and the one for these
    stored = list((tmp_path / "cache").glob("*.json"))
    assert len(stored) == 2 and not list((tmp_path / "cache").glob(".*"))  # no temporary file left
    assert json.loads(stored[0].read_text())["names"] == {"grad": "loss_grad", "value_and_grad": "loss_value_and_grad"}
    live.clear_cache()  # as in a new process
    dx, dy = gradgen.grad(user.loss, wrt='all')(X0, Y0)
    assert compiles == [("grad",), ("grad",)] and dy == 0.75


def test_a_fresh_interpreter_loads_from_disk_without_the_compiler(user, tmp_path):
    gradgen.grad(user.loss, wrt='all')(np.array([1.0, -2.0]), 0.5)  # (and the module for these shapes)
    code = (f"import importlib.util, sys, gradgen\n"
            f"spec = importlib.util.spec_from_file_location('userloss', {user.__file__!r})\n"
            f"m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            f"print(gradgen.grad(m.loss, wrt='all')(m.np.array([1.0, -2.0]), 0.5)[1], 'gradgen.api' in sys.modules)")
    env = {"GRADGEN_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.stdout == "0.75 False\n", result.stderr


def test_an_edited_file_is_compiled_again(tmp_path, compiles):
    first = write_module(tmp_path, "def f(x):\n    return x ** 2\n")
    assert gradgen.grad(first.f)(3.0) == 6.0
    again = write_module(tmp_path, "def f(x):\n    return x ** 2\n")  # re-imported, unchanged
    assert gradgen.grad(again.f)(3.0) == 6.0 and len(compiles) == 1
    edited = write_module(tmp_path, "def f(x):\n    return x ** 3\n")
    assert gradgen.grad(edited.f)(3.0) == 27.0
    assert len(compiles) == 2


def test_a_damaged_disk_entry_is_compiled_again(user, compiles, tmp_path):
    gradgen.grad(user.loss, wrt='all')
    (entry,) = (tmp_path / "cache").glob("*.json")
    entry.write_text('{"format": 1, "text": "def loss_grad(:')
    live.clear_cache()
    assert gradgen.grad(user.loss, wrt='all')(X0, Y0)[1] == 0.75
    assert len(compiles) == 3  # (the plain module again, then the one for the call's shapes)
    assert json.loads(entry.read_text())["names"]["grad"] == "loss_grad"  # rewritten


def test_where_the_disk_cache_lives(monkeypatch, tmp_path):
    monkeypatch.delenv("GRADGEN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert live.cache_dir() == tmp_path / "xdg" / "gradgen"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert live.cache_dir() == tmp_path / "home" / ".cache" / "gradgen"
    monkeypatch.setenv("GRADGEN_CACHE_DIR", str(tmp_path / "mine"))
    assert live.cache_dir() == tmp_path / "mine"


def test_an_empty_cache_dir_turns_the_disk_cache_off(user, monkeypatch, tmp_path, compiles):
    monkeypatch.setenv("GRADGEN_CACHE_DIR", "")
    gradgen.grad(user.loss, wrt='all')
    live.clear_cache()
    gradgen.grad(user.loss, wrt='all')
    assert len(compiles) == 2 and not (tmp_path / "cache").exists()


def test_source_and_help_show_the_generated_code(user):
    g = gradgen.hessian(user.rosen)
    code = inspect.getsource(g)  # the generated module is in linecache
    assert code.startswith("def rosen_hessian(x):\n") and code in g.source
    shown = pydoc.render_doc(g, renderer=pydoc.plaintext)
    assert "Hessian of rosen with respect to x: an (N, N) array" in shown
    assert f"Compiled by gradgen.hessian(rosen) from {user.__file__}." in shown
    for line in g.source.splitlines():  # the whole module, hvp and helpers too
        assert line.strip() in shown
    assert "def rosen_hvp(x, *, dx):" in shown


def test_a_compile_error_is_located_in_the_user_file_without_compiler_frames(tmp_path):
    module = write_module(tmp_path, "import numpy as np\n\n\ndef f(x):\n    return x * K\n")
    with pytest.raises(CompileError) as info:
        gradgen.grad(module.f)
    assert str(info.value) == (f"{tmp_path / 'userloss.py'}:5:16: unknown name 'K'\n"
                               "        return x * K\n"
                               "                   ^")
    frames = [Path(frame.filename).name for frame in traceback.extract_tb(info.tb)]
    assert frames == ["test_live.py", "__init__.py", "__init__.py"]  # grad, then _public's raise (gradgen/live/)


def test_a_lambda_compiles_from_its_line():
    square = lambda x: x * x  # noqa: E731
    assert gradgen.grad(square)(1.5) == 3.0
    assert "def square_grad(x):" in gradgen.grad(square).source


def test_functions_without_a_compilable_source():
    namespace = {}
    exec("def f(x):\n    return x * x\n", namespace)
    with pytest.raises(CompileError) as info:
        gradgen.jvp(namespace["f"])
    assert str(info.value) == (
        "gradgen.jvp(f): the source of 'f' cannot be found: it was made by exec or compile (its file is <string>, "
        "neither a file nor a notebook cell); define it in a .py file or a notebook cell, or compile its text "
        "with gradgen.compile_source")
    with pytest.raises(CompileError) as info:
        gradgen.grad(abs)
    assert str(info.value) == ("gradgen.grad(abs): the builtin 'abs' is not a Python function written with 'def'; "
                               "gradgen compiles a function from its source")

    def inner(x):
        return x * x

    assert gradgen.grad(inner)(-2.0) == -4.0  # (a nested function compiles from its file: test_live_closures.py)


NOTEBOOK_CELL = '''\
import numpy as np

K = 2.0


def f(x):
    return np.sum(K * x ** 2)
'''


def run_cell(monkeypatch, text, number):
    """What IPython does with a cell: its text registered in linecache under a made-up
    filename, then compiled with that filename and run."""
    filename = f"<ipython-input-{number}-0123456789ab>"
    monkeypatch.setitem(linecache.cache, filename, (len(text), None, text.splitlines(True), filename))
    namespace = {"__name__": "__main__"}
    exec(compile(text, filename, "exec"), namespace)
    return namespace


def test_a_function_from_a_notebook_cell(monkeypatch):
    cell = run_cell(monkeypatch, NOTEBOOK_CELL, 1)
    g = gradgen.grad(cell["f"])
    np.testing.assert_array_equal(g(np.array([1.0, -3.0])), [4.0, -12.0])  # 2 K x
    assert "K = 2.0" in g.source and '"<ipython-input-1-0123456789ab>"' in g.source


def test_a_name_of_another_cell_is_read_from_the_running_notebook(monkeypatch):
    run_cell(monkeypatch, NOTEBOOK_CELL, 1)
    cell = run_cell(monkeypatch, "def h(x):\n    return x * K\n", 2)
    cell["K"] = 2.0  # (as if the cells shared their namespace)
    g = gradgen.grad(cell["h"])
    assert g(1.0) == 2.0
    cell["K"] = 5.0  # passed again on every call
    assert g(1.0) == 5.0
    assert "def h_grad(x, *, K):" in g.source


def test_a_name_no_cell_defines_is_unknown(monkeypatch):
    cell = run_cell(monkeypatch, "def h(x):\n    return x * K2\n", 2)
    with pytest.raises(CompileError) as info:
        gradgen.grad(cell["h"])
    assert str(info.value) == textwrap.dedent("""\
        <ipython-input-2-0123456789ab>:2:16: unknown name 'K2'; a notebook cell is compiled on its own: define it \
(constants and imports too) in the cell that defines 'h'
                return x * K2
                           ^""")


def test_a_real_ipython_cell(tmp_path):
    """IPython's own cell filenames and linecache entries (in a fresh interpreter: a shell
    changes builtins and sys.modules['__main__'])."""
    pytest.importorskip("IPython")
    code = textwrap.dedent(f"""\
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config
        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        shell = InteractiveShell.instance(config=config)
        shell.run_cell({NOTEBOOK_CELL!r}, store_history=False).raise_error()
        shell.run_cell("import gradgen; g = gradgen.grad(f)", store_history=False).raise_error()
        f, g, np = shell.user_ns["f"], shell.user_ns["g"], shell.user_ns["np"]
        print(f.__code__.co_filename[:15], g(np.array([0.5])), g.__name__)
        """)
    env = {"GRADGEN_CACHE_DIR": "", "IPYTHONDIR": str(tmp_path / "ipython"), "PATH": "/usr/bin:/bin",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.stdout == "<ipython-input- [2.] f_grad\n", result.stderr
