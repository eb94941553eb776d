"""The command line and what only it needs: `cli` (`gradgen compile`, `check`, `status`,
`graph`), `files` (compile a file to `generated/`: read, write atomically, never clobber),
`graph`, `graph_build` and `graph_svg` (`gradgen graph`). The top layer: it may import
every stage, and nothing imports it (the public `gradgen.compile_file` is looked up lazily).
"""
