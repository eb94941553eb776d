"""Verification: `gradgen check` proves a generated module right against references that
share nothing with it.

`check` runs it; `symbolic` (with `trace`, `symbolic_arrays`, `symbolic_plans`) is the sympy
oracle on the IR; `finite` central finite differences of the user's own function (run by
`usercode`); `nonfinite` says where a nan first appears; `derivatives` checks the other
kinds; `custom` checks custom rules; `report` the table it prints. Sits above gradgen.api,
which it calls to compile.
"""
