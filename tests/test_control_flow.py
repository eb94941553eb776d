"""Control-flow corpus: every function in tests/corpus/control/ is compiled, imported and
checked against sympy (which follows the path the point takes) and central finite
differences of the original function, for every parameter, at the defaults, at seeded
random points, and at explicit points chosen on each side of each branch (and with
different trip counts for loops); a few get hand-derived numbers on top.

Functions are discovered with `ast` (the corpus is never imported here). Integer
parameters (loop counts) are left out of the gradient by default because they only reach
range() and comparisons; the rows expected are those of the float parameters.
"""

from __future__ import annotations

import ast
import math
import re
import zlib
from pathlib import Path

import pytest

from gradgen import compile_source, load_module
from gradgen.verify.check import check_source

CORPUS = Path(__file__).parent / "corpus" / "control"

SYMPY_REL = 1e-8
SYMPY_FLOOR = 1e-6
FD_REL = 1e-5
FD_FLOOR = 1e-3
VALUE_REL = 1e-12

# Parameters to differentiate where the default choice is not the float parameters.
WRT = {
    # `n` reaches range() through `m = 2 * n + 1`; it is data, not a variable.
    ("for_range.py", "range_computed_bound"): ["x"],
}

# Explicit points, chosen by hand on each side of each branch (the comment says which side)
# and with different trip counts. Parameters not given keep their defaults. Every point is
# away from every boundary by much more than the finite-difference step, so the finite
# difference of the original function is always compared (a row noted "at a kink or branch
# boundary" must still match it).
POINTS = {
    # --- branches.py
    ("branches.py", "sign_split"): [{"x": -0.4}, {"x": 1.3}],  # x > 0 / x <= 0
    ("branches.py", "three_way"): [
        {"x": 1.4, "y": 0.9},  # x > 1
        {"x": 0.6, "y": -0.7},  # 0 < x <= 1
        {"x": -0.6, "y": -0.3},  # x <= 0
    ],
    ("branches.py", "active_condition"): [
        {"x": 0.1, "w": 1.3},  # h = -0.07 <= 0
        {"x": -0.5, "w": 0.8},  # h = -0.6
        {"x": 0.9, "w": 2.0},  # h = 1.6 > 0
    ],
    ("branches.py", "constant_condition"): [{"x": -0.7}, {"x": 1.9}],
    ("branches.py", "assigned_in_one_branch"): [
        {"x": 0.2, "y": 0.3},  # x <= THRESHOLD: t, u from the else side
        {"x": 0.6, "y": -0.4},  # x > THRESHOLD, t negative
        {"x": 1.7, "y": 0.5},
    ],
    ("branches.py", "only_if_no_else"): [
        {"x": 0.2, "y": 0.9},  # x <= y: the if body is skipped
        {"x": -0.5, "y": -1.0},  # x > y
    ],
    ("branches.py", "nested_three_deep"): [
        {"x": 0.3, "y": 0.6, "z": 1.4},  # x > 0, y > 0.5, z > 1
        {"x": 0.3, "y": 0.6, "z": 0.7},  # x > 0, y > 0.5, z <= 1
        {"x": 0.3, "y": 0.2, "z": 0.9},  # x > 0, y <= 0.5
        {"x": -0.4, "y": 0.6, "z": 0.9},  # x <= 0, z > 0
        {"x": -0.4, "y": 0.6, "z": -0.5},  # x <= 0, z <= 0
    ],
    ("branches.py", "boolean_combination"): [
        {"x": 0.3, "y": 0.9},  # and: both true
        {"x": -0.3, "y": 0.7},  # or: x < 0
        {"x": 0.3, "y": -1.4},  # or: y < -1
        {"x": 0.4, "y": 0.2},  # else
    ],
    ("branches.py", "chained_comparison"): [{"x": 0.8}, {"x": 1.6}, {"x": -0.3}],
    ("branches.py", "sequential_branches"): [
        {"x": 0.3, "y": 1.2},  # a <= 0.5, b < 0.4
        {"x": 0.9, "y": 1.0},  # a > 0.5, b >= 0.4
        {"x": 0.35, "y": 2.0},  # a > 0.5, b < 0.4
        {"x": 1.5, "y": 0.2},  # a <= 0.5, b >= 0.4
    ],
    ("branches.py", "piecewise_cubic"): [
        {"x": -1.5},
        {"x": -0.5},
        {"x": 0.5},
        {"x": 1.2},
        {"x": 2.6},
    ],
    # --- early_return.py
    ("early_return.py", "clipped_smooth"): [{"x": 1.5}, {"x": -1.5}, {"x": -0.6}],
    ("early_return.py", "guard_then_compute"): [
        {"x": 0.2, "y": 0.6},  # y > x: first return
        {"x": 1.5, "y": -0.3},  # second return
    ],
    ("early_return.py", "many_returns"): [
        {"x": 0.8, "y": 0.5},  # s > 1, x > y
        {"x": 0.5, "y": 0.8},  # s > 1, x <= y
        {"x": 0.1, "y": 0.4},  # 0 < s <= 1
        {"x": -0.6, "y": 0.2},  # s <= 0
    ],
    ("early_return.py", "return_in_else"): [
        {"x": 0.3, "y": 0.4},  # a < 0.2: falls through
        {"x": -0.5, "y": 0.6},  # a < 0.2, negative
        {"x": 1.2, "y": 0.7},  # return in else
    ],
    ("early_return.py", "return_after_loop"): [
        {"x": 1.3, "n": 4},  # return before the loop
        {"x": 0.8, "n": 4},  # p > 0.5 after the loop
        {"x": 0.8, "n": 1},
        {"x": -0.5, "n": 3},  # p <= 0.5
        {"x": 0.3, "n": 0},  # empty loop
    ],
    ("early_return.py", "return_on_computed_value"): [
        {"x": 0.7, "y": 0.5},  # g > 0.01
        {"x": 0.7, "y": 0.6},  # g <= 0.01
        {"x": -0.4, "y": 0.3},  # h negative, g > 0.01
    ],
    # --- for_range.py
    ("for_range.py", "power_by_loop"): [
        {"x": -1.3, "n": 3},
        {"x": 0.9, "n": 1},
        {"x": 1.1, "n": 0},
    ],
    ("for_range.py", "sum_of_powers"): [{"x": -0.8, "n": 2}, {"x": 1.2, "n": 10}],
    ("for_range.py", "range_two_args"): [
        {"x": 1.1, "lo": 1, "hi": 4},
        {"x": 0.4, "lo": 5, "hi": 5},
        {"x": -0.7, "lo": 3, "hi": 12},
    ],
    ("for_range.py", "range_three_args"): [{"x": -0.5, "n": 2}, {"x": 2.0, "n": 30}],
    ("for_range.py", "range_negative_step"): [{"x": -0.7}, {"x": 1.6}],
    ("for_range.py", "range_constant_bounds"): [{"x": 0.2}, {"x": -0.3}],
    ("for_range.py", "range_computed_bound"): [
        {"x": -0.8, "n": 1},
        {"x": 0.9, "n": 6},
    ],
    ("for_range.py", "range_inline_computed_bound"): [
        {"x": -0.9, "n": 1},
        {"x": 1.3, "n": 5},
    ],
    ("for_range.py", "range_bounds_from_constants"): [{"x": -1.1}, {"x": 1.8}],
    ("for_range.py", "empty_range"): [{"x": 0.5, "n": 0}, {"x": -0.3, "n": 2}],
    ("for_range.py", "index_in_expression"): [{"x": 1.3}, {"x": -0.9}],
    ("for_range.py", "two_accumulators"): [{"x": -0.4, "y": 1.1}],
    ("for_range.py", "overwritten_every_iteration"): [{"x": -1.2}],
    ("for_range.py", "augmented_operators"): [
        {"x": -0.5, "y": 0.3},
        {"x": 1.5, "y": 1.5},
    ],
    # --- for_sequence.py
    ("for_sequence.py", "horner"): [{"x": -0.8}, {"x": 1.5}],
    ("for_sequence.py", "weighted_exponentials"): [{"x": -1.0}],
    ("for_sequence.py", "least_squares"): [{"a": -0.3, "b": 0.9}],
    ("for_sequence.py", "branch_on_element"): [{"x": -0.6}, {"x": 2.0}],
    ("for_sequence.py", "sequence_in_sequence"): [{"x": -0.5, "y": 0.2}],
    # --- while_loops.py
    ("while_loops.py", "halve_until_small"): [
        {"x": 0.6},  # no iteration
        {"x": 1.5},  # one
        {"x": 3.0},  # two
        {"x": 9.7},  # four
    ],
    ("while_loops.py", "halve_and_count"): [{"x": 0.6}, {"x": 1.5}, {"x": 9.7}],
    ("while_loops.py", "accumulate_to_target"): [
        {"x": 1.2},  # 2 iterations
        {"x": 0.2},  # 15 iterations
        {"x": -0.9},  # 3 iterations
    ],
    ("while_loops.py", "square_until_large"): [
        {"x": 1.5},  # 2 iterations
        {"x": 4.5},  # none
        {"x": -1.2},  # 2 iterations
    ],
    ("while_loops.py", "counted_while"): [
        {"x": -0.9, "n": 3},
        {"x": 1.1, "n": 0},
    ],
    ("while_loops.py", "compound_condition"): [
        {"x": -0.7},
        {"x": 0.04},  # no iteration
        {"x": 2.5},
    ],
    ("while_loops.py", "never_runs"): [{"x": 4.1}],  # runs 3 times
    ("while_loops.py", "newton_cube_root"): [{"a": -1.5}, {"a": 0.3}],
    # --- break_continue.py
    ("break_continue.py", "break_at_known_iteration"): [{"x": -1.4}, {"x": 1.2}],
    ("break_continue.py", "break_on_active_threshold"): [
        {"x": -0.2},  # never breaks
        {"x": 2.0},  # breaks at i = 1
        {"x": 0.07},  # breaks at i = 8
    ],
    ("break_continue.py", "continue_skips_odd"): [
        {"x": -1.1, "n": 4},
        {"x": 1.3, "n": 1},
    ],
    ("break_continue.py", "continue_on_active_value"): [
        {"x": 0.1},  # never skips
        {"x": 0.9},  # skips several
        {"x": -0.4},  # skips most
    ],
    ("break_continue.py", "while_true_with_break"): [{"x": -1.5}, {"x": 2.0}],
    ("break_continue.py", "break_and_continue"): [
        {"x": 0.8, "y": 0.3},  # breaks at i = 5
        {"x": 0.5, "y": 1.0},  # breaks at i = 2
        {"x": -0.5, "y": 1.0},  # never breaks
    ],
    ("break_continue.py", "nested_inner_break"): [{"x": -0.8, "y": 1.5}],
    ("break_continue.py", "nested_continue_and_break"): [
        {"x": 2.0},  # inner and outer break at i = 3
        {"x": 1.0},  # both break at i = 4
        {"x": -0.5},  # never breaks
    ],
    ("break_continue.py", "while_with_continue"): [{"x": 0.1}, {"x": 2.5}, {"x": -0.5}],
    ("break_continue.py", "while_with_break"): [
        {"x": 2.0},  # breaks in the first iteration
        {"x": 0.2},  # the while condition ends it
        {"x": -0.5},
    ],
    # --- nested.py
    ("nested.py", "double_loop"): [{"x": -0.6, "y": 1.3}],
    ("nested.py", "triangular_loop"): [{"x": -0.7, "n": 3}, {"x": 1.2, "n": 8}],
    ("nested.py", "branch_in_loop"): [
        {"x": 0.15},  # y crosses 1 back and forth
        {"x": 0.6},
        {"x": 1.4},  # starts above 1
        {"x": -0.3},  # never above 1
    ],
    ("nested.py", "elif_in_loop"): [
        {"x": 0.1, "y": 0.25},  # middle and else only
        {"x": 0.6, "y": -0.2},  # all three
        {"x": -0.2, "y": 0.3},  # else only
    ],
    ("nested.py", "loop_in_branch"): [
        {"x": 0.8, "n": 6},  # for loop in the if branch
        {"x": 0.8, "n": 2},
        {"x": -1.2, "n": 6},  # while loop in the else branch
    ],
    ("nested.py", "while_in_for"): [{"x": 0.3}, {"x": -0.4}, {"x": 1.9}],
    ("nested.py", "for_in_while"): [
        {"x": 1.5},  # few rounds
        {"x": 0.05},  # stops at the round cap
        {"x": -0.5},
    ],
    ("nested.py", "triple_nested_with_branch"): [{"x": -0.5, "y": 1.1}],
    ("nested.py", "last_assigned_in_branch"): [
        {"x": 0.12},  # assigned from i = 3 on
        {"x": 0.6},  # assigned at i = 1..4 only
        {"x": 1.2},
        {"x": -0.4},  # never assigned in the loop
    ],
    ("nested.py", "loop_in_branch_in_loop"): [
        {"x": 0.1, "y": 1.5},  # the while branch only
        {"x": 0.6, "y": 0.5},  # the for branch from i = 1
        {"x": -0.4, "y": 1.2},
        {"x": 0.2, "y": 2.0},  # the for branch at i = 3
    ],
    # --- helpers_in_loops.py
    ("helper_hygiene.py", "decay"): [{"a": 0.1, "n": 2}, {"a": -1.2, "n": 4}],  # a <= 0.5 after the loop
    ("helper_hygiene.py", "same_names_in_branch"): [{"h": -0.3, "s": 0.5}],  # the else branch
    ("helper_hygiene.py", "nested_rebinding"): [{"a": -0.4, "x": 2.1}],
    ("helpers_in_loops.py", "relu"): [{"t": -0.4}],
    ("helpers_in_loops.py", "soft_clip"): [{"t": 1.7}, {"t": -2.2}],
    ("helpers_in_loops.py", "power"): [{"t": -1.1, "n": 5}, {"t": 0.5, "n": 0}],
    ("helpers_in_loops.py", "shrink"): [{"t": 0.7}, {"t": 3.3}],
    ("helpers_in_loops.py", "sum_of_relus"): [
        {"x": 0.05},  # only i = 0 active
        {"x": -0.2},  # none active
        {"x": 0.95},  # all active
    ],
    ("helpers_in_loops.py", "clipped_iteration"): [
        {"x": -0.6, "y": 0.1},
        {"x": 0.2, "y": -0.9},
    ],
    ("helpers_in_loops.py", "euler_with_helper"): [{"a": -0.3, "x0": 0.4}],
    ("helpers_in_loops.py", "helper_with_loop_in_loop"): [{"x": -1.2}],
    ("helpers_in_loops.py", "helper_with_while_in_loop"): [
        {"x": 0.3},
        {"x": 1.3},
        {"x": -0.5},  # shrink never loops
    ],
    ("helpers_in_loops.py", "helper_branch_and_break"): [
        {"x": 0.1},  # relu active, no break
        {"x": 0.9},
        {"x": -0.3},
    ],
    # --- recurrences.py
    ("recurrences.py", "euler_cubic"): [{"a": 0.9, "b": 0.1, "x0": -0.5}],
    ("recurrences.py", "logistic_map"): [
        {"r": 2.9, "x0": 0.6},
        {"r": 1.5, "x0": 0.8},
    ],
    ("recurrences.py", "fibonacci_like"): [
        {"x": -0.5, "y": 1.0, "n": 5},
        {"x": 1.1, "y": 0.2, "n": 1},
    ],
    ("recurrences.py", "fibonacci_temp"): [
        {"x": -0.5, "y": 1.0, "n": 5},
        {"x": 1.1, "y": 0.2, "n": 1},
    ],
    ("recurrences.py", "symplectic_oscillator"): [{"w": 0.4, "q0": -0.8}],
    ("recurrences.py", "exp_series"): [{"x": -1.3, "n": 15}, {"x": 0.7, "n": 3}],
    ("recurrences.py", "exponential_moving_average"): [{"x": 1.7}],
    ("recurrences.py", "midpoint_method"): [{"a": -0.4, "x0": 1.2}],
    ("recurrences.py", "carried_previous"): [{"x": -0.9}],
    # --- returns_in_loops.py: each exit taken at some point (tests/test_returns_in_loops.py checks that)
    ("returns_in_loops.py", "first_crossing"): [{"x": 0.4}, {"x": 0.05, "n": 2}, {"x": 0.1}],
    ("returns_in_loops.py", "newton_sqrt"): [{"a": 2.0, "x0": 1.4142}, {"a": 0.3, "x0": 3.0}],
    ("returns_in_loops.py", "fall_to_axis"): [{"h": 30.0, "v": 5.0, "dt": 0.07}, {"h": 0.2, "v": -1.0}],
    ("returns_in_loops.py", "nested_exit"): [{"x": 0.05, "n": 3}, {"x": 0.6}],
    ("returns_in_loops.py", "beside_break_and_continue"): [{"x": -0.8}, {"x": 0.1, "n": 3}, {"x": 1.5}],
    ("returns_in_loops.py", "value_computed_in_loop"): [{"x": -1.0, "n": 2}, {"x": 1.3}],
    ("returns_in_loops.py", "settle"): [{"z": 0.1, "k": 1}, {"z": 1.5}],
    ("returns_in_loops.py", "helper_in_a_loop"): [{"x": 0.05, "n": 2}, {"x": 1.2}],
    ("returns_in_loops.py", "return_in_else"): [{"x": 0.1, "n": 2}, {"x": 0.1, "n": 4}],
}


