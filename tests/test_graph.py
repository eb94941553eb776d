"""`gradgen graph`: the computational graph at a point, checked in the SVG a user opens.

Values and gradients on the nodes are compared with the lesson's hand-worked numbers and
with the generated `f_grad`; the SVG is parsed with xml.etree, the DOT text counted.
"""

import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from gradgen.api import compile_source, load_module
from gradgen.errors import CompileError
from gradgen.tools.graph import MAX_NODES, graph_source
from gradgen.tools.graph_svg import dot, svg

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "seed_net.py"
GOLDEN = ROOT / "docs" / "seed_net_graph.svg"
NS = "{http://www.w3.org/2000/svg}"

HELPER = """import math


def square_plus_one(u):
    t = u * u
    return t + 1.0


def f(a=1.5, b=2.0):
    c = square_plus_one(a) * b
    return math.sin(c) + square_plus_one(b)
"""

LOOP = """def power_sum(x=0.5, n=3):
    s = 0.0
    for i in range(n):
        s = s + x ** 2 * i
    return s
"""


def drawn(text):
    """(nodes, edges) of an SVG: each node as (kind classes, its text lines); each edge
    as (id, its label or '')."""
    root = ET.fromstring(text)
    nodes, edges = [], []
    for g in root.iter(f"{NS}g"):
        classes = g.get("class").split()
        if classes[0] == "node":
            nodes.append((classes[1:], [t.text for t in g.findall(f"{NS}text")]))
        elif classes[0] == "edge":
            label = g.find(f"{NS}text")
            edges.append((g.get("id"), "" if label is None else label.text))
    return nodes, edges


def generated_grad(source, name, point):
    compiled = compile_source(source, "f.py", [name], wrt="all")
    return getattr(load_module(compiled.text), f"{name}_grad")(**point)


# ---- the seed network ------------------------------------------------------------------------

def test_seed_network_values_and_gradients_on_the_nodes():
    graph = graph_source(SEED.read_bytes(), "examples/seed_net.py", "loss")
    nodes, edges = drawn(svg(graph))
    variables = {lines[0]: lines[1:] for kinds, lines in nodes if "op" not in kinds}
    assert variables == {
        "w1": ["= 0.5", "∂L/∂w1 = 1"], "w2": ["= -0.5", "∂L/∂w2 = 2"], "b1": ["= 0.5", "∂L/∂b1 = 1"],
        "w3": ["= 2", "∂L/∂w3 = 1"], "b2": ["= 0", "∂L/∂b2 = 2"],
        "x1": ["= 1"], "x2": ["= 2"], "y": ["= 0"],  # constants: values, no gradient
        "z1": ["= 0", "∂L/∂z1 = 1"], "h": ["= 0.5", "∂L/∂h = 4"], "yhat": ["= 1", "∂L/∂yhat = 2"],
        "L": ["= 1", "∂L/∂L = 1"],
    }
    kinds = {lines[0]: kinds for kinds, lines in nodes if "op" not in kinds}
    assert kinds["w1"] == ["param", "active"] and kinds["x1"] == ["data"] and kinds["L"] == ["result", "active"]
    ops = sorted(lines[0] for kinds, lines in nodes if "op" in kinds)
    assert ops == ["** 2", "+", "+", "+", "×", "×", "×", "σ", "−"]
    # an unnamed intermediate shows its own value and gradient: w2 * x2 = -1
    assert ["×", "= -1", "∂L/∂· = 1"] in [lines for _, lines in nodes]
    labels = sorted(label for _, label in edges if label)
    assert labels == ["1", "1", "1", "1", "1", "1", "1", "2 * (yhat - y) = 2", "h * (1 - h) = 0.25", "h = 0.5",
                      "w3 = 2", "x1 = 1", "x2 = 2"]
    assert (len(nodes), len(edges)) == (21, 20)


