"""The user's own files a compiled file imports (`from model import predict`, `import model
as m`): read with the same reader as the file itself, never run, so that their functions
inline as same-file helpers do and their constants fold.

A module resolves to a file beside the compiled one (`model.py`, or `pkg/model.py` and
`pkg/model/__init__.py` for `pkg.model`), never to an installed library: the standard
library and the array libraries are not looked for. A relative import (`from .model import
predict`, `from . import model`, `from ..common import act`) resolves as Python resolves it
when the file runs as part of its package: the package is the chain of folders with an
`__init__.py` above the file, and its dotted name is found from the folder above the top
one. Each file is read once per compile (a cycle of imports reads each file once); every
file read is recorded, in order, with the sha256 of its text, for the generated module's
header (gradgen.codegen.freshness). `home` says which file a function is defined in, so
that a function of another file, called or passed as a value, reads its names there.
"""

from __future__ import annotations

import ast
import os
import sys

from gradgen.frontend import parse
from gradgen.frontend.source import read_source

MAX_FILES = 100  # files read for one compile, imports of imports included
# never looked for beside the file: what Python finds elsewhere first
_NOT_LOCAL = set(sys.stdlib_module_names) | {"numpy", "scipy", "gradgen", "jax", "torch", "typing_extensions"}


def read_imports(module):
    """Read the user's files `module` imports, and theirs, recursively. Afterwards
    `module.local` maps each local module's dotted name to its Module, `module.homes` maps
    every function of those files to the Module it is defined in, and `module.files_read`
    lists (path, sha256) of each file read besides `module`'s own."""
    if not os.path.isfile(module.filename):
        return module
    folder = os.path.dirname(module.filename)
    shared = {"cache": {os.path.realpath(module.filename): module}, "homes": {}, "files": []}
    _resolve(module, folder, shared)
    return module


def _resolve(module, folder, shared):
    module.homes, module.files_read = shared["homes"], shared["files"]
    for fnode in ast.walk(module.tree):
        if isinstance(fnode, ast.FunctionDef):
            module.homes.setdefault(id(fnode), module)
    _relative(module, shared)
    for qualified in list(module.imports.values()):
        parts = qualified.split(".")
        if parts[0] in _NOT_LOCAL:
            continue
        for k in range(1, len(parts) + 1):
            name = ".".join(parts[:k])
            if name not in module.local:
                found = _read(name, folder, shared)
                if found is not None:
                    module.local[name] = found
    if "gradgen" not in module.local and any(q == "gradgen" or q.startswith("gradgen.") for q in module.imports.values()):
        module.local["gradgen"] = _read_gradgen(shared)  # gradgen.fixed_point: inlined, as a user's helper is
    _constants_imported(module)


def _relative(module, shared):
    """`from .model import predict` and the like: the absolute name in `module.imports`, its
    files read from the folder above the top package (a file that is not there keeps the
    name unknown; an import above the top package is refused at its line)."""
    if not module.relative or not os.path.isfile(module.filename):
        return
    root, package = package_of(module.filename)
    for name, (stmt, attr) in list(module.relative.items()):
        spelled = f"from {'.' * stmt.level}{stmt.module or ''} import {attr}"
        if stmt.level > len(package):
            absolute = f"from {stmt.module} import {attr}" if stmt.module else f"import {attr}"
            if not package:
                raise module.error(stmt, f"'{spelled}' is a relative import, and this file is in no package (no "
                                         f"__init__.py beside it): write `{absolute}`")
            raise module.error(stmt, f"'{spelled}' reaches above the top package '{package[0]}': import a module "
                                     f"of the package, or write `{absolute}` for a file beside this one")
        parts = package[:len(package) - stmt.level + 1] + (stmt.module.split(".") if stmt.module else [])
        for k in range(1, len(parts) + 2):
            dotted = ".".join((parts + [attr])[:k])
            if dotted not in module.local:
                found = _read(dotted, root, shared)
                if found is not None:
                    module.local[dotted] = found
        if ".".join(parts) not in module.local and ".".join(parts + [attr]) not in module.local:
            continue  # no such file: the name stays unknown, said where it is used
        module.imports[name] = ".".join(parts + [attr])
        del module.relative[name], module.not_constants[name]


