"""The front end: Python source to the IR, without running any of it.

`source` reads the file (a regular file of bounded size), `parse` makes the Module record
(imports, constants, functions; `constants` folds constant expressions, never running them), `local_imports` the user's own files it imports (read
the same way, never run, their functions inlined), `lower` and its mixins (`lower_calls`, `lower_exprs`,
`lower_lists`, `lower_loops`, `lower_assign`, `known_lists`, `generators` (a generator inlined
where a loop consumes it), `mapping` (map, functools.partial, list(...) of iterables), `recursion`
(recursion unrolled to a depth known when compiling)) turn one function's AST into straight-line SSA
over primitives, with `scopes`, `loop_returns` (a `return` inside a loop made a `break` out of
it), `raises` (a branch that ends in `raise` made an `if` of its own), `fold` (values known when
compiling), `closures`,
`comprehensions`, `structured` (parameters that are lists, tuples, dicts) with
`structured_loops` (loops over their parts) and `records` (NamedTuples and dataclasses
declared in the file), `effects` (print, assert, logging), `inactive` (code outside the
subset kept as written, for the activity analysis to accept where no derivative flows) and
`custom_calls` (reading `@gradgen.custom_vjp` rules), `nested` (`gradgen.grad(f)` called inside a
compiled function: compiled by gradgen, through the compiler gradgen.api hands it, and inlined),
`flattening` (`v, _ = flatten(params)`: the vector of a structured parameter's leaves), `odeint`
(`scipy.integrate.odeint(f, y0, t, args)`: f written into the generated module, its vjp compiled). May import `gradgen.ir`, `gradgen.rules`,
`gradgen.analysis`; never the transforms (an independent layer).
"""
