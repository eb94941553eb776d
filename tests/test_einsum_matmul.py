"""np.einsum of two operands in the generated code (issue 23: gmm and ht spent most of their
time in np.einsum's own loop, 10-30x slower than BLAS on a stacked product).

The gradient of an einsum operand is an einsum written out when compiling ("kij,nkj->nki"'s
Ls gets "nki,nkj->kij"), and every einsum of two operands is spelled `einsum_matmul`, the same
sum as one matmul (gradgen.codegen.spellings.EINSUM_MATMUL). Checked here: the helper against
np.einsum on random subscripts and lengths (hypothesis), the lines the compiler writes, and
the gradients of random two-operand contractions against central differences.
"""

from __future__ import annotations

import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradgen import compile_source, load_module
from gradgen.analysis.stated import shapes_of_point
from gradgen.codegen.spellings import EINSUM_MATMUL

HELPER = {"np": np}
exec(EINSUM_MATMUL[1], HELPER)  # noqa: S102 - gradgen's own helper text
einsum_matmul = HELPER["einsum_matmul"]


@st.composite
def contractions(draw, most=4, longest=9, fewest=0):
    """(subscripts, shape of a, shape of b): two operands of up to `most` letters each, letters
    shared or not, an output of some of them in any order; lengths 1..longest (a length 1 in
    one operand against another length in the other is NumPy's broadcast); gradgen compiles
    einsums whose operands have one letter or more (`fewest`)."""
    letters = string.ascii_lowercase[:6]
    sa = "".join(draw(st.permutations(letters))[:draw(st.integers(fewest, most))])
    sb = "".join(draw(st.permutations(letters))[:draw(st.integers(fewest, most))])
    pool = sorted(set(sa + sb))
    out = "".join(c for c in draw(st.permutations(pool)) if draw(st.booleans()))
    lengths = {c: draw(st.integers(1, longest)) for c in letters}
    broadcast = draw(st.sampled_from([None, *sorted(set(sa) & set(sb))]))
    shape_b = [1 if c == broadcast else lengths[c] for c in sb]
    return f"{sa},{sb}->{out}", [lengths[c] for c in sa], shape_b


@settings(max_examples=400, deadline=None)
@given(contractions(), st.integers(0, 2**32 - 1))
def test_the_helper_is_np_einsum(case, seed):
    subscripts, shape_a, shape_b = case
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    expected = np.einsum(subscripts, a, b)
    stretched = _stretched(subscripts, shape_a, shape_b)
    if stretched:
        with pytest.raises(ValueError) as raised:
            einsum_matmul(subscripts, a, b)
        assert str(raised.value) == (f"np.einsum({subscripts!r}): letter {stretched}; the gradient needs one "
                                     "length per summed letter: np.broadcast_to the operand of length 1 first")
        return
    got = einsum_matmul(subscripts, a, b)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_a_large_stacked_product_takes_matmul():
    """gmm's "kij,nkj->nki" (1000 points, 5 components): the matmul path, not np.einsum's."""
    rng = np.random.default_rng(0)
    Ls, centered = rng.standard_normal((5, 2, 2)), rng.standard_normal((1000, 5, 2))
    calls = []
    env = {"np": _Counting(calls)}
    exec(EINSUM_MATMUL[1], env)  # noqa: S102
    got = env["einsum_matmul"]("kij,nkj->nki", Ls, centered)
    np.testing.assert_allclose(got, np.einsum("kij,nkj->nki", Ls, centered), rtol=1e-12)
    assert "einsum" not in calls
    env["einsum_matmul"]("ij,jk->ik", Ls[0], Ls[1])  # 2x2 by 2x2: np.einsum itself
    assert calls.count("einsum") == 1


class _Counting:
    """numpy, noting which of its functions the helper calls."""

    def __init__(self, calls):
        self.calls = calls

    def __getattr__(self, name):
        self.calls.append(name)
        return getattr(np, name)


GMM = '''import numpy as np


def objective(mu, l, *, x, lower):
    Ls = np.einsum("kp,pij->kij", l, lower)
    centered = x[:, None, :] - mu[None, :, :]
    Lx = centered + np.einsum("kij,nkj->nki", Ls, centered)
    return np.sum(Lx**2) + np.einsum("k,k->", l[:, 0], l[:, 0])
'''


