"""Structured parameters that are NamedTuples and dataclasses declared in the file (issue 22,
item 3): `class Params(NamedTuple)`, `namedtuple("Params", "W b")`, `@dataclass` (frozen
too), nested (a dataclass holding a list of dataclasses, a NamedTuple of NamedTuples),
read by field (`p.W`, `p.layers[0].W`), unpacked, indexed, looped over. Each program is
compiled once; its gradient is compared with central differences of the original function
computed here, field by field (independently of `gradgen check`), must be an instance of
the parameter's own class with its data fields (ints, strings) carried as they are, and
`gradgen check` (and, where asked, its check of jvp and hvp) passes at the same point.
Refused forms say what they are, where, exactly."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from differences import central_leaves
from gradgen import CompileError, compile_source, load_module
from gradgen.verify.check import check_source
from gradgen.verify.derivatives import check_kinds

HEADER = """import numpy as np
from collections import namedtuple
from dataclasses import dataclass, field
from typing import NamedTuple

"""


def _fields(value):
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return value._fields
    if dataclasses.is_dataclass(value):
        return [f.name for f in dataclasses.fields(value)]
    return None


def _is_data(value, name):
    annotation = getattr(type(value), "__annotations__", {}).get(name)
    annotation = getattr(annotation, "__forward_arg__", annotation)
    part = getattr(value, name)
    return annotation in (int, str, bool, "int", "str", "bool") or isinstance(part, str) or part is None \
        or isinstance(part, list) and all(isinstance(t, str) for t in part)


def _leaves(value):
    """The arrays and numbers of a structured value, in order (not its data fields)."""
    names = _fields(value)
    if names is not None:
        return [leaf for n in names if not _is_data(value, n) for leaf in _leaves(getattr(value, n))]
    if isinstance(value, dict):
        return [leaf for part in value.values() for leaf in _leaves(part)]
    if isinstance(value, (list, tuple)):
        return [leaf for part in value for leaf in _leaves(part)]
    return [value]


def _replace(value, leaves):
    names = _fields(value)
    if names is not None:
        parts = {n: _replace(getattr(value, n), leaves) for n in names if not _is_data(value, n)}
        return value._replace(**parts) if isinstance(value, tuple) else dataclasses.replace(value, **parts)
    if isinstance(value, dict):
        return {key: _replace(part, leaves) for key, part in value.items()}
    if isinstance(value, (list, tuple)):
        parts = [_replace(part, leaves) for part in value]
        return tuple(parts) if isinstance(value, tuple) else parts
    return leaves.pop(0)


def _assert_same_kind(grad, param):
    """grad is param's own class all the way down, its data fields the very values param has."""
    names = _fields(param)
    if names is not None or isinstance(param, (list, tuple, dict)):
        assert type(grad) is type(param), (type(grad), type(param))
    if names is not None:
        for n in names:
            if _is_data(param, n):
                assert getattr(grad, n) is getattr(param, n), n
            else:
                _assert_same_kind(getattr(grad, n), getattr(param, n))
    elif isinstance(param, dict):
        assert grad.keys() == param.keys()
        for key in param:
            _assert_same_kind(grad[key], param[key])
    elif isinstance(param, (list, tuple)):
        assert len(grad) == len(param)
        for g, p in zip(grad, param):
            _assert_same_kind(g, p)
    else:  # (a number's gradient may be a NumPy float)
        assert np.shape(grad) == np.shape(param) and not isinstance(grad, (list, tuple, dict))


def program(source, future=True):
    """The user's module run here (its classes are the ones the points are made of), with
    `from __future__ import annotations` (its annotations are text then) or without."""
    namespace = {}
    text = ("from __future__ import annotations\n" if future else "") + HEADER + source
    exec(compile(text, "<program>", "exec", dont_inherit=True), namespace)  # noqa: S102 - the test's own program
    return namespace


