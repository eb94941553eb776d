"""The speed benchmark compares like with like: each hand-written gradient of
benchmarks/hand_written.py equals the generated one (small sizes, several points), and
agrees with central finite differences of the source itself, so neither side of a ratio in
benchmarks/run.py is a wrong answer."""

import inspect
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from gradgen import compile_source, load_module

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from hand_written import BENCHMARKS, source  # noqa: E402


def _modules(reference):
    text = source(reference)
    forward = types.ModuleType(reference.name)
    exec(compile(text, f"{reference.name}.py", "exec"), forward.__dict__)
    generated = load_module(compile_source(text, f"{reference.name}.py", wrt="all").text, f"{reference.name}_grad")
    return getattr(forward, reference.function), generated


def _tuple(g):
    return g if isinstance(g, tuple) else (g,)


@pytest.mark.parametrize("reference", BENCHMARKS, ids=lambda r: r.name)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hand_written_gradient_equals_the_generated_one(reference, seed):
    forward, generated = _modules(reference)
    args = reference.inputs(**reference.small, seed=seed)
    hand = _tuple(reference.hand(**args))
    got = _tuple(getattr(generated, f"{reference.function}_grad")(**args))
    assert len(got) == len(hand)
    for g, h in zip(got, hand):
        assert np.shape(g) == np.shape(h)
        np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-13)
    value, both = getattr(generated, f"{reference.function}_value_and_grad")(**args)
    assert value == pytest.approx(forward(**args), rel=1e-12)
    for g, h in zip(_tuple(both), hand):
        np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("reference", BENCHMARKS, ids=lambda r: r.name)
def test_hand_written_gradient_matches_finite_differences(reference):
    forward, _ = _modules(reference)
    args = reference.inputs(**reference.small, seed=3)
    hand = _tuple(reference.hand(**args))
    differentiated = [name for name, p in inspect.signature(reference.hand).parameters.items()
                      if p.kind is not p.KEYWORD_ONLY]  # keyword-only parameters are data
    assert len(differentiated) == len(hand)
    rng = np.random.default_rng(4)
    for name, grad in zip(differentiated, hand):
        direction = rng.standard_normal(np.shape(args[name]))
        eps = 1e-6
        plus = forward(**{**args, name: args[name] + eps * direction})
        minus = forward(**{**args, name: args[name] - eps * direction})
        assert (plus - minus) / (2 * eps) == pytest.approx(np.sum(grad * direction), rel=1e-6, abs=1e-8)
