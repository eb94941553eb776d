"""The MLP gradient of examples/mlp.py over a chunked Dask dataset, on a dask.distributed cluster.

    pip install ".[dask]"           # gradgen with array-api-compat, dask and distributed
    python examples/dask_mlp.py

gradgen compiles examples/mlp.py with the Array API backend (what `gradgen compile
--backend array-api examples/mlp.py` writes), and the generated `loss_value_and_grad`,
given Dask arrays, builds a lazy task graph chunk by chunk: no chunk is computed until the
cluster is asked for the result. The same code would run on NumPy, CuPy, PyTorch or JAX
arrays. Here the dataset is made on the workers (a teacher network labels random inputs),
kept there (`persist`), and never gathered; the weights are small NumPy arrays, sent to the
cluster as one-chunk Dask arrays at each step. Sizes are small so that it runs in seconds;
raise ROWS and the same code differentiates a dataset larger than any one machine's memory.
"""

from pathlib import Path

import dask
import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster

from gradgen import compile_source, load_module

ROWS, CHUNK, FEATURES, HIDDEN, CLASSES = 20_000, 2_500, 16, 32, 3
MLP = Path(__file__).resolve().parent / "mlp.py"


def generated(backend):
    """examples/mlp.py compiled by gradgen for `backend` ("numpy" or "array-api")."""
    return load_module(compile_source(MLP.read_bytes(), "examples/mlp.py", backend=backend, wrt="all").text,
                       f"mlp_grad_{backend.replace('-', '_')}")


def make_data(seed=0):
    """ROWS inputs in chunks of CHUNK rows, labelled by a random teacher network (lazy)."""
    rng = da.random.default_rng(seed)
    X = rng.standard_normal((ROWS, FEATURES), chunks=(CHUNK, FEATURES))
    teacher = np.random.default_rng(seed + 1).standard_normal((FEATURES, CLASSES))
    labels = da.argmax(X @ teacher, axis=1)
    Y = (labels[:, None] == da.arange(CLASSES)[None, :]).astype(float)
    return X, Y


def train(grad_module, X, Y, steps=5, learning_rate=0.5, seed=2):
    rng = np.random.default_rng(seed)
    params = [0.3 * rng.standard_normal((FEATURES, HIDDEN)), np.zeros(HIDDEN),
              0.3 * rng.standard_normal((HIDDEN, CLASSES)), np.zeros(CLASSES)]
    for step in range(steps):
        value, grads = grad_module.loss_value_and_grad(*map(da.from_array, params), X=X, Y=Y)
        if step == 0:  # nothing has been computed yet: a graph over every chunk
            print(f"the gradient is a lazy {type(grads[0]).__module__}.{type(grads[0]).__name__}: "
                  f"{len(grads[0].__dask_graph__())} tasks over {X.numblocks[0]} chunks of {CHUNK} rows")
        value, grads = dask.compute(value, grads)  # the cluster sums the chunks' contributions
        print(f"step {step}   loss {float(value):.4f}")
        params = [p - learning_rate * g for p, g in zip(params, grads)]
    return params


def main():
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster):
        X, Y = dask.persist(*make_data())  # made and kept on the workers
        array_api = generated("array-api")
        params = train(array_api, X, Y)
        # the same gradient from the NumPy backend, on the dataset gathered into this process
        reference = generated("numpy").loss_grad(*params, X=X.compute(), Y=Y.compute())
        last = array_api.loss_grad(*map(da.from_array, params), X=X, Y=Y)
        difference = max(float(np.max(np.abs(a - b))) for a, b in zip(dask.compute(*last), reference))
        print(f"largest difference from the NumPy backend's gradient: {difference:.1e}")


if __name__ == "__main__":
    main()
