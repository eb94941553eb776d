"""NamedTuple and dataclass parameters for the grammar fuzzer (issue 22, item 3).

A grammar program may take a parameter that is one of the classes below: it declares the
class in its own source (the text here), and its points are instances of the same class
made here (module-level, so that a point pickles to a worker; the program's function reads
them by field, as it would its own). The harness reads them field by field with `fields`
and `is_data`, as gradgen's generated helpers do (gradgen.rules.records): a field annotated
int or str is data, carried into the gradient as it is.
"""

import dataclasses

import numpy as np  # noqa: F401  (the classes' annotations read np.ndarray)

# name -> (the import its declaration needs, its declaration); a class may use those before it
CLASSES = {
    "Affine": ("from typing import NamedTuple", '''class Affine(NamedTuple):
    W: np.ndarray
    c: np.ndarray
'''),
    "Linear": ("from dataclasses import dataclass", '''@dataclass
class Linear:
    W: np.ndarray
    c: np.ndarray
    steps: int
    act: str = "tanh"
'''),
    "Stack": ("from dataclasses import dataclass", '''@dataclass(frozen=True)
class Stack:
    layers: list[Affine]
    scale: float
'''),
    "Pair": ("from collections import namedtuple", '''Pair = namedtuple("Pair", "a b")
'''),
}
NEEDS = {"Stack": ("Affine",)}
for _import, _text in CLASSES.values():
    exec(f"{_import}\n{_text}", globals())  # noqa: S102 - the classes, as the programs declare them
KINDS = ("Affine", "Linear", "Stack", "Pair")
Affine, Linear, Stack, Pair = (globals()[name] for name in KINDS)
NAMES = ("model", "net", "lin", "aff", "cfg")


def fields(value):
    """The field names of a NamedTuple or dataclass, else None."""
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return value._fields
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple(f.name for f in dataclasses.fields(value))
    return None


def is_data(value, name):
    """Whether field `name` is data (annotated int or str here): carried, never differentiated."""
    annotation = getattr(type(value), "__annotations__", {}).get(name)
    return getattr(annotation, "__forward_arg__", annotation) in (int, str, "int", "str")


def leaf_fields(value):
    """The fields of a record that are no data, or None for a value that is no record."""
    names = fields(value)
    return None if names is None else [n for n in names if not is_data(value, n)]


def remade(value, parts):
    """`value` with the fields `parts` ({name: new value}) replaced, of its own class."""
    return value._replace(**parts) if isinstance(value, tuple) else dataclasses.replace(value, **parts)


def declarations(params):
    """(import lines, declaration lines) of the classes the parameters' values are and the
    classes those need, in CLASSES order."""
    used = set()
    for value in params:
        for part in _records_in(value):
            used.add(type(part).__name__)
            used.update(NEEDS.get(type(part).__name__, ()))
    names = [n for n in CLASSES if n in used]
    imports = sorted({CLASSES[n][0] for n in names})
    lines = []
    for n in names:
        lines += ["", *CLASSES[n][1].rstrip("\n").split("\n"), ""]
    return imports, lines


def _records_in(value):
    names = fields(value)
    if names is not None:
        yield value
        for n in names:
            yield from _records_in(getattr(value, n))
    elif isinstance(value, dict):
        for part in value.values():
            yield from _records_in(part)
    elif isinstance(value, (list, tuple)):
        for part in value:
            yield from _records_in(part)


@dataclasses.dataclass(frozen=True)
class RecordShape:
    """A record parameter's structure, drawn once for both points: its class, and its layers,
    steps and activation (the data fields)."""

    kind: str
    layers: int = 1
    steps: int = 1
    act: str = "tanh"

    @staticmethod
    def drawn(kind, choice):
        return RecordShape(kind, choice([1, 2]), choice([1, 2]), choice(["tanh", "sin"]))

    def value(self, leaf):
        """The value at one point, its arrays drawn by leaf(shape) (shape in dimension names)."""
        def affine():
            return Affine(leaf(("d", "d")), leaf(("d",)))
        if self.kind == "Affine":
            return affine()
        if self.kind == "Linear":
            return Linear(leaf(("d", "d")), leaf(("d",)), self.steps, self.act)
        if self.kind == "Stack":
            return Stack([affine() for _ in range(self.layers)], leaf(()))
        return Pair(leaf(("d",)), leaf(()))