def assert_gradient(source, kwargs, name="p", function="loss"):
    """Value, class and every element of the gradient of `name`; then `gradgen check`."""
    text = HEADER + source
    compiled = compile_source(text, functions=[function], wrt="all")
    module = load_module(compiled.text, "classes_generated")
    f = program(source)[function]
    value, grads = getattr(module, f"{function}_value_and_grad")(**kwargs)
    [cf] = compiled.functions
    grad = grads[cf.wrt.index(name)] if len(cf.wrt) > 1 else grads
    assert value == pytest.approx(f(**kwargs), rel=1e-12, abs=1e-12)
    _assert_same_kind(grad, kwargs[name])
    for got, want in zip(_leaves(grad), central_leaves(f, kwargs, name, _leaves, _replace)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    [report] = check_source(text, functions=[function], at=kwargs, wrt="all")
    assert report.ok, report
    return grad, compiled.text


RS = np.random.RandomState(22)
X = RS.randn(5, 3)

NAMEDTUPLE_MLP = """
class Layer(NamedTuple):
    W: np.ndarray
    b: np.ndarray


class MLP(NamedTuple):
    hidden: tuple[Layer, ...]
    out: Layer


def loss(p: MLP, x):
    h = x
    for layer in p.hidden:
        h = np.tanh(h @ layer.W + layer.b)
    return np.sum((h @ p.out.W + p.out.b) ** 2)
"""


def _layer(ns, cls, n_in, n_out):
    return ns[cls](RS.randn(n_in, n_out), RS.randn(n_out))


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_a_namedtuple_mlp_of_any_depth_runs_through_one_compiled_module(depth):
    """`for layer in p.hidden`, `p.out.W`: one module for every depth; the gradient is an MLP
    of Layers (a tuple of them where the parameter has one)."""
    ns = program(NAMEDTUPLE_MLP)
    hidden = tuple(_layer(ns, "Layer", 3, 3) for _ in range(depth))
    p = ns["MLP"](hidden, _layer(ns, "Layer", 3, 2))
    grad, text = assert_gradient(NAMEDTUPLE_MLP, {"p": p, "x": X})
    assert isinstance(grad.hidden, tuple) and all(type(layer) is ns["Layer"] for layer in grad.hidden)
    assert "h = np.tanh(h @ p.hidden[i].W + p.hidden[i].b)" in text
    assert "dloss_dp.out.W = dloss_dp.out.W + " in text
    assert "return shaped_like(p, dloss_dp), dloss_dx" in text


LINEAR = """
@dataclass
class Linear:
    W: np.ndarray
    b: np.ndarray
    steps: int
    activation: str = "tanh"


def loss(m: Linear, x):
    h = x
    for _ in range(m.steps):
        h = h @ m.W + m.b
        if m.activation == "tanh":
            h = np.tanh(h)
        else:
            h = np.maximum(h, 0.0)
    return np.sum(h ** 2)
"""


@pytest.mark.parametrize("future", [True, False], ids=["annotations as text", "annotations as classes"])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_a_dataclass_linear_model_with_static_fields(activation, future):
    """`range(m.steps)` and `if m.activation == ...` read data fields (annotated int and str):
    never differentiated (the model stays a parameter, not a count), carried into the
    gradient as they are."""
    ns = program(LINEAR, future)
    m = ns["Linear"](RS.randn(3, 3) / 2, RS.randn(3), 2, activation)
    grad, text = assert_gradient(LINEAR, {"m": m, "x": X}, name="m")
    assert grad.steps == 2 and grad.activation == activation
    assert "    for _ in range(m.steps):\n" in text and "    for _ in reversed(range(m.steps)):\n" in text
    assert "dloss_dm.steps" not in text and "dloss_dm.activation" not in text


FROZEN = """
@dataclass(frozen=True)
class Layer:
    W: np.ndarray
    b: np.ndarray


@dataclass(frozen=True)
class Model:
    layers: list[Layer]
    scale: float
    name: str = "model"


def loss(model: Model, x):
    h = x
    for i in range(len(model.layers)):
        layer = model.layers[i]
        h = np.tanh(h @ layer.W + layer.b)
    return model.scale * np.sum(h ** 2)
"""


def test_a_frozen_dataclass_holding_a_list_of_frozen_dataclasses():
    ns = program(FROZEN)
    model = ns["Model"]([_layer(ns, "Layer", 3, 4), _layer(ns, "Layer", 4, 2)], 0.7)
    grad, _ = assert_gradient(FROZEN, {"model": model, "x": X}, name="model")
    assert isinstance(grad.layers, list) and grad.name == "model"
    assert isinstance(grad.scale, float)


NESTED = """
class Affine(NamedTuple):
    A: np.ndarray
    c: float


class Pair(NamedTuple):
    first: Affine
    second: Affine


def loss(p: Pair, x):
    y = x @ p.first.A + p.first.c
    return np.sum(np.sin(y @ p.second.A) * p.second.c)
"""


def test_a_namedtuple_of_namedtuples():
    ns = program(NESTED)
    p = ns["Pair"](ns["Affine"](RS.randn(3, 3), 0.3), ns["Affine"](RS.randn(3, 2), -1.2))
    assert_gradient(NESTED, {"p": p, "x": X})


FORMS = {
    "unpacked": """
class Params(NamedTuple):
    W: np.ndarray
    b: np.ndarray


def loss(p: Params, x):
    W, b = p
    return np.sum(np.tanh(x @ W + b) ** 2)
""",
    "unpacked, not annotated": """
class Params(NamedTuple):
    W: np.ndarray
    b: np.ndarray


def loss(p, x):
    W, b = p
    return np.sum(np.tanh(x @ W + b) ** 2)
""",
    "indexed": """
class Params(NamedTuple):
    W: np.ndarray
    b: np.ndarray


def loss(p: Params, x):
    return np.sum(np.tanh(x @ p[0] + p[-1]) ** 2)
""",
    "collections.namedtuple, not annotated": """
Params = namedtuple("Params", "W b")


def loss(p, x):
    return np.sum(np.tanh(x @ p.W + p.b) ** 2)
""",
    "typing.NamedTuple called": """
Params = NamedTuple("Params", [("W", np.ndarray), ("b", np.ndarray)])


def loss(p: Params, x):
    return np.sum(np.tanh(x @ p.W + p.b) ** 2)
""",
    "a helper takes the part": """
class Params(NamedTuple):
    W: np.ndarray
    b: np.ndarray


def layer(q: Params, x):
    return np.tanh(x @ q.W + q.b)


def loss(p: Params, x):
    return np.sum(layer(p, x) ** 2)
""",
    "annotated as Optional (which says nothing of the fields)": """
from typing import Optional


class Params(NamedTuple):
    W: np.ndarray
    b: np.ndarray


def loss(p: Optional[Params], x):
    return np.sum(np.tanh(x @ p.W.T.T + p.b) ** 2)
""",
    "a dataclass not annotated": """
@dataclass
class Params:
    W: np.ndarray
    b: np.ndarray


def loss(p, x):
    W = p.W
    return np.sum(np.tanh(x @ W + p.b) ** 2)
""",
}


@pytest.mark.parametrize("form", list(FORMS))
def test_each_form_of_a_two_field_parameter(form):
    ns = program(FORMS[form])
    p = ns["Params"](RS.randn(3, 2), RS.randn(2))
    grad, _ = assert_gradient(FORMS[form], {"p": p, "x": X})
    assert type(grad) is ns["Params"]


LAYERS = """
class Layer(NamedTuple):
    W: np.ndarray
    b: np.ndarray


@dataclass
class Net:
    layers: list[Layer]
    weights: dict[str, float]


def loss(net: Net, x):
    total = 0.0
    for k, (W, b) in enumerate(net.layers):
        x = np.tanh(x @ W + b)
        total = total + (k + 1) * np.sum(x ** 2)
    return total * net.weights["fit"] + net.weights["l2"] * np.sum(net.layers[0].W ** 2)
"""


def test_loops_unpacking_namedtuples_of_a_dataclass_and_its_dict():
    """`for k, (W, b) in enumerate(net.layers)` (each a NamedTuple of two: unpacked without
    a run-time length check, its class says), a dict field read by key."""
    ns = program(LAYERS)
    net = ns["Net"]([_layer(ns, "Layer", 3, 3), _layer(ns, "Layer", 3, 2)], {"fit": 0.5, "l2": 0.1})
    grad, text = assert_gradient(LAYERS, {"net": net, "x": X}, name="net")
    assert "cannot unpack" not in text
    assert set(grad.weights) == {"fit", "l2"}


def test_data_fields_of_an_unannotated_namedtuple_are_decided_by_their_values():
    """A field holding a string (an activation's name) or None is data at run time; one
    holding a number is differentiated, an int too (it is no annotated int)."""
    source = """
Config = namedtuple("Config", "w scale act note")


def loss(c, x):
    y = np.sum(x * c.w) * c.scale
    if c.act == "square":
        y = y ** 2
    return y
"""
    ns = program(source)
    c = ns["Config"](RS.randn(3), 2, "square", None)
    grad, _ = assert_gradient(source, {"c": c, "x": RS.randn(3)}, name="c")
    assert grad.act == "square" and grad.note is None
    assert isinstance(grad.scale, float) and grad.scale != 2


def test_a_field_annotated_float_given_an_int_is_differentiated():
    source = """
class Params(NamedTuple):
    w: np.ndarray
    scale: float


def loss(p: Params, x):
    return np.sum(x * p.w) * p.scale ** 2
"""
    ns = program(source)
    x = RS.randn(3)
    p = ns["Params"](RS.randn(3), 2)
    grad, _ = assert_gradient(source, {"p": p, "x": x})
    assert grad.scale == pytest.approx(2 * 2 * np.sum(x * p.w))


def test_forward_mode_and_hvp_on_a_dataclass_of_layers():
    """jvp along a Model of tangents, and the hvp, as `gradgen check --emit` verifies them
    (against the gradient, finite differences of the function and of the gradient)."""
    ns = program(FROZEN)
    model = ns["Model"]([_layer(ns, "Layer", 3, 4), _layer(ns, "Layer", 4, 2)], 0.7)
    reports = check_kinds(HEADER + FROZEN, "<string>", ["loss"], None, {"model": model, "x": X},
                          ("grad", "jvp", "hvp", "vjp"))
    assert {r.kind for r in reports} == {"jvp", "hvp", "vjp"}
    assert all(r.ok for r in reports), reports
    text = compile_source(HEADER + FROZEN, functions=["loss"], emit_kinds=("jvp",), wrt="all").text
    assert "h @ dmodel.layers[i].W + dmodel.layers[i].b" in text


def test_the_gradient_helpers_appear_only_where_the_file_declares_classes():
    with_classes = compile_source(HEADER + FORMS["unpacked"], wrt="all").text
    assert "import dataclasses\n" in with_classes and "class Fields:" in with_classes
    assert "x._replace(**parts)" in with_classes and "dataclasses.replace(x, **parts)" in with_classes
    plain = compile_source("import numpy as np\n\ndef loss(p: list, x):\n    W, b = p\n    return np.sum(x @ W + b)\n", wrt="all")
    assert "dataclasses" not in plain.text and "Fields" not in plain.text


DECLARED = """
@dataclass
class Base:
    W: np.ndarray


@dataclass
class Derived(Base):
    b: float


@dataclass
class Post:
    W: np.ndarray

    def __post_init__(self):
        self.W = self.W * 2


class Attr(NamedTuple):
    W: np.ndarray
    scale = 2.0


class Plain:
    W: np.ndarray


@dataclass
class Lin:
    W: np.ndarray
    b: float

    def predict(self, x):
        return x @ self.W + self.b

    @property
    def size(self):
        return self.W.size


class P(NamedTuple):
    W: np.ndarray
    b: float

"""

REFUSED = [
    ("def f(p: Derived, x):\n    return np.sum(x @ p.W)\n",
     "<string>:13:15: class 'Derived' inherits from 'Base': gradgen reads a NamedTuple or dataclass declared on its "
     "own; declare every field in 'Derived'"),
    ("def f(p: Post, x):\n    return np.sum(x @ p.W)\n",
     "<string>:21:5: the special method '__post_init__' of class 'Post' would run where gradgen reads a Post or "
     "builds its gradient (a Post too): gradgen reads NamedTuples and dataclasses without special methods"),
    ("def f(p: Attr, x):\n    return np.sum(x @ p.W)\n",
     "<string>:27:5: 'scale' of class 'Attr' is a class attribute, not a field: annotate it (`scale: float = ...`) "
     "or make it a module constant"),
    ("def f(p: Plain, x):\n    return np.sum(x @ p.W)\n",
     "<string>:51:10: class 'Plain' is neither a NamedTuple nor a dataclass: gradgen reads the fields of a "
     "parameter declared as one (`@dataclass class Plain:` or `class Plain(NamedTuple):`)"),
    ("def f(p: Lin, x):\n    return np.sum(p.predict(x))\n",
     "<string>:52:19: 'p.predict(x)' calls the method 'predict' of class 'Lin' (line 39): gradgen reads a "
     "dataclass's fields only; write it as a function of this file that takes the Lin (def predict(lin, ...)) and "
     "call that"),
    ("def f(p: Lin, x):\n    return np.sum(x @ p.W) * p.size\n",
     "<string>:52:30: 'p.size' reads the property 'size' of class 'Lin' (line 43): gradgen reads a dataclass's "
     "fields only; compute the value from its fields in the loss"),
    ("def f(p: Lin, x):\n    W, b = p\n    return np.sum(x @ W + b)\n",
     "<string>:52:5: 'W, b = p' unpacks the dataclass 'Lin' by position, which Python cannot: read its fields by "
     "name (p.W, p.b)"),
    ("def f(p: Lin, x):\n    return np.sum(x @ p[0])\n",
     "<string>:52:23: 'p[0]' reads the dataclass 'Lin' by position, which Python cannot: read its fields by name "
     "(p.W, p.b)"),
    ("def f(p: P, x):\n    W, b, c = p\n    return np.sum(x @ W + b)\n",
     "<string>:52:5: 'W, b, c = p' unpacks 3 names from a P, which has 2 fields (W, b)"),
    ("def f(p: P, x):\n    return np.sum(x @ p.V)\n",
     "<string>:52:23: 'p.V': class 'P' has no field 'V' (its fields: W, b)"),
    ("def f(p: P, x):\n    return np.sum(p)\n",
     "<string>:52:19: 'p' is a P (a NamedTuple): use its fields (p.W, p.b)"),
    ("def f(p: Lin, x):\n    p.W = p.W * 2\n    return np.sum(x @ p.W)\n",
     "<string>:52:5: 'p.W' is assigned: that would change the caller's parameter; give the new value a name of "
     "its own (W = ...) and read that"),
    ("def f(p, x):\n    return np.sum(x @ p.Q)\n",
     "<string>:52:23: 'p.Q' reads 'Q', a field of no NamedTuple or dataclass this file declares: gradgen reads "
     "the fields of the classes declared in the file (declare the class here)"),
    ("def f(p, x):\n    return np.sum(x @ p.b)\n",
     "<string>:13:15: class 'Derived' inherits from 'Base': gradgen reads a NamedTuple or dataclass declared on its "
     "own; declare every field in 'Derived' ('p', not annotated, may be a Derived: annotate it with its class)"),
]


@pytest.mark.parametrize("source, message", REFUSED, ids=[m.split(": ", 1)[1][:40] for _, m in REFUSED])
def test_refused_forms_say_what_and_where(source, message):
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + DECLARED + source, functions=["f"], wrt="all")
    assert info.value.format().splitlines()[0] == message