def test_seed_network_parameter_gradients_are_the_generated_ones():
    source = SEED.read_bytes()
    graph = graph_source(source, "examples/seed_net.py", "loss")
    expected = generated_grad(source, "loss", {})
    params = [graph.node(p, "param") for p in ("w1", "w2", "b1", "w3", "b2")]
    assert [n.grad for n in params] == list(expected) == [1.0, 2.0, 1.0, 1.0, 2.0]
    assert graph.node("L").value == 1.0


def test_seed_network_picture_is_current():
    """docs/seed_net_graph.svg is what `gradgen graph examples/seed_net.py -o ...` draws."""
    graph = graph_source(SEED.read_bytes(), "examples/seed_net.py", None)
    assert svg(graph).encode("utf-8") == GOLDEN.read_bytes(), \
        "the picture changed: look at it, then run `gradgen graph examples/seed_net.py -o docs/seed_net_graph.svg`"


def test_seed_network_dot_has_one_line_per_node_and_edge():
    text = dot(graph_source(SEED.read_bytes(), "examples/seed_net.py", "loss"))
    lines = text.splitlines()
    assert lines[:3] == ["// computational graph of loss(w1=0.5, w2=-0.5, b1=0.5, w3=2, b2=0), drawn by gradgen",
                         'digraph "loss" {', "  rankdir=LR;"]
    assert sum(1 for line in lines if re.match(r"  n\d+ \[", line)) == 21
    assert sum(1 for line in lines if "->" in line) == 20
    assert '  n0 [label="w1\\n= 0.5\\n∂L/∂w1 = 1", shape=box, style="rounded,filled", fillcolor="#dbeafe", ' \
           'color="#2563eb"];' in lines
    assert '  n11 -> n12 [label="h * (1 - h) = 0.25"];' in lines
    assert lines[-1] == "}"


def test_the_point_moves_the_numbers():
    graph = graph_source(SEED.read_bytes(), "examples/seed_net.py", "loss", at={"b2": 1.0})
    # yhat = 2, L = 4, dL/dyhat = 4: every gradient doubles
    assert graph.node("L").value == 4.0
    assert [graph.node(p).grad for p in ("w1", "w2", "b1", "w3", "b2")] == [2.0, 4.0, 2.0, 2.0, 4.0]
    assert [line for _, line in drawn(svg(graph))[1] if line.startswith("2 *")] == ["2 * (yhat - y) = 4"]


# ---- helpers, loops, branches ----------------------------------------------------------------

def test_a_helper_is_inlined_once_per_call():
    graph = graph_source(HELPER, "helper.py", "f")
    c = 3.25 * 2.0
    assert graph.node("f").value == pytest.approx(math.sin(c) + 5.0, rel=1e-15)
    da, db = generated_grad(HELPER, "f", {})
    assert graph.node("a").grad == pytest.approx(math.cos(c) * 2 * 1.5 * 2.0, rel=1e-15) == da
    assert graph.node("b").grad == pytest.approx(math.cos(c) * 3.25 + 2 * 2.0, rel=1e-15) == db
    nodes, edges = drawn(svg(graph))
    ts = [lines for kinds, lines in nodes if lines[0] == "t"]
    assert ts == [["t", "= 2.25", f"∂f/∂t = {math.cos(c) * 2.0:.4g}"], ["t", "= 4", "∂f/∂t = 1"]]
    assert sorted(lines[0] for kinds, lines in nodes if "op" in kinds) == ["+", "+ 1", "+ 1", "sin", "×", "×", "×"]
    assert f"cos(c) = {math.cos(c):.4g}" in [label for _, label in edges]
    assert "a = 1.5" in [label for _, label in edges]  # a * a: each input's local derivative is the other


