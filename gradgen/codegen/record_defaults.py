"""A default that is a record of constants, declared again in the generated module.

`def ik_objective(q, target, arm=DEFAULT_ARM)` with `DEFAULT_ARM = Arm(lengths=np.array([...]),
lower=np.deg2rad([...]))` at module level and `Arm` a NamedTuple or dataclass of the file: the
generated function keeps the default as written (`arm=DEFAULT_ARM`), so the module declares
the class and the instance again, before the functions, as the user's file does. The class is
written from what gradgen read of it (its fields, their defaults, a dataclass's options), never
copied as text: an annotation the generated module cannot resolve becomes `object` (only `int`,
`bool` and `str` mean something to the generated helpers: such a field is data). The instance
is written from the values folded when the file was read (gradgen.frontend.parse.RecordConstant),
each argument as the module constants are (`np.array([...])`).
"""

from __future__ import annotations

import ast
import collections
import dataclasses

from gradgen.frontend.records import field_defaults, records
from gradgen.ir.nodes import Spelled
from gradgen.ir.simplify import names_read

_KEPT_ANNOTATIONS = {"int", "float", "bool", "str", "complex"}


def used(results, module):
    """The record constants the compiled functions' defaults name or their bodies read
    (`if arm is None: arm = DEFAULT_ARM`), in file order."""
    named = {p.default.text for f in results for p in f.ir.params
             if isinstance(p.default, Spelled) and p.default.text in module.record_constants}
    named |= {name for f in results for name in names_read(f.ir.body)
              if name in module.record_constants and name not in module.runtime}  # (those: passed on every call)
    return [name for name in module.record_constants if name in named]


def instance(module, name):
    """The value of the record constant `name`, made without running the user's file (for the
    sympy trace, gradgen.verify.trace): an instance of a class with the record's fields, its
    arguments and the class's defaults as folded."""
    made = module.record_constants[name]
    record = records(module)[made.cls]
    values = {**field_defaults(module, record), **dict(zip(record.fields, made.args)), **dict(made.keywords)}
    if record.kind == "NamedTuple":
        cls = collections.namedtuple(made.cls, record.fields)
    else:
        cls = dataclasses.make_dataclass(made.cls, record.fields, frozen=True)
    return cls(**{f: values[f] for f in record.fields if f in values})


def declarations(module, names, literal):
    """(the source declaring each class and constant of `names`, the modules it imports);
    `literal(value)` spells a folded value as the generated module writes constants."""
    texts, imports, declared = [], set(), set()
    for name in names:
        made = module.record_constants[name]
        if made.cls not in declared:
            declared.add(made.cls)
            text, needs = _class_text(module, records(module)[made.cls], literal)
            texts.append(text)
            imports.add(needs)
        args = [literal(v) for v in made.args] + [f"{k}={literal(v)}" for k, v in made.keywords]
        texts.append(f"{name} = {made.cls}({', '.join(args)})")
    return texts, imports


def _class_text(module, record, literal):
    defaults = field_defaults(module, record)
    node = record.node
    if isinstance(node, ast.Assign) and module.qualified(node.value.func) == "collections.namedtuple":
        given = f", defaults=({''.join(literal(defaults[f]) + ', ' for f in record.fields if f in defaults)})" \
            if defaults else ""
        return f"{record.name} = collections.namedtuple({record.name!r}, {list(record.fields)!r}{given})", \
            "collections"
    lines = [f"    {f}: {_annotation(module, record.annotations.get(f))}"
             + (f" = {literal(defaults[f])}" if f in defaults else "") for f in record.fields] or ["    pass"]
    if record.kind == "NamedTuple":
        return "\n".join([f"class {record.name}(typing.NamedTuple):", *lines]), "typing"
    options = [f"{k.arg}={ast.unparse(k.value)}" for d in node.decorator_list if isinstance(d, ast.Call)
               for k in d.keywords]
    decorator = f"@dataclasses.dataclass({', '.join(options)})" if options else "@dataclasses.dataclass"
    return "\n".join([decorator, f"class {record.name}:", *lines]), "dataclasses"


def _annotation(module, node):
    """The annotation as the generated module can spell it: a builtin type, a NumPy name, or
    `object` (the user's own aliases and libraries are not imported there)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if node.value in _KEPT_ANNOTATIONS else "object"
    if isinstance(node, ast.Name) and node.id in _KEPT_ANNOTATIONS and node.id not in module.imports:
        return node.id
    qualified = module.qualified(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    if qualified is not None and qualified.startswith("numpy.") and qualified.count(".") == 1:
        return "np." + qualified[len("numpy."):]
    return "object"
