"""Each primitive declares its tangent class in the rule table (`primitive(..., tangent=...)`),
and forward mode reads it there: no name set beside the table.

TODAY records the class every primitive had when the classes were still name sets in
gradgen/rules/tangents.py (LINEAR, MULTILINEAR, REDUCTIONS, ZERO, LINEAR_IN_FIRST,
BILINEAR_HELPERS, NO_TANGENT, EXPLICIT, and elementwise derived from the vector-Jacobian
rule), computed from those sets before they went; SLOTS_TODAY which arguments of a linear or
bilinear primitive carried a tangent, for each number of arguments it takes. The table must
reproduce both exactly: moving the classes changed no tangent. Since then (issue 22) the
backward-pass helpers of prod, einsum, solve, cholesky and solve_triangular, and
solve_triangular itself, have written-out rules (a second derivative), and their own
tangent helpers (cholesky_grad_tangent, prod_grad_tangent) none; and the primitives issue 22
added declare theirs (ISSUE_22, merged into the record).
"""

from __future__ import annotations

import pytest

import gradgen.codegen.derivatives  # noqa: F401  (registers unravel_like, ravel_all, jacobian_parts)
import gradgen.frontend.effects  # noqa: F401  (registers draw)
from gradgen.ir.nodes import Call, Var
from gradgen.rules import tangents
from gradgen.rules.table import LIBRARY_HELPERS, TABLE, TANGENT_CLASSES

TODAY = {
    "elementwise": (
        "abs acos add asin atan atan2 clip cos cosh digamma div erf erfc exp expm1 float gammaln hypot log "
        "log10 log1p log2 log_expit log_ndtr logaddexp logaddexp2 logb max maximum min minimum mod mul ndtr ndtri neg norm_cdf "
        "norm_logcdf norm_logpdf norm_pdf polygamma pos pow reciprocal sigmoid sin sinh sqrt square sub "
        "t_logpdf tan tanh where xlogy"
    ).split(),
    "linear": (
        "T add_lists append array array_list astype atleast_1d atleast_2d atleast_3d broadcast_to "
        "column_stack concatenate concatenate_list copy cumsum diag expand_dims flip getitem hstack "
        "hstack_list list list_get mean meshgrid pop ravel repeat reshape roll setitem shaped_like squeeze "
        "stack stack_list sum sum_list take take_along_axis tile trace transpose tree_get tril triu tuple "
        "unstack vstack vstack_list"
    ).split(),
    "multilinear": "einsum inner matmul outer".split(),
    "reduction": "amax amin logsumexp norm prod std var".split(),
    "linear_in_first": (
        "concatenate_grad diag_grad last_writes meshgrid_grad repeat_grad scatter stack_part_grad "
        "take_along_axis_grad tile_grad trace_grad unbroadcast unconcatenate unjoin zero_at"
    ).split(),
    "bilinear": "matmul_grad_a matmul_grad_b".split(),
    "zero": "list_zeros zero_gradient zeros_like_tree".split(),
    "explicit": ("cholesky cholesky_grad det einsum_grad inv log_softmax prod_grad slogdet softmax solve "
                 "solve_grad_a solve_triangular solve_triangular_grad_a sort").split(),
    "none": (
        "and argmax argmin argsort ceil e eq eye factorial floor floordiv ge ge_strict gt int "
        "invert le le_strict len logical_and lt ndim ne not ones ones_like or pi range range_slice "
        "round shape sign size tau tree_keys tree_len trunc zeros zeros_like"
    ).split(),
    None: (  # refused by name: forward mode has no tangent for these
        "add_at_path broadcast cholesky_grad_tangent custom_estimator custom_vjp draw jacobian_parts "
        "list_add_at prod_grad_tangent ravel_all stop_gradient tree_add_at unravel_like"
    ).split(),
}
ISSUE_22 = {
    "linear": ["swapaxes", "tree_flatten", "add_flat_at", "tree_whole"], "multilinear": ["convolve", "cross", "vdot"],
    "explicit": ["cho_factor", "cho_solve", "cumprod", "cumprod_grad", "cho_factor_grad", "cho_solve_grad_c",
                 "mvn_logpdf", "mvn_logpdf_grad"],
    "linear_in_first": ["cumprod_tangent"], "bilinear": ["convolve_grad", "inner_grad_a", "inner_grad_b"], "none": ["tree_data"],
    None: ["cho_factor_tangent", "cho_solve_tangent", "cumprod_grad_tangent", "cho_solve_grad_c_tangent",
           "tree_add_flat", "mvn_logpdf_tangent", "mvn_logpdf_grad_tangent", "mvn_moving",
           "odeint", "odeint_vjp"],  # (the adjoint solve: refused by forward mode)
}
# array makers whose values are their arguments' (np.full's fill, np.linspace's ends: linear;
# np.arange's start and step: its tangent written out, its count being piecewise in them)
MADE = {"linear": ["full", "linspace"], "linear_in_first": ["linspace_grad"], "explicit": ["arange"]}
for _cls, _names in list(ISSUE_22.items()) + list(MADE.items()):
    TODAY[_cls] = TODAY[_cls] + _names
