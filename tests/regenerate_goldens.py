"""Write every golden file again from the compiler as it is now, for review with `git diff`:

    python tests/regenerate_goldens.py

generated/ (what a plain `gradgen compile examples/X.py` writes), tests/golden_kinds/
(--emit), tests/golden_array_api/ (--backend array-api), tests/golden_jit/ (--jit numba) and
tests/golden_checkpoint/ (--checkpoint 8).
The golden tests compare byte for byte; this is how a deliberate change to the output lands.
"""

from pathlib import Path

from gradgen import compile_source

ROOT = Path(__file__).resolve().parent.parent
KINDS = {"decay_model": ("grad", "hessian"), "rosenbrock": ("grad", "jvp", "hvp", "hessian")}
# The examples compiled with a `--wrt` (recorded in their headers): none. generated/ is what a plain
# `gradgen compile examples/X.py` writes afresh (the default: the first parameter, or all of them
# when every parameter has a number default); `--wrt all` is shown in the README and the docs.
WRT = {}


def main():
    import os

    os.chdir(ROOT)
    for module in sorted((ROOT / "generated").glob("*_grad.py")):
        name = module.name[:-len('_grad.py')]
        # (what a fresh compile writes: never the options the module it replaces recorded)
        source = (ROOT / "examples" / f"{name}.py").read_bytes()
        module.write_text(compile_source(source, f"examples/{name}.py", wrt=WRT.get(name)).text, encoding="utf-8")
    for folder, option in (("golden_kinds", None), ("golden_array_api", "array-api"), ("golden_jit", "numba")):
        for golden in sorted((ROOT / "tests" / folder).glob("*_grad.py")):
            name = golden.name[:-len("_grad.py")]
            source = (ROOT / "examples" / f"{name}.py").read_bytes()
            if folder == "golden_kinds":
                text = compile_source(source, f"examples/{name}.py", emit_kinds=KINDS[name], wrt=WRT.get(name)).text
            elif folder == "golden_array_api":
                text = compile_source(source, f"examples/{name}.py", backend=option, wrt=WRT.get(name)).text
            else:
                text = compile_source(source, f"examples/{name}.py", jit=option, wrt=WRT.get(name)).text
            golden.write_text(text, encoding="utf-8")
    source = (ROOT / "examples" / "ode_fit.py").read_bytes()  # --checkpoint (tests/test_checkpoint.py)
    text = compile_source(source, "examples/ode_fit.py", checkpoint=8).text
    (ROOT / "tests" / "golden_checkpoint" / "ode_fit_grad.py").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
