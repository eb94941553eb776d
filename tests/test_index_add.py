"""index_add, the helper a gather's gradient adds through (gradgen/codegen/emit.py): np.add.at's
sums, each repeat of an element adding again, through np.bincount where the index is integer
arrays (one for each axis), np.add.at itself elsewhere; checked against np.add.at on random
indices, repeats and negative ones among them; and a gather read once (det by permutations)."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradgen import compile_source, load_module
from gradgen.codegen.emit import HELPERS

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = {"np": np}
exec(HELPERS["index_add"][1], NAMESPACE)  # noqa: S102 - the helper's own text, as modules hold it
index_add = NAMESPACE["index_add"]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["arrays", "one array", "slice", "int and array", "broadcast"]))
def test_index_add_adds_as_np_add_at(seed, form):
    rng = np.random.default_rng(seed)
    shape = tuple(rng.integers(1, 5, size=rng.integers(1, 4)))
    out = rng.standard_normal(shape)
    picks = rng.integers(1, 7)
    if form == "arrays":  # one index array an axis, repeats and negative indices among them
        index = tuple(rng.integers(-n, n, size=picks) for n in shape)
    elif form == "one array":
        index = rng.integers(-shape[0], shape[0], size=(picks, 2))
    elif form == "slice":
        index = (slice(None), rng.integers(0, shape[1], size=picks)) if len(shape) > 1 else slice(0, 1)
    elif form == "int and array":
        index = (0,) * (len(shape) - 1) + (rng.integers(0, shape[-1], size=picks),)
    else:  # index arrays that broadcast against each other (negative ones normalised before they broadcast)
        index = tuple(rng.integers(-n, n, size=(picks, 1) if k == 0 else (1, 3)) for k, n in enumerate(shape))
    picked = out[index].shape
    g = rng.standard_normal(picked) if rng.integers(2) else rng.standard_normal()
    want = out.copy()
    np.add.at(want, index, g)
    got = out.copy()
    index_add(got, index, g)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_a_gather_the_backward_pass_reads_is_made_once():
    """det by permutations: `A[rows, permutations]` (5,040 x 7 entries at ell = 7) was gathered
    in the forward pass and again for prod_grad; an index of two arrays is a copy, worth a
    name. Its gradient adds back through index_add; both against the closed form, A^-T det A."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "gradbench"))
    import det_permutations

    source = (ROOT / "benchmarks" / "gradbench" / "det_permutations.py").read_text()
    text = compile_source(source, "det_permutations.py", functions=["objective"], wrt=["A"]).text
    grad = text.split("def objective_grad(")[1].split("def objective_value_and_grad(")[0]
    assert grad.count(" = A[rows, permutations]\n") == 1 and "index_add(\n        dobjective_dA," in grad
    assert grad.count("A[rows, permutations]") == 2  # (and the `# line 19:` comment citing it)
    args = det_permutations.inputs("small")
    got = load_module(text, "det_perm").objective_grad(**args)
    A = args["A"]
    np.testing.assert_allclose(got, np.linalg.inv(A).T * np.linalg.det(A), rtol=1e-9)
