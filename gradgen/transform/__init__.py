"""Transforms of the IR: from the lowered function to the statements of its derivatives.

`forward` (forward mode: each statement followed by its tangent line), `cse` (each forward
value computed once) and `reverse/` (the backward pass). Their results are IR, never text:
`gradgen.codegen` writes them out. May import `gradgen.ir`, `gradgen.rules`,
`gradgen.analysis`; never the front end (an independent layer) nor the code generator.
"""
