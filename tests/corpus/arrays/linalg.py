"""Array corpus: products and transposes: @, np.dot, np.matmul, np.outer, np.inner, .T,
np.transpose, with vectors, matrices and a batch of matrices."""

import numpy as np


def matvec_squares(w, *, X):
    return np.sum((X @ w) ** 2)


def inputs_matvec_squares():
    rng = np.random.default_rng(401)
    return {"w": rng.standard_normal(3), "X": rng.standard_normal((5, 3))}


def matmat_tanh(A, B):
    return np.sum(np.tanh(A @ B))


def inputs_matmat_tanh():
    rng = np.random.default_rng(402)
    return {"A": rng.standard_normal((3, 4)), "B": rng.standard_normal((4, 2))}


def vecmat(v, M):
    return np.sum(np.sin(v @ M))


def inputs_vecmat():
    rng = np.random.default_rng(403)
    return {"v": rng.standard_normal(4), "M": rng.standard_normal((4, 3))}


def vec_at_vec(u, v):
    return np.sin(u @ v) + u @ u


def inputs_vec_at_vec():
    rng = np.random.default_rng(404)
    return {"u": rng.standard_normal(5), "v": rng.standard_normal(5)}


def dot_variants(A, x, y):
    return np.sum(np.dot(A, x) ** 2) + np.dot(x, y) * np.dot(y, y)


def inputs_dot_variants():
    rng = np.random.default_rng(405)
    return {
        "A": rng.standard_normal((3, 4)),
        "x": rng.standard_normal(4),
        "y": rng.standard_normal(4),
    }


def dot_matrices(A, B):
    return np.sum(np.dot(A, B) * np.dot(A, B))


def inputs_dot_matrices():
    rng = np.random.default_rng(406)
    return {"A": rng.standard_normal((2, 3)), "B": rng.standard_normal((3, 4))}


def matmul_batched(T, M):
    return np.sum(np.cos(np.matmul(T, M)))


def inputs_matmul_batched():
    rng = np.random.default_rng(407)
    return {"T": rng.standard_normal((2, 3, 4)), "M": rng.standard_normal((4, 2))}


def outer_product(u, v):
    return np.sum(np.outer(u, v) ** 2 + np.outer(v, np.sin(u)).T * np.outer(u, v))


def inputs_outer_product():
    rng = np.random.default_rng(408)
    return {"u": rng.standard_normal(3), "v": rng.standard_normal(4)}


def inner_product(u, v):
    return np.inner(u, v) ** 2 + np.inner(np.exp(u), v)


def inputs_inner_product():
    rng = np.random.default_rng(409)
    return {"u": rng.standard_normal(6), "v": rng.standard_normal(6)}


def gram_T(A):
    return np.sum((A.T @ A) ** 2) + np.sum(A @ A.T)


def inputs_gram_T():
    rng = np.random.default_rng(410)
    return {"A": rng.standard_normal((4, 3))}


def np_transpose_2d(A, B):
    return np.sum(np.transpose(A) * B)


def inputs_np_transpose_2d():
    rng = np.random.default_rng(411)
    return {"A": rng.standard_normal((3, 2)), "B": rng.standard_normal((2, 3))}


def quadratic_form(x, A):
    return x @ A @ x


def inputs_quadratic_form():
    rng = np.random.default_rng(412)
    return {"x": rng.standard_normal(4), "A": rng.standard_normal((4, 4))}


def residual_norm(x, *, A, b):
    return np.linalg.norm(A @ x - b)


def inputs_residual_norm():
    rng = np.random.default_rng(413)
    return {
        "x": rng.standard_normal(3),
        "A": rng.standard_normal((5, 3)),
        "b": rng.standard_normal(5),
    }


def chain_of_products(A, B, C):
    return np.sum(np.tanh(A @ B.T @ C))


def inputs_chain_of_products():
    rng = np.random.default_rng(414)
    return {
        "A": rng.standard_normal((2, 3)),
        "B": rng.standard_normal((4, 3)),
        "C": rng.standard_normal((4, 2)),
    }


def einsum_contractions(A, B, v):
    """np.einsum: a matrix product, an implicit output, a sum over an index one operand
    alone has, an outer product and a full contraction."""
    C = np.einsum('ij,jk->ik', A, B)
    s = np.einsum('ij,j', C, v)
    t = np.einsum('ij->i', A * A)
    T = np.einsum('ij,k->ijk', A, v)
    return np.sum(s ** 2) + np.einsum('i,i->', t, t) + np.einsum('ijk,ij->', T, A)


def inputs_einsum_contractions():
    rng = np.random.default_rng(611)
    return {"A": rng.standard_normal((3, 2)), "B": rng.standard_normal((2, 2)), "v": rng.standard_normal(2)}
