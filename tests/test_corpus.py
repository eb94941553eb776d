"""End-to-end corpus: every function in tests/corpus/scalar/ is compiled, imported and
checked against sympy and central finite differences at several points, for every
parameter; a few get hand-derived numbers on top.

Functions are discovered with `ast` (the corpus is never imported here: the compiler must
not need to run it, and `check_source` runs the original itself for finite differences).
"""

from __future__ import annotations

import ast
import inspect
import math
import zlib
from pathlib import Path

import pytest

from gradgen import compile_source, load_module
from gradgen.verify.check import check_source

CORPUS = Path(__file__).parent / "corpus" / "scalar"

# Parameters that are data, not variables: the function is checked with respect to the rest.
WRT = {
    ("constants.py", "power_int_param"): ["x"],
    ("constants.py", "binomial_term"): ["x"],
}

SYMPY_REL = 1e-8
FD_REL = 1e-5
VALUE_REL = 1e-12


def discover():
    """Every (file name, function name) of the corpus, in file order."""
    cases = []
    for path in sorted(CORPUS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not returns_tuple(node):
                cases.append((path.name, node.name))
    return cases


def returns_tuple(node):
    """A helper whose call is unpacked (`return a, b`): it has no gradient of its own."""
    return any(isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) for n in ast.walk(node))


def params_of(file_name, function_name):
    tree = ast.parse((CORPUS / file_name).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function_name:
            return [a.arg for a in node.args.args]
    raise LookupError(function_name)


CASES = discover()
FILES = sorted({f for f, _ in CASES})


def source_of(file_name):
    return (CORPUS / file_name).read_text(encoding="utf-8")


def close(a, b, rel, floor):
    """|a - b| <= rel * max(|a|, |b|, floor): relative, with an absolute floor near zero."""
    a, b = float(a), float(b)
    return (
        math.isfinite(a)
        and math.isfinite(b)
        and abs(a - b) <= rel * max(abs(a), abs(b), floor)
    )


def seed_for(file_name, function_name):
    return zlib.crc32(f"{file_name}:{function_name}".encode()) % 2**31


def describe(point, row):
    return (
        f"at {point.point}: {row.param}: generated={row.generated!r} sympy={row.sympy!r} "
        f"fd={row.fd!r} rel_error={row.rel_error!r} ok={row.ok} note={row.note!r}"
    )


def test_corpus_is_big_enough():
    assert len(CASES) >= 45
    assert len(FILES) >= 10
    assert len(set(CASES)) == len(CASES)


@pytest.mark.parametrize(
    ("file_name", "function_name"), CASES, ids=[f"{f}::{n}" for f, n in CASES]
)
def test_corpus_function(file_name, function_name):
    source = source_of(file_name)
    wrt = WRT.get((file_name, function_name))
    reports = check_source(
        source,
        str(CORPUS / file_name),
        functions=[function_name],
        wrt=wrt,
        n_points=3,
        seed=seed_for(file_name, function_name),
    )
    assert [r.name for r in reports] == [function_name]
    report = reports[0]
    assert len(report.points) == 3
    expected_params = wrt if wrt is not None else params_of(file_name, function_name)
    problems = []
    for point in report.points:
        assert sorted(point.point) == sorted(params_of(file_name, function_name))
        if not close(point.value_generated, point.value_original, VALUE_REL, 1e-12):
            problems.append(
                f"at {point.point}: value_generated={point.value_generated!r} "
                f"!= value_original={point.value_original!r}"
            )
        assert [row.param for row in point.rows] == expected_params
        for row in point.rows:
            if not row.ok:
                problems.append("row not ok " + describe(point, row))
            if not close(row.generated, row.sympy, SYMPY_REL, 1e-6):
                problems.append("generated != sympy " + describe(point, row))
            if not close(row.generated, row.fd, FD_REL, 1e-3):
                problems.append(
                    "generated != finite difference " + describe(point, row)
                )
    assert not problems, "\n".join(problems)
    assert report.ok


@pytest.mark.parametrize("file_name", FILES)
def test_compile_is_deterministic(file_name):
    source = source_of(file_name)
    first = compile_source(source, str(CORPUS / file_name)).text
    second = compile_source(source, str(CORPUS / file_name)).text
    assert first == second
    names = [n for f, n in CASES if f == file_name]
    assert sorted(
        cf.name for cf in compile_source(source, file_name).functions
    ) == sorted(names)
    module = load_module(first, "corpus_" + file_name[:-3])
    for name in names:
        assert callable(getattr(module, f"{name}_grad"))
        assert callable(getattr(module, f"{name}_value_and_grad"))


def signature_of(file_name, function_name):
    """[(name, default)] of a corpus function, read from its source."""
    tree = ast.parse(source_of(file_name))
    (node,) = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == function_name
    ]
    args = node.args.args
    defaults = [inspect.Parameter.empty] * (len(args) - len(node.args.defaults))
    defaults += [ast.literal_eval(d) for d in node.args.defaults]
    return [(a.arg, d) for a, d in zip(args, defaults)]


