"""gradgen: a source-to-source reverse-mode gradient compiler for Python.

The pipeline is one module per stage (see README): parse -> lower -> analyse (activity)
-> reverse -> simplify -> emit; verify checks the result against sympy and finite
differences. The public entry points live in :mod:`gradgen.api`.
"""

__version__ = "0.1.0"

from gradgen.errors import CompileError  # noqa: E402
from gradgen.api import compile_source, compile_file, load_module  # noqa: E402

__all__ = ["CompileError", "compile_source", "compile_file", "load_module", "__version__"]
