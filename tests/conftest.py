"""Test set-up: a SciPy stand-in where SciPy is not installed (see tests/stubs/scipy); numba
compiling without LLVM's optimisations; the `--soak` option (or GRADGEN_SOAK=1) for the long
runs; the count of hostile inputs tried, summed over pytest-xdist's workers."""

import importlib.util
import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

if importlib.util.find_spec("scipy") is None:
    sys.path.insert(0, str(Path(__file__).parent / "stubs"))

# numba's compiles take most of the --jit numba tests' time, and LLVM's optimisation most of a
# compile; the tests compare numbers, never speed (that is benchmarks/): optimisation level 0
# (read when numba is first imported, here and in each xdist worker) halves them
os.environ.setdefault("NUMBA_OPT", "0")

SOAK_VARIABLE = "GRADGEN_SOAK"


def soaking() -> bool:
    """`pytest --soak` (or GRADGEN_SOAK=1): the long run, behind an option so that the
    default suite stays within minutes."""
    return os.environ.get(SOAK_VARIABLE, "") not in ("", "0")


def budget(default: int, soak: int) -> int:
    """How many random programs or inputs a property tries: `default` in the suite, `soak`
    under --soak."""
    return soak if soaking() else default


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true", default=False,
                     help=f"the long soaks: many more random inputs per property (the same as {SOAK_VARIABLE}=1)")


def pytest_configure(config):
    if config.getoption("--soak"):
        os.environ[SOAK_VARIABLE] = "1"  # read by the test modules, here and in every xdist worker
    if not soaking():  # sympy's time per array program: past it, gradgen check trusts central differences alone
        from gradgen.verify import symbolic_arrays  # (sympy follows the suite's small programs well within it: 51 s saved)

        symbolic_arrays.SYMPY_SECONDS = 2.0
    config._gradgen_hostile = Counter()


def _tried_here():
    module = sys.modules.get("test_hostile")
    return Counter(getattr(module, "TRIED", {}))


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # an xdist worker: hand its count to the controller
        session.config.workeroutput["gradgen_hostile"] = json.dumps(_tried_here())


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: there only when it is installed
def pytest_testnodedown(node, error):
    output = getattr(node, "workeroutput", None) or {}
    node.config._gradgen_hostile.update(json.loads(output.get("gradgen_hostile", "{}")))


def pytest_terminal_summary(terminalreporter, config):
    tried = config._gradgen_hostile + _tried_here()
    if tried:
        terminalreporter.write_line(f"hostile inputs tried: {sum(tried.values())} "
                                    f"({', '.join(f'{k}: {v}' for k, v in sorted(tried.items()))})")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """The Python API's caches emptied before and after, its disk cache in the test's folder,
    and no .pyc written (a user file edited within the same second is imported afresh). Modules
    of the API's tests use it for every test: `pytestmark = pytest.mark.usefixtures("fresh_cache")`."""
    from gradgen import live

    monkeypatch.setenv("GRADGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    live.clear_cache()
    yield
    live.clear_cache()