def function_nodes(file_name):
    tree = ast.parse(source_of(file_name), filename=str(CORPUS / file_name))
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and not _returns_tuple(n)]


def _returns_tuple(node):
    """A helper whose call is unpacked (`return a, b`) has no gradient of its own."""
    return any(isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) for n in ast.walk(node))


def source_of(file_name):
    return (CORPUS / file_name).read_text(encoding="utf-8")


def discover():
    """Every (file name, function name) of the corpus, in file order."""
    return [
        (path.name, node.name)
        for path in sorted(CORPUS.glob("*.py"))
        for node in function_nodes(path.name)
    ]


CASES = discover()
FILES = sorted({f for f, _ in CASES})
IDS = [f"{f}::{n}" for f, n in CASES]


def signature_of(file_name, function_name):
    """[(name, default)] of a corpus function, read from its source."""
    (node,) = [n for n in function_nodes(file_name) if n.name == function_name]
    args = node.args.args
    assert len(node.args.defaults) == len(
        args
    ), "corpus functions default every parameter"
    return [(a.arg, ast.literal_eval(d)) for a, d in zip(args, node.args.defaults)]


def expected_wrt(file_name, function_name):
    """The parameters the gradient is taken with respect to: the float ones by default."""
    if (file_name, function_name) in WRT:
        return WRT[(file_name, function_name)]
    return [
        name
        for name, default in signature_of(file_name, function_name)
        if isinstance(default, float)
    ]


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