RECORDED = {name: cls for cls, names in TODAY.items() for name in names}

_ALL = {n: tuple(range(n)) for n in range(1, 5)}  # every argument carries a tangent
SLOTS_TODAY = {  # primitive -> {number of arguments: the arguments that carry a tangent}
    **{name: {1: (0,)} for name in (
        "T array array_list astype atleast_1d atleast_2d atleast_3d concatenate_list copy cumsum diag "
        "expand_dims flip hstack_list mean pop ravel roll squeeze stack_list sum tile trace transpose tril triu "
        "unstack vstack_list").split()},
    **{name: _ALL for name in "add_lists column_stack concatenate hstack list meshgrid stack sum_list tuple vstack".split()},
    **{name: {2: (0,)} for name in "broadcast_to list_get repeat reshape take take_along_axis".split()},
    "append": {2: (0, 1)},
    "getitem": {2: (0,), 3: (0,), 4: (0,)},
    "setitem": {2: (0, 1), 3: (0, 1), 4: (0, 1)},
    "shaped_like": {1: (1,), 2: (1,), 3: (1,), 4: (1,)},
    "tree_get": {1: (0,), 2: (0,), 3: (0,), 4: (0,)},
    "matmul_grad_a": {3: (0, 2)},
    "matmul_grad_b": {3: (0, 1)},
    "swapaxes": {1: (0,)},
    "tree_flatten": {1: (0,), 2: (0,), 3: (0,), 4: (0,)},
    "tree_whole": {1: (0,), 2: (0,), 3: (0,), 4: (0,)},
    "full": {2: (1,), 3: (1,)},
    "linspace": {2: (0, 1), 3: (0, 1)},
    "add_flat_at": {2: (0, 1), 3: (0, 1), 4: (0, 1)},
    "convolve_grad": {3: (0, 1), 4: (0, 1)},
    "inner_grad_a": {3: (0, 2)},
    "inner_grad_b": {3: (0, 1)},
}


def test_every_primitive_recorded_is_in_the_table():
    assert sorted(set(RECORDED) - set(TABLE)) == []


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_table_declares_the_class_it_had(name):
    assert TABLE[name].tangent == RECORDED[name]
    assert tangents.tangent_class(name) == RECORDED[name]


def test_a_new_primitive_declares_a_known_class():
    assert {name: p.tangent for name, p in TABLE.items() if p.tangent not in TANGENT_CLASSES} == {}


def test_value_slots_are_as_they_were():
    got = {name: {n: tuple(tangents.value_slots(name, n)) for n in slots} for name, slots in SLOTS_TODAY.items()}
    assert got == SLOTS_TODAY
    assert sorted(SLOTS_TODAY) == sorted(TODAY["linear"] + TODAY["bilinear"])


def test_no_tangent_is_the_none_class():
    assert sorted(name for name in TABLE if tangents.no_tangent(name)) == sorted(TODAY["none"])
    assert not tangents.no_tangent("not_a_primitive")


@pytest.mark.parametrize("name", sorted(TODAY[None]))
def test_a_primitive_with_no_class_is_refused(name):
    args = tuple(Var(f"a{i}") for i in range(3))
    with pytest.raises(tangents.NoTangentRule) as refused:
        tangents.tangent(Call(name, args, None), [Var(f"t{i}") for i in range(3)], None, Var("out"))
    assert refused.value.prim == name


def test_an_unknown_primitive_is_refused():
    with pytest.raises(tangents.NoTangentRule):
        tangents.tangent(Call("not_a_primitive", (Var("a"),), None), [Var("t")], None, Var("out"))


def test_the_helper_lists_agree():
    # every helper written into the generated module is a table primitive of kind helper
    assert sorted(name for name in LIBRARY_HELPERS if name not in TABLE or TABLE[name].kind != "helper") == []
    # the gradient carriers (linear in their first argument, or bilinear) are helpers, and
    # every helper has the class it had
    carriers = TODAY["linear_in_first"] + TODAY["bilinear"]
    assert sorted(name for name in carriers if TABLE[name].kind != "helper") == []
    helpers = {name: p.tangent for name, p in TABLE.items() if p.kind == "helper"}
    assert helpers == {name: RECORDED[name] for name in helpers}
    # an explicit class has its written-out rule, and only it
    assert sorted(tangents.EXPLICIT) == sorted(TODAY["explicit"])
    # a backward-pass helper named in a message by its primitive names a primitive
    assert sorted(p for h, p in tangents._HELPER_OF.items() if h not in TABLE or p not in TABLE) == []