def test_check_needs_the_value_of_a_class_parameter():
    with pytest.raises(CompileError) as info:
        check_source(HEADER + FORMS["unpacked"], functions=["loss"], wrt="all")
    assert info.value.format() == ("<string>: 'p' of 'loss' is a Params (a NamedTuple or dataclass): give its "
                                   "value with --inputs FILE:FUNC (a function returning the keyword arguments)")


def test_a_hessian_of_a_class_parameter_is_refused_as_for_a_list():
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + FORMS["unpacked"], emit_kinds=("hessian",), wrt="all")
    assert "a Hessian for a NamedTuple or dataclass parameter is not written yet" in info.value.format()


@pytest.mark.parametrize("future", [True, False], ids=["annotations as text", "annotations as classes"])
def test_a_parameter_not_annotated_is_read_as_the_class_it_holds(future):
    """`p.n` is data in A (annotated int) and a number in Other: without an annotation the
    compiled code differentiates it, and the gradient is A's or Other's as the value is
    (A's n carried as it is; Other's n, 2.5, differentiated). A field holding a list of
    strings is data too."""
    source = """
class A(NamedTuple):
    w: np.ndarray
    n: int
    tags: list


Other = namedtuple("Other", "w n tags")


def loss(p, x):
    return np.sum(x * p.w) * p.n
"""
    ns = program(source, future)
    x = RS.randn(3)
    for p in (ns["A"](RS.randn(3), 3, ["a", "b"]), ns["Other"](RS.randn(3), 2.5, ["c"])):
        grad, _ = assert_gradient(source, {"p": p, "x": x})
        assert grad.tags is p.tags
        if isinstance(p, ns["A"]):
            assert grad.n == 3
        else:
            assert grad.n == pytest.approx(np.sum(x * p.w))