def test_a_loop_is_unrolled_at_the_point():
    graph = graph_source(LOOP, "loop.py", "power_sum")
    assert graph.node("s").value == 0.25 * 3 and graph.node("s").result
    assert graph.node("x").grad == 2 * 0.5 * 3 == generated_grad(LOOP, "power_sum", {})
    nodes, _ = drawn(svg(graph))
    assert [lines for kinds, lines in nodes if lines[0] == "s"] == [
        ["s", "= 0"], ["s", "= 0", "∂s/∂s = 1"], ["s", "= 0.25", "∂s/∂s = 1"], ["s", "= 0.75", "∂s/∂s = 1"]]
    assert [lines for kinds, lines in nodes if lines[0] == "i"] == [["i", "= 0"], ["i", "= 1"], ["i", "= 2"]]
    assert ["n", "= 3"] in [lines for _, lines in nodes]  # a count: drawn, not differentiated
    assert len(graph.nodes) == 2 + 1 + 3 * 5  # x, n; s = 0; per trip i, x ** 2, ×, + and the new s


def test_a_loop_too_long_to_draw_is_refused_at_the_loop():
    with pytest.raises(CompileError) as info:
        graph_source(LOOP, "loop.py", "power_sum", at={"n": 200})
    assert info.value.format() == (
        f"loop.py:3:5: the graph of 'power_sum' at this point has 1003 nodes, more than the {MAX_NODES} gradgen "
        "graph draws (this loop runs 200 times here); draw it at a point where the loop runs fewer times (--at), "
        "or draw a function without the loop\n        for i in range(n):\n        ^")
    with pytest.raises(CompileError) as info:
        graph_source(LOOP, "loop.py", "power_sum", at={"n": 10 ** 9})  # stopped while following it
    assert "has more than 400 nodes (this loop had run 320 times when gradgen stopped)" in info.value.message