def problems_of(report, params, wrt):
    """Everything wrong with one FunctionReport, as readable lines."""
    problems = []
    for point in report.points:
        assert sorted(point.point) == sorted(params)
        if not close(point.value_generated, point.value_original, VALUE_REL, 1e-12):
            problems.append(
                f"at {point.point}: value_generated={point.value_generated!r} "
                f"!= value_original={point.value_original!r}"
            )
        assert [row.param for row in point.rows] == wrt
        for row in point.rows:
            if not row.ok:
                problems.append("row not ok " + describe(point, row))
            if row.sympy is None or not close(
                row.generated, row.sympy, SYMPY_REL, SYMPY_FLOOR
            ):
                problems.append("generated != sympy " + describe(point, row))
            if row.fd is None or not close(row.generated, row.fd, FD_REL, FD_FLOOR):
                problems.append(
                    "generated != finite difference " + describe(point, row)
                )
    if not report.ok:
        problems.append("report not ok")
    return problems


# --- the corpus is big enough and every function has hand-picked points ---------------


def test_corpus_is_big_enough():
    assert len(CASES) >= 40
    assert len(FILES) >= 8
    assert len(set(CASES)) == len(CASES)


def test_every_explicit_point_names_a_corpus_function():
    assert set(POINTS) <= set(CASES)
    for (file_name, name), points in POINTS.items():
        params = {p for p, _ in signature_of(file_name, name)}
        for point in points:
            assert set(point) <= params, (name, point)