UNANNOTATED_LOOPS = """
class Layer(NamedTuple):
    W: np.ndarray
    b: np.ndarray


@dataclass
class Net:
    layers: list


def unpacked(p, x):
    for W, b in p.layers:
        x = np.tanh(x @ W + b)
    return np.sum(x ** 2)


def enumerated(p, x):
    for k, layer in enumerate(p.layers):
        x = np.tanh(x @ layer.W + layer.b) * (k + 1)
    return np.sum(x ** 2)


def first(p, x):
    W, b = p.layers[0]
    return np.sum(np.tanh(x @ W + b) ** 2)


def plain(p, x):
    for layer in p.layers:
        x = np.tanh(x @ layer.W + layer.b)
    return np.sum(x ** 2)
"""


@pytest.mark.parametrize("function", ["unpacked", "enumerated", "first", "plain"])
def test_loops_over_a_field_of_a_parameter_not_annotated(function):
    """`for W, b in p.layers` with `p` not annotated: the first lowering takes p for an array,
    and the loop's target, unpacking, says it holds parts."""
    ns = program(UNANNOTATED_LOOPS)
    net = ns["Net"]([_layer(ns, "Layer", 3, 3), _layer(ns, "Layer", 3, 2)])
    grad, _ = assert_gradient(UNANNOTATED_LOOPS, {"p": net, "x": X}, function=function)
    assert all(type(layer) is ns["Layer"] for layer in grad.layers)