@pytest.mark.parametrize("file_name", FILES)
def test_generated_signatures_match_source(file_name):
    # Same parameters, order and defaults as the user's function, for both entry points.
    module = load_module(
        compile_source(source_of(file_name), file_name).text, "sig_" + file_name[:-3]
    )
    for f, name in CASES:
        if f != file_name:
            continue
        expected = signature_of(file_name, name)
        for suffix in ("_grad", "_value_and_grad"):
            params = inspect.signature(
                getattr(module, name + suffix)
            ).parameters.values()
            # then the module constants it reads, keyword-only, defaulting to their copies
            constants = [p for p in params if p.kind == p.KEYWORD_ONLY and p.name in vars(module)
                         and p.default is vars(module)[p.name]]
            assert [(p.name, p.default) for p in params if p not in constants] == expected, name + suffix


@pytest.mark.parametrize(
    ("file_name", "function_name"), CASES, ids=[f"{f}::{n}" for f, n in CASES]
)
def test_gradient_kind_and_value_and_grad_agree(file_name, function_name):
    # Every corpus parameter is a float, so every gradient is a float ("same kind as its
    # parameter"; np.float64 is a float), and f_grad agrees with f_value_and_grad.
    wrt = WRT.get((file_name, function_name))
    module = load_module(
        compile_source(
            source_of(file_name), file_name, functions=[function_name], wrt=wrt
        ).text,
        "kind_" + file_name[:-3],
    )
    value, grad = getattr(module, function_name + "_value_and_grad")()
    grads = grad if isinstance(grad, tuple) else (grad,)
    expected = (
        wrt
        if wrt is not None
        else [n for n, _ in signature_of(file_name, function_name)]
    )
    assert len(grads) == len(expected)
    assert isinstance(value, float)
    kinds = {p: type(g).__name__ for p, g in zip(expected, grads)}
    assert all(isinstance(g, float) for g in grads), f"gradient kinds {kinds}"
    assert getattr(module, function_name + "_grad")() == grad


# --- hand-derived numbers -------------------------------------------------------------


def compiled(file_name, functions=None, wrt=None):
    result = compile_source(
        source_of(file_name), file_name, functions=functions, wrt=wrt
    )
    return load_module(result.text, "hand_" + file_name[:-3])


def test_square_by_hand():
    # d/dx x**2 = 2x: at x = 3 that is 6, and the value is 9.
    m = compiled("powers.py", ["square"])
    assert m.square_grad(3.0) == 6.0
    value, grad = m.square_value_and_grad(3.0)
    assert (value, grad) == (9.0, 6.0)
    # default x = 0.6
    assert m.square_grad() == pytest.approx(1.2, rel=1e-15)


def test_seed_network_by_hand():
    # The seed lesson: L = 1 and gradients (1, 2, 1, 1, 2) for (w1, w2, b1, w3, b2).
    m = compiled("sigmoid.py", ["seed_loss"])
    value, grad = m.seed_loss_value_and_grad()
    assert value == pytest.approx(1.0, rel=1e-15)
    assert isinstance(grad, tuple) and len(grad) == 5
    assert grad == pytest.approx((1.0, 2.0, 1.0, 1.0, 2.0), rel=1e-12)
    assert m.seed_loss_grad(0.5, -0.5, 0.5, 2.0, 0.0) == pytest.approx(
        (1.0, 2.0, 1.0, 1.0, 2.0)
    )


def test_swap_tuple_order():
    # a, b = x, y; a, b = b, a; return a - 2b  ->  y - 2x: d/dx = -2, d/dy = 1.
    m = compiled("assign.py", ["swap"])
    assert m.swap_grad(0.3, 0.7) == (-2.0, 1.0)
    value, grad = m.swap_value_and_grad(x=5.0, y=1.0)
    assert value == -9.0
    assert grad == (-2.0, 1.0)


def test_unused_parameter_gets_exact_zero():
    # x * x: d/dx = 2x, d/dunused = exactly 0.0.
    m = compiled("constants.py", ["unused_parameter"])
    grad = m.unused_parameter_grad(1.5, 123.0)
    assert grad[0] == 3.0
    assert grad[1] == 0.0 and isinstance(grad[1], float)
    value, grad = m.unused_parameter_value_and_grad()
    assert value == pytest.approx(0.16, rel=1e-15)
    assert grad[0] == pytest.approx(0.8, rel=1e-15)
    assert grad[1] == 0.0 and isinstance(grad[1], float)


def test_integer_exponent_parameter_by_hand():
    # x ** n with n data: d/dx = n x**(n-1). At x = 2, n = 3: 12, value 8.
    m = compiled("constants.py", ["power_int_param"], wrt=["x"])
    assert m.power_int_param_grad(2.0, 3) == 12.0
    assert m.power_int_param_value_and_grad(2.0, 5) == (32.0, 80.0)
    assert m.power_int_param_grad(2.0, 1) == 1.0


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_integer_exponent_parameter_checked(n):
    source = source_of("constants.py")
    for name in ("power_int_param", "binomial_term"):
        (report,) = check_source(
            source, "constants.py", functions=[name], wrt=["x"], at={"x": 0.7, "n": n}
        )
        assert report.ok, [
            (p.point, [(r.param, r.generated, r.sympy, r.fd, r.note) for r in p.rows])
            for p in report.points
        ]
        (point,) = report.points
        (row,) = point.rows
        assert row.param == "x"
        expected = n * 0.7 ** (n - 1) if name == "power_int_param" else 1.7 ** (n - 1)
        assert row.generated == pytest.approx(expected, rel=1e-12)


