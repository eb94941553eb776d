"""Test set-up: a SciPy stand-in where SciPy is not installed (see tests/stubs/scipy)."""

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("scipy") is None:
    sys.path.insert(0, str(Path(__file__).parent / "stubs"))
