"""Parameters that are NamedTuples or dataclasses declared in the file: `class Params(NamedTuple)`,
`Params = namedtuple("Params", "W b")`, `@dataclass class Layer` (frozen too), nested at will
(a dataclass holding a list of dataclasses, a NamedTuple of NamedTuples).

Such a parameter is a structured parameter (gradgen.frontend.structured) whose path may
read a field by name: `p.layers[0].W` is the path `.layers`, `[0]`, `.W` of `p` (a Field
step), read as written, and its gradient is added at the same path of the parameter's
gradient (gradgen.rules.records: the gradient is an instance of the parameter's own class).
A field annotated `int`, `bool` or `str` is data: read as it is, never differentiated, and
carried into the gradient unchanged (the generated helpers apply the same rule at run time,
and carry a field holding no number or array, a string or a function, too).

What the class says is read from its definition, never run: its fields and their
annotations, which tell the class of each part (`layers: list[Layer]`). A parameter
annotated with one of these classes is structured from the start; one read by field
without an annotation (`def loss(p, x): p.W`) becomes structured at its first field read,
and the generated helpers read its classes at run time (which fields are data too). A class
gradgen cannot read so (another base class, a special method such as `__post_init__`, a
class attribute) is refused where it is used; a method or a property only where the loss
reads it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import numpy as np

from gradgen.frontend.constants import constant_value
from gradgen.frontend.parse import NAMEDTUPLE_MAKERS
from gradgen.frontend.structured import SliceStep, TreeRef
from gradgen.ir.nodes import Const, Field

DATA_TYPES = ("int", "bool", "str")  # a field annotated so is data: carried as it is, not differentiated
_SEQUENCES = {"list", "List", "Sequence", "MutableSequence", "Iterable", "Collection"}
_TUPLES = {"tuple", "Tuple"}
_MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping"}
_PROPERTIES = {"property", "cached_property", "functools.cached_property"}
_CLASS_VARIABLES = {"ClassVar", "InitVar"}


@dataclass
class Record:
    """What gradgen reads of a NamedTuple or dataclass declared in the file."""

    name: str
    kind: str  # "NamedTuple" or "dataclass"
    node: object  # its ast.ClassDef, or the ast.Assign of namedtuple(...)
    fields: tuple = ()  # the field names, in order
    annotations: dict = field(default_factory=dict)  # field -> its annotation (None: none written)
    members: dict = field(default_factory=dict)  # method or property name -> (its def, "method" or "property")
    problem: tuple | None = None  # (node, message): why gradgen cannot read it, said where it is used

    def data(self, name):
        """Whether field `name` is annotated as data (`n: int`, `activation: str`)."""
        return annotation_name(self.annotations.get(name)) in DATA_TYPES

    def at(self, index):
        """The field at position `index` of a NamedTuple (`p[0]`, `p[-1]`), or None."""
        if self.kind == "NamedTuple" and -len(self.fields) <= index < len(self.fields):
            return self.fields[index]
        return None

    def check(self, module, maybe=None):
        """Raise the reason gradgen cannot read this class, at its place, if there is one;
        `maybe`: the parameter, not annotated, that may be one (its field read says so)."""
        if self.problem is not None:
            node, message = self.problem
            if maybe is not None:
                message += f" ('{maybe}', not annotated, may be a {self.name}: annotate it with its class)"
            raise module.error(node, message)


def annotation_name(node):
    """`int` for `int`, `builtins.int` or the string "int"; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def records(module):
    """Every NamedTuple and dataclass the file declares, by name (read once, kept on the module)."""
    for name in module.classes:
        if name not in module.records:
            module.records[name] = _read(module, name)
    return {name: r for name, r in module.records.items() if r is not None}


def declarable(module, name):
    """Why the class `name` cannot be declared again in the generated module (a default is an
    instance of it: gradgen.codegen.record_defaults), or None: a NamedTuple or dataclass of
    annotated fields whose defaults, if any, are constants, without methods."""
    record = records(module).get(name)
    if record is None:
        return f"'{name}' is no NamedTuple or dataclass"
    if record.problem is not None:
        return record.problem[1]
    if record.members:
        member = next(iter(record.members))
        return f"class '{name}' has the {record.members[member][1]} '{member}', which gradgen does not copy"
    for field_name, value in field_defaults(module, record).items():
        if value is None:
            return f"the default of the field '{field_name}' of class '{name}' is not a constant"
    return None


