"""A default that is a module-level record of constants (issue 22: a new user's inverse
kinematics, `def ik_objective(q, target, arm=DEFAULT_ARM)` with `DEFAULT_ARM = Arm(lengths=...,
lower=np.deg2rad([...]))`): the generated module declares the class and the instance again
(gradgen/codegen/record_defaults.py), its function keeps the default as written, and the
gradient matches central differences of the original, with the default and with another
record passed. Each form of record: collections.namedtuple, a typing.NamedTuple class with
field defaults, a frozen dataclass."""

from __future__ import annotations

import numpy as np
import pytest

from differences import central
from gradgen import CompileError, compile_source, load_module

LOSS = '''

def forward(q, lengths):
    angle = np.cumsum(q)
    return np.array([np.sum(lengths * np.cos(angle)), np.sum(lengths * np.sin(angle))])


def objective(q, target, arm=DEFAULT_ARM):
    err = forward(q, arm.lengths) - target
    over = np.maximum(q - arm.upper, 0.0)
    return err @ err + arm.stiffness * np.sum(over ** 2)
'''

FORMS = {
    "namedtuple": '''import collections
import numpy as np

Arm = collections.namedtuple("Arm", "lengths upper stiffness", defaults=(100.0,))

DEFAULT_ARM = Arm(np.array([1.0, 0.8, 0.5]), upper=np.deg2rad([10.0, 150.0, 150.0]))
''',
    "typed_class": '''from typing import NamedTuple
import numpy as np


class Arm(NamedTuple):
    lengths: np.ndarray
    upper: np.ndarray
    stiffness: float = 100.0
    joints: int = 3


DEFAULT_ARM = Arm(lengths=np.array([1.0, 0.8, 0.5]), upper=np.radians([10.0, 150.0, 150.0]))
''',
    "dataclass": '''from dataclasses import dataclass
import numpy as np


@dataclass(frozen=True)
class Arm:
    lengths: np.ndarray
    upper: np.ndarray
    stiffness: float = 100.0


DEFAULT_ARM = Arm(np.array([1.0, 0.8, 0.5]), np.deg2rad([10.0, 150.0, 150.0]), stiffness=100.0)
''',
}
DECLARED = {
    "namedtuple": 'Arm = collections.namedtuple(\n    "Arm", ["lengths", "upper", "stiffness"], defaults=(100.0,)\n)\n',
    "typed_class": "class Arm(typing.NamedTuple):\n    lengths: np.ndarray\n    upper: np.ndarray\n"
                   "    stiffness: float = 100.0\n    joints: int = 3\n",
    "dataclass": "@dataclasses.dataclass(frozen=True)\nclass Arm:\n    lengths: np.ndarray\n    upper: np.ndarray\n"
                 "    stiffness: float = 100.0\n",
}
Q, TARGET = np.array([0.3, 0.4, -0.4]), np.array([1.2, 0.5])


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_record_default_is_declared_again_and_its_gradient_is_right(form):
    source = FORMS[form] + LOSS
    text = compile_source(source, f"arm_{form}.py", functions=["objective"]).text
    assert DECLARED[form] in text
    assert "DEFAULT_ARM = Arm(" in text and "def objective_grad(q, target, arm=DEFAULT_ARM):" in text
    generated, original = load_module(text, f"record_default_{form}"), {}
    exec(compile(source, f"<{form}>", "exec", dont_inherit=True), original)  # noqa: S102 - the test's own program
    want = central(lambda q: original["objective"](q, TARGET), Q)
    np.testing.assert_allclose(generated.objective_grad(Q, TARGET), want, rtol=1e-6, atol=1e-8)
    # the q[0] joint is past its limit (10 degrees): the penalty, and so the default's values, count
    assert abs(generated.objective_grad(Q, TARGET)[0] - central(
        lambda q: original["objective"](q, TARGET, original["DEFAULT_ARM"]._replace(stiffness=0.0)
                                        if form != "dataclass" else original["Arm"](
                                            original["DEFAULT_ARM"].lengths, original["DEFAULT_ARM"].upper, 0.0)),
        Q)[0]) > 1.0
    other = original["Arm"](np.array([0.5, 0.5, 0.5]), np.array([2.0, 2.0, 2.0]), 7.0)
    want = central(lambda q: original["objective"](q, TARGET, other), Q)
    np.testing.assert_allclose(generated.objective_grad(Q, TARGET, other), want, rtol=1e-6, atol=1e-8)