def test_a_loop_over_an_array_parameter_reads_it_element_by_element():
    source = "def total(xs):\n    s = 0.0\n    for x in xs:\n        s += x * x\n    return s\n"
    point = {"xs": np.array([1.0, 2.0, 3.0])}
    graph = graph_source(source, "t.py", "total", at=point)
    assert graph.node("s").value == 14.0
    np.testing.assert_array_equal(graph.node("xs").grad, [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(graph.node("xs").grad, generated_grad(source, "total", point))
    assert [e.label for e in graph.edges if e.label.startswith("g at")] == ["g at [0]", "g at [1]", "g at [2]"]
    assert [n.value for n in graph.nodes if n.label == "x"] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("name", ["huber", "doubling", "settle"])
def test_branches_and_while_loops_match_the_generated_gradient(name):
    source = (ROOT / "examples" / "piecewise.py").read_bytes()
    graph = graph_source(source, "examples/piecewise.py", name)
    expected = generated_grad(source, name, {})
    params = [n for n in graph.nodes if n.kind == "param"]
    assert [n.grad for n in params] == pytest.approx(list(expected), rel=1e-12)


def test_a_piecewise_constant_operation_passes_no_gradient():
    source = "import math\n\n\ndef f(x=2.7):\n    return x * math.floor(x)\n"
    graph = graph_source(source, "f.py", "f")
    assert graph.node("x").grad == 2.0  # d(x * floor(x))/dx = floor(x) where floor is flat
    assert [e.label for e in graph.edges if graph.nodes[e.dst].label == "floor"] == ["0"]
    assert 'stroke-dasharray="4 3"' in svg(graph)


# ---- arrays ----------------------------------------------------------------------------------

def test_arrays_show_shape_and_norm_and_their_gradients_are_the_generated_ones():
    from examples_inputs import mlp

    point = mlp()
    source = (ROOT / "examples" / "mlp.py").read_bytes()
    graph = graph_source(source, "examples/mlp.py", "loss", wrt=["all"], at=point)
    expected = generated_grad(source, "loss", point)
    for name, grad in zip(("W1", "b1", "W2", "b2"), expected):
        assert graph.node(name).grad.shape == grad.shape
        np.testing.assert_allclose(graph.node(name).grad, grad, rtol=1e-12, atol=1e-15)
    nodes, edges = drawn(svg(graph))
    w1 = next(lines for kinds, lines in nodes if lines[0] == "W1")
    assert w1 == ["W1", f"= (6, 8) array, norm {np.linalg.norm(point['W1']):.4g}",
                  f"∂loss/∂W1: norm {np.linalg.norm(expected[0]):.4g}"]
    assert next(lines for kinds, lines in nodes if lines[0] == "X") == [
        "X", f"= (16, 6) array, norm {np.linalg.norm(point['X']):.4g}"]  # data: no gradient
    assert "g * (1 - h ** 2)" in [label for _, label in edges]  # tanh's rule, g the arriving gradient


@pytest.fixture(autouse=True)
def _examples_on_path(monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("examples_inputs", ROOT / "examples" / "inputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "examples_inputs", module)


# ---- what is refused -------------------------------------------------------------------------

def test_a_parameter_without_a_value_is_asked_for():
    with pytest.raises(CompileError) as info:
        graph_source("def f(x, y=1.0):\n    return x * y\n", "f.py", "f")
    assert info.value.format() == ("f.py:1:1: no value for parameter 'x' of 'f': the graph is drawn at a point; "
                                   "give it with --at name=value,... or --inputs FILE:FUNC\n"
                                   "    def f(x, y=1.0):\n    ^")


def test_a_python_list_is_refused_where_it_is_made():
    source = "def f(x=1.0):\n    hs = [x]\n    hs.append(x * 2)\n    return hs[0] + hs[1]\n"
    with pytest.raises(CompileError) as info:
        graph_source(source, "f.py", "f")
    assert info.value.format().startswith("f.py:2:10: gradgen graph draws functions of numbers and arrays; this "
                                          "uses a Python list\n")


def test_an_unknown_name_in_the_point_is_refused():
    with pytest.raises(CompileError) as info:
        graph_source(SEED.read_bytes(), "seed_net.py", "loss", at={"w9": 1.0})
    assert info.value.format() == ("seed_net.py: no parameter 'w9' in 'loss' (from --at or --inputs); the "
                                   "parameters are: w1, w2, b1, w3, b2")


def test_a_value_the_function_cannot_take_is_located():
    with pytest.raises(CompileError) as info:
        graph_source("def f(x=0.0):\n    y = 1.0 / x\n    return y\n", "f.py", "f")
    assert info.value.format() == ("f.py:2:9: at the point, this raises ZeroDivisionError: float division by zero\n"
                                   "        y = 1.0 / x\n            ^")


# ---- the command -----------------------------------------------------------------------------

def gradgen(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gradgen", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_command_writes_the_svg_and_the_dot(tmp_path):
    result = gradgen("graph", str(SEED), "--function", "loss", "-o", "seed.svg", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "wrote seed.svg (21 nodes, 20 edges)\n", "")
    assert (tmp_path / "seed.svg").read_bytes() == GOLDEN.read_bytes()
    result = gradgen("graph", str(SEED), "--at", "b2=1", "-o", "seed.dot", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert '  n20 [label="L\\n= 4\\n∂L/∂L = 1"' in (tmp_path / "seed.dot").read_text()


def test_command_with_inputs_and_errors(tmp_path):
    result = gradgen("graph", str(ROOT / "examples" / "logistic_regression.py"), "--inputs",
                     f"{ROOT / 'examples' / 'inputs.py'}:logistic_regression", "-o", "lr.svg", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    ET.parse(tmp_path / "lr.svg")
    result = gradgen("graph", str(SEED), "-o", "seed.png", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (1, "seed.png: the output must end in .svg (a picture) or .dot "
                                                     "(graphviz text)\n")
    (tmp_path / "two.py").write_text("def f(x=1.0):\n    return x * x\n\n\ndef g(x=1.0):\n    return x + x\n")
    result = gradgen("graph", "two.py", "-o", "two.svg", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (1, "two.py: this file has several functions to draw (f, g); name "
                                                     "one with --function NAME\n")
    assert not (tmp_path / "two.svg").exists() and not (tmp_path / "seed.png").exists()
