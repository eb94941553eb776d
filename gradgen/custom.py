"""`gradgen.custom_vjp` and `gradgen.stop_gradient` as your file runs them: nothing is done
to the numbers. gradgen reads both from the source (gradgen/frontend/custom_calls.py) and writes the
rule into the generated backward pass; the generated module never imports gradgen.

    @gradgen.custom_vjp                   # or @gradgen.custom_vjp(estimator=True)
    def safe_log(x):
        return np.log(np.maximum(x, 1e-12))

    @safe_log.defvjp                      # or @safe_log.defvjp(estimator=True)
    def safe_log_vjp(g, out, x):
        return g / np.maximum(x, 1e-12)

At run time `custom_vjp` returns the function itself (calling it is calling it), with the
rule kept on it for `gradgen check`, which compares the rule with finite differences of the
function (unless it is marked an estimator: deliberately not the derivative).
`stop_gradient(x)` returns x. This module imports nothing: a file that uses it pays nothing
for NumPy, sympy or black through it.
"""

# Set by `gradgen check` alone (gradgen/verify/custom.py): while it runs finite differences
# with the values stop_gradient took at the check point held constant. None otherwise.
_stop_hook = None


def custom_vjp(function=None, *, estimator=False):
    """Mark `function` as one whose derivative is the rule given with `function.defvjp`.

    Returns `function` itself. `estimator=True` says the rule is deliberately not the
    derivative (a straight-through estimator): `gradgen check` then does not compare it."""
    if function is None:  # @custom_vjp(estimator=True)
        return lambda f: custom_vjp(f, estimator=estimator)
    if not callable(function):
        raise TypeError(f"custom_vjp decorates a function, not {type(function).__name__}")

    def defvjp(rule=None, *, estimator=False):
        """Register `rule(g, out, *inputs)` (one contribution per input; a tuple for
        several, None for an input that gets no gradient); returns the rule."""
        if rule is None:  # @f.defvjp(estimator=True)
            return lambda r: defvjp(r, estimator=estimator)
        function.gradgen_rule = rule
        function.gradgen_estimator = function.gradgen_estimator or estimator
        return rule

    function.defvjp = defvjp
    function.gradgen_rule = None
    function.gradgen_estimator = bool(estimator)
    return function


def stop_gradient(x):
    """`x` itself; gradgen differentiates it as a constant (no gradient flows through it)."""
    return x if _stop_hook is None else _stop_hook(x)
