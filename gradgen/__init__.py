"""gradgen: a source-to-source reverse-mode gradient compiler for Python.

The pipeline is one subpackage per stage (docs/how-it-works.md): `frontend` (parse, lower
to the IR of `ir`) -> `analysis` -> `transform` (reverse and forward mode, with the rules of
`rules`) -> `codegen` (emit), driven by `gradgen.api`; `verify` checks the result against
sympy and finite differences, `tools` is the command line. Imports go one way, bottom up
(the import-linter contract in pyproject.toml).

Importing gradgen imports none of them: each public name is looked up in EXPORTS and its
module imported on first use, so `gradgen --version` starts as fast as Python does and only
the command that needs sympy or black pays for it. A new public name is one line in EXPORTS.
"""

import importlib
import importlib.util

__version__ = "0.1.0"

# public name -> the module that defines it (imported when the name is first used)
EXPORTS = {
    "CompileError": "gradgen.errors",
    "compile_source": "gradgen.api",
    "compile_file": "gradgen.tools.files",
    "load_module": "gradgen.api",
    "custom_vjp": "gradgen.custom",
    "stop_gradient": "gradgen.custom",
    "flatten": "gradgen.trees",
    "flatten_func": "gradgen.trees",
    "fixed_point": "gradgen.inlined",
    "grad": "gradgen.live",
    "value_and_grad": "gradgen.live",
    "jvp": "gradgen.live",
    "vjp": "gradgen.live",
    "hvp": "gradgen.live",
    "grad_and_hvp": "gradgen.live",
    "elementwise_grad": "gradgen.live",
    "hessian_vector_product": "gradgen.live",
    "hessian": "gradgen.live",
    "jacobian": "gradgen.live",
}


def __getattr__(name):
    if name == "__all__":  # `from gradgen import *`: the names whose modules are there
        return ["__version__", *(n for n, m in EXPORTS.items() if importlib.util.find_spec(m) is not None)]
    if name not in EXPORTS:
        raise AttributeError(f"module 'gradgen' has no attribute '{name}'")
    try:
        module = importlib.import_module(EXPORTS[name])
    except ModuleNotFoundError as exc:
        if exc.name != EXPORTS[name]:
            raise
        raise AttributeError(f"gradgen.{name} is not available: its module {EXPORTS[name]} is missing") from None
    value = getattr(module, name)
    globals()[name] = value  # looked up once
    return value


def __dir__():
    return sorted(set(globals()) | set(EXPORTS))
