"""Reverse mode: the backward pass of one function, as a person writes it.

`driver` runs it for one function (analyses, backward pass, saves, sharing of forward
values) and returns IR; `backward` walks the statements in reverse; `expression` pushes a
gradient down one expression with the table's rules; `factoring` adds up the contributions
one statement makes to one variable as a person would; `merge` sends them; `control_flow`
replays branches and loops backwards; `tape` decides which forward values the backward
pass gets back and how (saved before an overwrite, or after a loop trip makes them);
`lists` mirrors Python lists; `custom` writes out a `@gradgen.custom_vjp` rule;
`checkpoint` (`--checkpoint K`) rewrites the loops that keep a tape for binomial
checkpointing.
"""