def field_defaults(module, record):
    """{field: its default's value (None: not a constant)} of the fields that have one."""
    node, out = record.node, {}
    if isinstance(node, ast.Assign):  # namedtuple("P", "a b", defaults=(1.0,))
        given = next((k.value for k in node.value.keywords if k.arg == "defaults"), None)
        if given is not None:
            try:
                values = constant_value(given, module)
            except ValueError:
                values = None
            if not isinstance(values, tuple) or len(values) > len(record.fields):
                return {record.fields[-1]: None}
            out = dict(zip(record.fields[len(record.fields) - len(values):], values))
        return out
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            try:
                out[stmt.target.id] = constant_value(stmt.value, module)
            except ValueError:
                out[stmt.target.id] = None
    return out


def named_by(module, annotation):
    """The Record an annotation names (`p: Params`, `"Params"`), or None."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        name = annotation.value
    elif isinstance(annotation, ast.Name):
        name = annotation.id
    else:
        return None
    return records(module).get(name)


def refuse_plain_class(module, annotation):
    """A parameter annotated with a class of the file that is no NamedTuple or dataclass."""
    name = annotation_name(annotation) if isinstance(annotation, (ast.Name, ast.Constant)) else None
    if name in module.classes and named_by(module, annotation) is None:
        raise module.error(annotation, f"class '{name}' is neither a NamedTuple nor a dataclass: gradgen reads the "
                                       f"fields of a parameter declared as one (`@dataclass class {name}:` or "
                                       f"`class {name}(NamedTuple):`)")


def part_annotation(module, annotation, step):
    """The annotation of the part at `step` (a Field, an index, a key, a SliceStep) of a value
    annotated `annotation`, where the annotation says; else None."""
    if annotation is None:
        return None
    record = named_by(module, annotation)
    if record is not None:
        value = step.value if isinstance(step, Const) else None
        if isinstance(value, Field):
            return record.annotations.get(str(value))
        if type(value) is int and record.at(value) is not None:
            return record.annotations[record.at(value)]
        return None
    if not isinstance(annotation, ast.Subscript):
        return None
    if isinstance(step, SliceStep):
        return annotation
    head = annotation_name(annotation.value)
    args = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
    if head in _SEQUENCES:
        return args[0]
    if head in _TUPLES:
        if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is Ellipsis:
            return args[0]
        index = step.value if isinstance(step, Const) and type(step.value) is int else None
        return args[index] if index is not None and -len(args) <= index < len(args) else None
    if head in _MAPPINGS and len(args) == 2:
        return args[1]
    return None


# ---- reading a class's definition ----------------------------------------------------------

def _read(module, name):
    node = module.classes[name]
    if isinstance(node, ast.Assign):
        return _read_namedtuple_call(module, name, node)
    kind = _kind(module, node)
    if kind is None:
        return None
    record = Record(name, kind, node)
    record.problem = _declaration_problem(module, node, kind)
    fields = []
    for stmt in node.body:
        problem = _read_statement(module, record, stmt, fields)
        if problem is not None and record.problem is None:
            record.problem = problem
    record.fields = tuple(fields)
    return record


def _kind(module, node):
    """"NamedTuple", "dataclass", or None for a class that is neither."""
    if any(module.qualified(base) in NAMEDTUPLE_MAKERS for base in node.bases):
        return "NamedTuple"
    if any(_is_dataclass_decorator(module, d) for d in node.decorator_list):
        return "dataclass"
    return None


def _is_dataclass_decorator(module, node):
    return module.qualified(node.func if isinstance(node, ast.Call) else node) == "dataclasses.dataclass"


def _declaration_problem(module, node, kind):
    """Another base class, another decorator, a metaclass, `@dataclass(init=False)`."""
    name = node.name
    for base in node.bases:
        if module.qualified(base) not in NAMEDTUPLE_MAKERS:
            return base, (f"class '{name}' inherits from '{ast.unparse(base)}': gradgen reads a NamedTuple or "
                          f"dataclass declared on its own; declare every field in '{name}'")
    for decorator in node.decorator_list:
        if not _is_dataclass_decorator(module, decorator):
            return decorator, (f"the decorator '@{ast.unparse(decorator)}' on class '{name}' is not supported: "
                               "gradgen reads classes declared with @dataclass (frozen or not) or as a NamedTuple")
        init = next((k for k in getattr(decorator, "keywords", ()) if k.arg == "init"), None)
        if init is not None and not (isinstance(init.value, ast.Constant) and init.value.value is True):
            return decorator, (f"@dataclass(init=...) on class '{name}': gradgen builds the gradient, a {name}, "
                               "with the fields as its arguments; drop init=")
    if node.keywords:
        return node.keywords[0], f"class '{name}' is declared with '{ast.unparse(node.keywords[0])}': not supported"
    return None


def _read_statement(module, record, stmt, fields):
    """One statement of a class body: a field, a method or property (kept by name), or a
    problem (node, message)."""
    name = record.name
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) or isinstance(stmt, ast.Pass):
        return None  # a docstring, `...`, `pass`
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        field_name = stmt.target.id
        annotation = stmt.annotation.value if isinstance(stmt.annotation, ast.Subscript) else stmt.annotation
        if annotation_name(annotation) in _CLASS_VARIABLES:
            return stmt, (f"'{field_name}' of class '{name}' is a {annotation_name(annotation)}, not a field: make "
                          "it a module constant")
        if _not_an_argument(module, stmt.value):
            return stmt, (f"the field '{field_name}' of class '{name}' is no argument of {name}(...) (init=False): "
                          f"gradgen builds the gradient, a {name}, with the fields as its arguments; drop init=False")
        fields.append(field_name)
        record.annotations[field_name] = stmt.annotation
        return None
    if isinstance(stmt, ast.FunctionDef):
        if stmt.name.startswith("__") and stmt.name.endswith("__"):
            return stmt, (f"the special method '{stmt.name}' of class '{name}' would run where gradgen reads a "
                          f"{name} or builds its gradient (a {name} too): gradgen reads NamedTuples and dataclasses "
                          "without special methods")
        decorators = {module.qualified(d) or ast.unparse(d) for d in stmt.decorator_list}
        setter = any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in stmt.decorator_list)
        what = "property" if decorators & _PROPERTIES or setter else "method"
        record.members.setdefault(stmt.name, (stmt, what))
        return None
    if isinstance(stmt, ast.Assign):
        target = ast.unparse(stmt.targets[0])
        return stmt, (f"'{target}' of class '{name}' is a class attribute, not a field: annotate it "
                      f"(`{target}: float = ...`) or make it a module constant")
    return stmt, (f"'{module.segment(stmt)}' in class '{name}': gradgen reads a NamedTuple or dataclass body of "
                  "annotated fields (and methods, which it does not call)")


def _not_an_argument(module, value):
    """`field(init=False)` (dataclasses.field)."""
    return isinstance(value, ast.Call) and module.qualified(value.func) == "dataclasses.field" and any(
        k.arg == "init" and not (isinstance(k.value, ast.Constant) and k.value.value is True) for k in value.keywords)


def _read_namedtuple_call(module, name, stmt):
    """`namedtuple("Params", "W b")`, `namedtuple("Params", ["W", "b"])`,
    `NamedTuple("Params", [("W", np.ndarray), ("b", float)])`."""
    call = stmt.value
    record = Record(name, "NamedTuple", stmt)
    typed = module.qualified(call.func) != "collections.namedtuple"
    spec = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg in ("field_names",
                                                                                                   "fields")), None)
    names, annotations = _namedtuple_fields(spec, typed)
    if names is None:
        record.problem = (call, f"gradgen reads the fields of '{name}' written out in its call: "
                                + ("[('W', np.ndarray), ...]" if typed else "namedtuple('Params', 'W b')"))
    elif any(k.arg == "rename" for k in call.keywords):
        record.problem = (call, f"namedtuple(..., rename=...) for '{name}': gradgen reads the field names as written")
    record.fields, record.annotations = tuple(names or ()), annotations
    return record


def _namedtuple_fields(spec, typed):
    """(names, {name: annotation}) of namedtuple's second argument, or (None, {})."""
    if typed:
        items = spec.elts if isinstance(spec, (ast.List, ast.Tuple)) else None
        pairs = items is not None and all(isinstance(i, ast.Tuple) and len(i.elts) == 2 for i in items)
        if not pairs or not all(isinstance(i.elts[0], ast.Constant) and type(i.elts[0].value) is str for i in items):
            return None, {}
        return [i.elts[0].value for i in items], {i.elts[0].value: i.elts[1] for i in items}
    if isinstance(spec, ast.Constant) and isinstance(spec.value, str):
        names = spec.value.replace(",", " ").split()
    elif isinstance(spec, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                                         for e in spec.elts):
        names = [e.value for e in spec.elts]
    else:
        return None, {}
    return names, {n: None for n in names}


