"""Generated code on the oldest NumPy gradgen declares (pyproject: numpy>=1.24).

Two halves, run in two environments (`.ci/run` does both):

    python tests/oldest_numpy.py --write DIR   # gradgen's own environment
    python tests/oldest_numpy.py --run DIR     # an environment with only the oldest NumPy

`--write` puts into DIR every module gradgen generates that the tests use: the committed
golden files (generated/*.py), the examples compiled afresh, every file of the test corpora
(tests/corpus/*/*.py, as their tests compile them) and a few sources of array constants of
every dtype. Next to them, `calls.json` lists, for every `*_grad` and `*_value_and_grad`
function, the points to call it at (the ones the corpus tests use: the defaults, the seeded
random points `gradgen check` draws, the hand-picked points of tests/test_control_flow.py,
the `inputs_<name>()` builders of the array corpus, examples/inputs.py) and what this
NumPy returned there. JSON only: nothing is unpickled, and the modules are plain text.

`--run` needs nothing but NumPy (it never imports gradgen): it imports every module and
calls every function at its points, and checks each result against the recorded one: the
same structure and kinds, the same shapes and dtypes, finite where it was finite, equal to
1e-12 relative (of the largest element of an array), or the same exception. It ends with
`N passed, M failed` and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import shutil
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REL = 1e-12
CALLS = "calls.json"

# Array constants of every dtype a generated module can carry (np.bool was NumPy 2's alone).
DTYPES_SOURCE = '''import numpy as np

MASK = np.array([True, False, True])
COUNTS = np.array([[1, 2, 3], [4, 5, 6]])
HUGE = np.array([2 ** 63, 1])
EYE = np.eye(3)
STEPS = np.linspace(0.0, 1.0, 3)
WHOLE = np.array([1.0, 2.0, 3.0], dtype=int)


def masked(w, *, x):
    return np.sum(np.where(MASK, w * x, 0.0) ** 2)


def counted(w, *, x):
    return np.sum(COUNTS @ (w * x)) + np.sum(w * EYE @ STEPS) + np.sum(w * (HUGE[1] + WHOLE))


def picked(w):
    return np.sum(w[MASK] ** 3)
'''
DTYPES_POINTS = {"w": np.array([0.5, -1.25, 2.0]), "x": np.array([1.5, 0.25, -0.75])}


# ---- JSON for numbers, arrays, tuples ------------------------------------------------------

def encode(value):
    if isinstance(value, np.ndarray):
        return {"ndarray": value.tolist(), "dtype": value.dtype.name, "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return {"scalar": value.item(), "dtype": value.dtype.name}
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return {type(value).__name__: [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, np.random.RandomState):  # MT19937: the same draws on every NumPy
        kind, keys, pos, has_gauss, cached = value.get_state()
        return {"random_state": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)]}
    raise TypeError(f"cannot record a {type(value).__name__}")


def decode(value):
    if not isinstance(value, dict):
        return value
    if "ndarray" in value:
        return np.array(value["ndarray"], dtype=value["dtype"]).reshape(value["shape"])
    if "scalar" in value:
        return np.dtype(value["dtype"]).type(value["scalar"])
    if "tuple" in value:
        return tuple(decode(v) for v in value["tuple"])
    if "list" in value:
        return [decode(v) for v in value["list"]]
    if "random_state" in value:
        kind, keys, pos, has_gauss, cached = value["random_state"]
        state = np.random.RandomState()
        state.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
        return state
    return {k: decode(v) for k, v in value["dict"].items()}


# ---- calling and comparing ---------------------------------------------------------------

def load(path):
    spec = importlib.util.spec_from_file_location(f"oldest_numpy_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def call(function, point):
    """What `function(**point)` gives, recorded: its value, or the exception it raised."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return {"returns": encode(function(**decode(point)))}
    except Exception as exc:  # noqa: BLE001 - a raise is an outcome too (1 / x at x = 0.0)
        return {"raises": type(exc).__name__}


def _kind(value):
    if isinstance(value, dict):
        return next(iter(value))
    return type(value).__name__


