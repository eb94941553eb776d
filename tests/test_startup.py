"""Start-up: each command imports only what it needs (issue 13). Timings live in
benchmarks/startup.py; these tests check the imports themselves, in a fresh interpreter."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "sympy", "black", "scipy", "gradgen.api")


def imported_after(code, cwd=ROOT):
    """Run `code` in a fresh Python; the heavy modules it left imported, and its stdout."""
    probe = (f"import sys\n{code}\n"
             f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    result = subprocess.run([sys.executable, "-c", "import json\n" + probe], cwd=cwd, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    *out, modules = result.stdout.splitlines()
    return json.loads(modules), out


def cli(argv):
    """A gradgen command, run in-process the way the console script runs it."""
    return (f"import gradgen.tools.cli\ntry:\n    rc = gradgen.tools.cli.main({argv!r})\nexcept SystemExit as exc:\n"
            f"    rc = exc.code\nprint('status', rc)")


def test_import_gradgen_imports_nothing_heavy():
    assert imported_after("import gradgen") == ([], [])


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["compile", "--help"]], ids=" ".join)
def test_version_and_help_import_nothing_heavy(argv):
    modules, out = imported_after(cli(argv))
    assert modules == [] and out[-1] == "status 0"
    if argv == ["--version"]:
        assert out == ["gradgen 0.1.0", "status 0"]


def test_status_imports_nothing_heavy(tmp_path):
    for folder, name in (("examples", "seed_net.py"), ("generated", "seed_net_grad.py")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_bytes((ROOT / folder / name).read_bytes())
    modules, out = imported_after(cli(["status"]), cwd=tmp_path)
    assert modules == []
    assert out == ["fresh  generated/seed_net_grad.py (from examples/seed_net.py; compiled loss; 1 function skipped)",
                   "1 fresh", "status 0"]


def test_compile_never_imports_sympy(tmp_path):
    target = tmp_path / "out"
    for example in ("seed_net.py", "gaussian_process.py"):  # scalar rules; the linear algebra and special rules
        modules, out = imported_after(cli(["compile", f"examples/{example}", "--out-dir", str(target)]))
        assert out[-1] == "status 0"
        assert "sympy" not in modules and "black" in modules
    assert sorted(p.name for p in target.iterdir()) == ["gaussian_process_grad.py", "seed_net_grad.py"]


def test_check_does_import_sympy():
    """The probe can see sympy: `check`, which needs it, imports it."""
    modules, out = imported_after(cli(["check", "examples/seed_net.py"]))
    assert out[-1] == "status 0" and "sympy" in modules


def test_every_export_resolves_to_its_module():
    import importlib
    import importlib.util

    import gradgen

    for name, module in gradgen.EXPORTS.items():
        if importlib.util.find_spec(module) is None:
            continue  # a module another part of gradgen has not added yet
        assert getattr(gradgen, name) is getattr(importlib.import_module(module), name)
    assert set(gradgen.EXPORTS) <= set(dir(gradgen))


def test_a_name_whose_module_is_absent_is_an_attribute_error():
    code = ("import sys, gradgen\nsys.modules['gradgen.live'] = None\n"  # None: as if the module did not exist
            "print(hasattr(gradgen, 'grad'))\n"
            "try:\n    gradgen.grad\nexcept AttributeError as exc:\n    print(exc)\n"
            "try:\n    gradgen.nothing\nexcept AttributeError as exc:\n    print(exc)\n"
            "ns = {}\nexec('from gradgen import *', ns)\nprint('grad' in ns, ns['compile_source'].__module__)")
    _, out = imported_after(code)
    assert out == ["False", "gradgen.grad is not available: its module gradgen.live is missing",
                   "module 'gradgen' has no attribute 'nothing'", "False gradgen.api"]
