"""Train examples/mlp.py with the gradient gradgen generates for it, with respect to all four
weights (`gradgen compile examples/mlp.py --wrt all` writes the same function to a file):

    python examples/train_mlp.py

Plain full-batch gradient descent on a synthetic three-class problem that the script makes
itself (three Gaussian blobs in 2-D, lifted to 16 features); it prints the falling loss.
"""

import sys
from pathlib import Path

import numpy as np

import gradgen

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mlp import loss  # noqa: E402 - the source gradgen compiles

loss_value_and_grad = gradgen.value_and_grad(loss, wrt="all")  # (the default: W1 alone)


def make_data(n=300, features=16, classes=3, seed=0):
    """Three blobs in the plane, mixed into `features` dimensions; one-hot labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    centres = 2.5 * np.array([[np.cos(a), np.sin(a)] for a in 2 * np.pi * np.arange(classes) / classes])
    points = centres[labels] + rng.standard_normal((n, 2))
    X = np.tanh(points @ rng.standard_normal((2, features)))
    return X, np.eye(classes)[labels]


def train(steps=300, hidden=32, learning_rate=0.5, seed=1):
    X, Y = make_data()
    rng = np.random.default_rng(seed)
    params = [0.3 * rng.standard_normal((X.shape[1], hidden)), np.zeros(hidden),
              0.3 * rng.standard_normal((hidden, Y.shape[1])), np.zeros(Y.shape[1])]
    history = []
    for step in range(steps + 1):
        value, grads = loss_value_and_grad(*params, X=X, Y=Y)
        history.append(value)
        if step % 50 == 0:
            accuracy = np.mean(np.argmax(np.tanh(X @ params[0] + params[1]) @ params[2] + params[3], 1)
                               == np.argmax(Y, 1))
            print(f"step {step:4d}   loss {value:.4f}   accuracy {accuracy:.2f}")
        params = [p - learning_rate * g for p, g in zip(params, grads)]
    return history


if __name__ == "__main__":
    train()
