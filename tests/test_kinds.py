"""--emit jvp, hvp, hessian, vjp, jacobian: each against an independent reference.

The corpus sweep runs every corpus function that has a gradient and a point through forward
mode (jvp = grad . t, the gradient being checked against sympy elsewhere) and forward over
reverse (hvp = central differences of the gradient along t). The named cases compare with
closed forms: Rosenbrock's Hessian (scipy's), a logistic regression's Hessian-vector product,
log_softmax's Jacobian and vector-Jacobian product.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.optimize

from gradgen import compile_source, load_module
from gradgen.codegen import emit
from gradgen.errors import CompileError
from gradgen.rules import table
from regenerate_goldens import WRT

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.glob("*/*.py"))


def compiled(source, kinds, functions=None, wrt="all", name="kinds_module"):
    with emit.unformatted():
        c = compile_source(source, "kinds.py", functions, wrt, kinds)
    return c, load_module(c.text, name)


# ---- the corpus, every function ------------------------------------------------------------

def _user_module(path):
    spec = importlib.util.spec_from_file_location(f"corpus_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _point(tree, node, path, cache):
    """The function's inputs_<name>() point, or its defaults, or None."""
    if any(getattr(n, "name", None) == f"inputs_{node.name}" for n in tree.body):
        cache.setdefault("user", _user_module(path))
        return getattr(cache["user"], f"inputs_{node.name}")()
    args = node.args
    if len(args.defaults) < len(args.args) or any(d is None for d in args.kw_defaults):
        return None
    return {}


def _like(value, rng):
    if isinstance(value, (list, tuple)):
        return type(value)(_like(v, rng) for v in value)
    if isinstance(value, dict):
        return {k: _like(v, rng) for k, v in value.items()}
    return rng.standard_normal(np.shape(value)) if np.ndim(value) else float(rng.standard_normal())


def _flat(value):
    if isinstance(value, (list, tuple)):
        return np.concatenate([_flat(v) for v in value]) if value else np.zeros(0)
    if isinstance(value, dict):
        return np.concatenate([_flat(v) for v in value.values()]) if value else np.zeros(0)
    return np.ravel(np.asarray(value, float))


def _axpy(x, t, h):
    if isinstance(x, (list, tuple)):
        return type(x)(_axpy(a, b, h) for a, b in zip(x, t))
    if isinstance(x, dict):
        return {k: _axpy(x[k], t[k], h) for k in x}
    return x + h * t


def _tangent_names(fn, wrt):
    kwonly = [p.name for p in inspect.signature(fn).parameters.values() if p.kind == p.KEYWORD_ONLY]
    return dict(zip(wrt, kwonly[-len(wrt):]))


def _close(got, want, tol):
    got, want = _flat(got), _flat(want)
    return got.shape == want.shape and np.max(np.abs(got - want), initial=0) <= tol * (1 + np.max(np.abs(want), initial=0))


def _sweep_function(source, tree, node, path, cache):
    """None if fine or not applicable; else what disagreed."""
    try:
        c, m = compiled(source, ("grad", "jvp", "hvp"), [node.name], name=f"kinds_{path.stem}_{node.name}")
    except CompileError as exc:
        if "forward mode" in exc.message:
            return None  # a located refusal (a primitive forward mode does not know): never a wrong number
        return None  # refused for the gradient too: tests elsewhere
    f = c.functions[0]
    point = _point(tree, node, path, cache) if f.wrt else None
    if point is None:
        return None
    defaults = {p.name: p.default for p in f.ir.params if p.has_default and not p.function}
    base = {**defaults, **point}
    rng = np.random.default_rng(7)
    grad, jvp, hvp = (getattr(m, n) for n in (f.grad_name, f"{node.name}_jvp", f"{node.name}_hvp"))
    t = {p: _like(base[p], rng) for p in f.wrt}
    names = _tangent_names(jvp, f.wrt)
    tangents = {names[p]: t[p] for p in f.wrt}

    def run(fn, at=point, **extra):
        return fn(**copy.deepcopy(at), **extra)

    g = run(grad)
    g = g if len(f.wrt) > 1 else (g,)
    _, derivative = run(jvp, **tangents)
    want = sum(float(np.dot(_flat(gi), _flat(t[p]))) for gi, p in zip(g, f.wrt))
    if not _close(derivative, want, 1e-7):
        return f"{node.name}: jvp {derivative} but grad . t = {want}"
    h = 1e-5
    plus = run(grad, {**point, **{p: _axpy(base[p], t[p], h) for p in f.wrt}})
    minus = run(grad, {**point, **{p: _axpy(base[p], t[p], -h) for p in f.wrt}})
    fd = (_flat(plus) - _flat(minus)) / (2 * h)
    product = run(hvp, **tangents)
    if not _close(product, fd, 1e-4):
        return f"{node.name}: hvp {_flat(product)} but differences of the gradient give {fd}"
    return None


