"""The `gradgen` command: `compile` writes gradient modules, `check` proves them right.

Errors in the input are printed as `file:line:col: message` with the source line and a
caret, and exit with status 1; nothing is written. No traceback reaches the user: an
unexpected failure inside gradgen is reported as an internal error (status 2).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from gradgen import __version__
from gradgen.errors import CompileError
from gradgen.limits import time_limit

# Every stage's work is bounded by the input's size (see gradgen.frontend.parse); this is the
# backstop: a compile that still runs this long is stopped, and nothing is written.
COMPILE_SECONDS = 300


class _OutOfTime(BaseException):
    """Raised by the alarm inside whatever gradgen was doing (never caught on the way up)."""


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except CompileError as exc:
        print(exc.format(), file=sys.stderr)
        return 1
    except _OutOfTime:
        print(CompileError(f"compiling took longer than {COMPILE_SECONDS:g} s, so gradgen stopped; nothing "
                           "was written", args.file).format(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("gradgen: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the promise is: no traceback, ever
        print(f"gradgen: internal error: {type(exc).__name__}: {exc}\n"
              "This is a bug in gradgen, not in your file; please report it with the input.",
              file=sys.stderr)
        return 2


def _parser():
    parser = argparse.ArgumentParser(prog="gradgen", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"gradgen {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    compile_ = sub.add_parser("compile", help="write DIR/<stem>_grad.py with f_grad and f_value_and_grad")
    _common(compile_, several=True)
    compile_.add_argument("--out-dir", default="generated", help="where to write (default: generated/)")
    compile_.add_argument("--force", action="store_true",
                          help="overwrite a file gradgen did not write, or one edited since it did")
    compile_.add_argument("--check", action="store_true", help="then run `check` on the result")
    compile_.add_argument("--backend", choices=("numpy", "array-api"), default=None,
                          help="numpy (the default), or array-api: code for any Array API library (NumPy, CuPy, "
                               "PyTorch, JAX, Dask); recompiling keeps the backend a module was written for")
    compile_.add_argument("--jit", choices=("none", "numba"), default=None,
                          help="none (the default), or numba: every generated function compiled by numba.njit "
                               "(scalar code: numbers and loops); recompiling keeps the jit a module was written for")
    compile_.add_argument("--checkpoint", metavar="K",
                          help="long loops in bounded memory: every loop whose trip count is known on entry keeps at "
                               "most K states and runs its trips again in the backward pass (binomial "
                               "checkpointing); auto: K from the states' size and --memory; none: taped "
                               "(the default); recompiling keeps it")
    compile_.add_argument("--memory", metavar="SIZE",
                          help="the budget of --checkpoint auto's states (default 256MB)")
    compile_.set_defaults(run=_compile)
    check = sub.add_parser("check", help="compare generated gradients with sympy and finite differences")
    _common(check)
    check.set_defaults(run=_check)
    status = sub.add_parser("status", help="is every generated module current? fresh, stale, edited or orphaned")
    status.add_argument("sources", nargs="*", metavar="SOURCE",
                        help="only the modules generated from these sources (one without a module is missing)")
    status.add_argument("--out-dir", default="generated", help="where the modules are (default: generated/)")
    status.add_argument("--json", action="store_true", help="a JSON list of {source, module, state, reason}")
    status.set_defaults(run=_status)
    graph = sub.add_parser("graph", help="draw the computational graph of a function at a point (SVG or DOT)")
    graph.add_argument("file", help="the Python source file")
    graph.add_argument("--function", metavar="NAME", help="the function to draw (needed if the file has several)")
    graph.add_argument("--wrt", type=_names, metavar="a,b", help="parameters whose gradients are drawn")
    graph.add_argument("--at", type=_point, metavar="name=value,...", help="the point (default: the defaults)")
    graph.add_argument("--inputs", metavar="FILE:FUNC", help="the point FUNC() in FILE returns (arrays too)")
    graph.add_argument("-o", "--output", required=True, metavar="OUT.svg",
                       help="where to write: .svg (a picture) or .dot (graphviz text)")
    graph.set_defaults(run=_graph)
    return parser


def _common(parser, several=False):
    if several:
        parser.add_argument("file", nargs="+", help="the Python source files to differentiate, one module each")
    else:
        parser.add_argument("file", help="the Python source file to differentiate")
    parser.add_argument("--function", action="append", metavar="NAME",
                        help="differentiate only this function (repeatable)")
    parser.add_argument("--wrt", type=_names, metavar="a,b", help="parameters to differentiate (default: the first, "
                        "or all when every parameter has a number default; 'all': every one that can be)")
    parser.add_argument("--emit", type=_kinds, default=None, metavar="KINDS",
                        help="what to write, comma-separated: grad (f_grad, f_value_and_grad; the default), jvp, "
                             "hvp, grad_and_hvp (both from one pass), hessian, vjp, jacobian")
    parser.add_argument("--shapes", metavar="FILE:FUNC",
                        help="write the gradient for the shapes of the point FUNC() in FILE returns, as a person who "
                             "knows them would (the header names them; recompiling keeps them; --shapes none drops "
                             "them)")
    parser.add_argument("--at", type=_point, metavar="name=value,...", help="the point to check at")
    parser.add_argument("--inputs", metavar="FILE:FUNC",
                        help="check at the point FUNC() in FILE returns (a dict of arrays and numbers)")


def _kinds(text):
    from gradgen.codegen.derivatives import parse_kinds  # (start-up: each command imports its stages)

    try:
        return parse_kinds(text)
    except CompileError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _names(text):
    return [n.strip() for n in text.split(",") if n.strip()]


def _point(text):
    point = {}
    for item in _names(text):
        name, sep, value = item.partition("=")
        try:
            point[name.strip()] = int(value) if value.strip().lstrip("-").isdigit() else float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{item}' is not name=number") from None
        if not sep:
            raise argparse.ArgumentTypeError(f"'{item}' is not name=number")
    return point


def _compile(args):
    """Each file in turn: one that fails is reported and the others are still compiled
    (as pre-commit passes every changed source at once); status 1 if any failed."""
    failed = False
    for path in args.file:
        try:
            failed |= _compile_one(argparse.Namespace(**{**vars(args), "file": path})) != 0
        except CompileError as exc:
            print(exc.format(), file=sys.stderr)
            failed = True
        except _OutOfTime:
            print(CompileError(f"compiling took longer than {COMPILE_SECONDS:g} s, so gradgen stopped; nothing "
                               "was written", path).format(), file=sys.stderr)
            failed = True
    return 1 if failed else 0


def _compile_one(args):
    from gradgen.tools.files import compile_file  # (start-up: each command imports its stages)

    with time_limit(COMPILE_SECONDS, _OutOfTime):
        target, compiled = compile_file(args.file, args.out_dir, args.function, args.wrt, args.force,
                                        args.emit, args.backend, args.jit, args.shapes, args.checkpoint,
                                        args.memory)
    names = ", ".join(n for f in compiled.functions for n in
                      [f.grad_name, f.value_and_grad_name] + [m.name for m in f.made] if n)
    print(f"wrote {target} ({names})")
    if compiled.backend != "numpy":
        kept = "" if args.backend else " (the backend of the module it replaced; --backend numpy changes it)"
        print(f"  backend: {compiled.backend}{kept}")
    if compiled.jit != "none":
        kept = "" if args.jit else " (the jit of the module it replaced; --jit none changes it)"
        print(f"  jit: {compiled.jit}{kept}")
    for line in summary_lines(compiled):
        print(f"  {line}")
    for f in compiled.functions:  # (what --checkpoint left taped, and why)
        for _, note in f.notes:
            print(f"  {f.name}: {note}")
    for line in skipped_lines(compiled):
        print(line, file=sys.stderr)
    return _check(args) if args.check else 0


def _status(args):
    from gradgen.codegen import freshness  # (start-up: each command imports its stages)

    entries = freshness.status(args.out_dir, args.sources)
    if args.json:
        print(json.dumps([e.as_dict() for e in entries], indent=2))
    else:
        print("\n".join(freshness.report_lines(entries, args.out_dir)))
    return 0 if all(e.state == freshness.FRESH for e in entries) else 1


def summary_lines(compiled):
    """Per function, what it is differentiated with respect to and why any parameter is not:
    a surprising default is seen at once (which functions got no gradient: skipped_lines)."""
    lines = []
    for f in compiled.functions:
        line = f"{f.name}: d/d({', '.join(f.wrt)})" if f.wrt else f"{f.name}: no parameter differentiated"
        reasons = {}
        for p, why in f.left_out.items():
            reasons.setdefault(why, []).append(p)
        if reasons:
            line += "; not " + "; ".join(f"{', '.join(ps)} ({why})" for why, ps in reasons.items())
        lines.append(line)
    return lines


def skipped_lines(compiled):
    """One line for each function of the file that got no gradient of its own, and for each
    stretch of module-level code, in the file's order, and why."""
    functions = compiled.module.functions
    lines = [(functions[name].lineno, f"skipped {name} (line {functions[name].lineno}): {why}")
             for name, why in compiled.skipped.items()]
    for what, stretches, why in compiled.top_level:
        spans = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in stretches)
        where = f"line {spans}" if len(stretches) == 1 and stretches[0][0] == stretches[0][1] else f"lines {spans}"
        lines.append((stretches[0][0], f"skipped {what} ({where}): {why}"))
    return [line for _, line in sorted(lines, key=lambda item: item[0])]


