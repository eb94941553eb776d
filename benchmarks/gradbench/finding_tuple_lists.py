"""A silent wrong gradient found while porting GradBench's lstm, fixed since (gradgen's
lower_assign makes each list of `a, b = [], []` as `a = []` does; tests/test_lists.py).
Kept as the record of the finding: `python benchmarks/gradbench/finding_tuple_lists.py`
prints gradgen's gradient beside central differences (they agree now).

Two lists made in one tuple assignment, `a, b = [], []`: gradgen loses what is appended to
them. In the smallest case (MINIMAL) it finds that the loss depends on no parameter and
`loss_grad` returns (); in the LSTM (SOURCE: each step's hidden states and cells collected
with `new_hidden, new_cell = [], []`, the cells carried as np.array(new_cell)) the gradient
misses the paths through the list and differs from central differences. Written as two
statements, `a = []` and `b = []`, both are right. (Separately, with np.stack(new_cell) the
LSTM's generated gradient crashes: it replays the forward as np.stack([new_cell]).)"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gradgen import compile_source, load_module  # noqa: E402

MINIMAL = '''import numpy as np


def loss(w):
    a, b = [], []
    b.append(w[0] ** 2)
    return b[0]
'''

SOURCE = '''import numpy as np


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def lstm_cell(weight, bias, hidden, cell, x):
    b = hidden.shape[0]
    gates = np.concatenate([x, hidden, x, hidden]) * weight + bias
    forget = sigmoid(gates[:b])
    ingate = sigmoid(gates[b:2 * b])
    outgate = sigmoid(gates[2 * b:3 * b])
    change = np.tanh(gates[3 * b:])
    cell = cell * forget + ingate * change
    hidden = outgate * np.tanh(cell)
    return hidden, cell


def loss(main_params, extra_params, *, state, sequence):
    layers = state.shape[0] // 2
    hidden = state[0::2]
    cell = state[1::2]
    total = 0.0
    current = sequence[0]
    for t in range(sequence.shape[0] - 1):
        x = current * extra_params[0]
        new_hidden, new_cell = [], []
        for i in range(layers):
            x, c = lstm_cell(main_params[2 * i], main_params[2 * i + 1], hidden[i], cell[i], x)
            new_hidden.append(x)
            new_cell.append(c)
        cell = np.array(new_cell)
        prediction = x * extra_params[1] + extra_params[2]
        normalised = prediction - np.log(np.sum(np.exp(prediction)) + 2)
        total = total + np.sum(sequence[t + 1] * normalised)
        current = sequence[t + 1]
    return -total / ((sequence.shape[0] - 1) * sequence.shape[1])


'''


def gradients():
    """(gradgen's d loss / d main_params, central differences of the loss)."""
    rng = np.random.default_rng(0)
    args = dict(main_params=rng.uniform(size=(4, 12)), extra_params=rng.uniform(size=(3, 3)),
                state=rng.uniform(size=(4, 3)), sequence=rng.integers(0, 2, (4, 3)).astype(float))
    user = {}
    exec(SOURCE, user)
    got = load_module(compile_source(SOURCE, "finding.py", functions=["loss"]).text).loss_grad(**args)  # (main_params: the first)
    want = np.zeros_like(args["main_params"])
    for i in np.ndindex(want.shape):
        e = np.zeros_like(want)
        e[i] = 1e-6
        want[i] = (user["loss"](**dict(args, main_params=args["main_params"] + e))
                   - user["loss"](**dict(args, main_params=args["main_params"] - e))) / 2e-6
    return got, want


def minimal():
    """(gradgen's gradient of MINIMAL at w = (1, 2, 3), the right one)."""
    w = np.array([1.0, 2.0, 3.0])
    got = load_module(compile_source(MINIMAL, "minimal.py", functions=["loss"]).text).loss_grad(w)
    return got, 2 * w[0] * np.eye(3)[0]


def main():
    got, want = minimal()
    print(f"a, b = [], []; b.append(w[0] ** 2); return b[0]: gradgen {got!r}, the gradient {want!r}")
    got, want = gradients()
    print(f"largest |gradgen - central differences| = {np.max(np.abs(got - want)):.2e} "
          f"(largest |gradient| {np.max(np.abs(want)):.2e}), d loss / d main_params")


if __name__ == "__main__":
    main()
