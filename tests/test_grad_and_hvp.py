"""--emit grad_and_hvp (gradgen/codegen/derivatives.py): the hvp's one pass, returning the
gradient it computes on the way beside the Hessian times the direction, as jax.jvp of
jax.grad gives both (a Newton step J / H needs the two: kmeans_dir). Its halves are f_grad's
and f_hvp's numbers; its text, golden; `gradgen check` checks it against finite differences;
gradgen.grad_and_hvp returns it for a live function."""

import subprocess
import sys

import numpy as np

import gradgen
from gradgen import compile_source, load_module

SOURCE = '''import numpy as np

X = np.array([0.5, -1.0, 2.0])


def loss(w, b):
    h = np.tanh(w * X + b)
    for k in range(2):
        h = h * b + np.sin(h)
    return np.sum(h**2) + np.sum(np.exp(-w) * X) * b
'''

SQUARE = '''def square(x):
    y = x * x
    return y * x
'''

SQUARE_TEXT = '''def square_grad_and_hvp(x, *, dx):
    """Gradient of square and its derivative along (dx) (the Hessian times the direction),
    from one pass: forward mode over the gradient.

    Returns (the gradient with respect to x, its derivative along (dx)), each in the
    gradient's structure (square.py, line 1).
    """
    # gradient, each value followed by its tangent
    y = x * x
    dy = dx * x + dx * x
    # line 3: return y * x
    dsquare_dy = x
    ddsquare_dy = dx
    dsquare_dx = y
    ddsquare_dx = dy
    # line 2: y = x * x
    ddsquare_dx = ddsquare_dx + (ddsquare_dy * x + dx * dsquare_dy)
    dsquare_dx += dsquare_dy * x
    ddsquare_dx = ddsquare_dx + (ddsquare_dy * x + dx * dsquare_dy)
    dsquare_dx += dsquare_dy * x
    return dsquare_dx, ddsquare_dx
'''


def test_its_halves_are_the_gradient_and_the_hvp():
    text = compile_source(SOURCE, "loss.py", wrt=["w", "b"], emit_kinds=["grad", "hvp", "grad_and_hvp"]).text
    module = load_module(text, "grad_and_hvp_loss")
    rng = np.random.default_rng(4)
    for _ in range(3):
        w, b, tw, tb = rng.standard_normal(3), float(rng.standard_normal()), rng.standard_normal(3), 0.7
        (gw, gb), (hw, hb) = module.loss_grad_and_hvp(w, b, dw=tw, db=tb)
        want_w, want_b = module.loss_grad(w, b)
        np.testing.assert_allclose(gw, want_w, rtol=1e-14)
        np.testing.assert_allclose(gb, want_b, rtol=1e-14)
        want_hw, want_hb = module.loss_hvp(w, b, dw=tw, db=tb)
        np.testing.assert_allclose(hw, want_hw, rtol=1e-14)
        np.testing.assert_allclose(hb, want_hb, rtol=1e-14)


def test_its_text():
    text = compile_source(SQUARE, "square.py", emit_kinds=["grad_and_hvp"]).text
    assert SQUARE_TEXT in text and "def square_grad(" not in text


def test_check_checks_it(tmp_path):
    (tmp_path / "loss.py").write_text(SOURCE)
    result = subprocess.run([sys.executable, "-m", "gradgen", "check", "loss.py", "--wrt", "w,b", "--emit",
                             "grad,grad_and_hvp", "--at", "w=0.3,b=0.2"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "loss_grad_and_hvp (grad_and_hvp): ok" in result.stdout
    assert "its hvp against finite differences of its gradient" in result.stdout


def loss(w, b):
    h = np.tanh(w * np.array([0.5, -1.0, 2.0]) + b)
    return np.sum(h**2) + b * np.sum(w**2)


def test_the_api_returns_both():
    both = gradgen.grad_and_hvp(loss, wrt=["w"])
    w, direction = np.array([0.3, -0.2, 0.1]), np.array([1.0, 0.5, -2.0])
    gradient, product = both(w, 0.4, dw=direction)
    np.testing.assert_allclose(gradient, gradgen.grad(loss, wrt=["w"])(w, 0.4), rtol=1e-14)
    np.testing.assert_allclose(product, gradgen.hvp(loss, wrt=["w"])(w, 0.4, dw=direction), rtol=1e-14)
