"""The derivative rules, in one table (`table`: what a primitive is, `TABLE`, its spellings),
filled by one module per library seam: `numpy` (operators, `math`, NumPy) with `cumulative`
(np.cumprod's divide-free helpers), `linalg`, `shape`
(reshaping, stacking, statistics, sorting), `special` (scipy.special and scipy.stats),
`lists` (Python lists in the loss), `integrate` (scipy.integrate.odeint's adjoint), `trees` (structured parameters) with `records` (the
helpers of those that are NamedTuples or dataclasses); `tangents` derives the
forward-mode rules from the same table. May import only `gradgen.ir` (and errors/limits).

Importing the package imports every rule module, so `from gradgen.rules.table import TABLE`
anywhere sees the whole table; the table imports none of them (no cycle), as autograd's
`numpy_vjps` registers into `core` without `core` importing it.
"""

from gradgen.rules import cumulative, integrate, linalg, lists, numpy, records, shape, special, table, trees  # noqa: F401  (each registers)
