"""Functions a compiled function may call from gradgen, read as its own helpers are.

`from gradgen import fixed_point` (autograd's `autograd.misc.fixed_points.fixed_point`, with
its arguments): at run time it is this plain Python; when a function gradgen compiles calls
it, gradgen reads this file (never runs it) and inlines the function as it inlines a helper of
the user's own files (gradgen.frontend.local_imports), so the generated module never imports
gradgen. Its derivative is that of the iterations that run (the loop differentiated as
written), which is what finite differences of the program measure; autograd gives the
derivative at the exact fixed point instead (the implicit function theorem), which differs
from it by about `tol`.
"""


def fixed_point(f, a, x0, distance, tol):
    """Iterate x = f(a)(x) from x0 until distance(x, previous x) is at most tol; the last x."""
    step = f(a)
    x, x_prev = step(x0), x0
    while distance(x, x_prev) > tol:
        x, x_prev = step(x), x
    return x