def _check(args):
    from gradgen.frontend.source import read_source  # (start-up: each command imports its stages)
    from gradgen.verify.check import check_source  # (start-up: each command imports its stages)

    data = read_source(args.file)
    at = args.at
    given = args.shapes if args.shapes != "none" else None
    shapes = _shapes(given, args.file) if given else None
    if args.inputs or given:  # (a module written for some shapes is checked at a point of them)
        at = {**_inputs(args.inputs or given, args.file), **(args.at or {})}
    kinds = getattr(args, "emit", None) or ("grad",)  # (compile: None keeps what the module has)
    numbers = _number_functions(data, args, kinds)
    reports = check_source(data, args.file, numbers, args.wrt, at, shapes=shapes) if numbers != [] else []
    for report in reports:
        print(format_report(report))
    failed = [r for r in reports if not r.ok]
    failed_kinds = _check_kinds(data, args, at, kinds) if kinds != ("grad",) else []  # (each says why itself)
    for report in failed:
        if not report.points and report.no_point:
            print(f"NOT CHECKED {report.name}: {report.no_point}", file=sys.stderr)
            continue
        if not report.points:
            print(f"NOT CHECKED {report.name}: no sample point where it is finite and smooth; give one "
                  f"with --at name=value,... or --inputs FILE:FUNC", file=sys.stderr)
            continue
        bad = sorted({row.param for p in report.points for row in p.rows if not row.ok and not _is_rule(row)})
        rules = sorted({row.note for p in report.points for row in p.rows if not row.ok and _is_rule(row)})
        what = f"parameter(s) {', '.join(bad)}" if bad else "its value" if not rules else ""
        for line in ([what] if what else []) + rules:  # a custom rule that disagrees is named (custom_check.py)
            print(f"MISMATCH in {report.name}: {line}", file=sys.stderr)
    if not failed and not failed_kinds:
        also = f" and every {', '.join(k for k in kinds if k != 'grad')} too" if kinds != ("grad",) else ""
        print(f"all gradients match ({sum(len(r.points) for r in reports)} point(s) checked){also}")
    return 1 if failed or failed_kinds else 0


