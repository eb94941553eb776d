"""GradBench `lstm` (ADBench's): a stack of l LSTM layers with elementwise (diagonal) weights
run over a text, one character's bits at a time; the loss is the average of the targets times
the log-softmax of each prediction, where the softmax's denominator carries ADBench's extra
+ 2 (log(sum(exp(y)) + 2), as GradBench's tools and C++ reference compute it). Loops over time
and layers, as GradBench's PyTorch tool writes it. Differentiated with respect to the main and
extra parameters; the state and the text are data. Inputs as GradBench's generator makes them
(parameters and state uniform in [0, 1)), the text a seeded random string of ASCII letters (7
bits a character) instead of its text file; l = 2 and c = 128 characters (small) or c = 1024
(medium)."""

import numpy as np

import tools

PARAMETERS = ("main_params", "extra_params")
SIZES = {"small": (2, 128), "medium": (2, 1024)}


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


def objective(main_params, extra_params, *, state, sequence):
    layers = state.shape[0] // 2
    hidden = state[0::2]
    cell = state[1::2]
    total = 0.0
    current = sequence[0]
    for t in range(sequence.shape[0] - 1):
        x = current * extra_params[0]
        # (each step's layers in new lists, stacked into the state: gradgen refuses writing into
        # a list, `hidden[i], cell[i] = ...`, and a list rebound in the loop, `hidden = new_hidden`;
        # and two lists made as `new_hidden, new_cell = [], []` lose their gradient: README.md)
        new_hidden = []
        new_cell = []
        for i in range(layers):
            x, c = lstm_cell(main_params[2 * i], main_params[2 * i + 1], hidden[i], cell[i], x)
            new_hidden.append(x)
            new_cell.append(c)
        hidden = np.stack(new_hidden)
        cell = np.stack(new_cell)
        prediction = x * extra_params[1] + extra_params[2]
        normalised = prediction - np.log(np.sum(np.exp(prediction)) + 2)
        total = total + np.sum(sequence[t + 1] * normalised)
        current = sequence[t + 1]
    return -total / ((sequence.shape[0] - 1) * sequence.shape[1])


def inputs(size="small", seed=31337, bits=7):
    layers, characters = SIZES[size]
    rng = np.random.default_rng(seed)
    text = rng.integers(ord("a"), ord("z") + 1, characters)
    sequence = ((text[:, None] >> np.arange(bits - 1, -1, -1)) & 1).astype(float)
    return {"main_params": rng.uniform(size=(2 * layers, 4 * bits)), "extra_params": rng.uniform(size=(3, bits)),
            "state": rng.uniform(size=(2 * layers, bits)), "sequence": sequence}


def torch_objective(main_params, extra_params, *, state, sequence):
    import torch  # start-up: benchmark-only extra

    def step(weight, bias, hidden, cell, x):
        b = hidden.shape[0]
        gates = torch.cat([x, hidden, x, hidden]) * weight + bias
        cell = cell * torch.sigmoid(gates[:b]) + torch.sigmoid(gates[b:2 * b]) * torch.tanh(gates[3 * b:])
        return torch.sigmoid(gates[2 * b:3 * b]) * torch.tanh(cell), cell

    layers = state.shape[0] // 2
    hidden = [state[2 * i] for i in range(layers)]
    cell = [state[2 * i + 1] for i in range(layers)]
    total = 0.0
    current = sequence[0]
    for t in range(sequence.shape[0] - 1):
        x = current * extra_params[0]
        for i in range(layers):
            hidden[i], cell[i] = step(main_params[2 * i], main_params[2 * i + 1], hidden[i], cell[i], x)
            x = hidden[i]
        prediction = x * extra_params[1] + extra_params[2]
        normalised = prediction - torch.log(torch.sum(torch.exp(prediction)) + 2)
        total = total + torch.sum(sequence[t + 1] * normalised)
        current = sequence[t + 1]
    return -total / ((sequence.shape[0] - 1) * sequence.shape[1])


def jax_objective(jax):
    """The same network as a jax user writes it: time as jax.lax.scan, the layers unrolled."""
    jnp = jax.numpy
    cell_step = tools.rebound(lstm_cell, jnp)

    def objective(main_params, extra_params, *, state, sequence):
        layers = state.shape[0] // 2

        def step(carry, pair):
            hidden, cell, total = carry
            current, target = pair
            x = current * extra_params[0]
            hidden, cell = list(hidden), list(cell)
            for i in range(layers):
                hidden[i], cell[i] = cell_step(main_params[2 * i], main_params[2 * i + 1], hidden[i], cell[i], x)
                x = hidden[i]
            prediction = x * extra_params[1] + extra_params[2]
            normalised = prediction - jnp.log(jnp.sum(jnp.exp(prediction)) + 2)
            return (tuple(hidden), tuple(cell), total + jnp.sum(target * normalised)), None

        start = (tuple(state[0::2]), tuple(state[1::2]), 0.0)
        (_, _, total), _ = jax.lax.scan(step, start, (sequence[:-1], sequence[1:]))
        return -total / ((sequence.shape[0] - 1) * sequence.shape[1])
    return objective


def jax_gradient(args):
    return tools.jax_gradient(objective, args, PARAMETERS, written=jax_objective)


def torch_gradient(args):
    return tools.torch_gradient(torch_objective, args, PARAMETERS)


def autograd_gradient(args):
    return tools.autograd_gradient(objective, args, PARAMETERS)
