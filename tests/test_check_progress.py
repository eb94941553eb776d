"""`gradgen check`'s progress (gradgen/verify/check.py `_Progress`): nothing for a short
check; past PROGRESS_AFTER seconds of processor time, a bar redrawn in place on a terminal,
plain lines elsewhere. A fake clock stands in for the time."""

import io

import pytest

from gradgen.verify import check as verify

TWO = '''\
import numpy as np


def f(x):
    return np.sin(x) * x


def g(a, b):
    return a * np.exp(b)
'''


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    """Each reading is `step` seconds after the last."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def run(stream, step):
    progress = verify._Progress(Clock(step), stream, width=10)
    for name, n in (("f", 3), ("g", 2)):
        for k in range(1, n + 1):
            progress.point(name, k, n)
        progress.finished(name, n)
    progress.close()
    return stream.getvalue()


def test_a_short_check_says_nothing():
    assert run(Terminal(), 0.1) == ""
    assert run(io.StringIO(), 0.1) == ""


def test_on_a_terminal_a_bar_per_function_redrawn_in_place():
    # 1.5 s into the check at f's point 1 (nothing yet), 3.0 s at its point 2, ...
    assert run(Terminal(), 1.5) == (
        "\rchecking f [###.......] point 2/3  3.0 s"
        "\rchecking f [######....] point 3/3  4.5 s"
        "\rchecked f [##########] 3 points in 6.0 s"
        "\n"
        "\rchecking g [..........] point 1/2  7.5 s"
        "\rchecking g [#####.....] point 2/2  9.0 s"
        "\rchecked g [##########] 2 points in 10.5 s"
        "\n")


def test_a_shorter_line_covers_the_longer_one_before_it():
    progress = verify._Progress(Clock(3.0), Terminal(), width=4)  # (3 s at the point, 6 s when done)
    progress.point("a_long_name", 1, 10)
    progress.finished("a", 1)
    lines = progress.stream.getvalue().split("\r")[1:]
    assert lines == ["checking a_long_name [....] point 1/10  3.0 s", "checked a [####] 1 point in 6.0 s".ljust(45) + "\n"]


def test_elsewhere_a_plain_line_per_point():
    assert run(io.StringIO(), 1.5) == ("checking f: point 2/3 ...\n"
                                       "checking f: point 3/3 ...\n"
                                       "checking g: point 1/2 ...\n"
                                       "checking g: point 2/2 ...\n")


def test_a_check_that_stops_with_an_error_ends_the_bar_line(monkeypatch):
    stream = Terminal()

    class Progress(verify._Progress):
        def __init__(self, out):
            super().__init__(Clock(0.5), out, width=10)

        def point(self, name, k, n):
            super().point(name, k, n)
            if name == "g":
                raise RuntimeError("stopped")

    monkeypatch.setattr(verify, "PROGRESS_AFTER", -1.0)
    monkeypatch.setattr(verify, "_Progress", lambda: Progress(stream))

    with pytest.raises(RuntimeError, match="stopped"):
        verify.check_source(TWO, "two.py")
    drawn = stream.getvalue()
    assert drawn.startswith("\rchecking f [..........] point 1/3  ")
    assert "\rchecked f [##########] 3 points in " in drawn
    assert drawn.endswith("\rchecking g [..........] point 1/3  2.5 s\n")


def test_a_real_check_reports_to_stderr(monkeypatch, capsys):
    monkeypatch.setattr(verify, "PROGRESS_AFTER", -1.0)
    [f, g] = verify.check_source(TWO, "two.py")
    assert f.ok and g.ok
    assert capsys.readouterr().err == "".join(f"checking {name}: point {k}/3 ...\n" for name in "fg" for k in (1, 2, 3))