BRANCHY = (ast.If, ast.While, ast.Break, ast.Continue, ast.IfExp)


def test_every_branching_function_has_explicit_points():
    # A function with an `if`, a `while` or a `break`/`continue` (directly, not through a
    # helper) is checked at points of our choosing, not only at the defaults.
    missing = [
        case
        for case in CASES
        if any(isinstance(n, BRANCHY) for n in ast.walk(_node(*case)))
        and len(POINTS.get(case, [])) < 1
    ]
    assert not missing


def _node(file_name, function_name):
    (node,) = [n for n in function_nodes(file_name) if n.name == function_name]
    return node


# --- every function, every parameter, several points -------------------------------------


@pytest.mark.parametrize(("file_name", "function_name"), CASES, ids=IDS)
def test_control_flow_function(file_name, function_name):
    source = source_of(file_name)
    filename = str(CORPUS / file_name)
    wrt = WRT.get((file_name, function_name))
    params = [p for p, _ in signature_of(file_name, function_name)]
    expected = expected_wrt(file_name, function_name)
    problems = []

    # the defaults, then seeded random points the original function is smooth at
    (report,) = check_source(
        source,
        filename,
        functions=[function_name],
        wrt=wrt,
        n_points=3,
        seed=seed_for(file_name, function_name),
    )
    assert report.name == function_name
    assert report.points, "no sample point"
    defaults = dict(signature_of(file_name, function_name))
    assert report.points[0].point == defaults
    problems += problems_of(report, params, expected)

    # hand-picked points on each side of each branch
    for at in POINTS.get((file_name, function_name), []):
        (report,) = check_source(
            source, filename, functions=[function_name], wrt=wrt, at=at
        )
        assert len(report.points) == 1
        assert report.points[0].point == {**defaults, **at}
        problems += problems_of(report, params, expected)

    assert not problems, "\n".join(problems)


