"""Custom derivative rules (@gradgen.custom_vjp, .defvjp) and gradgen.stop_gradient: read
from the source, the rule written into the backward pass, and checked rule by rule."""

import ast
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradgen
from gradgen import CompileError, compile_source, load_module
from gradgen.tools.cli import main
from gradgen.verify.usercode import run_module
from gradgen.verify.check import check_source

SAFE_LOG = '''\
import numpy as np
import gradgen


@gradgen.custom_vjp
def safe_log(x):
    return np.log(np.maximum(x, 1e-12))


@safe_log.defvjp
def safe_log_vjp(g, out, x):
    return g / np.maximum(x, 1e-12)


def loss(w=2.0, b=0.5):
    y = safe_log(w * w + b)
    return y * 3 + safe_log(b)
'''


def _compiled(source, filename="custom.py", **kw):
    """(generated module, the user's own module) of `source`."""
    compiled = compile_source(source, filename, **{"wrt": "all", **kw})
    return load_module(compiled.text), run_module(source, filename, "custom_rules_original"), compiled


def _central(f, point, name, h=1e-6):
    up, down = dict(point), dict(point)
    up[name] += h
    down[name] -= h
    return (f(**up) - f(**down)) / (2 * h)


def test_safe_log_gradient_against_finite_differences():
    generated, original, compiled = _compiled(SAFE_LOG)
    for point in ({"w": 2.0, "b": 0.5}, {"w": -0.7, "b": 1.3}, {"w": 0.1, "b": 0.02}):
        value, (dw, db) = generated.loss_value_and_grad(**point)
        assert value == original.loss(**point)
        assert dw == pytest.approx(_central(original.loss, point, "w"), rel=1e-7)
        assert db == pytest.approx(_central(original.loss, point, "b"), rel=1e-7)
        w, b = point["w"], point["b"]
        assert dw == pytest.approx(6 * w / (w * w + b), rel=1e-14)  # by hand: 3 * 2w / (w² + b)
        assert db == pytest.approx(3 / (w * w + b) + 1 / b, rel=1e-14)
    assert compiled.skipped == {
        "safe_log": "a custom_vjp function, differentiated by its rule where a loss calls it",
        "safe_log_vjp": "it is the custom rule of 'safe_log', written where 'safe_log' is called"}
    assert all(report.ok for report in check_source(SAFE_LOG, "custom.py", wrt="all"))


def test_the_rule_is_written_where_the_function_is_called():
    text = compile_source(SAFE_LOG, "custom.py", wrt="all").text
    grad = text[text.index("def loss_grad"):text.index("def loss_value_and_grad")]
    # each call's backward block: the statement, the rule cited, the rule with g the adjoint
    # of the call's value (3 for y, 1 for the returned one), its contribution to the input's
    assert "    # line 17: safe_log(b)\n    # custom rule safe_log_vjp (line 11)\n    dloss_db = 1.0 / " in grad
    assert "    # line 16: y = safe_log(w * w + b)\n    # custom rule safe_log_vjp (line 11)\n    dloss_dx = 3.0 / " in grad
    # the value is the function's own body, inlined as any helper is
    assert "    y = np.log(" in text


def test_a_returned_custom_call_is_the_result_itself():
    source = SAFE_LOG.replace("    y = safe_log(w * w + b)\n    return y * 3 + safe_log(b)", "    return safe_log(w * w + b)")
    generated, original, compiled = _compiled(source)
    assert "    loss = np.log(" in compiled.text and "loss = safe_log" not in compiled.text
    value, grad = generated.loss_value_and_grad(2.0, 0.5)
    assert value == original.loss(2.0, 0.5) and grad == pytest.approx((4.0 / 4.5, 1 / 4.5), rel=1e-15)


