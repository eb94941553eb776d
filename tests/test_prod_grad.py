"""prod_grad, the gradient of np.prod (gradgen/codegen/emit.py): g times the product of the
other elements, as one division by the element where every |element| lies near enough to 1
that no partial product leaves the normal floats, and from the products before and after
each element elsewhere (zeros, tiny or huge elements, long rows). Both ways are checked
against the product of the others, made by leaving each element out (np.delete), for every
axis form (none, one, negative, a tuple, keepdims)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gradgen.codegen.emit import HELPERS

NAMESPACE = {"np": np}
for name in ("prod_rows", "prod_grad"):
    exec(HELPERS[name][1], NAMESPACE)  # noqa: S102 - the helpers' own text, as modules hold them
prod_grad = NAMESPACE["prod_grad"]


def others(x, g, axis, keepdims):
    """g times the product of the other elements of each one's row, element by element."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in np.atleast_1d(axis))
    moved = np.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim))
    rows = moved.reshape(moved.shape[: x.ndim - len(axes)] + (-1,))
    out = np.empty_like(rows)
    for index in np.ndindex(rows.shape):
        out[index] = np.prod(np.delete(rows[index[:-1]], index[-1]))
    out = np.moveaxis(out.reshape(moved.shape), range(x.ndim - len(axes), x.ndim), axes)
    kept = g if keepdims or axis is None else np.expand_dims(g, axes)
    return kept * out


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["near one", "zeros", "tiny", "huge", "long"]),
       st.sampled_from([None, 0, -1, (0, 1), "last two"]), st.booleans())
def test_prod_grad_is_g_times_the_product_of_the_others(seed, values, axis, keepdims):
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 5, size=rng.integers(2, 4)))
    if values == "long":
        shape = shape[:-1] + (300,)  # (a row of 300: the division only where |elements| are within 2**+-3)
    x = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    if values == "zeros":
        x.flat[rng.integers(0, x.size, size=2)] = 0.0
    elif values == "tiny":  # (a partial product below the normal floats: the division would lose it)
        x.flat[rng.integers(0, x.size, size=2)] = 1e-160
    elif values == "huge":
        x.flat[rng.integers(0, x.size, size=2)] = 1e160
    axis = (x.ndim - 2, x.ndim - 1) if axis == "last two" else axis
    result = np.prod(x, axis=axis, keepdims=keepdims)
    g = rng.standard_normal(np.shape(result))
    got = prod_grad(g, x, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(got, others(x, g, axis, keepdims), rtol=1e-11, atol=1e-300)  # (results below the normal floats carry fewer digits)