# --- the generated code --------------------------------------------------------------------


def compiled_text(file_name, functions=None, wrt=None):
    return compile_source(
        source_of(file_name), file_name, functions=functions, wrt=wrt
    ).text


def compiled(file_name, functions=None, wrt=None):
    text = compiled_text(file_name, functions, wrt)
    return load_module(text, "control_" + file_name[:-3])


@pytest.mark.parametrize("file_name", FILES)
def test_compile_is_deterministic_and_standalone(file_name):
    source = source_of(file_name)
    first = compile_source(source, str(CORPUS / file_name), wrt="all").text
    second = compile_source(source, str(CORPUS / file_name), wrt="all").text
    assert first == second
    assert first.encode() == second.encode()
    # no runtime dependency on gradgen: the only imports are math and numpy
    assert "import gradgen" not in first and "from gradgen" not in first
    assert imported_modules(first) <= {"math", "numpy"}
    names = [n for f, n in CASES if f == file_name]
    module = load_module(first, "control_det_" + file_name[:-3])
    for name in names:
        assert callable(getattr(module, f"{name}_grad"))
        assert callable(getattr(module, f"{name}_value_and_grad"))


@pytest.mark.parametrize(("file_name", "function_name"), CASES, ids=IDS)
def test_single_function_compile_is_deterministic(file_name, function_name):
    a = compiled_text(file_name, [function_name], WRT.get((file_name, function_name)))
    b = compiled_text(file_name, [function_name], WRT.get((file_name, function_name)))
    assert a == b
    assert "import gradgen" not in a and "from gradgen" not in a


def imported_modules(text):
    modules = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add((node.module or "").split(".")[0])
    return modules


def function_text(text, name):
    """The text of the generated function `name` (up to the next top-level def)."""
    start = text.index(f"\ndef {name}(")
    end = text.find("\ndef ", start + 1)
    return text[start : end if end != -1 else len(text)]


@pytest.mark.parametrize(
    "function_name",
    [
        "power_by_loop",
        "range_two_args",
        "range_computed_bound",
        "range_inline_computed_bound",
    ],
)
def test_integer_bounds_are_not_differentiated_by_default(function_name):
    # an integer parameter that only reaches range() (also through `m = 2 * n + 1`) is
    # data: the default gradient is with respect to the float parameters only
    (cf,) = compile_source(
        source_of("for_range.py"), "for_range.py", functions=[function_name], wrt="all"
    ).functions
    assert list(cf.wrt) == [
        name
        for name, default in signature_of("for_range.py", function_name)
        if isinstance(default, float)
    ]


