"""`gradgen check` on a function of arrays without --inputs: the random points it draws are
numbers, the function raises at them, and the report says arrays need --inputs (with what
the function raised), not just that no sample point was found."""

import pytest

from gradgen.tools import cli
from gradgen.verify import check as verify

ARRAYS = '''\
import numpy as np


def loss(x, w, scale: float, shift=0.5):
    return np.sum(np.tanh(x @ w) ** 2) * scale + shift


def rows(X):
    return np.sum(X[0] ** 2)
'''


def test_the_report_says_arrays_need_inputs():
    reports = verify.check_source(ARRAYS, "arrays.py", wrt="all")
    assert [r.points for r in reports] == [[], []]
    loss, rows = reports
    assert loss.no_point.startswith("called with numbers (x=")
    assert loss.no_point.endswith("; check draws numbers only, so arrays need --inputs FILE:FUNC (a function "
                                  "returning the keyword arguments) to give x, w")  # (not scale: a float; not shift)
    assert ") it raised TypeError: unsupported operand type(s) for @: 'float' and 'float';" in loss.no_point
    assert rows.no_point.endswith("it raised TypeError: 'float' object is not subscriptable; check draws numbers "
                                  "only, so arrays need --inputs FILE:FUNC (a function returning the keyword "
                                  "arguments) to give X")


def test_the_cli_prints_it(tmp_path, capsys):
    path = tmp_path / "arrays.py"
    path.write_text(ARRAYS)
    assert cli.main(["check", str(path), "--function", "rows"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("rows: gradient with respect to X\n  no sample point found: called with numbers (X=")
    assert err.startswith("NOT CHECKED rows: called with numbers (X=")
    assert err.endswith("to give X\n") and "no sample point where it is finite" not in err


def test_a_function_of_numbers_outside_its_domain_keeps_the_plain_message(tmp_path, capsys):
    path = tmp_path / "domain.py"
    path.write_text("import math\n\n\ndef f(x):\n    return math.log(-x * x - 1.0)\n")  # (ValueError everywhere)
    assert cli.main(["check", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "  no sample point found where the function and its gradient are finite" in out
    assert err == ("NOT CHECKED f: no sample point where it is finite and smooth; give one with --at name=value,... "
                   "or --inputs FILE:FUNC\n")


@pytest.mark.parametrize("body, raised", [
    ("return np.sum(x.reshape(2, 2))", "AttributeError: 'float' object has no attribute 'reshape'"),
    ("return np.sum(np.sum(x, axis=1))", "AxisError: axis 1 is out of bounds for array of dimension 0"),
    ("return np.linalg.det(x)", "LinAlgError: 0-dimensional array given. Array must be at least two-dimensional"),
])
def test_each_way_a_number_is_not_an_array(body, raised):
    [report] = verify.check_source(f"import numpy as np\n\n\ndef f(x):\n    {body}\n", "f.py")
    assert f" it raised {raised};" in report.no_point and report.no_point.endswith("to give x")
