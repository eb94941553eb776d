"""An LSTM in the style of autograd's lstm example: a dict of gate weights, helpers
closed over them, cells and hiddens updated in a loop, the per-step log-probabilities
collected in a list."""

import numpy as np
from scipy.special import logsumexp


def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)  # Output ranges from 0 to 1.


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def init_lstm_params(input_size, state_size, output_size, param_scale=0.01, rs=np.random.RandomState(0)):
    def rp(*shape):
        return rs.randn(*shape) * param_scale

    return {'init cells':   rp(1, state_size),
            'init hiddens': rp(1, state_size),
            'change':       rp(input_size + state_size + 1, state_size),
            'forget':       rp(input_size + state_size + 1, state_size),
            'ingate':       rp(input_size + state_size + 1, state_size),
            'outgate':      rp(input_size + state_size + 1, state_size),
            'predict':      rp(state_size + 1, output_size)}


def lstm_predict(params, inputs):
    def update_lstm(input, hiddens, cells):
        change  = np.tanh(concat_and_multiply(params['change'], input, hiddens))
        forget  = sigmoid(concat_and_multiply(params['forget'], input, hiddens))
        ingate  = sigmoid(concat_and_multiply(params['ingate'], input, hiddens))
        outgate = sigmoid(concat_and_multiply(params['outgate'], input, hiddens))
        cells   = cells * forget + ingate * change
        hiddens = outgate * np.tanh(cells)
        return hiddens, cells

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params['predict'], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)  # Normalize log-probs.

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params['init hiddens'], num_sequences, axis=0)
    cells   = np.repeat(params['init cells'],   num_sequences, axis=0)

    output = [hiddens_to_output_probs(hiddens)]
    for input in inputs:  # Iterate over time steps.
        hiddens, cells = update_lstm(input, hiddens, cells)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def lstm_log_likelihood(params, inputs, targets):
    logprobs = lstm_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def training_loss(params, inputs, targets):
    return -lstm_log_likelihood(params, inputs, targets)


def inputs_training_loss():
    rs = np.random.RandomState(0)
    text = rs.randint(0, 2, size=(4, 2))  # 4 time steps, 2 sequences, 2 symbols
    eye = np.eye(2)
    return {
        "params": init_lstm_params(2, 2, 2, param_scale=0.5, rs=rs),
        "inputs": eye[text[:-1]],
        "targets": eye[text[1:]],
    }


def lstm_cell(x, h, c, W, U, b):
    """One step of an LSTM on a single example, the gates split out of one matrix product."""
    z = W @ x + U @ h + b
    n = h.shape[0]
    i = sigmoid(z[:n])
    f = sigmoid(z[n:2 * n])
    o = sigmoid(z[2 * n:3 * n])
    g = np.tanh(z[3 * n:])
    c = f * c + i * g
    h = o * np.tanh(c)
    return h, c


def sequence_regression_loss(W, U, b, w_out, xs, ys):
    n = U.shape[1]
    h, c = np.zeros(n), np.zeros(n)
    hs = []
    for x in xs:
        h, c = lstm_cell(x, h, c, W, U, b)
        hs.append(h)
    predictions = np.array([np.dot(w_out, h) for h in hs])
    return 0.5 * np.sum((predictions - ys) ** 2)


def inputs_sequence_regression_loss():
    rs = np.random.RandomState(0)
    n, d = 2, 2
    return {
        "W": 0.5 * rs.randn(4 * n, d),
        "U": 0.5 * rs.randn(4 * n, n),
        "b": 0.1 * rs.randn(4 * n),
        "w_out": rs.randn(n),
        "xs": rs.randn(3, d),
        "ys": rs.randn(3),
    }
