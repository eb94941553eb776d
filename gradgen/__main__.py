"""`python -m gradgen` is the same as the `gradgen` console script."""

from gradgen.cli import main

raise SystemExit(main())
