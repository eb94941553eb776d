"""Code generation: IR to the generated module's text.

`emit` (IR to Python, black-formatted, with the helpers it uses; `spellings`: the primitives
written in a shape of their own; `layout`: the statements already in black's layout, which
skip black), `naming` (every name the
generated code uses is made here), `freshness` (the header and `gradgen status`), `module`
(the module's docstring and options, and the check that it means what it says), `selection`
(which functions of a whole file are tried, and why each other one is skipped), `guards`
(what a generated function checks on entry), `record_defaults` (a default that is
a record of constants, its class and instance declared again), `ode_functions` (the
functions odeint calls, written into the module with their vjps), `checkpointing` (a checkpointed loop and its
schedule written out), `derivatives` (jvp, hvp, grad_and_hvp, hessian, vjp and
jacobian beside the gradient), `array_api` with `array_api_calls` and `array_api_helpers`
(the module respelled for any Array API library), and `numba_jit` (the module made for
numba.njit) with `numba_check` (what numba compiles), `numba_spell` (the respellings, with
`numba_bound`: the names certainly bound where each statement starts) and
`numba_arrays` (array code: numba's NumPy, its respellings, typed helpers) and
`numba_along` (the helpers written into the module for calls numba lacks: reductions
along an axis, np.repeat, a stack of a list), `numba_index` (reads and writes at an index of
arrays: a gather by two index arrays, np.add.at, each index checked) and `numba_einsum` (an einsum as a loop nest written
for its subscripts);
both edit the finished text with `rewrite`.
May import everything below it (ir, rules, analysis, frontend, transform).
"""
