"""Issue 20: what the generated code assumes is proven when compiling or checked when it
runs. A number default proves nothing (case 1), stated shapes are checked on entry (case 2,
also tests/test_static_shapes.py), module constants stay live (case 3), and the documented
`f_grad` is `f_grad` whatever another function names its parameters (case 8)."""

from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pytest

import gradgen
from differences import central
from gradgen import compile_source, load_module




def _module(tmp_path, name, source):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


NUMBER_DEFAULTS = '''
import numpy as np


def loss(w, b=0.0):
    return np.sum((w + b) ** 2)


def scaled(w, s=2.0, *, t=1.0):
    return np.sum(np.tanh(s * w)) * t


def scalar(a=0.5, b=1.5):
    return a * b + np.exp(a)
'''


@pytest.mark.parametrize("b", [0.5, np.array([0.0, 1.0]), np.array([[1.0], [2.0]])])
def test_a_number_default_may_be_called_with_an_array(b):
    """Case 1: `b=0.0` compiled as a number gave np.sum of b's gradient for an array b."""
    m = load_module(compile_source(NUMBER_DEFAULTS, "defaults.py", wrt="all").text)
    w = np.array([0.3, -1.2])
    f = load_module(NUMBER_DEFAULTS)
    dw, db = m.loss_grad(w, b)
    np.testing.assert_allclose(dw, central(lambda x: f.loss(x, b), w), rtol=1e-7)
    np.testing.assert_allclose(db, central(lambda x: f.loss(w, x), b), rtol=1e-7)
    assert np.shape(db) == np.shape(b)
    ds = m.scaled_grad(w, s=np.array([1.0, 3.0]))[1]
    np.testing.assert_allclose(ds, central(lambda x: f.scaled(w, x), np.array([1.0, 3.0])), rtol=1e-7)


def test_a_default_of_a_number_the_code_proves_stays_a_number():
    """The result is one number and a, b reach it elementwise: they are numbers, and the
    generated code has no sum back."""
    text = compile_source(NUMBER_DEFAULTS, "defaults.py", functions=["scalar"], wrt="all").text
    assert "unbroadcast" not in text and "np.sum" not in text
    assert "def scalar_grad(a=0.5, b=1.5):" in text


CONSTANTS = '''
import numpy as np

WEIGHT_DECAY = 1e-3
STEPS = 3
OFFSET = np.array([0.5, -0.5])


def loss(w, *, X, y):
    r = X @ w - y
    for _ in range(STEPS):
        r = 0.5 * r
    return np.mean(r ** 2) + WEIGHT_DECAY * np.sum((w - OFFSET) ** 2)
'''


def _data():
    rng = np.random.default_rng(3)
    return np.array([0.2, -0.4]), rng.normal(size=(5, 2)), rng.normal(size=5)


def test_the_api_reads_module_constants_when_called(tmp_path):
    """Case 3: a notebook that sets module.WEIGHT_DECAY = 0.1 changes the gradient too."""
    user = _module(tmp_path, "constants_api", CONSTANTS)
    w, X, y = _data()
    grad = gradgen.grad(user.loss)
    for name, value in [("WEIGHT_DECAY", 0.1), ("OFFSET", np.array([1.0, 2.0])), ("STEPS", 5)]:
        setattr(user, name, value)
        want = central(lambda v: user.loss(v, X=X, y=y), w)
        np.testing.assert_allclose(grad(w, X=X, y=y), want, rtol=1e-6)
    # a value the caller passes wins over the module's
    want = central(lambda v: user.loss(v, X=X, y=y) + (0.3 - 0.1) * np.sum((v - user.OFFSET) ** 2), w)
    np.testing.assert_allclose(grad(w, X=X, y=y, WEIGHT_DECAY=0.3), want, rtol=1e-6)