def test_for_loop_backward_is_reversed_range():
    text = compiled_text("for_range.py", ["power_by_loop"])
    grad = function_text(text, "power_by_loop_grad")
    # forward loop kept as a loop, backward sweep over the same iterations in reverse
    assert "for i in range(n):" in grad
    assert "reversed(range(" in grad
    assert "for i in reversed(range(n)):" in grad
    # loops stay loops: the multiply appears once in the forward sweep, not unrolled
    lines = [line.strip() for line in grad.splitlines()]
    assert lines.count("p = p * x") == 1
    # each backward block cites the source line it undoes
    assert re.search(r"# line \d+: p = p \* x", grad)
    assert "import gradgen" not in text


def test_range_with_three_arguments_is_reversed():
    grad = function_text(
        compiled_text("for_range.py", ["range_three_args"]), "range_three_args_grad"
    )
    assert "reversed(range(1, n, 3))" in grad


def test_while_loop_backward_replays_the_count():
    text = compiled_text("while_loops.py", ["halve_and_count"])
    grad = function_text(text, "halve_and_count_grad")
    assert "while x >= 1.0:" in grad
    assert "range(iterations" in grad


def test_a_while_test_that_runs_statements_runs_them_before_every_test():
    """A 20,000-program soak (seed 1204, program 5731) found `while k < 5 and b <=
    polar1(y, y)` with polar1's body (`r = 0.0; y = y + r`) inlined once, before the loop:
    the test then read a stale value and the loop ran on (a wrong value and gradient). The
    statements a test runs now run before every test: `while True:`, the test's statements,
    `if not test: break`, the body."""
    source = ("def step(y):\n    r = 0.1 * y\n    return y + r\n\n\n"
              "def f(a, b):\n    y = a\n    k = 0\n    while step(y) < 3.0 and k < 10:\n"
              "        y = y * b + 0.5\n        k += 1\n    return y * a\n")
    grad = function_text(compile_source(source, "w.py", functions=["f"], wrt="all").text, "f_grad")
    assert "    while True:\n        iterations += 1\n        r_1 = 0.1 * y\n" in grad
    assert ("        branch = not (y + r_1 < 3.0 and k < 10)\n        branch_stack.append(branch)\n"
            "        if branch:\n            break\n") in grad
    namespace = {}
    exec(source, namespace)  # noqa: S102 - the test's own source
    y, k = 0.7, 0
    while 1.1 * y < 3.0 and k < 10:
        y, k = y * 1.2 + 0.5, k + 1
    value, (da, db) = load_module(compile_source(source, "w.py", functions=["f"], wrt="all").text, "w_grad").f_value_and_grad(
        0.7, 1.2)
    assert value == namespace["f"](0.7, 1.2) == y * 0.7 and k == 3
    assert (da, db) == (pytest.approx(4.2392, rel=1e-12), pytest.approx(3.3068, rel=1e-12))
    [report] = check_source(source, "w.py", ["f"], at={"a": 0.7, "b": 1.2}, wrt="all")
    assert report.ok


def test_and_or_run_a_later_operand_only_when_python_evaluates_it():
    """`a > 0 and safe(a) > 0.5` with safe's body `math.log(a)`: for a <= 0 Python never
    calls safe; the generated code called it anyway (its statements were computed before the
    test) and raised ValueError. Now an operand that runs statements runs only when Python
    would evaluate it, in `if` and `while` tests alike."""
    source = ("import math\n\n\ndef safe(x):\n    y = math.log(x)\n    return y + 1.0\n\n\n"
              "def f(a: float, b: float) -> float:\n    s = 0.0\n    if a > 0 and safe(a) > 0.5:\n        s = a * b\n"
              "    k = 0\n    while k < 3 and (b < 0 or safe(b) < 2.0):\n        b = b + 1.0\n        k += 1\n"
              "    return s + b * a\n")
    namespace = {}
    exec(source, namespace)  # noqa: S102 - the test's own source
    module = load_module(compile_source(source, "sc.py", functions=["f"], wrt="all").text, "sc_grad")
    for a, b in ((-0.5, -1.5), (2.5, 0.5)):
        value, _ = module.f_value_and_grad(a, b)
        assert value == namespace["f"](a, b)
        [report] = check_source(source, "sc.py", ["f"], at={"a": a, "b": b}, wrt="all")
        assert report.ok and all(row.sympy is not None for row in report.points[0].rows)


def test_euler_saves_one_float_per_step():
    # x = x + DT * (a * x - b * x**3): the backward sweep needs the old x only.
    grad = function_text(
        compiled_text("recurrences.py", ["euler_cubic"]), "euler_cubic_grad"
    )
    assert grad.count(".append(") == 1
    assert grad.count(".pop()") == 1
    assert "reversed(range(50))" in grad


# --- hand-derived numbers -------------------------------------------------------------


