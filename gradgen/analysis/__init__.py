"""Analyses of a lowered function: facts the transforms ask, computed once per function.

`activity` (which parameters to differentiate, which values carry a derivative, and what
forward mode varies), `arrays` (may this value be a NumPy array: where a backward pass must
sum broadcasting back), `stated` (the shapes the source states: annotations, `--shapes`),
`sameshape` (which expressions surely have the same shape though no shape is known) and
`aliasing` (may an in-place update change an array another name still reads) with `overlap`
(may a write reach the rows a view holds; which reads copy), and `changes` (a call kept as
written that changes a variable the gradient reads). May import
`gradgen.ir`, `gradgen.rules` and errors/limits; nothing that lowers, transforms or writes.
"""