def test_generated_module_never_imports_or_names_gradgen():
    source = SAFE_LOG + "\n\ndef chase(w=1.5):\n    return (w - gradgen.stop_gradient(2 * w)) ** 2\n"
    text = compile_source(source, "custom.py", wrt="all").text
    tree = ast.parse(text)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names} | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"numpy"}
    called = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert not {name for name in called if "gradgen" in name or name.endswith(("stop_gradient", "vjp", "safe_log"))}
    assert "gradgen" not in {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "    return (w - 2 * w) ** 2\n" not in text and "    target" not in text
    assert "import gradgen" not in text and "from gradgen" not in text


TWO_INPUTS = '''\
import numpy as np
from gradgen import custom_vjp


@custom_vjp
def scaled(x, y):
    return x * y + y


@scaled.defvjp
def scaled_vjp(g, out, x, y):
    return g * y, g * (x + 1)


@custom_vjp
def masked(x, m):
    return x * m


@masked.defvjp
def masked_vjp(g, out, x, m):
    return g * m, None


def loss(a=0.3, b=-1.2, m=2.0):
    t = scaled(a * a, b)
    return masked(t, m) + b
'''


def test_two_input_rule_and_an_input_without_gradient():
    generated, original, _ = _compiled(TWO_INPUTS)
    a, b, m = 0.3, -1.2, 2.0
    da, db, dm = generated.loss_grad(a, b, m)
    assert da == pytest.approx(m * b * 2 * a, rel=1e-14)  # d/da of (a² b + b) m
    assert db == pytest.approx(m * (a * a + 1) + 1, rel=1e-14)
    assert dm == 0.0  # the rule says None: no gradient, whatever the function does
    assert da == pytest.approx(_central(original.loss, {"a": a, "b": b, "m": m}, "a"), rel=1e-7)


SEVERAL_STATEMENTS = '''\
import numpy as np
import gradgen as gg


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def half(v):
    s = v * 0.5
    return s


@gg.custom_vjp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defvjp
def softplus_vjp(g, out, x):
    s = sigmoid(x)
    scale = half(g) * 2
    if out > 30.0:
        scale = g
    return scale * s


def loss(w=0.3, b=-0.2):
    s = w * 2
    scale = b + 1
    u = softplus(s) * scale
    for i in range(3):
        u = softplus(u * 0.5) + s * 0.1
    return u + s + scale
'''


def test_rule_with_several_statements_helpers_and_a_branch_is_hygienic():
    generated, original, compiled = _compiled(SEVERAL_STATEMENTS)
    for point in ({"w": 0.3, "b": -0.2}, {"w": -1.1, "b": 0.7}):
        value, (dw, db) = generated.loss_value_and_grad(**point)
        assert value == original.loss(**point)
        assert dw == pytest.approx(_central(original.loss, point, "w"), rel=1e-7)
        assert db == pytest.approx(_central(original.loss, point, "b"), rel=1e-7)
    text = compiled.text[compiled.text.index("def loss_grad"):]
    # the rule's locals `s` and `scale` are its own: the caller's s and scale keep their names
    assert textwrap.indent(textwrap.dedent('''\
        # line 31: softplus(s)
        # custom rule softplus_vjp (line 20)
        s_1 = sigmoid(s)
        s_2 = dloss_dsoftplus * 0.5
        scale_1 = s_2 * 2
        if softplus > 30.0:
            scale_1 = dloss_dsoftplus
        dloss_ds = dloss_ds + scale_1 * s_1
        # line 30: scale = b + 1
    '''), "    ") in text
    # in the loop, `out` (softplus_1), the value the trip made, is popped as the trip's backward
    # sweep starts, and read by the rule there
    assert "        x = x_stack.pop()\n        softplus_1 = softplus_1_stack.pop()\n" in text
    assert "        if softplus_1 > 30.0:\n            scale_2 = dloss_dsoftplus_1\n        dloss_dx = scale_2 * s_3\n" \
        in text


ROUND = '''\
import numpy as np
import gradgen


@gradgen.custom_vjp{mark}
def ste_round(x):
    return np.round(x)


@ste_round.defvjp{rule_mark}
def ste_round_vjp(g, out, x):
    return g


def quant(w=0.4, s=1.3):
    q = ste_round(w * 3)
    return (q * s - 2.0) ** 2
'''


@pytest.mark.parametrize("mark,rule_mark", [("(estimator=True)", ""), ("", "(estimator=True)")])
def test_straight_through_estimator_is_accepted_when_marked(mark, rule_mark):
    source = ROUND.format(mark=mark, rule_mark=rule_mark)
    generated, _, _ = _compiled(source)
    dw, ds = generated.quant_grad(0.4, 1.3)
    assert dw == pytest.approx(2 * (1.0 * 1.3 - 2.0) * 1.3 * 3, rel=1e-14)  # round(1.2) = 1, passed straight through
    assert ds == pytest.approx(2 * (1.3 - 2.0) * 1.0, rel=1e-14)
    [report] = check_source(source, "quant.py", wrt="all")
    assert report.ok
    rows = {row.param: row for row in report.points[0].rows}
    assert rows["w"].ok and rows["w"].fd == pytest.approx(dw, rel=1e-9)  # the estimator, linearised
    assert rows["w"].sympy is None  # sympy has no reference for an estimator
    assert rows["s"].fd == pytest.approx(ds, rel=1e-9)
    rule = rows["rule ste_round_vjp: x"]
    assert (rule.ok, rule.note, rule.fd) == (True, "a marked estimator: not compared", pytest.approx(0.0, abs=1e-9))


def test_an_estimator_on_an_array_is_linearised_by_its_rule_for_finite_differences():
    source = ROUND.format(mark="(estimator=True)", rule_mark="") + (
        "\n\ndef quant_array(w, s=1.3):\n    q = ste_round(w * 3)\n    return np.sum((q * s - 2.0) ** 2 * w)\n")
    w = np.array([0.4, 0.9, -0.3])
    generated, _, _ = _compiled(source, functions=["quant_array"])
    q = np.round(3 * w)
    dw, ds = generated.quant_array_grad(w)
    assert dw == pytest.approx((q * 1.3 - 2.0) ** 2 + 2 * (q * 1.3 - 2.0) * 1.3 * 3 * w, rel=1e-14)
    [report] = check_source(source, "quant.py", functions=["quant_array"], at={"w": w}, wrt="all")
    assert report.ok
    rows = {row.param: row for row in report.points[0].rows}
    assert rows["w.v1"].fd == pytest.approx(rows["w.v1"].generated, rel=1e-9)
    assert rows["s"].fd == pytest.approx(ds, rel=1e-9)


def test_unmarked_estimator_is_reported_by_name(capsys, tmp_path):
    path = tmp_path / "quant.py"
    path.write_text(ROUND.format(mark="", rule_mark=""))
    assert main(["check", str(path), "--at", "w=0.4,s=1.3"]) == 1
    err = capsys.readouterr().err
    assert err == ("MISMATCH in quant: parameter(s) w\n"
                   "MISMATCH in quant: custom rule ste_round_vjp disagrees with finite differences of ste_round in "
                   "'x' (line 11); a deliberate estimator is marked @gradgen.custom_vjp(estimator=True)\n")


def test_wrong_rule_of_a_smooth_function_is_reported_by_name(capsys, tmp_path):
    path = tmp_path / "custom.py"
    path.write_text(SAFE_LOG.replace("return g / np.maximum(x, 1e-12)", "return g / (2 * np.maximum(x, 1e-12))"))
    assert main(["check", str(path), "--at", "w=2,b=0.5"]) == 1
    out, err = capsys.readouterr()
    assert "custom rule safe_log_vjp disagrees with finite differences of safe_log in 'x' (line 11)" in err
    assert err.startswith("MISMATCH in loss: parameter(s) b, w\n")
    table = [line for line in out.splitlines() if line.strip().startswith("rule safe_log_vjp: x")]
    assert len(table) == 1 and "| FAIL (custom rule safe_log_vjp disagrees" in table[0]


def test_a_right_rule_gets_a_row_of_its_own():
    [report] = check_source(SAFE_LOG, "custom.py", at={"w": 2.0, "b": 0.5}, wrt="all")
    [point] = report.points
    assert [row.param for row in point.rows] == ["w", "b", "rule safe_log_vjp: x"]
    rule = point.rows[2]
    assert rule.ok and rule.generated == pytest.approx(rule.fd, rel=1e-8)
    assert point.rows[0].sympy == pytest.approx(6 * 2.0 / 4.5, rel=1e-12)  # sympy of the function's own body


SOFTMAX = '''\
import numpy as np
import gradgen


def nll(z, *, k=1):
    m = gradgen.stop_gradient(np.max(z))
    shifted = z - m
    log_probs = shifted - np.log(np.sum(np.exp(shifted)))
    return -log_probs[k]


def nll_plain(z, *, k=1):
    m = np.max(z)
    shifted = z - m
    log_probs = shifted - np.log(np.sum(np.exp(shifted)))
    return -log_probs[k]
'''


def test_stop_gradient_in_a_softmax_max_shift_changes_nothing():
    generated, _, compiled = _compiled(SOFTMAX)
    z = np.array([0.3, 1.2, -0.5, 1.2])  # a tie at the maximum, where the shift's own gradient splits
    with_stop, plain = generated.nll_grad(z), generated.nll_plain_grad(z)
    softmax = np.exp(z) / np.sum(np.exp(z))
    assert with_stop == pytest.approx(softmax - np.eye(4)[1], abs=1e-15)
    assert plain == pytest.approx(with_stop, abs=1e-15)
    body = compiled.text[compiled.text.index("def nll_grad"):compiled.text.index("def nll_value_and_grad")]
    assert "    m = np.max(z)\n" in body and "dnll_dm" not in body  # the value, and no gradient through it
    reports = check_source(SOFTMAX, "softmax.py", at={"z": z}, wrt="all")
    assert all(r.ok for r in reports)


CHASE = '''\
import gradgen


def chase(w=1.5):
    target = gradgen.stop_gradient(2 * w)
    return (w - target) ** 2


def chase_plain(w=1.5):
    target = 2 * w
    return (w - target) ** 2
'''


def test_stop_gradient_of_a_target_computed_from_the_parameter():
    generated, _, _ = _compiled(CHASE)
    assert generated.chase_grad(1.5) == -3.0  # 2 (w - target), target held: 2 (1.5 - 3)
    assert generated.chase_plain_grad(1.5) == 3.0  # 2 (w - 2w) (1 - 2)
    assert generated.chase_grad(-0.25) == 0.5
    [report, plain] = check_source(CHASE, "chase.py", wrt="all")
    assert report.ok and plain.ok
    first = report.points[0].rows[0]
    # sympy and finite differences both hold stop_gradient's value constant
    assert (first.generated, first.sympy, first.fd) == (-3.0, -3.0, pytest.approx(-3.0, rel=1e-9))


ARRAYS_AND_LOOPS = '''\
import numpy as np
import gradgen


@gradgen.custom_vjp
def safe_log(x):
    return np.log(np.maximum(x, 1e-12))


@safe_log.defvjp
def safe_log_vjp(g, out, x):
    return g / np.maximum(x, 1e-12)


def arr(v):
    return np.sum(safe_log(v * v + 1.0) * v)


def looped(w=0.8, n: int = 4):
    x = w
    for i in range(n):
        x = safe_log(x + 2.0) * w
    return x
'''


def test_arrays_and_loops():
    generated, original, _ = _compiled(ARRAYS_AND_LOOPS)
    v = np.array([0.5, -1.0, 2.0])
    assert generated.arr_grad(v) == pytest.approx(np.log(v * v + 1) + 2 * v * v / (v * v + 1), rel=1e-14)
    for w in (0.8, 1.7):
        assert generated.looped_grad(w, 4) == pytest.approx(_central(original.looped, {"w": w, "n": 4}, "w"),
                                                             rel=1e-7)
    assert all(r.ok for r in check_source(ARRAYS_AND_LOOPS, "loops.py", at={"v": v, "w": 0.8, "n": 4}, wrt="all"))


BRANCHES = '''\
import numpy as np
import gradgen


def helper(v):
    t = v * 2
    return t + 1


@gradgen.custom_vjp
def clipped_exp(x):
    t = helper(x)
    return np.exp(np.minimum(t, 5.0))


@clipped_exp.defvjp
def clipped_exp_vjp(g, out, x):
    return g * out * 2 * (helper(x) < 5.0)


@gradgen.custom_vjp
def wsum(x, c):
    return np.sum(x * c)


@wsum.defvjp
def wsum_vjp(g, out, x, c):
    return g * c * np.ones_like(x), np.sum(g * x)


def loss(w=0.3, b=0.1):
    if w > 0:
        y = clipped_exp(w) + clipped_exp(b)
    else:
        y = 0.0
    z = clipped_exp(b) if b > 0 else b
    return y + z


def arr(v, c=0.5):
    return wsum(v * v, c) + clipped_exp(c)
'''


def test_calls_in_branches_conditional_expressions_and_helpers():
    generated, original, _ = _compiled(BRANCHES, functions=["loss", "arr"])
    for point in ({"w": 0.3, "b": 0.1}, {"w": -0.4, "b": 0.2}, {"w": 0.5, "b": -0.3}, {"w": 2.5, "b": 0.1}):
        dw, db = generated.loss_grad(**point)
        assert dw == pytest.approx(_central(original.loss, point, "w"), rel=1e-7, abs=1e-12)
        assert db == pytest.approx(_central(original.loss, point, "b"), rel=1e-7, abs=1e-12)
    assert generated.loss_grad(2.5, 0.1)[0] == 0.0  # the rule's own test: exp(min(t, 5)) is flat there
    v = np.array([0.5, 1.0, -2.0])
    dv, dc = generated.arr_grad(v, 0.5)
    assert dv == pytest.approx(2 * v * 0.5, rel=1e-14)
    assert dc == pytest.approx(np.sum(v * v) + 2 * np.exp(2.0), rel=1e-14)
    reports = check_source(BRANCHES, "branches.py", functions=["loss", "arr"], at={"v": v, "w": 0.3, "b": 0.1}, wrt="all")
    assert all(r.ok for r in reports)


def test_a_contribution_of_the_wrong_shape_is_said_so():
    source = BRANCHES.replace("return g * c * np.ones_like(x), np.sum(g * x)", "return g * c * np.ones_like(x), g * x")
    [report] = check_source(source, "branches.py", functions=["arr"], at={"v": np.array([0.5, 1.0, -2.0])}, wrt="all")
    rows = {row.param: row for row in report.points[0].rows}
    assert (rows["c"].ok, rows["c"].note) == (False, "gradient has shape (3,); the parameter is a number")
    assert rows["rule wsum_vjp: c"].note == ("custom rule wsum_vjp returns a contribution of shape (3,) for 'c', "
                                            "whose shape is ()")
    assert rows["rule wsum_vjp: x"].ok and rows["rule clipped_exp_vjp: x"].ok


def test_defvjp_as_a_statement_and_names_imported_from_gradgen():
    source = '''\
import numpy as np
from gradgen import custom_vjp, stop_gradient


@custom_vjp
def cube(x):
    return x ** 3


def cube_rule(g, out, x):
    return g * 3 * x ** 2


cube.defvjp(cube_rule)


def loss(w=0.5):
    return cube(w) + stop_gradient(w) * w
'''
    generated, original, _ = _compiled(source)
    assert generated.loss_grad(0.5) == pytest.approx(3 * 0.25 + 0.5, rel=1e-14)
    assert original.loss(0.5) == 0.125 + 0.25


def test_runtime_is_the_identity_and_imports_nothing():
    def f(x):
        return x + 1

    assert gradgen.custom_vjp(f) is f and f(1) == 2
    rule = f.defvjp(lambda g, out, x: g)
    assert f.gradgen_rule is rule and f.gradgen_estimator is False

    @gradgen.custom_vjp(estimator=True)
    def h(x):
        return x

    assert h.gradgen_estimator and h(3) == 3
    x = np.ones(2)
    assert gradgen.stop_gradient(x) is x
    script = ("import sys, gradgen\n@gradgen.custom_vjp\ndef f(x):\n    return x\n"
              "f.defvjp(lambda g, out, x: g)\ngradgen.stop_gradient(1.0)\n"
              "print(sorted(m for m in ('numpy', 'sympy', 'black') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"


_HEAD = "import numpy as np\nimport gradgen\n\n"
_RULE = "@gradgen.custom_vjp\ndef f(x):\n    return x * 2\n\n"
_LOSS = "\ndef loss(w):\n    return f(w)\n"

ERRORS = [
    ("a rule with the wrong arity", _RULE + "@f.defvjp\ndef f_vjp(g, x):\n    return g * 2\n" + _LOSS,
     "bad.py:9:1: custom rule 'f_vjp' takes 2 parameters; a rule for 'f' takes 3: (g, out, x)\n"
     "    def f_vjp(g, x):\n    ^"),
    ("one contribution for two inputs",
     "@gradgen.custom_vjp\ndef f(x, y):\n    return x * y\n\n@f.defvjp\ndef f_vjp(g, out, x, y):\n    return g * y\n"
     + _LOSS.replace("f(w)", "f(w, w)"),
     "bad.py:10:5: custom rule 'f_vjp' returns one value; 'f' has 2 inputs (x, y): return one contribution per "
     "input, as a tuple (None for an input that gets no gradient)\n        return g * y\n        ^"),
    ("two contributions for one input", _RULE + "@f.defvjp\ndef f_vjp(g, out, x):\n    return g, g\n" + _LOSS,
     "bad.py:10:5: custom rule 'f_vjp' returns 2 contributions; 'f' has 1 input (x): return one contribution per "
     "input\n        return g, g\n        ^"),
    ("defvjp of a function that is not custom",
     "def f(x):\n    return x * 2\n\n@f.defvjp\ndef f_vjp(g, out, x):\n    return g * 2\n" + _LOSS,
     "bad.py:7:2: 'f.defvjp': 'f' is not a @gradgen.custom_vjp function; decorate its def with @gradgen.custom_vjp\n"
     "    @f.defvjp\n     ^"),
    ("a custom function without a rule", _RULE + _LOSS,
     "bad.py:5:1: 'f' is a custom_vjp function without a rule: define one with @f.defvjp "
     "(def f_vjp(g, out, x): ...)\n    def f(x):\n    ^"),
    ("an unknown option", _RULE.replace("custom_vjp", "custom_vjp(straight=True)")
     + "@f.defvjp\ndef f_vjp(g, out, x):\n    return g\n" + _LOSS,
     "bad.py:4:2: 'gradgen.custom_vjp' takes one option, estimator=True or estimator=False\n"
     "    @gradgen.custom_vjp(straight=True)\n     ^"),
]


@pytest.mark.parametrize("what,body,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(what, body, message):
    with pytest.raises(CompileError) as exc:
        compile_source(_HEAD + body, "bad.py", wrt="all")
    assert exc.value.format() == message


def test_a_custom_function_or_rule_named_with_function_is_refused():
    source = _HEAD + _RULE + "@f.defvjp\ndef f_vjp(g, out, x):\n    return g * 2\n" + _LOSS
    with pytest.raises(CompileError) as exc:
        compile_source(source, "bad.py", functions=["f_vjp"], wrt="all")
    assert exc.value.format() == ("bad.py:9:1: 'f_vjp' has no gradient: it is the custom rule of 'f', written where "
                                  "'f' is called\n    def f_vjp(g, out, x):\n    ^")


def test_a_sigmoid_helper_only_a_rule_calls_takes_the_files_library():
    """With --function loss, the sigmoid helper was written with math.exp (and no import of
    math): only the custom rule calls it, and the namespace came from compiled bodies alone."""
    source = ("import numpy as np\nimport gradgen\n\n\ndef sigmoid(x):\n    return 1 / (1 + np.exp(-x))\n\n\n"
              "@gradgen.custom_vjp\ndef softplus(z):\n    return np.log1p(np.exp(z))\n\n\n@softplus.defvjp\n"
              "def softplus_vjp(g, out, z):\n    return g * sigmoid(z)\n\n\ndef loss(w, *, X):\n"
              "    return np.sum(softplus(X @ w))\n")
    generated = load_module(compile_source(source, "sp.py", functions=["loss"], wrt="all").text)
    w, X = np.array([0.5, -0.2]), np.array([[1.0, 0.3], [-0.4, 2.0]])
    np.testing.assert_allclose(generated.loss_grad(w, X=X), X.T @ (1 / (1 + np.exp(-(X @ w)))), rtol=1e-12)
