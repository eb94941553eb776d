"""`gradgen check` runs the user's code (the module's top level, the function at the check
points, the --inputs builder): what that code raises is the user's, reported at its line
of the user's file with status 1, never as an internal error of gradgen (status 2)."""

import sys

import numpy as np
import pytest

from gradgen.tools import cli

ARRAYS = "import numpy as np\n\n\ndef f(a, b):\n    return np.sum(np.sin(a) * b)\n"
INPUTS = "import numpy as np\n\n\ndef make():\n    a = np.ones(3)\n    return {'a': a, 'b': a[5]}\n"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def located(filename, line, col, message, source_line):
    """The expected error: `file:line:col: message`, the line, a caret. Before Python 3.11 a
    traceback has no columns: the caret is then at the statement's first character."""
    if sys.version_info < (3, 11):
        col = len(source_line) - len(source_line.lstrip()) + 1
    return f"{filename}:{line}:{col}: {message}\n    {source_line}\n    {' ' * (col - 1)}^\n"


def check(capsys, *args):
    status = cli.main(["check", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in err
    return status, out, err


def test_a_missing_import_is_the_users(folder, capsys):
    (folder / "loss.py").write_text("import numpy as np\nimport gradgen_not_installed_xyz\n\n\n"
                                    "def f(x=0.5):\n    return np.sin(x)\n")
    assert check(capsys, "loss.py") == (1, "", located(
        "loss.py", 2, 1, "your file raised ModuleNotFoundError: No module named 'gradgen_not_installed_xyz'",
        "import gradgen_not_installed_xyz"))


def test_a_module_that_raises_on_import_is_blamed_at_the_users_import(folder, capsys):
    """The traceback goes on into the imported module; the line shown is the user's own."""
    (folder / "gradgen_test_raises_on_import.py").write_text("x = 1\nraise RuntimeError('needs a GPU')\n")
    (folder / "loss.py").write_text("import math\nfrom gradgen_test_raises_on_import import x\n\n\n"
                                    "def f(y=0.5):\n    return math.sin(y)\n")
    assert check(capsys, "loss.py") == (1, "", located(
        "loss.py", 2, 1, "your file raised RuntimeError: needs a GPU",
        "from gradgen_test_raises_on_import import x"))


def test_a_sibling_module_is_importable_as_when_python_runs_the_file(folder, capsys):
    (folder / "gradgen_test_sibling_data.py").write_text("SCALE = 2.0\n")
    (folder / "loss.py").write_text("import math\nimport gradgen_test_sibling_data\n\n\n"
                                    "def f(y=0.5):\n    return math.sin(y)\n")
    status, out, err = check(capsys, "loss.py")
    assert (status, err) == (0, "")
    assert out.endswith("all gradients match (3 point(s) checked)\n")


def test_loading_a_missing_data_file_at_the_top_level(folder, capsys):
    (folder / "loss.py").write_text("import numpy as np\n\nDATA = 1.0 + np.loadtxt('missing.txt')\n\n\n"
                                    "def f(x=0.5):\n    return np.sin(x)\n")
    with pytest.raises(FileNotFoundError) as numpy_says:
        np.loadtxt("missing.txt")
    assert check(capsys, "loss.py") == (1, "", located(
        "loss.py", 3, 14, f"your file raised FileNotFoundError: {numpy_says.value}",
        "DATA = 1.0 + np.loadtxt('missing.txt')"))


def test_sys_exit_at_the_top_level(folder, capsys):
    (folder / "loss.py").write_text("import sys\n\nsys.exit('usage: loss.py DATA')\n\n\n"
                                    "def f(x=0.5):\n    return x * x\n")
    assert check(capsys, "loss.py") == (1, "", located(
        "loss.py", 3, 1, "your file raised SystemExit: usage: loss.py DATA",
        "sys.exit('usage: loss.py DATA')"))


def test_the_function_raising_at_the_given_point(folder, capsys):
    (folder / "loss.py").write_text("import math\n\n\ndef f(x=0.5, y=2.0):\n    z = y * math.log(x)\n"
                                    "    return z\n")
    assert check(capsys, "loss.py", "--at", "x=-1") == (1, "", located(
        "loss.py", 5, 13, "your file raised ValueError: math domain error (f at x=-1, y=2)",
        "    z = y * math.log(x)"))


def test_the_function_raising_at_its_defaults(folder, capsys):
    (folder / "loss.py").write_text("def f(x=0.0):\n    return 1 / x\n")
    assert check(capsys, "loss.py") == (1, "", located(
        "loss.py", 2, 12, "your file raised ZeroDivisionError: float division by zero (f at x=0)",
        "    return 1 / x"))


def test_a_random_point_where_the_function_raises_is_skipped(folder, capsys):
    """Points gradgen draws itself (here the index i in 1..3 of a 2-element array) are
    skipped where the function raises; that is no fault of the user's."""
    (folder / "loss.py").write_text("import numpy as np\n\nX = np.array([1.0, 2.0])\n\n\n"
                                    "def f(x, i) -> float:\n    return x * X[i]\n")
    status, out, err = check(capsys, "loss.py", "--wrt", "x")
    assert (status, err) == (0, "")
    assert out.count(", i=1: value") == 3 and out.endswith("all gradients match (3 point(s) checked)\n")


def test_a_function_that_returns_an_array(folder, capsys):
    """Annotated as returning a number, so compile takes its word; at the point it does not."""
    (folder / "loss.py").write_text("import numpy as np\n\n\ndef f(a) -> float:\n    return np.sin(a)\n")
    (folder / "inputs.py").write_text("import numpy as np\n\n\ndef make():\n    return {'a': np.ones(3)}\n")
    assert check(capsys, "loss.py", "--inputs", "inputs.py:make") == (1, "", located(
        "loss.py", 4, 1, "'f' returned an array of shape (3,), not a number (f at a=array(3,)); gradgen "
        "differentiates a function that returns a number",
        "def f(a) -> float:"))


def test_the_inputs_builder_raising(folder, capsys):
    (folder / "loss.py").write_text(ARRAYS)
    (folder / "inputs.py").write_text(INPUTS)
    assert check(capsys, "loss.py", "--inputs", "inputs.py:make") == (1, "", located(
        "inputs.py", 6, 26, "your file raised IndexError: index 5 is out of bounds for axis 0 with size 3",
        "    return {'a': a, 'b': a[5]}"))


def test_the_inputs_file_raising_at_its_top_level(folder, capsys):
    (folder / "loss.py").write_text(ARRAYS)
    (folder / "inputs.py").write_text("import numpy as np\n\nSHAPE = {}['shape']\n")
    assert check(capsys, "loss.py", "--inputs", "inputs.py:make") == (1, "", located(
        "inputs.py", 3, 9, "your file raised KeyError: 'shape'",
        "SHAPE = {}['shape']"))


def test_a_syntax_error_in_the_inputs_file(folder, capsys):
    (folder / "loss.py").write_text(ARRAYS)
    (folder / "inputs.py").write_text("import numpy as np\n\n\ndef make(:\n    return {}\n")
    assert check(capsys, "loss.py", "--inputs", "inputs.py:make") == (
        1, "", "inputs.py:4:10: syntax error: invalid syntax\n    def make(:\n             ^\n")


def test_the_inputs_file_missing_or_a_folder_or_without_the_function(folder, capsys):
    (folder / "loss.py").write_text(ARRAYS)
    (folder / "inputs.py").write_text(INPUTS)
    (folder / "adir").mkdir()
    assert check(capsys, "loss.py", "--inputs", "missing.py:make") == (
        1, "", "missing.py: cannot read: No such file or directory\n")
    assert check(capsys, "loss.py", "--inputs", "adir:make") == (1, "", "adir: cannot read: a directory\n")
    assert check(capsys, "loss.py", "--inputs", "inputs.py:build") == (
        1, "", "inputs.py: no function 'build' in inputs.py (from --inputs)\n")
    assert check(capsys, "loss.py", "--inputs", "inputs.py") == (
        1, "", "--inputs: --inputs needs FILE:FUNC, got 'inputs.py'\n")


def test_gradgens_own_failure_is_still_an_internal_error(folder, capsys, monkeypatch):
    """Only the user's code is the user's: an exception in gradgen's own work stays status 2."""
    from gradgen.verify import check as verify

    def broken(*args, **kwargs):
        raise KeyError("gradgen's own")

    monkeypatch.setattr(verify, "check_point", broken)
    (folder / "loss.py").write_text("def f(x=0.5):\n    return x * x\n")
    assert cli.main(["check", "loss.py"]) == 2
    assert capsys.readouterr().err == ("gradgen: internal error: KeyError: \"gradgen's own\"\n"
                                       "This is a bug in gradgen, not in your file; please report it with the input.\n")