def differences(got, expected, where="result"):
    """Every way `got` differs from `expected` (both encoded), as readable lines."""
    if _kind(got) != _kind(expected):
        return [f"{where}: a {_kind(got)} where it was a {_kind(expected)}"]
    if isinstance(expected, dict) and ("tuple" in expected or "list" in expected):
        items, wanted = next(iter(got.values())), next(iter(expected.values()))
        if len(items) != len(wanted):
            return [f"{where}: {len(items)} items where there were {len(wanted)}"]
        return [d for i, (g, e) in enumerate(zip(items, wanted)) for d in differences(g, e, f"{where}[{i}]")]
    if isinstance(expected, dict) and "dict" in expected:
        if sorted(got["dict"]) != sorted(expected["dict"]):
            return [f"{where}: keys {sorted(got['dict'])} where they were {sorted(expected['dict'])}"]
        return [d for k in expected["dict"] for d in differences(got["dict"][k], expected["dict"][k], f"{where}[{k!r}]")]
    if isinstance(expected, dict) and (got["dtype"] != expected["dtype"]
                                       or got.get("shape") != expected.get("shape")):
        return [f"{where}: dtype {got['dtype']} shape {got.get('shape')} where it was dtype {expected['dtype']} "
                f"shape {expected.get('shape')}"]
    a = np.asarray(decode(got))
    b = np.asarray(decode(expected))
    if a.dtype.kind not in "fc":
        return [] if np.array_equal(a, b) else [f"{where}: {a.tolist()} where it was {b.tolist()}"]
    finite_b = np.isfinite(b)
    if not np.array_equal(np.isfinite(a), finite_b):
        return [f"{where}: {a.tolist()} where it was {b.tolist()} (finite elements differ)"]
    same_special = np.array_equal(a[~finite_b], b[~finite_b], equal_nan=True)
    scale = np.max(np.abs(b[finite_b]), initial=0.0)
    close = np.abs(a[finite_b] - b[finite_b]) <= REL * np.maximum(np.maximum(np.abs(a[finite_b]), np.abs(b[finite_b])),
                                                                  scale)
    if same_special and close.all():
        return []
    return [f"{where}: {a.tolist()} where it was {b.tolist()}"]


# ---- --write: compile everything, record what this NumPy gives ----------------------------

def corpus_tests():
    """{corpus folder: the test module that says which functions it compiles, with which
    parameters, at which points}; a folder missing here is read by `_Generic`."""
    sys.path.insert(0, str(ROOT))
    import tests.test_arrays as arrays
    import tests.test_control_flow as control
    import tests.test_corpus as scalar
    import tests.test_inactive as inactive

    return {"scalar": scalar, "control": control, "arrays": arrays, "inactive": inactive}


def _corpus_points():
    """[(module stem, compiled module, {function: [points]})] of every corpus folder, with the
    points its tests use."""
    if importlib.util.find_spec("scipy") is None:  # as tests/conftest.py: the stand-in
        sys.path.insert(0, str(ROOT / "tests" / "stubs"))
    sys.path.insert(0, str(ROOT))
    from gradgen import compile_source
    from gradgen.verify.finite import sample_points
    from gradgen.verify.usercode import run_original
    tests = corpus_tests()
    jobs = []
    for folder in sorted(p for p in (ROOT / "tests" / "corpus").iterdir() if p.is_dir()):
        kind = folder.name
        test = tests.get(kind) or _Generic(folder)  # a corpus no test module of ours knows yet
        for path in sorted(folder.glob("*.py")):
            source = path.read_text(encoding="utf-8")
            filename = str(path.relative_to(ROOT))
            names = [n for f, n in test.CASES if f == path.name]
            if not names:  # (every function of the file is refused today)
                continue
            overrides = {n: w for (f, n), w in getattr(test, "WRT", {}).items() if f == path.name}
            # the whole file, as the determinism tests compile it; each function given its own
            # parameters to differentiate, as its test compiles it alone
            # (a corpus whose every function has its own parameters has no whole-file variant)
            variants = [] if set(overrides) >= set(names) else [(f"{kind}__{path.stem}", None, "all")]
            variants += [(f"{kind}__{path.stem}__{n}", [n], w) for n, w in sorted(overrides.items())]
            for stem, functions, wrt in variants:
                compiled = compile_source(source, filename, functions=functions or names, wrt=wrt)
                original = run_original(compiled.module.source, filename)
                points = {}
                for cf in compiled.functions:
                    if kind == "arrays" or f"inputs_{cf.name}" in vars(original):
                        builder = getattr(test, "inputs_for", None) or _Generic(folder).inputs_for
                        points[cf.name] = [builder(path.name, cf.name)]
                        continue
                    f = getattr(original, cf.name)
                    with np.errstate(all="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        found = sample_points(cf, f, None, 3, test.seed_for(path.name, cf.name), filename)
                        for at in getattr(test, "POINTS", {}).get((path.name, cf.name), []):
                            found += sample_points(cf, f, at, 1, 0, filename)
                    points[cf.name] = found
                jobs.append((stem, compiled, points))
    return jobs


class _Generic:
    """Cases and points of a corpus folder without a test module here: every function but
    the `inputs_<name>()` builders, at what its builder returns, else at the defaults and
    seeded random points."""

    def __init__(self, folder):
        import ast

        self.folder = folder
        refused = set()
        if folder.name == "real":  # the acceptance corpus: what gradgen refuses today has no module to run
            import tests.test_real_programs as real

            refused = set(real.BLOCKED)
        self.CASES = [(path.name, node.name) for path in sorted(folder.glob("*.py"))
                      for node in ast.parse(path.read_text(encoding="utf-8")).body
                      if isinstance(node, ast.FunctionDef) and not node.name.startswith("inputs_")
                      and not any(isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)
                                  for n in ast.walk(node))  # a tuple helper has no gradient of its own
                      and (path.name, node.name) not in refused
                      and (folder.name != "real" or f"def inputs_{node.name}(" in path.read_text(encoding="utf-8"))]

    def inputs_for(self, file_name, function_name):
        namespace = {"__name__": "oldest_numpy_inputs"}
        path = self.folder / file_name
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102 - our corpus
        return namespace[f"inputs_{function_name}"]()

    @staticmethod
    def seed_for(file_name, function_name):
        return 0