# ---- reading fields while lowering ----------------------------------------------------------

_ARRAY_ATTRIBUTES = {"T", "shape", "ndim", "size"}  # of an array part: not fields (gradgen.frontend.lower_exprs)
# annotations that say a part is no NamedTuple or dataclass (`Optional[Params]`, `Any` say nothing)
_NOT_RECORDS = {"ndarray", "NDArray", "ArrayLike", "float", "int", "complex", "bool", "str", "Float", "Int", "Num",
                "Real", "Shaped", "Array", *_SEQUENCES, *_TUPLES, *_MAPPINGS}


def _no_record(annotation):
    """Whether an annotation says its value is an array, a number or a container."""
    head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return annotation_name(head) in _NOT_RECORDS


class RecordLowering:
    """Field reads of NamedTuple and dataclass parameters: a mixin of
    gradgen.frontend.lower.Lowerer, which gradgen.frontend.structured's `_ref` asks for a path
    through an attribute, and lower_exprs' `_attribute` for a field read as a value."""

    def _names_a_record(self, annotation):
        """Whether a parameter's annotation names a NamedTuple or dataclass of the file (one
        gradgen cannot read, or a class that is neither, is refused here)."""
        refuse_plain_class(self.m, annotation)
        record = named_by(self.m, annotation)
        if record is not None:
            record.check(self.m)
        return record is not None

    def _record_name(self, param):
        """The name of the NamedTuple or dataclass a parameter is annotated with, or None."""
        record = named_by(self.m, self.param_annotations.get(param))
        return record.name if record is not None else None

    def _record_named(self, ref):
        """The NamedTuple or dataclass `ref`'s part is, where annotations say; else None."""
        return named_by(self.m, self._annotation_of(ref))

    def _names_a_field(self, node):
        """Whether `node` may read a field (`p.layers`): an attribute no array has, in a file
        that declares NamedTuples or dataclasses."""
        return isinstance(node, ast.Attribute) and bool(records(self.m)) and node.attr not in _ARRAY_ATTRIBUTES \
            and not hasattr(np.ndarray, node.attr)

    def _field_read(self, scope, node):
        """`p.W`, `p.layers[0].W` as a value: the part read; None where `node` reads no field
        of a parameter (a parameter lowered as an array, read so, becomes structured)."""
        ref = self._ref(scope, node)
        if ref is not None:
            return self._leaf(ref, node)
        if self._names_a_field(node):
            self._needs_structure(scope, node.value)  # (then refused where no class has the field)
        return None

    def _field_ref(self, scope, node):
        """The TreeRef of `base.name` where `base` is a part of a structured parameter, else
        None; a name that is no field of the part's class is refused here."""
        base = self._ref(scope, node.value)
        if base is None:
            return None
        annotation = self._annotation_of(base)
        record = named_by(self.m, annotation)
        name = node.attr
        if record is None and _no_record(annotation):
            return None  # a part annotated as an array or a list: `.T`, `.shape` are NumPy's
        if record is not None:
            record.check(self.m)
            if name not in record.fields:
                raise self._not_a_field(node, [record])
        else:
            known = records(self.m).values()
            candidates = [r for r in known if name in r.fields or name in r.members]
            if not candidates:
                if name in _ARRAY_ATTRIBUTES or not known:
                    return None
                raise self._not_a_field(node, [])
            for r in candidates:
                r.check(self.m, maybe=base.root.name)
            if not any(name in r.fields for r in candidates):
                raise self._not_a_field(node, candidates)
        return base.child(Const(Field(name)))

    def _refuse_field_write(self, scope, target):
        """`p.W = e`: a field of a parameter assigned, which would change the caller's value."""
        if isinstance(target, ast.Attribute) and self._ref(scope, target.value) is not None:
            raise self.m.error(target, f"'{self.m.segment(target)}' is assigned: that would change the caller's "
                                       f"parameter; give the new value a name of its own ({target.attr} = ...) "
                                       "and read that")

    def _by_position(self, ref, node, what="reads", names=None, at_least=False, text=None):
        """`p[0]`, `W, b = p`, `for x in p`, `len(p)` of a dataclass: refused, as Python raises
        there. For a NamedTuple unpacked into `names` names: whether its class says how many
        fields it has (then a wrong count is refused here, and no check is written)."""
        record = named_by(self.m, self._annotation_of(ref))
        if record is None:
            return False
        if record.kind == "dataclass":
            whole = ref.text() if ref.spelled() else record.name.lower()
            fields = ", ".join(f"{whole}.{f}" for f in record.fields[:2])
            raise self.m.error(node, f"'{text or self.m.segment(node)}' {what} the dataclass '{record.name}' by "
                                     f"position, which Python cannot: read its fields by name ({fields})")
        if names is None:
            return False
        count = len(record.fields)
        if count < names or (count > names and not at_least):
            raise self.m.error(node, f"'{self.m.segment(node)}' unpacks {names} names from a {record.name}, which "
                                     f"has {count} fields ({', '.join(record.fields)})")
        return True

    def _refuse_method_call(self, scope, node):
        """`p.predict(x)`: a method of a parameter's class (or a field holding a function)
        called; gradgen reads fields only."""
        func = node.func
        base = self._ref(scope, func.value)
        if base is None:
            if self._names_a_field(func) and any(func.attr in r.members or func.attr in r.fields
                                                 for r in records(self.m).values()):
                self._needs_structure(scope, func.value)  # a parameter lowered as an array: structured
            return
        annotation = self._annotation_of(base)
        record = named_by(self.m, annotation)
        if record is None and (_no_record(annotation) or hasattr(np.ndarray, func.attr)):
            return  # `p.W.sum()`: an array's method
        candidates = [record] if record is not None else list(records(self.m).values())
        member = next(((r, r.members[func.attr]) for r in candidates if func.attr in r.members), None)
        text = self.m.segment(node)
        if member is not None:
            r, (fnode, what) = member
            raise self.m.error(node, f"'{text}' calls the {what} '{func.attr}' of class '{r.name}' (line "
                                     f"{fnode.lineno}): gradgen reads a {r.kind}'s fields only; write it as a function "
                                     f"of this file that takes the {r.name} (def {func.attr}({r.name.lower()}, ...)) "
                                     "and call that")
        if any(func.attr in r.fields for r in candidates):
            raise self.m.error(node, f"'{text}' calls the field '{func.attr}' of a parameter: gradgen calls the "
                                     "functions of this file and known library functions; pass the function as a "
                                     "parameter with a default instead")

    def _not_a_field(self, node, candidates):
        """The error for `p.name` where no class it may be has a field `name`."""
        text, name = self.m.segment(node), node.attr
        member = next(((r, r.members[name]) for r in candidates if name in r.members), None)
        if member is not None:
            (r, (fnode, what)) = member
            advice = ("compute the value from its fields in the loss" if what == "property" else "write it as a "
                      f"function of this file that takes the {r.name} (def {name}({r.name.lower()}, ...))")
            return self.m.error(node, f"'{text}' reads the {what} '{name}' of class '{r.name}' (line {fnode.lineno}): "
                                      f"gradgen reads a {r.kind}'s fields only; {advice}")
        if len(candidates) == 1:
            r = candidates[0]
            return self.m.error(node, f"'{text}': class '{r.name}' has no field '{name}' (its fields: "
                                      f"{', '.join(r.fields) or 'none'})")
        return self.m.error(node, f"'{text}' reads '{name}', a field of no NamedTuple or dataclass this file declares: "
                                  "gradgen reads the fields of the classes declared in the file (declare the class "
                                  "here)")

    def _annotation_of(self, ref):
        """The annotation of the part `ref` names: from its parameter's annotation, through the
        fields' annotations; None where they do not say (a parameter not annotated is read
        as whatever it holds when the code runs: its class is never guessed from a field's
        name, which another class may have too)."""
        annotation = self.param_annotations.get(ref.root.name)
        for step in ref.path:
            annotation = part_annotation(self.m, annotation, step)
        return annotation

    def _data_field(self, ref):
        """Whether `ref` names a field its class annotates as data (`n: int`): read, never
        differentiated, carried into the gradient as it is."""
        step = ref.path[-1].value if ref.path and isinstance(ref.path[-1], Const) else None
        if not isinstance(step, (Field, int)) or isinstance(step, bool):
            return False
        record = named_by(self.m, self._annotation_of(TreeRef(ref.root, ref.path[:-1])))
        if record is None:
            return False
        name = str(step) if isinstance(step, Field) else record.at(step)
        return name is not None and record.data(name)
