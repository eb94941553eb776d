"""An Elman recurrent network for sequence regression, written as a tutorial writes it: the
hidden states kept in a Python list (`hs.append(...)`, `hs[-1]`), one prediction per step
collected by a list comprehension. The generated backward pass pops each state's gradient
where the forward pass appended the state, so `hs[-1]` means the same state both ways.

    gradgen compile examples/rnn.py
    gradgen check examples/rnn.py --function loss --inputs examples/inputs.py:rnn
"""

import numpy as np


def step(W_xh, W_hh, b_h, h, x):
    return np.tanh(x @ W_xh + h @ W_hh + b_h)


def loss(W_xh, W_hh, b_h, w_out, *, xs, ys):
    hs = [np.zeros(W_hh.shape[0])]
    for t in range(len(xs)):
        hs.append(step(W_xh, W_hh, b_h, hs[-1], xs[t]))
    predictions = np.array([hs[t + 1] @ w_out for t in range(len(ys))])
    return np.mean((predictions - ys) ** 2)
