"""benchmarks/gradbench/: every port's NumPy objective (what gradgen compiles, and the forward
the benchmark's ratios divide by) runs on its small inputs and returns a finite number, with
none of the benchmark-only tools (jax, torch, autograd) imported: the test extra lacks them."""

import importlib
import math
import sys
from pathlib import Path

import numpy as np
import pytest


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "gradbench"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import ports  # noqa: E402

TOOLS = ("jax", "torch", "autograd")


pytestmark = pytest.mark.usefixtures("fresh_cache")  # (tests/conftest.py)


def test_every_gradbench_eval_has_a_port():
    assert set(ports.EVALS) == {"gmm", "ba", "ht", "lstm", "kmeans", "llsq", "lse", "ode", "particle", "saddle",
                                "det", "kalman"}
    assert [p.name for p in ports.PORTS][:len(ports.EVALS)] == list(ports.EVALS)
    assert len(ports.PORTS) == len(ports.EVALS) + len(ports.VARIANTS) + 5  # and the five references


@pytest.mark.parametrize("port", ports.PORTS, ids=lambda p: p.name)
def test_the_objective_runs_on_its_small_inputs(port):
    before = {t for t in TOOLS if t in sys.modules}
    args = port.inputs("small")
    value = port.objective(**args)
    assert np.ndim(value) == 0 and math.isfinite(float(value))
    assert set(port.parameters) <= set(args)
    assert {t for t in TOOLS if t in sys.modules} == before  # running a port imports no tool


@pytest.mark.parametrize("name, size, value", [("lse", "small", 8.364874), ("kalman", "small", -100.076764),
                                               ("saddle", "small", 1.976942), ("particle", "small", 3.199079)])
def test_some_objectives_have_the_values_they_had_when_measured(name, size, value):
    module = importlib.import_module(name)
    assert module.objective(**module.inputs(size)) == pytest.approx(value, abs=1e-6)


# (found porting the lstm: `a, b = [], []` once lost its gradient; fixed, tests/test_lists.py too)
@pytest.mark.parametrize("case", ["minimal", "gradients"])
def test_lists_made_in_one_tuple_assignment_keep_their_gradient(case):
    import finding_tuple_lists

    got, want = getattr(finding_tuple_lists, case)()
    np.testing.assert_allclose(np.asarray(got, dtype=float), want, rtol=1e-5, atol=1e-8)


def test_kmeans_hessian_vector_product_measures_no_product_it_does_not_need():
    """kmeans_dir's hvp: the tangent of `x + Z` with Z undifferentiated is dx stretched to
    Z's shape; Z was matmul_grad_a(g, 2 * centroids, points.T), a (k, n) by (n, d) product
    computed only for `np.shape(...)`: then the shape of what it sums back to, centroids; now
    no zeros at all, the other term holding centroids' shape already (its tangent is
    `dcentroids * ...`). The gradient of np.min under a sum is the share alone (`hit / count`,
    no ones of the minimum's shape), and `v[:, None]`'s is a reshape (no scatter). The
    direction J / H, from grad_and_hvp (one pass; the same numbers as grad and hvp), agrees
    with the closed form."""
    import kmeans_dir
    from gradgen import compile_source, load_module

    source = (ROOT / "benchmarks" / "gradbench" / "kmeans.py").read_text()
    text = compile_source(source, "kmeans.py", functions=["objective"], wrt=["centroids"],
                          emit_kinds=["grad", "hvp", "grad_and_hvp"]).text
    hvp = text.split("def objective_hvp(")[1].split("\ndef ")[0]
    assert "np.shape(matmul_grad_a(" not in hvp and "np.zeros(" not in hvp
    assert "distances_mask / np.sum(" in text and "scatter(" not in text and "np.ones_like(" not in text
    both = text.split("def objective_grad_and_hvp(")[1]
    assert both.count("distances_mask = ") == 1 and "return dobjective_dcentroids, ddobjective_dcentroids" in both
    module, args = load_module(text, "kmeans_hvp"), kmeans_dir.inputs("small")
    got = kmeans_dir.gradgen_result(module, args)
    np.testing.assert_allclose(got, kmeans_dir.reference(args)[0], rtol=1e-10)
    ones = np.ones_like(args["centroids"])
    J, H = module.objective_grad_and_hvp(**args, dcentroids=ones)
    np.testing.assert_array_equal(J, module.objective_grad(**args))
    np.testing.assert_array_equal(H, module.objective_hvp(**args, dcentroids=ones))