def test_a_file_module_takes_its_constants_as_keyword_arguments(tmp_path):
    text = compile_source(CONSTANTS, "constants.py", wrt="all").text
    assert ("# Constants copied from constants.py: WEIGHT_DECAY, STEPS, OFFSET; each function that reads one "
            "takes it as a keyword argument defaulting to the copy (WEIGHT_DECAY=...).") in text.splitlines()
    assert "def loss_grad(w, *, X, y, WEIGHT_DECAY=WEIGHT_DECAY, STEPS=STEPS, OFFSET=OFFSET):" in text
    # WEIGHT_DECAY, which the code proves a number, needs no check
    assert '    check_shapes("loss_grad", "STEPS (), OFFSET (2,)", STEPS, OFFSET)' in text
    m, f = load_module(text), load_module(CONSTANTS)
    w, X, y = _data()
    np.testing.assert_allclose(m.loss_grad(w, X=X, y=y), central(lambda v: f.loss(v, X=X, y=y), w), rtol=1e-6)
    f.WEIGHT_DECAY, f.STEPS = 0.1, 4
    np.testing.assert_allclose(m.loss_grad(w, X=X, y=y, WEIGHT_DECAY=0.1, STEPS=4),
                               central(lambda v: f.loss(v, X=X, y=y), w), rtol=1e-6)
    with pytest.raises(ValueError) as raised:
        m.loss_grad(w, X=X, y=y, OFFSET=np.zeros(3))
    assert str(raised.value) == ("loss_grad: OFFSET has shape (3,), but it was written for OFFSET (2,): "
                                 "compile it again for these shapes")


def test_a_number_constant_an_array_would_break_is_checked():
    source = CONSTANTS.replace("WEIGHT_DECAY * np.sum((w - OFFSET) ** 2)", "np.sum(WEIGHT_DECAY * (w - OFFSET) ** 2)")
    m = load_module(compile_source(source, "constants.py", wrt="all").text)
    w, X, y = _data()
    with pytest.raises(ValueError, match=r"^loss_grad: WEIGHT_DECAY has shape \(2,\), but it was written for "
                                         r"WEIGHT_DECAY \(\): compile it again"):
        m.loss_grad(w, X=X, y=y, WEIGHT_DECAY=np.ones(2))


DESCEND = '''
import numpy as np


def f(x):
    return np.sum(x ** 2)


def descend(x0, f_grad):
    x = x0
    for i in range(3):
        x = x - 0.1 * f_grad(x)
    return np.sum(x)
'''


def test_the_documented_grad_name_is_kept_when_a_parameter_takes_it():
    """Case 8: `from module_grad import f_grad` must work."""
    compiled = compile_source(DESCEND, "descend.py", wrt="all")
    m = load_module(compiled.text)
    np.testing.assert_allclose(m.f_grad(np.array([1.0, 2.0])), [2.0, 4.0])
    assert [f.grad_name for f in compiled.functions] == ["f_grad"]


IN_PLACE = '''
import numpy as np


def f(a=-0.8, c=1.4):
    b, z = c, a
    c += np.sin(c)
    return b * z + c
'''


def test_an_in_place_update_a_number_default_allows_is_compiled_and_its_numbers_checked():
    """Soak seed 2001 #253: `b, z = c, a; c += ...` is right for the numbers the defaults say
    (a float is never shared); were c an array, `c +=` would change b too. It compiles, and
    the generated function checks on entry that c is a number."""
    m, f = load_module(compile_source(IN_PLACE, "in_place.py", wrt="all").text), load_module(IN_PLACE)
    da, dc = m.f_grad(-0.8, 1.4)
    assert da == pytest.approx(central(lambda x: f.f(float(x), 1.4), -0.8), rel=1e-7)
    assert dc == pytest.approx(central(lambda x: f.f(-0.8, float(x)), 1.4), rel=1e-7)
    with pytest.raises(ValueError, match=r"^f_grad: c has shape \(2,\), but it was written for c \(\)"):
        m.f_grad(-0.8, np.array([1.4, 0.2]))


@pytest.mark.parametrize("constant", ["3.0", "np.array([1.0, 2.0])"])
def test_a_parameter_shadows_the_module_constant_of_its_name(constant):
    """`def f(w=0.5)` beside a module constant `w` reads its parameter, as Python does: the
    constant is no keyword argument (`f_grad(w=0.5, *, w=w)` was a SyntaxError) and an array
    constant does not make the parameter an array (f was refused as returning one)."""
    source = f"import numpy as np\n\nw = {constant}\n\n\ndef f(w=0.5):\n    return w * 2.0\n"
    compiled = compile_source(source, "shadow.py", wrt="all")
    assert "def f_grad(w=0.5):" in compiled.text and "Constants copied" not in compiled.text
    generated = load_module(compiled.text)
    assert generated.f_grad(1.5) == 2.0
    np.testing.assert_allclose(generated.f_grad(np.array([0.5, 1.0])), [2.0, 2.0])