def _number_functions(data, args, kinds):
    """The functions with a gradient to check (None: as `check` picks them). With --emit, a
    function whose result is an array has none: only its vjp, jvp and jacobian are checked."""
    if kinds == ("grad",):
        return args.function
    from gradgen.api import compile_source  # (start-up: each command imports its stages)

    compiled = compile_source(data, args.file, args.function, args.wrt, kinds)
    return [f.name for f in compiled.functions if f.reversed is not None]


def _check_kinds(data, args, at, kinds):
    """Every other kind --emit names (gradgen/verify/derivatives.py); the ones that disagree."""
    from gradgen.verify.derivatives import check_kinds, format_kinds  # (start-up: each command imports its stages)

    kinds = ("grad",) + tuple(k for k in kinds if k != "grad")  # (the other kinds are checked against it)
    reports = check_kinds(data, args.file, args.function, args.wrt, at, kinds)
    for line in format_kinds(reports):
        print(line)
    bad = [r for r in reports if not r.ok]
    for r in bad:
        print(f"MISMATCH in {r.name}: {r.kind} disagrees with its reference (see above)", file=sys.stderr)
    return bad


def _graph(args):
    """`gradgen graph`: the function's graph at the point, with values, gradients and local
    derivatives on it (gradgen/tools/graph.py), written as SVG or DOT (gradgen/tools/graph_svg.py)."""

    from gradgen.frontend.source import read_source  # (start-up: each command imports its stages)
    from gradgen.tools.files import write_atomically  # (start-up: each command imports its stages)
    from gradgen.tools.graph import graph_source  # (start-up: each command imports its stages)
    from gradgen.tools.graph_svg import dot, svg  # (start-up: each command imports its stages)

    writers = {".svg": svg, ".dot": dot}
    suffix = os.path.splitext(args.output)[1].lower()
    if suffix not in writers:
        raise CompileError("the output must end in .svg (a picture) or .dot (graphviz text)", args.output)
    data = read_source(args.file)
    at = {**(_inputs(args.inputs, args.file) if args.inputs else {}), **(args.at or {})}
    with time_limit(COMPILE_SECONDS, _OutOfTime):
        graph = graph_source(data, args.file, args.function, args.wrt, at)
    write_atomically(args.output, writers[suffix](graph))
    print(f"wrote {args.output} ({len(graph.nodes)} nodes, {len(graph.edges)} edges)")
    return 0


