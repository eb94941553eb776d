"""A small 1-D convolutional classifier without a convolution library: the convolution
is a list comprehension of dot products over slices, the feature maps are pooled by
slicing, the parameters live in a dict."""

import numpy as np
from scipy.special import logsumexp


def conv1d(x, kernel):
    k = len(kernel)
    return np.array([np.dot(x[i:i + k], kernel) for i in range(len(x) - k + 1)])


def avg_pool(x, width=2):
    n = len(x) // width
    return np.array([np.mean(x[i * width:(i + 1) * width]) for i in range(n)])


def features(params, signal):
    maps = [np.tanh(conv1d(signal, kernel) + bias)
            for kernel, bias in zip(params["kernels"], params["biases"])]
    return np.concatenate([avg_pool(m) for m in maps])


def cnn_loss(params, signals, labels):
    total = 0.0
    for signal, label in zip(signals, labels):
        logits = np.dot(params["W"], features(params, signal)) + params["b"]
        total = total - (logits[label] - logsumexp(logits))
    return total / len(signals)


def inputs_cnn_loss():
    rs = np.random.RandomState(0)
    num_kernels, width, length, classes = 2, 3, 8, 3
    num_features = num_kernels * ((length - width + 1) // 2)
    return {
        "params": {
            "kernels": 0.5 * rs.randn(num_kernels, width),
            "biases": 0.1 * rs.randn(num_kernels),
            "W": 0.5 * rs.randn(classes, num_features),
            "b": np.zeros(classes),
        },
        "signals": rs.randn(3, length),
        "labels": rs.randint(0, classes, size=3),
    }


def conv_layer(x, filters, stride=1):
    """'valid' cross-correlation of a (length, channels) signal with (width, channels,
    out) filters, written with a loop and writes into the output."""
    width = filters.shape[0]
    out_len = (x.shape[0] - width) // stride + 1
    out = np.zeros((out_len, filters.shape[2]))
    for i in range(out_len):
        window = x[i * stride:i * stride + width]             # (width, channels)
        out[i] = np.einsum('wc,wco->o', window, filters)
    return out


def strided_net_loss(filters1, filters2, w_out, x, y):
    h = np.tanh(conv_layer(x, filters1, stride=2))
    h = np.tanh(conv_layer(h, filters2))
    prediction = np.dot(h.ravel(), w_out)
    return (prediction - y) ** 2


def inputs_strided_net_loss():
    rs = np.random.RandomState(0)
    return {
        "filters1": 0.5 * rs.randn(3, 2, 3),
        "filters2": 0.5 * rs.randn(2, 3, 2),
        "w_out": rs.randn(6),
        "x": rs.randn(9, 2),
        "y": 0.3,
    }
