"""The intermediate representation, at the bottom of the stages: it imports nothing above it.

`nodes` holds the records (expressions `Const`, `Var`, `Call`, `Cond`; statements `Assign`,
`If`, `For`, `While`, ...), the printer and the traversals every stage shares (`walk`,
`expressions`, `subexpressions`); `simplify` the folding smart constructors the operators
on nodes build with (`g * 1` is `g`) and the passes over statements (dead code). Importing
the package imports both, so `x + y` on nodes always folds.
"""

from gradgen.ir import nodes, simplify  # noqa: F401  (simplify gives nodes their operators)
