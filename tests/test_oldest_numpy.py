"""Generated code runs on every NumPy gradgen declares (numpy>=1.24), not only on this one.

`.ci/run` imports and calls every generated module in an environment with NumPy 1.24
(tests/oldest_numpy.py); here, what can be checked with the NumPy installed: no name that
only NumPy 2 has is written, and the recorder's comparison catches what it must.
"""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest

from gradgen import compile_source, load_module
import oldest_numpy

# dtype spellings that exist in NumPy 1.24 and in NumPy 2 alike
PORTABLE_DTYPES = {"bool", "float", "int", "np.int8", "np.int16", "np.int32", "np.int64", "np.uint8", "np.uint16", "np.uint32",
                   "np.uint64", "np.float64"}

MASKED = '''import numpy as np

MASK = np.array([True, False, True])


def loss(w):
    return np.sum(np.where(MASK, w, 0.0) ** 2)
'''


def written_dtypes(text):
    return sorted({ast.unparse(k.value) for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
                   for k in node.keywords if k.arg == "dtype"})


def test_a_boolean_constant_array_is_written_with_the_builtin_bool():
    """Once `dtype=np.bool`, which NumPy 1.24 has not (AttributeError on import)."""
    text = compile_source(MASKED, "masked.py").text
    assert "np.bool" not in text
    assert "MASK = np.array([True, False, True], dtype=bool)" in text
    module = load_module(text, "masked_grad")
    assert module.MASK.dtype == np.bool_ and module.MASK.tolist() == [True, False, True]
    value, grad = module.loss_value_and_grad(np.array([1.0, 2.0, 3.0]))
    assert value == 10.0
    np.testing.assert_array_equal(grad, [2.0, 0.0, 6.0])
    np.testing.assert_array_equal(module.loss_grad(np.array([1.0, 2.0, 3.0])), grad)


def test_every_corpus_with_a_test_module_is_compiled_as_its_tests_compile_it():
    """The recorder once compiled the inactive corpus with every parameter differentiated
    (its tests differentiate the first): CI refused what the suite accepts. Every corpus but
    the acceptance one ("real", read generically) is recorded through its own test module."""
    folders = {p.name for p in (oldest_numpy.ROOT / "tests" / "corpus").iterdir() if p.is_dir()}
    tests = oldest_numpy.corpus_tests()
    assert folders - {"real"} == set(tests)
    assert all(module.CASES for module in tests.values())


def test_every_dtype_written_exists_in_numpy_1_24():
    text = compile_source(oldest_numpy.DTYPES_SOURCE, "dtypes.py").text
    assert "np.bool" not in text
    assert set(written_dtypes(text)) <= PORTABLE_DTYPES, written_dtypes(text)
    assert {"bool", "np.int64"} <= set(written_dtypes(text))
    module = load_module(text, "dtypes_grad")
    for name in ("masked", "counted", "picked"):
        point = {k: v for k, v in oldest_numpy.DTYPES_POINTS.items()
                 if name != "picked" or k == "w"}
        value, grad = getattr(module, f"{name}_value_and_grad")(**point)
        assert math.isfinite(value) and np.isfinite(grad).all()


@pytest.mark.parametrize("value", [
    1.5, -0.0, math.inf, 3, True, None, 2 ** 70, np.float64(0.1), np.int64(-3), np.bool_(True),
    np.array([1.0, math.nan, -math.inf]), np.zeros((0, 3)), np.array([[1, 2]], dtype=np.uint64),
    np.array([True, False]), np.array(2.5), (1.0, np.array([1.0]), (2, 3)), [1.0, 2.0], {"a": 1.0},
])
def test_what_is_recorded_comes_back_the_same(value):
    encoded = oldest_numpy.encode(value)
    back = oldest_numpy.decode(oldest_numpy.json.loads(oldest_numpy.json.dumps(encoded)))
    assert oldest_numpy.json.dumps(oldest_numpy.encode(back)) == oldest_numpy.json.dumps(encoded)
    assert type(back) is type(value)
    assert oldest_numpy.differences(oldest_numpy.encode(back), encoded) == []


@pytest.mark.parametrize("got, expected", [
    (1.0 + 1e-10, 1.0),  # a value
    (math.nan, 1.0),  # not finite where it was finite
    (1.0, math.inf),
    (-math.inf, math.inf),
    (np.float64(1.0), 1.0),  # a NumPy number where it was a float
    (np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0])),  # a shape
    (np.array([1, 2]), np.array([1.0, 2.0])),  # a dtype
    ((1.0,), (1.0, 2.0)),
    ((1.0, np.array([2.0, 5.0])), (1.0, np.array([2.0, 4.0]))),
    (np.array([True]), np.array([False])),
])
def test_the_comparison_finds_every_difference(got, expected):
    assert oldest_numpy.differences(oldest_numpy.encode(got), oldest_numpy.encode(expected))


def test_the_comparison_is_relative_to_the_largest_element():
    """Summation order may differ between NumPy versions: 1e-12 of the array's scale passes."""
    big = np.array([1e6, 1e-9])
    nudged = big + np.array([1e-7, 1e-7])
    assert oldest_numpy.differences(oldest_numpy.encode(nudged), oldest_numpy.encode(big)) == []
    assert oldest_numpy.differences(oldest_numpy.encode(big * (1 + 1e-9)), oldest_numpy.encode(big))


def test_a_call_that_raises_is_recorded_as_such():
    assert oldest_numpy.call(lambda x: 1 / x, oldest_numpy.encode({"x": 0.0})) == {"raises": "ZeroDivisionError"}
    assert oldest_numpy.call(lambda x: x * 2, oldest_numpy.encode({"x": 1.5})) == {"returns": 3.0}
