"""The generated MLP gradient against a careful hand-written NumPy backward pass.

    python benchmarks/mlp_vs_numpy.py

Batch 256, 784-256-10 (examples/mlp.py). Both run in this process, interleaved, on the same
arrays; the figure that matters is the ratio of their best times (machines are noisy, a
ratio measured side by side is not). The gradients are compared first: a fast wrong answer
is no answer.
"""

import sys
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gradgen import compile_source, load_module  # noqa: E402


def hand_value_and_grad(W1, b1, W2, b2, *, X, Y):
    """The backward pass a person writes: softmax cross-entropy folded into (p - Y) / n."""
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=1, keepdims=True)
    value = -np.mean(np.sum(Y * (shifted - np.log(total)), axis=1))
    dlogits = (exp / total * Y.sum(axis=1, keepdims=True) - Y) / X.shape[0]
    dh = dlogits @ W2.T
    dz1 = dh * (1 - h**2)
    return value, (X.T @ dz1, dz1.sum(axis=0), h.T @ dlogits, dlogits.sum(axis=0))


def inputs(n=256, d=784, hidden=256, k=10, seed=0):
    rng = np.random.default_rng(seed)
    return dict(W1=0.05 * rng.standard_normal((d, hidden)), b1=np.zeros(hidden),
                W2=0.05 * rng.standard_normal((hidden, k)), b2=np.zeros(k),
                X=rng.standard_normal((n, d)), Y=np.eye(k)[rng.integers(0, k, n)])


def main(repeat=20):
    source = (ROOT / "examples" / "mlp.py").read_text()
    generated = load_module(compile_source(source, "examples/mlp.py", wrt="all").text, "mlp_grad")
    args = inputs()
    value, grads = generated.loss_value_and_grad(**args)
    hand_value, hand_grads = hand_value_and_grad(**args)
    assert np.isclose(value, hand_value, rtol=1e-12)
    for g, h in zip(grads, hand_grads):
        assert np.allclose(g, h, rtol=1e-9, atol=1e-12)
    runs = {"generated loss_value_and_grad": lambda: generated.loss_value_and_grad(**args),
            "hand-written NumPy": lambda: hand_value_and_grad(**args),
            "generated loss_grad": lambda: generated.loss_grad(**args)}
    best = {name: float("inf") for name in runs}
    for _ in range(repeat):  # interleaved, so both see the same machine
        for name, run in runs.items():
            best[name] = min(best[name], timeit.timeit(run, number=5) / 5)
    base = best["hand-written NumPy"]
    print("MLP 784-256-10, batch 256; best of", repeat, "rounds of 5 calls")
    for name, seconds in best.items():
        print(f"  {name:32s} {seconds * 1e3:8.3f} ms   ratio to hand-written {seconds / base:5.2f}")


if __name__ == "__main__":
    main()