def package_of(path):
    """(the folder above the top package, the package's dotted name as a list) of the file at
    `path`: its folder and those above it with an `__init__.py` (no package: the folder, []).
    The folder is spelled from `path` as given (`pkg/sub/../..`), so the files read below it
    are shown as the others are."""
    folder, package = os.path.dirname(os.path.abspath(path)), []
    while os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.dirname(folder) != folder:
        package.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    return os.path.join(os.path.dirname(path), *[os.pardir] * len(package)), package


def _read(name, folder, shared):
    """The Module of the local module `name` (read now, or already), or None if no file is there."""
    base = os.path.join(folder, *name.split("."))
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if not os.path.isfile(path):
            continue
        key = os.path.realpath(path)
        if key in shared["cache"]:  # read already (a cycle of imports included)
            return shared["cache"][key]
        if len(shared["cache"]) > MAX_FILES:
            raise parse.CompileError(f"more than {MAX_FILES} files imported; gradgen reads at most that many",
                                     os.path.normpath(path))
        shown = os.path.normpath(path)
        imported = parse.parse_module(read_source(path), shown)
        imported.imported = True
        shared["cache"][key] = imported
        shared["files"].append((shown, imported.sha256))
        _resolve(imported, folder, shared)
        return imported
    return None


def _read_gradgen(shared):
    """gradgen/inlined.py, the functions a compiled function may call from gradgen (gradgen.fixed_point),
    read as a user's file is (not listed in the header: its gradgen version, which status checks, says
    which text it is)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "inlined.py")
    key = os.path.realpath(path)
    if key not in shared["cache"]:
        imported = parse.parse_module(read_source(path), "gradgen/inlined.py")
        imported.imported = True
        shared["cache"][key] = imported
        _resolve(imported, os.path.dirname(path), shared)
    return shared["cache"][key]


def _constants_imported(module):
    """`from model import SCALE`: the constant, as if written in this file."""
    for name, qualified in list(module.imports.items()):
        found = target(module, qualified)
        if found is None:
            continue
        other, attr = found
        if attr in other.constants:
            module.constants[name] = other.constants[attr]
            del module.imports[name]
        elif attr in other.not_constants:
            module.not_constants[name] = (other.not_constants[attr][0], f"(of {other.filename}) "
                                          + other.not_constants[attr][1])
            del module.imports[name]


def target(module, qualified):
    """(the local Module, the name in it) that `qualified` names ("model.predict"), or None."""
    if not qualified or not module.local:
        return None
    head, _, name = qualified.rpartition(".")
    found = module.local.get(head)
    return (found, name) if found is not None and name else None


def function(module, qualified):
    """The ast.FunctionDef of a user's file that `qualified` names, or None."""
    found = target(module, qualified)
    if found is None or found[1] in found[0].redefined:
        return None
    return found[0].functions.get(found[1])


def constant(module, qualified):
    """(True, value) of a constant of a user's file `qualified` names (`m.SCALE`), or None."""
    found = target(module, qualified)
    if found is None or found[1] not in found[0].constants:
        return None
    return True, found[0].constants[found[1]]


def home(module, fnode, closure=None):
    """The Module `fnode` is defined in (one of the user's imported files, or `module`). A
    function made while lowering (a lambda as a def, a comprehension's) is of the module of
    the function it was made in: that of `closure`, the lowerer's Scope it was defined in,
    or of the Scope that one was defined in, and so on (a lambda an imported factory returns
    reads the factory's file, wherever it is called)."""
    homes = getattr(module, "homes", {})
    while id(fnode) not in homes and closure is not None:
        fnode, closure = closure.node, closure.closure
    return homes.get(id(fnode), module)
