"""np.cumprod's helpers: its gradient, that gradient's tangent (a second derivative) and its
own tangent, each by the recurrence of a running product, so no division (`out / x` is nan
where x holds a 0). The primitive itself is registered with the other reductions in
gradgen.rules.numpy, which names these helpers."""

from gradgen.rules.table import helper

helper("cumprod_grad", '''def cumprod_grad(g, x, axis=None):
    """Gradient of np.cumprod(x, axis) given g: element j gets before_j * r_j, before_j the
    product of the elements before it and r_j = g_j + x_(j+1) r_(j+1) (the rest of each
    product, summed from the end); no division, so exact where x holds zeros."""
    x = np.asarray(x, dtype=float)
    if axis is None or np.ndim(x) == 0:  # (of a number along axis 0, NumPy's is one element too)
        return np.reshape(cumprod_grad(np.ravel(g), np.ravel(x), 0), np.shape(x))
    xs, gs = np.moveaxis(x, axis, 0), np.moveaxis(np.asarray(g, dtype=float), axis, 0)
    before = np.cumprod(np.concatenate([np.ones_like(xs[:1]), xs[:-1]]), axis=0)
    r = np.zeros(xs.shape)
    for j in reversed(range(len(xs))):
        r[j] = gs[j] + (xs[j + 1] * r[j + 1] if j + 1 < len(xs) else 0.0)
    return np.moveaxis(before * r, 0, axis)
''', tangent="explicit")
helper("cumprod_grad_tangent", '''def cumprod_grad_tangent(g, x, dx, axis=None):
    """How cumprod_grad(g, x, axis) changes as x moves along dx, g fixed (a second derivative):
    before_j * r_j, each factor moved by the product rule of its own recurrence; no division."""
    x = np.asarray(x, dtype=float)
    if axis is None or np.ndim(x) == 0:
        dx = np.ravel(np.broadcast_to(dx, np.shape(x)))
        return np.reshape(cumprod_grad_tangent(np.ravel(g), np.ravel(x), dx, 0), np.shape(x))
    xs, gs = np.moveaxis(x, axis, 0), np.moveaxis(np.asarray(g, dtype=float), axis, 0)
    ts = np.moveaxis(np.broadcast_to(dx, np.shape(x)), axis, 0)
    before, dbefore = np.zeros(xs.shape), np.zeros(xs.shape)
    c, dc = np.ones(xs.shape[1:]), np.zeros(xs.shape[1:])
    for j in range(len(xs)):  # the products before j, and how they move
        before[j], dbefore[j] = c, dc
        c, dc = c * xs[j], dc * xs[j] + c * ts[j]
    r, dr = np.zeros(xs.shape), np.zeros(xs.shape)
    for j in reversed(range(len(xs))):  # r_j = g_j + x_(j+1) r_(j+1), g fixed
        r[j] = gs[j] + (xs[j + 1] * r[j + 1] if j + 1 < len(xs) else 0.0)
        dr[j] = xs[j + 1] * dr[j + 1] + ts[j + 1] * r[j + 1] if j + 1 < len(xs) else 0.0
    return np.moveaxis(dbefore * r + before * dr, 0, axis)
''')
helper("cumprod_tangent", '''def cumprod_tangent(dx, x, axis=None):
    """Tangent of np.cumprod(x, axis) along dx: d_i = d_(i-1) x_i + c_(i-1) dx_i, c the
    products so far (the product rule, one element at a time; no division)."""
    x = np.asarray(x, dtype=float)
    if axis is None or np.ndim(x) == 0:
        return cumprod_tangent(np.ravel(np.broadcast_to(dx, np.shape(x))), np.ravel(x), 0)
    xs, ts = np.moveaxis(x, axis, 0), np.moveaxis(np.broadcast_to(dx, np.shape(x)), axis, 0)
    d, c = np.zeros(xs.shape), np.ones(xs.shape[1:])
    for i in range(len(xs)):
        d[i] = (d[i - 1] * xs[i] if i else 0.0) + c * ts[i]
        c = c * xs[i]
    return np.moveaxis(d, 0, axis)
''', tangent="linear_in_first")
