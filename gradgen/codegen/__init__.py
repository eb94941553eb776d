"""Code generation: IR to the generated module's text.

`emit` (IR to Python, black-formatted, with the helpers it uses), `naming` (every name the
generated code uses is made here), `freshness` (the header and `gradgen status`), `guards`
(what a generated function checks on entry), `derivatives` (jvp, hvp, hessian, vjp and
jacobian beside the gradient), `array_api*` (the module respelled for any Array API
library) and `numba_*` (the module made for numba.njit: what numba compiles, the
respellings). May import everything below it (ir, rules, analysis, frontend, transform).
"""
