"""A recurrent neural network for character sequences, in the style of autograd's rnn
example: parameters in a dict, helpers closed over the parameters, the inputs stacked with
np.hstack, and a Python list of per-step outputs built in the loop."""

import numpy as np
from scipy.special import logsumexp


def create_rnn_params(input_size, state_size, output_size, param_scale=0.1, rs=np.random.RandomState(0)):
    return {'init hiddens': rs.randn(1, state_size) * param_scale,
            'change': rs.randn(input_size + state_size + 1, state_size) * param_scale,
            'predict': rs.randn(state_size + 1, output_size) * param_scale}


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def rnn_predict(params, inputs):
    def update_rnn(input, hiddens):
        return np.tanh(concat_and_multiply(params['change'], input, hiddens))

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params['predict'], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)  # Normalize log-probs.

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params['init hiddens'], num_sequences, axis=0)
    output = [hiddens_to_output_probs(hiddens)]

    for input in inputs:  # Iterate over time steps.
        hiddens = update_rnn(input, hiddens)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def rnn_log_likelihood(params, inputs, targets):
    logprobs = rnn_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def training_loss(params, inputs, targets):
    return -rnn_log_likelihood(params, inputs, targets)


def one_hot(labels, num_classes):
    return (labels[..., None] == np.arange(num_classes)).astype(float)


def inputs_training_loss():
    rs = np.random.RandomState(0)
    text = rs.randint(0, 3, size=(4, 2))  # 4 time steps, 2 sequences, 3 symbols
    return {
        "params": create_rnn_params(3, 3, 3, param_scale=0.5, rs=rs),
        "inputs": one_hot(text[:-1], 3),
        "targets": one_hot(text[1:], 3),
    }


def elman_loss(W_xh, W_hh, b_h, W_hy, b_y, xs, ys):
    """A plain Elman network over one sequence: the hidden states kept in a list, the loss a
    sum over time of squared errors."""
    hs = [np.zeros(W_hh.shape[0])]
    for x in xs:
        hs.append(np.tanh(W_xh @ x + W_hh @ hs[-1] + b_h))
    preds = [W_hy @ h + b_y for h in hs[1:]]
    return sum(np.sum((p - y) ** 2) for p, y in zip(preds, ys)) / len(ys)


def inputs_elman_loss():
    rs = np.random.RandomState(0)
    return {
        "W_xh": 0.5 * rs.randn(3, 2),
        "W_hh": 0.5 * rs.randn(3, 3),
        "b_h": 0.1 * rs.randn(3),
        "W_hy": 0.5 * rs.randn(1, 3),
        "b_y": 0.1 * rs.randn(1),
        "xs": rs.randn(4, 2),
        "ys": rs.randn(4, 1),
    }
