"""`gradgen graph` refusing a loop too long to draw says how to make it shorter: a loop whose
count comes from an array (its shape, directly or through names) needs smaller arrays, which
only --inputs gives; one counted by numbers, --at."""

import numpy as np
import pytest

from gradgen.errors import CompileError
from gradgen.tools.graph import MAX_NODES, graph_source

LOOPS = '''\
import numpy as np


def by_shape(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sum(x[i] * w) ** 2
    return s


def through_a_name(x, a):
    n = len(x)
    s = 0.0
    for i in range(n):
        s = s + a * x[i]
    return s


def by_a_number(x, a, n):
    s = 0.0
    for i in range(n):
        s = s + a * np.sum(x) * i
    return s


def by_a_while(x, a):
    s = 0.0
    i = 0
    while i < x.shape[0]:
        s = s + a * x[i]
        i = i + 1
    return s
'''

ARRAYS = "smaller arrays: --inputs FILE:FUNC, a function returning them"


def refusal(function, at):
    with pytest.raises(CompileError) as info:
        graph_source(LOOPS, "loops.py", function, at=at)
    return info.value.format()


@pytest.mark.parametrize("function, at, line, header", [
    ("by_shape", {"x": np.ones((400, 3)), "w": np.ones(3)}, 6, "for i in range(x.shape[0]):"),
    ("through_a_name", {"x": np.ones(400), "a": 1.0}, 14, "for i in range(n):"),
    ("by_a_while", {"x": np.ones(400), "a": 1.0}, 29, "while i < x.shape[0]:"),
])
def test_a_loop_counted_by_an_array_suggests_inputs(function, at, line, header):
    message = refusal(function, at)
    first, source, caret = message.split("\n")
    assert first.startswith(f"loops.py:{line}:5: the graph of '{function}' at this point has ")
    assert first.endswith(f"; draw it at a point where the loop runs fewer times ({ARRAYS}), or draw a "
                          "function without the loop")
    assert "(--at)" not in first and source.strip() == header and caret == "        ^"


def test_a_loop_counted_by_a_number_suggests_at_even_beside_arrays():
    message = refusal("by_a_number", {"x": np.ones(3), "a": 1.0, "n": 200})
    assert message.split("\n")[0].endswith("; draw it at a point where the loop runs fewer times (--at), or draw "
                                           "a function without the loop")


def test_a_short_array_loop_is_drawn():
    graph = graph_source(LOOPS, "loops.py", "through_a_name", wrt=["all"], at={"x": np.array([1.0, 2.0]), "a": 3.0})
    assert len(graph.nodes) < MAX_NODES and graph.node("a").grad == pytest.approx(3.0)