def test_a_module_constant_from_a_numpy_function_of_a_list_is_folded():
    source = "import numpy as np\n\nLIMIT = np.deg2rad([10.0, 150.0])\n\n\ndef f(q):\n" \
             "    return np.sum(np.maximum(q - LIMIT, 0.0) ** 2)\n"
    text = compile_source(source, "limit.py").text
    assert "LIMIT = np.array([0.17453292519943295, 2.6179938779914944])" in text
    q = np.array([0.5, 3.0])
    np.testing.assert_allclose(load_module(text, "limit_grad").f_grad(q), 2 * np.maximum(q - np.deg2rad([10.0, 150.0]), 0))


@pytest.mark.parametrize("body, message", [
    ("    def reach(self):\n        return np.sum(self.lengths)\n",
     "class 'Arm' has the method 'reach', which gradgen does not copy"),
    ("    scale: float = SCALE\n", "the default of the field 'scale' of class 'Arm' is not a constant"),
])
def test_a_record_default_gradgen_cannot_declare_is_refused_with_the_reason(body, message):
    source = ("from typing import NamedTuple\nimport numpy as np\n\nSCALE = np.random.rand()\n\n\n"
              f"class Arm(NamedTuple):\n    lengths: np.ndarray\n{body}\n\nDEFAULT_ARM = Arm(np.array([1.0, 2.0]))\n\n\n"
              "def f(q, arm=DEFAULT_ARM):\n    return np.sum(arm.lengths * q ** 2)\n")
    with pytest.raises(CompileError) as info:
        compile_source(source, "arm.py", functions=["f"])
    line = source.splitlines().index("def f(q, arm=DEFAULT_ARM):") + 1
    assert str(info.value).splitlines()[0] == (
        f"arm.py:{line}:14: the default of 'arm' is module-level 'DEFAULT_ARM', an instance of Arm, which gradgen "
        f"cannot declare in the generated module ({message}): make 'arm' a parameter without a default, and pass "
        "DEFAULT_ARM where the function is called")


LIVE = '''import collections

import numpy as np

Pair = collections.namedtuple("Pair", "a b")
SETTINGS = Pair(np.array([0.25, -0.5]), 2.0)


def scaled(w, *, settings=SETTINGS):
    return np.sum(np.sin(w) * settings.a) * settings.b


def scaled_none(w, *, settings=None):
    if settings is None:
        settings = SETTINGS
    return np.sum(np.sin(w) * settings.a) * settings.b
'''


@pytest.mark.parametrize("name", ["scaled", "scaled_none"])
def test_a_record_default_through_the_python_api(tmp_path, name):
    # gradgen.grad on the live function (the fuzzer's grammar kind found both: the record read
    # from the running program was taken for a tuple constant, then compared as an array on
    # every call, and compiled again without end)
    from test_live import write_module
    import gradgen

    user = write_module(tmp_path, LIVE, stem="settings_user")
    g = gradgen.grad(getattr(user, name))
    w = np.array([0.3, -1.1])
    np.testing.assert_allclose(g(w), np.cos(w) * np.array([0.25, -0.5]) * 2.0, rtol=1e-14)
    np.testing.assert_allclose(g(w, settings=user.Pair(np.array([1.0, 1.0]), 3.0)), 3.0 * np.cos(w), rtol=1e-14)
    user.SETTINGS = user.Pair(np.array([1.0, 2.0]), 1.0)  # (a notebook rebinding it: the None form reads it anew)
    if name == "scaled_none":
        np.testing.assert_allclose(g(w), np.cos(w) * np.array([1.0, 2.0]), rtol=1e-14)