def test_polar_by_hand():
    # r = hypot(x, y) at (3, 4): dr/dx = 3/5, dr/dy = 4/5.
    # theta = atan2(y, x): d/dx = -y / r**2 = -4/25, d/dy = x / r**2 = 3/25.
    m = compiled("special.py", ["polar_radius", "polar_angle"])
    value, grad = m.polar_radius_value_and_grad(3.0, 4.0)
    assert value == 5.0
    assert grad == pytest.approx((0.6, 0.8), rel=1e-15)
    assert m.polar_angle_grad(3.0, 4.0) == pytest.approx((-0.16, 0.12), rel=1e-14)


def test_huber_by_hand():
    # DELTA = 0.5. |r| = 0.7 > delta: linear part, d/dprediction = delta * sign(r) = 0.5.
    m = compiled("builtins_minmax.py", ["huber", "relu", "max_of_three"])
    assert m.huber_grad(0.9, 0.2) == pytest.approx((0.5, -0.5), rel=1e-15)
    # |r| = 0.2 < delta: quadratic part, d/dprediction = r = -0.2.
    assert m.huber_grad(0.2, 0.4) == pytest.approx((-0.2, 0.2), rel=1e-12)
    assert m.relu_value_and_grad(2.0) == (2.0, 1.0)
    assert m.relu_value_and_grad(-2.0) == (0.0, 0.0)
    assert m.max_of_three_grad(0.3, 0.7, 0.5) == (0.0, 1.0, 0.0)


def test_augmented_by_hand():
    # z = ((x + y - x/2) * y / (1 + x)) ** 2; at x = 1, y = 2: inner u = 2.5 * 2 / 2 = 2.5,
    # z = 6.25. du/dx = (0.5 * y * (1 + x) - (x/2 + y) * y) / (1 + x)**2 = (2 - 5) / 4 = -0.75,
    # du/dy = ((x/2 + y) + y) / (1 + x) = 4.5 / 2 = 2.25; dz = 2u du = (-3.75, 11.25).
    m = compiled("assign.py", ["augmented"])
    value, grad = m.augmented_value_and_grad(1.0, 2.0)
    assert value == pytest.approx(6.25, rel=1e-15)
    assert grad == pytest.approx((-3.75, 11.25), rel=1e-14)


def test_conditional_takes_branch_at_run_time():
    # m = x if x > y else y; m * m: only the branch taken gets a gradient.
    m = compiled("assign.py", ["conditional_active", "conditional_constant_values"])
    assert m.conditional_active_grad(0.8, 0.6) == pytest.approx((1.6, 0.0), rel=1e-15)
    assert m.conditional_active_grad(0.2, 0.6) == pytest.approx((0.0, 1.2), rel=1e-15)
    assert m.conditional_constant_values_grad(0.7) == 2.0
    assert m.conditional_constant_values_grad(0.1) == 3.0


def test_fanout_sums_paths_by_hand():
    # ten_times: x added ten times -> 10; diamond: a = e^x, (a y)(a + y) -> d/dx = 2 a^2 y + a y^2.
    m = compiled("fanout.py", ["ten_times", "diamond"])
    assert m.ten_times_grad(0.9) == 10.0
    a = math.exp(0.0)
    assert m.diamond_grad(0.0, 2.0) == pytest.approx(
        (2 * a * a * 2.0 + a * 4.0, a * a + 2 * a * 2.0), rel=1e-15
    )


def test_helpers_with_defaults_and_keywords_by_hand():
    # scaled(x) + scaled(x, k=3) + scaled(x, 0.5) + scaled(k=x, t=x) = 2x + 3x + 0.5x + x^2.
    m = compiled("helpers.py", ["scaled_defaults_and_keywords", "norm"])
    assert m.scaled_defaults_and_keywords_grad(1.0) == pytest.approx(7.5, rel=1e-15)
    value, grad = m.norm_value_and_grad(3.0, 4.0)
    assert value == 5.0
    assert grad == pytest.approx((0.6, 0.8), rel=1e-15)


def test_sigmoid_primitive_by_hand():
    # sigmoid'(0) = 1/4 for the np.exp helper, the math.exp helper and scipy's expit.
    m = compiled("sigmoid.py", ["sigmoid", "logistic"])
    assert m.sigmoid_value_and_grad(0.0) == (0.5, 0.25)
    assert m.logistic_value_and_grad(0.0) == (0.5, 0.25)
    e = compiled("expit.py", ["expit_plain"])
    assert e.expit_plain_value_and_grad(0.0) == (0.5, 0.25)