@pytest.mark.parametrize("name", FILES)
def test_corpus_jvp_is_grad_dot_t_and_hvp_is_the_gradients_derivative(name):
    path = CORPUS / name
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    cache = {}
    failures = [msg for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("inputs_")
                for msg in [_sweep_function(source, tree, node, path, cache)] if msg]
    assert not failures, "\n".join(failures)


# ---- named references ----------------------------------------------------------------------

ROSENBROCK = '''
import numpy as np


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
'''


@pytest.mark.parametrize("x", [np.array([1.2, 0.8]), np.array([-1.0, 0.5, 1.5, 0.3, 2.0])])
def test_rosenbrock_hessian_is_scipys(x):
    _, m = compiled(ROSENBROCK, ("grad", "hessian"))
    hessian = m.rosenbrock_hessian(x)
    assert hessian.shape == (x.size, x.size)
    np.testing.assert_allclose(hessian, scipy.optimize.rosen_hess(x), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(m.rosenbrock_hvp(x, dx=np.arange(x.size) + 1.0),
                               scipy.optimize.rosen_hess_prod(x, np.arange(x.size) + 1.0), rtol=1e-12)


LOGISTIC = '''
import numpy as np


def loss(w, b, *, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z)
'''


def test_logistic_regression_hvp_with_two_parameters_and_keyword_data():
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((30, 4)), (rng.random(30) > 0.4) * 1.0
    w, b = rng.standard_normal(4), 0.3
    dw, db = rng.standard_normal(4), -0.7
    c, m = compiled(LOGISTIC, ("grad", "hvp", "hessian"))
    assert list(inspect.signature(m.loss_hvp).parameters) == ["w", "b", "X", "y", "dw", "db"]
    hw, hb = m.loss_hvp(w, b, X=X, y=y, dw=dw, db=db)
    p = 1 / (1 + np.exp(-(X @ w + b)))
    A = np.c_[X, np.ones(30)]
    H = (A.T * (p * (1 - p))) @ A / 30  # the closed form: A^T diag(p (1 - p)) A / n
    want = H @ np.r_[dw, db]
    np.testing.assert_allclose(hw, want[:4], rtol=1e-12, atol=1e-14)
    assert isinstance(hb, float) or np.ndim(hb) == 0
    np.testing.assert_allclose(hb, want[4], rtol=1e-12)
    np.testing.assert_allclose(m.loss_hessian(w, b, X=X, y=y), H, rtol=1e-12, atol=1e-14)


LOG_SOFTMAX = '''
import numpy as np


def log_softmax(x):
    shifted = x - np.max(x)
    return shifted - np.log(np.sum(np.exp(shifted)))
'''


def test_log_softmax_vjp_and_jacobian():
    x = np.array([0.3, -1.2, 2.0, 0.1])
    c, m = compiled(LOG_SOFTMAX, ("vjp", "jacobian"))
    assert [made.name for made in c.functions[0].made] == ["log_softmax_jvp", "log_softmax_vjp", "log_softmax_jacobian"]
    s = np.exp(x) / np.exp(x).sum()
    J = np.eye(4) - s[None, :]  # d log_softmax_i / d x_j
    np.testing.assert_allclose(m.log_softmax_jacobian(x), J, rtol=1e-12, atol=1e-15)
    cotangent = np.array([1.0, -2.0, 0.5, 3.0])
    np.testing.assert_allclose(m.log_softmax_vjp(x, cotangent=cotangent), cotangent @ J, rtol=1e-12, atol=1e-15)


def test_jacobian_shape_is_result_shape_plus_parameter_shape():
    source = '''
import numpy as np


def layer(W, b, *, x):
    return np.tanh(x @ W + b)
'''
    rng = np.random.default_rng(0)
    W, b, x = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal((5, 3))
    _, m = compiled(source, ("jacobian",))
    jW, jb = m.layer_jacobian(W, b, x=x)
    assert jW.shape == (5, 2, 3, 2) and jb.shape == (5, 2, 2)
    d = 1 - np.tanh(x @ W + b) ** 2
    np.testing.assert_allclose(jb, d[:, :, None] * np.eye(2)[None], rtol=1e-12)
    np.testing.assert_allclose(jW, np.einsum("nj,ni,jk->njik", d, x, np.eye(2)), rtol=1e-12)


LOOP = '''
import math


def f(a=0.7, b=1.3, n=5):
    s = 0.0
    x = a
    for i in range(n):
        x = math.sin(x) * b
        if x > 0.5:
            s += x * x
        else:
            s -= x
    return s
'''


def test_forward_mode_through_a_loop_with_a_branch():
    c, m = compiled(LOOP, ("grad", "jvp", "hvp"))
    text = c.text
    assert "        sin_x = math.sin(x)\n        dx = dx * math.cos(x) * b + db * sin_x\n        x = sin_x * b\n" in text
    value, derivative = m.f_jvp(0.7, 1.3, da=1.0, db=0.0)

    def plain(a, b):
        s, x = 0.0, a
        for _ in range(5):
            x = math.sin(x) * b
            s = s + x * x if x > 0.5 else s - x
        return s

    import math
    assert value == plain(0.7, 1.3)
    h = 1e-6
    assert derivative == pytest.approx((plain(0.7 + h, 1.3) - plain(0.7 - h, 1.3)) / (2 * h), rel=1e-8)
    ga, gb = m.f_grad(0.7, 1.3)
    assert m.f_jvp(0.7, 1.3, da=0.3, db=-2.0)[1] == pytest.approx(0.3 * ga - 2.0 * gb, rel=1e-13)


def test_seed_network_jvp_is_the_lessons_dual_numbers():
    c, _ = compiled((ROOT / "examples" / "seed_net.py").read_text(), ("jvp",))
    body = c.text.split("def loss_jvp(")[1]
    lines = [line.strip() for line in body.splitlines() if line.startswith("    ") and not line.strip().startswith(("#", '"'))]
    code = lines[lines.index("# forward pass, each value followed by its tangent") + 1:] if "# forward pass" in lines else lines
    assert [line for line in code if line.startswith(("z1", "dz1", "h ", "dh", "yhat", "dyhat", "L ", "dL", "return"))] == [
        "z1 = w1 * x1 + w2 * x2 + b1",
        "dz1 = dw1 * x1 + dw2 * x2 + db1",
        "h = sigmoid(z1)",
        "dh = dz1 * h * (1 - h)",
        "yhat = w3 * h + b2",
        "dyhat = dw3 * h + dh * w3 + db2",
        "L = (yhat - y) ** 2",
        "dL = dyhat * 2 * (yhat - y)",
        "return L, dL",
    ]


def test_tangent_names_avoid_the_users_names():
    source = '''
def f(x=1.0, dx=2.0):
    return x * dx
'''
    c, m = compiled(source, ("jvp",))
    assert list(inspect.signature(m.f_jvp).parameters) == ["x", "dx", "dx_1", "ddx"]
    assert m.f_jvp(1.0, 2.0, dx_1=1.0, ddx=0.0) == (2.0, 2.0)


# ---- refusals --------------------------------------------------------------------------------

def test_forward_mode_refuses_a_primitive_it_has_no_rule_for(monkeypatch):
    # every primitive a user writes has a forward rule now (the multivariate normal's last, for
    # autograd's gmm): the refusal is checked with that rule taken out of the table
    source = '''
import numpy as np
from scipy.stats import multivariate_normal


def f(mu):
    return multivariate_normal.logpdf(np.array([0.5, -0.2]), mu, np.eye(2))
'''
    mu = np.array([0.1, 0.3])
    want = -np.dot(mu - [0.5, -0.2], [1.0, 0.0])  # d/dmu along (1, 0): -(mu - x) . e1
    assert compiled(source, ("grad", "jvp"))[1].f_jvp(mu, dmu=np.array([1.0, 0.0]))[1] == pytest.approx(want)
    monkeypatch.setitem(table.TABLE, "mvn_logpdf", dataclasses.replace(table.TABLE["mvn_logpdf"], tangent=None))
    with pytest.raises(CompileError) as info:
        compiled(source, ("grad", "jvp"))
    assert info.value.format() == (
        "kinds.py:7:12: forward mode (jvp, hvp, hessian, jacobian) cannot differentiate "
        "scipy.stats.multivariate_normal.logpdf yet; emit only the gradient here (--emit grad, or grad/vjp), "
        "or write it with operations it knows\n"
        "        return multivariate_normal.logpdf(np.array([0.5, -0.2]), mu, np.eye(2))\n"
        "               ^")


def test_hvp_refuses_a_second_derivative_it_has_no_rule_for(monkeypatch):
    # np.cumprod's backward helper has its second derivative now (issue 22): the refusal is
    # checked with that rule taken out of the table, as a helper with none is refused
    source = '''
import numpy as np


def f(x):
    return np.sum(np.cumprod(x))
'''
    assert compiled(source, ("grad", "jvp"))[1].f_jvp(np.array([2.0, 3.0]), dx=np.array([1.0, 0.0]))[1] == 4.0
    hvp = compiled(source, ("grad", "hvp"))[1].f_hvp(np.array([2.0, 3.0]), dx=np.array([1.0, 0.0]))
    np.testing.assert_allclose(hvp, [0.0, 1.0])  # of x0 + x0 x1: the Hessian [[0, 1], [1, 0]] along (1, 0)
    monkeypatch.setitem(table.TABLE, "cumprod_grad", dataclasses.replace(table.TABLE["cumprod_grad"], tangent=None))
    with pytest.raises(CompileError) as info:
        compiled(source, ("grad", "hvp"))
    assert info.value.format() == (
        "kinds.py: forward mode (jvp, hvp, hessian, jacobian) cannot differentiate the second derivative of "
        "np.cumprod yet; emit only the gradient here (--emit grad, or grad/vjp), or write it with operations it knows")


def test_unknown_kind_is_an_error_naming_the_kinds():
    result = subprocess.run([sys.executable, "-m", "gradgen", "compile", "x.py", "--emit", "grad,hesian"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == ("gradgen compile: error: argument --emit: unknown --emit kind "
                                             "'hesian': choose from grad, jvp, hvp, grad_and_hvp, hessian, vjp, jacobian "
                                             "(comma-separated)")


def test_check_verifies_every_kind(tmp_path):
    (tmp_path / "loss.py").write_text(LOGISTIC + ROSENBROCK.replace("import numpy as np\n", ""))
    (tmp_path / "point.py").write_text(
        "import numpy as np\n\ndef make():\n    rng = np.random.default_rng(2)\n"
        "    return {'w': rng.standard_normal(3), 'b': 0.1, 'X': rng.standard_normal((8, 3)),\n"
        "            'y': (rng.random(8) > 0.5) * 1.0, 'x': np.array([1.2, 0.8, -0.4])}\n")
    result = subprocess.run([sys.executable, "-m", "gradgen", "check", "loss.py", "--emit", "jvp,hvp,hessian",
                             "--inputs", "point.py:make"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [line.split(" (against")[0] for line in result.stdout.splitlines() if " (jvp)" in line or " (hvp)" in line
             or " (hessian)" in line]
    assert lines == ["loss_jvp (jvp): ok", "loss_hvp (hvp): ok", "loss_hessian (hessian): ok",
                     "rosenbrock_jvp (jvp): ok", "rosenbrock_hvp (hvp): ok", "rosenbrock_hessian (hessian): ok"]


# ---- the examples ----------------------------------------------------------------------------

def _example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_newton_fit_converges_with_the_generated_hessian():
    newton = _example("newton_fit")
    result = newton.fit()
    assert result.success and result.nit < 30
    t, y = newton.make_data()
    free = scipy.optimize.minimize(lambda p: 0.5 * np.sum((p[0] * np.exp(-p[1] * t) + p[2] - y) ** 2),
                                   np.array([1.0, 0.2, 0.0]), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(result.x, free.x, rtol=1e-5)


def test_forward_vs_reverse_agree():
    rows = _example("forward_vs_reverse").compare(sizes=(7,))
    assert [n for n, *_ in rows] == [7]


def test_hvp_saves_a_copy_of_a_tangent_written_in_place():
    """Found by tests/test_properties.py: `s[0] *= np.arctan(b)` saves a copy of s for the
    backward pass; the tangent's save must be a copy too, or the write into ds changes it."""
    source = '''
import numpy as np


def f(a, b, *, X):
    s = -a
    s[0] *= np.arctan(b)
    for i in range(1):
        s -= np.arctan(2.0) / (i + 1)
    return s.sum()
'''
    c, m = compiled(source, ("grad", "hvp"))
    assert "    ds_stack.append(np.copy(ds))\n" in c.text
    a, b = np.array([[-0.8, -0.3, 0.5], [-0.3, -0.9, 0.7]]), -1.4
    ha, hb = m.f_hvp(a, b, X=None, da=np.zeros_like(a), db=1.0)
    assert hb == pytest.approx(np.sum(a[0]) * 2 * b / (1 + b * b) ** 2, rel=1e-12)  # d2f/db2, f = -sum(a0) atan(b) + ...
    np.testing.assert_allclose(ha, np.r_[[np.full(3, -1 / (1 + b * b))], [np.zeros(3)]], rtol=1e-12)


def test_forward_rules_for_cholesky_and_sort():
    source = '''
import numpy as np


def chol_loss(A):
    L = np.linalg.cholesky(A @ A.T + 3.0 * np.eye(3))
    return np.sum(np.log(np.diag(L))) + np.sum(L ** 2)


def sorted_loss(x):
    return np.sum(np.sort(x) * np.arange(4.0)) + np.sum(np.sort(x ** 3) * np.linspace(0, 1, 4))
'''
    _, m = compiled(source, ("grad", "jvp"))
    rng = np.random.default_rng(5)
    A, dA = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    assert m.chol_loss_jvp(A, dA=dA)[1] == pytest.approx(np.sum(m.chol_loss_grad(A) * dA), rel=1e-10)
    x, dx = np.array([0.3, -1.2, 2.0, 0.7]), rng.standard_normal(4)
    order = np.argsort(x)
    want = np.zeros(4)
    want[order] = np.arange(4.0) + np.linspace(0, 1, 4) * 3 * x[order] ** 2  # x**3 keeps the order
    assert m.sorted_loss_jvp(x, dx=dx)[1] == pytest.approx(want @ dx, rel=1e-12)


def test_a_kind_that_disagrees_is_a_failed_row():
    from gradgen.verify.derivatives import KindReport, KindRow, format_kinds

    report = KindReport("loss", "loss_hvp", "hvp", [KindRow("hvp", "against finite differences of the gradient",
                                                           3e-3, 1)])
    assert not report.ok
    assert format_kinds([report]) == [
        "loss_hvp (hvp): MISMATCH",
        "    point | checked against                    | relative error | ok",
        "    1     | finite differences of the gradient | 3.0e-03        | FAIL",
    ]
    assert KindRow("jvp", "against grad . t", 2e-8).ok is False  # two generated functions agree to 1e-8


def test_a_tangent_that_simplifies_to_another_is_still_a_new_array():
    """Soak seed 1216 #2009: `trace.append(t * 1.0)` stores a new array, but its tangent
    `dt * 1.0` folded to `dt` itself, so writing into dt later (`t[0:] += ...`) changed the
    stored tangent too. Where a function writes in place, such a tangent is copied."""
    source = '''
import numpy as np


def f(b):
    t = np.tanh(b)
    trace = []
    for i in range(2):
        t = t - 0.5
        trace.append(t * 1.0)
    t[0:] += np.tanh(b)
    return np.mean(t) + np.sum(trace[0] * trace[1])
'''
    c, m = compiled(source, ("grad", "jvp"))
    assert "        dtrace.append(dt * 1.0)\n" in c.text
    b, db = np.array([0.3, -0.8, 1.1]), np.array([1.0, 2.0, -1.0])
    assert m.f_jvp(b, db=db)[1] == pytest.approx(float(m.f_grad(b) @ db), rel=1e-12)


def test_a_hessian_of_a_structured_parameter_is_a_located_refusal():
    source = '''
import numpy as np


def f(params: list):
    return np.sum(params[0] ** 2) + np.sum(params[1] ** 3)
'''
    with pytest.raises(CompileError) as info:
        compiled(source, ("grad", "hessian"))
    assert info.value.format() == ("kinds.py: 'f': a Hessian for a list, tuple or dict parameter is not written yet; "
                                   "pass its arrays as separate parameters, or emit hvp")
    _, m = compiled(source, ("grad", "hvp"))
    hv = m.f_hvp([np.array([1.0, 2.0]), np.array([3.0])], dparams=[np.array([1.0, 0.0]), np.array([1.0])])
    np.testing.assert_allclose(hv[0], [2.0, 0.0])
    np.testing.assert_allclose(hv[1], [18.0])


@pytest.mark.parametrize("name, kinds", [("decay_model", ("grad", "hessian")),
                                         ("rosenbrock", ("grad", "jvp", "hvp", "hessian"))])
def test_emitted_kinds_golden_files(name, kinds):
    """tests/golden_kinds/: the examples compiled with --emit, byte for byte (regenerate by
    writing compile_source(..., emit_kinds=kinds).text there)."""
    golden = (ROOT / "tests" / "golden_kinds" / f"{name}_grad.py").read_bytes()
    text = compile_source((ROOT / "examples" / f"{name}.py").read_bytes(), f"examples/{name}.py", emit_kinds=kinds, wrt=WRT.get(name)).text
    assert text.encode("utf-8") == golden


def test_a_tangent_accumulation_never_changes_another_tangent_in_place():
    """Soak seed 1224 #13760: `min(a, u) + a / u` with u = a. The gradient's `df_da =
    df_dparts_inner if a <= u else 0.0` then `df_da += ...` had the tangent `ddf_da +=
    ...`, and ddf_da was the very 0-d array ddf_dparts_inner held, which the next line read:
    the hvp was -1/a**2, the Hessian (of a + 1) is 0."""
    source = ("def f(a: float = -0.6, c: float = 0.1):\n    u = a\n    parts = [min(a, u) + a / u]\n"
              "    return parts[0]\n")
    _, m = compiled(source, ("grad", "hvp"))
    product = m.f_hvp(da=1.0, dc=0.0)
    assert float(product[0]) == 0.0 and float(product[1]) == 0.0
    text = compile_source(source, "kinds.py", emit_kinds=("grad", "hvp"), wrt="all").text
    assert "ddf_da += " not in text and "ddf_da = ddf_da + " in " ".join(text.split())
