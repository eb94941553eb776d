"""A dict built in the function with constant keys (`params = {"beta": ..., "gamma": ...}`),
handed to a simulator helper or looped over by `.items()`: kept while compiling, each value
in a variable named after its key (new users' repro 2, sir_fit: "dicts are not supported")."""

from __future__ import annotations

import numpy as np
import pytest

from gradgen import CompileError, compile_source, load_module

SIR = '''import numpy as np


def simulate(params, steps):
    s, i = 0.99, 0.01
    total = 0.0
    for _ in range(steps):
        new = params["beta"] * s * i
        s, i = s - new, i + new - params["gamma"] * i
        total = total + i
    return total


def loss(theta, steps=20, target=0.3):
    params = {"beta": np.exp(theta[0]), "gamma": np.exp(theta[1]), "label": "sir"}
    scale = 0.0
    for key, value in params.items():
        if key != "label":
            scale = scale + value
    assert len(params) == 3
    return (simulate(params, steps) / steps - target) ** 2 + 0.01 * scale
'''


def _central(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


def test_a_dict_of_differentiated_values_handed_to_a_helper():
    compiled = compile_source(SIR, "sir.py", functions=["loss"])
    assert "    beta = np.exp(theta[0])\n    gamma = np.exp(theta[1])\n" in compiled.text
    module, namespace = load_module(compiled.text), {}
    exec(SIR, namespace)
    theta = np.array([-0.5, -1.2])
    np.testing.assert_allclose(module.loss_grad(theta), _central(namespace["loss"], theta), rtol=1e-6)


@pytest.mark.parametrize(("body", "message"), [
    ("    key = 'beta'\n    p = {key + '': x}\n    return p['beta']\n",
     "d.py:6:10: a dict built in the function needs keys written as constants (`{\"beta\": b, \"gamma\": g}`), "
     "which gradgen reads while compiling"),
    ("    p = {'beta': x}\n    return p['gamma']\n",
     "d.py:6:12: 'p' is a dict gradgen keeps while compiling (keys 'beta'): index it by one of them, written as a "
     "constant"),
    ("    for k in range(2):\n        p = {'beta': x}\n    return p['beta']\n",
     "d.py:6:9: 'p' is bound to a dict known when compiling inside a loop or branch; bind it before the loop or "
     "branch"),
])
def test_what_a_dict_built_in_the_function_cannot_be(body, message):
    source = "import numpy as np\n\n\ndef f(x):\n" + body
    with pytest.raises(CompileError) as caught:
        compile_source(source, "d.py")
    assert caught.value.format().splitlines()[0] == message
