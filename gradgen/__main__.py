"""`python -m gradgen` is the same as the `gradgen` console script."""

from gradgen.tools.cli import main

raise SystemExit(main())