def test_power_by_repeated_multiplication_by_hand():
    # p = x**n by n multiplications: dp/dx = n x**(n-1).
    m = compiled("for_range.py", ["power_by_loop"])
    assert m.power_by_loop_grad(2.0, 5) == 80.0
    assert m.power_by_loop_grad(3.0, 1) == 1.0
    assert m.power_by_loop_grad(3.0, 0) == 0.0
    assert m.power_by_loop_grad() == pytest.approx(5 * 0.7**4, rel=1e-14)
    # the value comes from the same forward pass
    assert m.power_by_loop_value_and_grad(2.0, 5) == (32.0, 80.0)
    assert m.power_by_loop_value_and_grad(3.0, 1) == (3.0, 1.0)
    assert m.power_by_loop_value_and_grad(3.0, 0) == (1.0, 0.0)
    value, grad = m.power_by_loop_value_and_grad()  # x = 0.7, n = 5
    assert value == pytest.approx(0.7**5, rel=1e-14)
    assert grad == pytest.approx(5 * 0.7**4, rel=1e-14)


def test_helper_power_loop_by_hand():
    m = compiled("helpers_in_loops.py", ["power"])
    assert m.power_grad(-2.0, 3) == 12.0
    assert m.power_value_and_grad(-2.0, 3) == (-8.0, 12.0)


def test_geometric_sum_by_hand():
    # s = sum_{i<n} x**i: ds/dx = sum_{i<n} i x**(i-1); at x = 2, n = 4: 1 + 4 + 12 = 17.
    m = compiled("for_range.py", ["sum_of_powers"])
    assert m.sum_of_powers_value_and_grad(2.0, 4) == (15.0, 17.0)
    # counted_while is the same sum by Horner, in a while loop
    w = compiled("while_loops.py", ["counted_while"])
    assert w.counted_while_grad(2.0, 4) == 17.0
    assert w.counted_while_grad(2.0, 0) == 0.0
    assert w.counted_while_value_and_grad(2.0, 4) == (15.0, 17.0)
    assert w.counted_while_value_and_grad(2.0, 0) == (0.0, 0.0)


def test_halving_while_loop_by_hand():
    # x / 2**k with k the number of halvings until x < 1: d/dx = 2**-k.
    m = compiled("while_loops.py", ["halve_until_small", "halve_and_count"])
    assert m.halve_until_small_grad(5.3) == 0.125  # k = 3
    assert m.halve_until_small_grad(0.6) == 1.0  # k = 0
    assert m.halve_until_small_grad(1.5) == 0.5  # k = 1
    assert m.halve_until_small_grad(12.0) == 0.0625  # k = 4
    # x / 2**k * (1 + k): at 5.3, k = 3: value 0.6625 * 4, gradient 4 / 8
    assert m.halve_and_count_value_and_grad(5.3) == (2.65, 0.5)
    assert m.halve_until_small_value_and_grad(5.3) == (0.6625, 0.125)
    assert m.halve_until_small_value_and_grad(0.6) == (0.6, 1.0)
    assert m.halve_until_small_value_and_grad(12.0) == (0.75, 0.0625)


def test_break_at_known_iteration_by_hand():
    # the loop breaks at i = 4, after four multiplications: x**4, gradient 4 x**3.
    m = compiled("break_continue.py", ["break_at_known_iteration"])
    assert m.break_at_known_iteration_grad(0.5) == 0.5
    assert m.break_at_known_iteration_grad(2.0) == 32.0
    assert m.break_at_known_iteration_value_and_grad(0.5) == (0.0625, 0.5)
    assert m.break_at_known_iteration_value_and_grad(2.0) == (16.0, 32.0)


def test_break_on_threshold_by_hand():
    # s = x (1 + 2 + ... + k), stopping at the first k with s > 3. x = 2: k = 2, s = 6,
    # ds/dx = 3. x = 0.45: k = 4, s = 4.5, ds/dx = 10.
    m = compiled("break_continue.py", ["break_on_active_threshold"])
    assert m.break_on_active_threshold_value_and_grad(2.0) == (6.0, 3.0)
    value, grad = m.break_on_active_threshold_value_and_grad(0.45)
    assert value == pytest.approx(4.5, rel=1e-14)
    assert grad == pytest.approx(10.0, rel=1e-14)
    # x <= 0 never breaks: 50 iterations, ds/dx = 50 * 51 / 2
    assert m.break_on_active_threshold_grad(-0.5) == 1275.0


def test_continue_skips_by_hand():
    # continue on odd i: s = sum over even i < n of x**i; n = 5: 1 + x**2 + x**4,
    # ds/dx = 2x + 4x**3; at x = 2: value 21, gradient 36.
    m = compiled("break_continue.py", ["continue_skips_odd"])
    assert m.continue_skips_odd_value_and_grad(2.0, 5) == (21.0, 36.0)


def test_exp_series_by_hand():
    # s = sum_{k<n} x**k / k!, so ds/dx = sum_{k<n-1} x**k / k!.
    m = compiled("recurrences.py", ["exp_series"])
    x, n = 0.7, 15
    value, grad = m.exp_series_value_and_grad(x, n)
    assert value == pytest.approx(sum(x**k / math.factorial(k) for k in range(n)))
    assert grad == pytest.approx(
        sum(x**k / math.factorial(k) for k in range(n - 1)), rel=1e-14
    )