def _is_rule(row):
    return row.param.startswith("rule ")


def _shapes(spec, beside):
    """{parameter: shape} of the point `--shapes FILE:FUNC` builds (gradgen.analysis.stated)."""
    from gradgen.analysis.stated import symbolic_shapes  # (start-up: each command imports its stages)

    return symbolic_shapes(_inputs(spec, beside))


def _inputs(spec, beside):
    """The point `--inputs FILE:FUNC` builds: FUNC() in FILE, the user's own code (what it
    raises is reported at its line of FILE, status 1), which may import from `beside`'s folder
    (the file it builds inputs for)."""
    from gradgen.verify.usercode import load_inputs  # (start-up: each command imports its stages)

    return load_inputs(spec, beside)


def format_report(report):
    """A table per point: parameter | generated | sympy | finite difference | relative error | ok."""
    lines = [f"{report.name}: gradient with respect to {', '.join(report.wrt) or 'nothing'}"]
    if not report.points:
        lines.append(f"  no sample point found: {report.no_point}" if report.no_point else
                     "  no sample point found where the function and its gradient are finite")
    for point in report.points:
        at = ", ".join(f"{k}={_value(v)}" for k, v in point.point.items())
        lines.append(f"  at {at}: value {_num(point.value_generated)} (original {_num(point.value_original)})")
        table = [("parameter", "generated", "sympy", "finite difference", "relative error", "ok")]
        for row in point.rows:
            table.append((row.param, _num(row.generated), _num(row.sympy), _num(row.fd),
                          f"{row.rel_error:.1e}", _verdict(row)))
        widths = [max(len(r[i]) for r in table) for i in range(5)]
        for r in table:
            lines.append("    " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " | " + r[5])
        # where a nan or an inf first appeared: `file:line: dL_dx became inf in the backward pass of: ...`
        lines.extend("    " + message for message in getattr(point, "nonfinite", ()))
    return "\n".join(lines)


def _verdict(row):
    """`ok`, or `FAIL (why)`; a row shown but deliberately not compared (a custom rule marked
    as an estimator) says so beside its `ok`."""
    if row.ok:
        return f"ok ({row.note})" if row.fd_verdict == "not compared" else "ok"
    return "FAIL" + (f" ({row.note})" if row.note else "")


def _value(value):
    """A point's value for the table: a number, an array's shape, or a random state's kind."""
    shape = getattr(value, "shape", None)
    if shape is None and not isinstance(value, (int, float)):
        return type(value).__name__  # RandomState, Generator
    return f"array{shape}" if shape else _num(value)


def _num(value):
    if value is None:
        return "-"
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.10g}"
