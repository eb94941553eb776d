"""Which functions get a gradient, with respect to which parameters, and what `compile`
says about it: a surprising default must be visible at once, and a function whose result
may be an array gets no gradient (a gradient needs one number)."""

import math

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module
from gradgen.tools.cli import main

SOURCE = '''import numpy as np


def center(x):
    return x - np.mean(x)


def loss(W, b, n=3, *, X, y):
    s = 0.0
    for k in range(n):
        s = s + np.sum((center(X @ W) + b - y) ** 2)
    return s


def layers(Ws, *, x):
    for W in Ws:
        x = np.tanh(x @ W)
    return np.sum(x)


def first(x) -> float:
    return x[0] * 2.0
'''


def test_compile_prints_what_each_function_is_differentiated_with_respect_to(tmp_path, capsys):
    (tmp_path / "m.py").write_text(SOURCE)
    assert main(["compile", str(tmp_path / "m.py"), "--out-dir", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1:] == [
        "  loss: d/d(W); not b (the default is the first parameter: --wrt names others, --wrt all takes every one); "
        "n (a count or an index: it reaches range(), int() or an index); X, y (keyword-only data)",
        "  layers: d/d(Ws); not x (keyword-only data)",
        "  first: d/d(x)",
    ]
    assert captured.err == "skipped center (line 4): its result is an array (it is inlined where a loss calls it)\n"
    module = load_module((tmp_path / "out" / "m_grad.py").read_text())
    assert not hasattr(module, "center_grad")


def test_naming_an_array_valued_function_is_a_located_error():
    with pytest.raises(CompileError) as err:
        compile_source(SOURCE, "m.py", functions=["center"])
    assert err.value.format() == (
        "m.py:4:1: 'center' returns an array, and a gradient needs one number: return one (np.sum(...), "
        "np.mean(...)), or annotate 'def center(...) -> float' if it is one; a function whose result is an "
        "array is inlined where a loss calls it\n    def center(x):\n    ^")


def test_a_file_of_array_valued_functions_only_is_an_error():
    source = "import numpy as np\n\n\ndef log_softmax(z):\n    return z - np.log(np.sum(np.exp(z)))\n"
    with pytest.raises(CompileError) as err:
        compile_source(source, "m.py")
    assert err.value.format() == (
        "m.py:4:1: no function here has a gradient of its own: log_softmax (line 4): its result is an array (it "
        "is inlined where a loss calls it); annotate '-> float' where a function returns a number\n"
        "    def log_softmax(z):\n    ^")


def test_a_loop_over_a_differentiated_parameter_scatters_its_gradient_row_by_row():
    module = load_module(compile_source(SOURCE, "m.py", functions=["layers"]).text)
    rng = np.random.default_rng(3)
    Ws, x = 0.5 * rng.standard_normal((3, 4, 4)), rng.standard_normal((2, 4))
    grad = module.layers_grad(Ws, x=x)
    assert grad.shape == Ws.shape

    def f(Ws):
        h = x
        for W in Ws:
            h = np.tanh(h @ W)
        return np.sum(h)

    eps, fd = 1e-6, np.zeros_like(Ws)
    for i in np.ndindex(Ws.shape):
        d = np.zeros_like(Ws)
        d[i] = eps
        fd[i] = (f(Ws + d) - f(Ws - d)) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-9)


def test_module_constants_are_folded_exactly_without_running_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = ("import math\nimport numpy as np\n\nx1, x2 = 1.0, 2.0\nLOG_2PI = math.log(2 * math.pi)\n"
              "SCALE = np.sqrt(2.0)\nBOTH = SCALE * LOG_2PI + x1\nnp.save('never.npy', 1)\n\n\n"
              "def f(w=0.5):\n    return w * BOTH + LOG_2PI * x2 + math.tau * w\n")
    text = compile_source(source, "c.py").text
    assert not (tmp_path / "never.npy").exists()  # the file's own statements never run
    assert f"LOG_2PI = {math.log(2 * math.pi)!r}\n" in text
    assert f"BOTH = {math.sqrt(2.0) * math.log(2 * math.pi) + 1.0!r}\n" in text
    value, grad = load_module(text).f_value_and_grad(0.5)
    both = math.sqrt(2.0) * math.log(2 * math.pi) + 1.0
    assert value == 0.5 * both + math.log(2 * math.pi) * 2.0 + math.tau * 0.5
    assert grad == both + math.tau


@pytest.mark.parametrize("body", [
    "t = np.mean(a * b, axis=(0, 1), keepdims=True)\n    return np.squeeze(t / (1 + t * t))",  # fuzz 1203/5441
    "return np.prod(a[0] * b, axis=0)",  # a reduction along the only axis of a row
    "return np.sum(a, keepdims=True).squeeze()",
])
def test_a_number_the_code_makes_from_arrays_gets_a_gradient(body):
    """A function is refused as array-valued only where its code shows an array result: a
    squeezed keepdims reduction, or a reduction along an axis of a row, may be a number."""
    source = f"import numpy as np\n\n\ndef f(a, b):\n    {body}\n"
    compiled = compile_source(source, filename="n.py")
    assert [f.name for f in compiled.functions] == ["f"] and not compiled.skipped
    a = np.array([[0.3, -1.2, 0.5]])
    value, _ = load_module(compiled.text, "n_grad").f_value_and_grad(a, 0.7)
    assert np.ndim(value) == 0