def test_linear_euler_by_hand():
    # b = 0: x_N = x0 (1 + DT a)**N, N = 50, DT = 0.02.
    m = compiled("recurrences.py", ["euler_cubic"])
    a, x0, n, dt = 0.5, 1.0, 50, 0.02
    da, db, dx0 = m.euler_cubic_grad(a, 0.0, x0)
    growth = 1 + dt * a
    assert da == pytest.approx(x0 * n * dt * growth ** (n - 1), rel=1e-13)
    assert dx0 == pytest.approx(growth**n, rel=1e-13)
    # d/db at b = 0: -DT sum_k growth**(N-1-k) x_k**3, x_k = x0 growth**k
    expected_db = -dt * sum(
        growth ** (n - 1 - k) * (x0 * growth**k) ** 3 for k in range(n)
    )
    assert db == pytest.approx(expected_db, rel=1e-12)
    value, grad = m.euler_cubic_value_and_grad(a, 0.0, x0)
    assert grad == (da, db, dx0)
    assert value == pytest.approx(x0 * growth**n, rel=1e-13)


def test_branches_by_hand():
    m = compiled("branches.py", ["sign_split", "piecewise_cubic"])
    assert m.sign_split_value_and_grad(3.0) == (9.0, 6.0)  # x * x
    assert m.sign_split_value_and_grad(-2.0) == (6.0, -3.0)  # -3 x
    assert m.piecewise_cubic_value_and_grad(-2.0) == (2.0, -1.0)
    assert m.piecewise_cubic_value_and_grad(0.5) == (1.25, 1.0)
    assert m.piecewise_cubic_value_and_grad(1.5) == (3.0, 2.0)
    assert m.piecewise_cubic_value_and_grad(3.0) == (7.0, 4.0)


def test_early_returns_by_hand():
    m = compiled("early_return.py", ["clipped_smooth", "many_returns"])
    # beyond the clip the result is a constant: an exact 0.0 gradient
    value, grad = m.clipped_smooth_value_and_grad(1.5)
    assert (value, grad) == (1.0, 0.0) and isinstance(grad, float)
    assert m.clipped_smooth_value_and_grad(-3.0) == (-1.0, 0.0)
    # inside: x (1.5 - 0.5 x**2), gradient 1.5 - 1.5 x**2
    assert m.clipped_smooth_value_and_grad(0.0) == (0.0, 1.5)
    # s = x + y = 1.3 > 1, x > y: s * x, gradient (2x + y, x)
    value, grad = m.many_returns_value_and_grad(0.8, 0.5)
    assert value == pytest.approx(1.04, rel=1e-14)
    assert grad == pytest.approx((2.1, 0.8), rel=1e-14)
    # s <= 0: s**2 + x, gradient (2s + 1, 2s)
    value, grad = m.many_returns_value_and_grad(-1.0, 0.5)
    assert value == pytest.approx(-0.75, rel=1e-14)
    assert grad == pytest.approx((0.0, -1.0), abs=1e-15)


def test_relus_in_a_loop_by_hand():
    # sum_i relu(x - 0.1 i), i < 8: the gradient counts the active terms.
    m = compiled("helpers_in_loops.py", ["sum_of_relus"])
    assert m.sum_of_relus_grad(0.35) == 4.0  # i = 0, 1, 2, 3
    assert m.sum_of_relus_grad(0.05) == 1.0
    assert m.sum_of_relus_grad(-0.2) == 0.0
    assert m.sum_of_relus_grad(2.0) == 8.0


def test_shrink_helper_in_loop_by_hand():
    # shrink halves until <= 1: each term is x (i+1) / 2**k_i, so its derivative is
    # (i + 1) / 2**k_i. x = 0.9: terms 0.9, 1.8, 2.7, 3.6, 4.5 halve 0, 1, 2, 2, 3 times.
    m = compiled("helpers_in_loops.py", ["helper_with_while_in_loop"])
    assert m.helper_with_while_in_loop_grad(0.9) == pytest.approx(4.375, rel=1e-14)
    value, grad = m.helper_with_while_in_loop_value_and_grad(0.9)
    assert value == pytest.approx(0.9 + 0.9 + 0.675 + 0.9 + 0.5625, rel=1e-14)
    assert grad == pytest.approx(1 + 1 + 0.75 + 1 + 0.625, rel=1e-14)


def test_tuple_assignment_in_loop_by_hand():
    # a, b = b, a + x b once from (a, b) = (x, y): b = x + x y; d/dx = 1 + y, d/dy = x.
    m = compiled("recurrences.py", ["fibonacci_like", "fibonacci_temp"])
    for name in ("fibonacci_temp", "fibonacci_like"):
        assert getattr(m, name + "_grad")(0.5, 2.0, 1) == (3.0, 0.5), name
        value, grad = getattr(m, name + "_value_and_grad")(0.5, 2.0, 1)
        assert value == 1.5, name
        assert grad == (3.0, 0.5), name