def _example_points():
    from gradgen import compile_source
    from tests.regenerate_goldens import WRT  # (the examples compiled with --wrt all)
    from gradgen.verify.finite import sample_points
    from gradgen.verify.usercode import run_original

    spec = importlib.util.spec_from_file_location("gradgen_example_inputs", ROOT / "examples" / "inputs.py")
    inputs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(inputs)
    jobs, golden = [], []
    for path in sorted((ROOT / "examples").glob("*.py")):
        committed = ROOT / "generated" / f"{path.stem}_grad.py"
        if not committed.exists():
            continue
        compiled = compile_source(path.read_bytes(), f"examples/{path.name}", wrt=WRT.get(path.stem))
        original = run_original(compiled.module.source, str(path))
        points = {}
        for cf in compiled.functions:
            builder = getattr(inputs, path.stem, None)
            if builder is not None and set(builder()) == set(cf.params):  # the example's loss
                points[cf.name] = [builder()]
            else:
                points[cf.name] = sample_points(cf, getattr(original, cf.name), None, 3, 0, str(path))
        jobs.append((f"example__{path.stem}", compiled, points))
        golden.append((f"golden__{path.stem}", committed, compiled.functions, points))
    return jobs, golden


def write(folder):
    from gradgen import compile_source

    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    jobs = _corpus_points()
    examples, golden = _example_points()
    jobs += examples
    dtypes = compile_source(DTYPES_SOURCE, "dtypes.py")
    jobs.append(("dtypes", dtypes, {cf.name: [DTYPES_POINTS] for cf in dtypes.functions}))
    modules = []
    for stem, compiled, points in jobs:
        (folder / f"{stem}.py").write_text(compiled.text, encoding="utf-8")
        modules.append((stem, compiled.functions, points))
    for stem, committed, functions, points in golden:
        shutil.copyfile(committed, folder / f"{stem}.py")
        modules.append((stem, functions, points))
    record = []
    for stem, functions, points in modules:
        module = load(folder / f"{stem}.py")
        calls = []
        for cf in functions:
            for name in (cf.grad_name, cf.value_and_grad_name):
                for point in points[cf.name]:
                    encoded = encode(dict(point))
                    calls.append({"function": name, "point": encoded, **call(getattr(module, name), encoded)})
        record.append({"module": f"{stem}.py", "calls": calls})
    (folder / CALLS).write_text(json.dumps({"numpy": np.__version__, "modules": record}, indent=1), encoding="utf-8")
    count = sum(len(m["calls"]) for m in record)
    print(f"wrote {len(record)} modules and {count} calls (NumPy {np.__version__}) to {folder}")
    return 0


# ---- --run: the same calls here ------------------------------------------------------------

def run(folder, verbose=False):
    folder = Path(folder)
    recorded = json.loads((folder / CALLS).read_text(encoding="utf-8"))
    passed = failed = 0
    for entry in recorded["modules"]:
        try:
            module = load(folder / entry["module"])
        except Exception:  # noqa: BLE001 - a module that does not import fails all its calls
            failed += len(entry["calls"])
            print(f"FAIL {entry['module']}: does not import\n{traceback.format_exc()}")
            continue
        for c in entry["calls"]:
            where = f"{entry['module']}: {c['function']}"
            function = getattr(module, c["function"], None)
            if function is None:
                problems = [f"no function {c['function']}"]
            else:
                got = call(function, c["point"])
                if "raises" in c or "raises" in got:
                    problems = [] if got == {k: c[k] for k in ("raises", "returns") if k in c} else [
                        f"gave {got} where it gave {({k: c[k] for k in ('raises', 'returns') if k in c})}"]
                else:
                    problems = differences(got["returns"], c["returns"])
            if problems:
                failed += 1
                print(f"FAIL {where} at {decode(c['point'])}:\n    " + "\n    ".join(problems))
            else:
                passed += 1
                if verbose:
                    print(f"ok   {where}")
    print(f"NumPy {np.__version__} (recorded with NumPy {recorded['numpy']}): "
          f"{len(recorded['modules'])} modules, {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DIR", help="compile into DIR and record the calls (gradgen's environment)")
    mode.add_argument("--run", metavar="DIR", help="make the recorded calls here (needs only NumPy)")
    parser.add_argument("--verbose", action="store_true", help="--run: name every call that passed too")
    args = parser.parse_args(argv)
    return write(args.write) if args.write else run(args.run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