REDUCED_NUMBER = '''import numpy as np
from collections import namedtuple

Pair = namedtuple("Pair", "a b")


def over_record(lin: Pair, offset=0.0):
    for item in lin:
        offset = np.sum(item, axis=-1)
    return np.sum(offset * 2.0)


def over_list(parts: list):
    total = 0.0
    for item in parts:
        total = total + np.sum(np.sum(item, axis=-1) * 3.0)
    return total
'''


def test_a_number_reduced_along_an_axis_keeps_a_numbers_gradient():
    """NumPy reduces a number along axis 0 or -1 (np.sum(-0.7, axis=-1) is -0.7); the
    gradient came back with that axis, shape (1,), for a number of a NamedTuple or a list
    (fuzz soak seed 2017 #3633)."""
    module = load_module(compile_source(REDUCED_NUMBER, "reduced.py", wrt="all").text)
    namespace = {}
    exec(REDUCED_NUMBER, namespace)  # noqa: S102 - our own source
    lin = namespace["Pair"](a=np.array([0.3, -0.4]), b=-0.7)
    grad, _ = module.over_record_grad(lin)
    assert np.shape(grad.b) == () and float(grad.b) == 2.0
    np.testing.assert_array_equal(grad.a, [0.0, 0.0])
    parts = module.over_list_grad([np.array([0.3, -0.4]), -0.7])
    assert np.shape(parts[1]) == () and float(parts[1]) == 3.0
    np.testing.assert_array_equal(parts[0], [3.0, 3.0])