def test_the_gradient_is_written_as_einsums():
    """With the shapes stated, each operand's gradient is one einsum back to its letters; without
    them, np.einsum may have stretched k or n (a length 1), and it is summed back at run time."""
    rng = np.random.default_rng(1)
    point = {"mu": rng.standard_normal((5, 2)), "l": rng.standard_normal((5, 1))}
    data = {"x": rng.standard_normal((1000, 2)), "lower": np.array([[[0.0, 0.0], [1.0, 0.0]]])}
    text = compile_source(GMM, "gmm.py", wrt=["mu", "l"], shapes=shapes_of_point({**point, **data})).text
    grad = text[text.index("def objective_grad"):text.index("def objective_value_and_grad")]
    lines = [line.strip() for line in grad.splitlines()]
    for line in ['Ls = einsum_matmul("kp,pij->kij", l, lower)',
                 'Lx = centered + einsum_matmul("kij,nkj->nki", Ls, centered)',
                 'dobjective_dLs = einsum_matmul("nki,nkj->kij", dobjective_dLx, centered)',
                 '"nki,kij->nkj", dobjective_dLx, Ls',
                 'dobjective_dl = dobjective_dl + einsum_matmul("kij,pij->kp", dobjective_dLs, lower)']:
        assert line in lines, line
    assert "einsum_grad" not in text and "unbroadcast" not in text
    assert "def einsum_matmul(subscripts, *operands):" in text
    _agrees_with_differences(text, GMM, "objective", point, data)
    plain = compile_source(GMM, "gmm.py", wrt=["mu", "l"]).text
    assert "dobjective_dLs = unbroadcast(" in plain
    _agrees_with_differences(plain, GMM, "objective", point, data)


@settings(max_examples=25, deadline=None)
@given(contractions(most=3, longest=12, fewest=1), st.integers(0, 2**32 - 1))
def test_gradients_of_random_contractions(case, seed):
    subscripts, shape_a, shape_b = case
    source = ("import numpy as np\n\n\ndef f(a, b):\n"
              f"    return np.sum(np.sin(np.einsum('{subscripts}', a, b)))\n")
    rng = np.random.default_rng(seed)
    point = {"a": rng.standard_normal(shape_a), "b": rng.standard_normal(shape_b)}
    if _stretched(subscripts, shape_a, shape_b):  # refused when it runs, never a gradient of a's shape
        module = load_module(compile_source(source, "f.py", wrt=["a", "b"]).text, "einsum_stretched")
        with pytest.raises(ValueError, match="the gradient needs one length per summed letter"):
            module.f_grad(**point)
        return
    _agrees_with_differences(compile_source(source, "f.py", wrt=["a", "b"]).text, source, "f", point, {})


def _stretched(subscripts, shape_a, shape_b):
    """"c, summed, has lengths 3 and 1" for the first summed letter of two lengths, else None
    (a letter of the output stretched is np.einsum's broadcast, and its gradient is summed back)."""
    (sa, sb), out = subscripts.split("->")[0].split(","), subscripts.split("->")[1]
    a = dict(zip(sa, shape_a))
    return next((f"{c}, summed, has lengths {a[c]} and {n}" for c, n in zip(sb, shape_b)
                 if a.get(c, n) != n and c not in out), None)


def _agrees_with_differences(text, source, name, point, data, step=1e-6):
    grads = getattr(load_module(text, f"einsum_{name}"), f"{name}_grad")(**point, **data)
    user = {}
    exec(source, user)  # noqa: S102 - the test's own program
    for (param, value), grad in zip(point.items(), grads if isinstance(grads, tuple) else (grads,)):
        expected = np.zeros(np.shape(value))
        for index in np.ndindex(np.shape(value)):
            moved = [np.array(value, dtype=float) for _ in range(2)]
            moved[0][index] += step
            moved[1][index] -= step
            up, down = (user[name](**{**point, param: m}, **data) for m in moved)
            expected[index] = (up - down) / (2 * step)
        np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)


MLP = '''import numpy as np


def f(W, v, *, inputs):
    outputs = np.einsum("mnd,mdo->mno", np.expand_dims(inputs, 0), W)
    hidden = np.tanh(outputs)
    return np.sum(np.einsum("mno,xo->mnx", hidden, v) ** 2)
'''


def test_a_letter_stretched_in_the_output_is_summed_back():
    """autograd's Bayesian network stacks m weight sets against one batch of inputs (a letter
    m of length 1 stretched to 3, which np.einsum allows); v (1, o) is stretched by nothing,
    but `xo` against `mno` keeps x: its gradient is as long as v's x. And where the stretched
    operand is the parameter (v of length 1 against hidden's m), its gradient is summed back."""
    rng = np.random.default_rng(2)
    point = {"W": rng.standard_normal((3, 4, 2)), "v": rng.standard_normal((1, 2))}
    text = compile_source(MLP, "mlp.py", wrt=["W", "v"]).text
    _agrees_with_differences(text, MLP, "f", point, {"inputs": rng.standard_normal((5, 4))})
    stretched = MLP.replace('"mno,xo->mnx", hidden, v', '"mno,mo->mn", hidden, v')
    data = {"inputs": rng.standard_normal((5, 4))}
    text = compile_source(stretched, "mlp.py", wrt=["W", "v"]).text
    assert "unbroadcast(" in text
    _agrees_with_differences(text, stretched, "f", point, data)
    # the stated shapes show v's m stretched (1 against 3): still summed back, in v's shape
    text = compile_source(stretched, "mlp.py", wrt=["W", "v"], shapes=shapes_of_point({**point, **data})).text
    _agrees_with_differences(text, stretched, "f", point, data)
