"""`gradgen check --emit ...`: every other kind against references that share nothing with
the code it checks.

  jvp       against the gradient (already checked against sympy and finite differences):
            f_jvp's derivative along t equals grad . t; and against a central difference of
            the original function along t
  hvp       against central differences of the checked gradient along t
  hessian   column by column against central differences of the checked gradient, and
            symmetric
  vjp       <f_vjp(c), t> against the central difference of <c, f> along t (the original f)
  jacobian  against central differences of the original function, one column per element

Directions t and cotangents c are seeded random draws, so a check is reproducible.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
from dataclasses import dataclass, field, replace

import numpy as np

from gradgen.api import compile_source, load_module
from gradgen.rules.records import runtime as record_runtime
from gradgen.verify.finite import sample_points
from gradgen.verify.usercode import fresh, run_original, same_global_draws

fields_of, is_data = record_runtime()  # a NamedTuple's or dataclass's fields, as the generated helpers read them
TOL = 1e-5  # relative error against a central difference (Richardson-extrapolated)
EXACT_TOL = 1e-8  # relative error between two generated functions (jvp against grad)


@dataclass
class KindRow:
    kind: str
    what: str  # "against grad . t", "against finite differences of the gradient", ...
    error: float
    point: int = 0  # which of the function's points (1-based in the table)

    @property
    def ok(self):
        return self.error <= (EXACT_TOL if self.what.startswith("against grad") else TOL)


@dataclass
class KindReport:
    function: str
    name: str  # the generated function
    kind: str
    rows: list = field(default_factory=list)

    @property
    def ok(self):
        return bool(self.rows) and all(r.ok for r in self.rows)

    @property
    def worst(self):
        return max((r.error for r in self.rows), default=float("nan"))


def check_kinds(source, filename, functions, wrt, at, emit_kinds, n_points=3, seed=0):
    """One KindReport per generated function of a kind other than grad."""
    compiled = compile_source(source, filename, functions, wrt, emit_kinds)
    generated = load_module(compiled.text, "gradgen_check_kinds")
    original = run_original(compiled.module.source, filename)
    reports = []
    with same_global_draws(), contextlib.redirect_stdout(io.StringIO()):
        for cf in compiled.functions:
            f = getattr(original, cf.name)
            points = sample_points(cf, f, at, n_points, seed, filename) if cf.grad_name else _array_points(cf, at)
            for made in cf.made:
                report = KindReport(cf.name, made.name, made.kind)
                check = _CHECKS[made.kind]
                for k, point in enumerate(points):
                    rng = np.random.default_rng(seed + k)
                    report.rows += [replace(row, point=k + 1) for row in check(cf, generated, f, point, rng)]
                reports.append(report)
    return reports


def _array_points(cf, at):
    """A function whose result is an array has no sampled points of its own: `at`, else its
    defaults."""
    params = [p for p in cf.ir.params if not p.kept_default]
    point = {p.name: p.default for p in params if p.has_default}
    point.update({p.name: at[p.name] for p in params if p.name in (at or {})})
    return [point] if all(p.name in point for p in params) else []


# ---- the checks, one per kind ------------------------------------------------------------

def _jvp(cf, generated, f, point, rng):
    t = {p: _like(point[p], rng) for p in cf.wrt}
    jvp = getattr(generated, _name(cf, "jvp"))
    value, derivative = _call(jvp, point, _tangents(cf, jvp, t))
    rows = []
    if cf.grad_name:
        grads = _call(getattr(generated, cf.grad_name), point)
        grads = grads if len(cf.wrt) > 1 else (grads,)
        want = sum(_dot(g, t[p]) for g, p in zip(grads, cf.wrt))
        rows.append(KindRow("jvp", "against grad . t", _rel(derivative, want)))
    fd = _along(lambda h: _call(f, _moved(point, t, h)), point)
    rows.append(KindRow("jvp", "against finite differences of the function", _rel(derivative, fd)))
    return rows


def _hvp(cf, generated, f, point, rng):
    t = {p: _like(point[p], rng) for p in cf.wrt}
    hvp = getattr(generated, _name(cf, "hvp"))
    product = _call(hvp, point, _tangents(cf, hvp, t))
    grad = getattr(generated, cf.grad_name)
    fd = _along(lambda h: _flat(_call(grad, _moved(point, t, h))), point)
    return [KindRow("hvp", "against finite differences of the gradient", _rel(_flat(product), fd))]


def _grad_and_hvp(cf, generated, f, point, rng):
    """Both halves of f_grad_and_hvp: the gradient along a direction against finite differences
    of the function, its derivative against finite differences of that gradient."""
    t = {p: _like(point[p], rng) for p in cf.wrt}
    both = getattr(generated, _name(cf, "grad_and_hvp"))
    extra = _tangents(cf, both, t)
    grads, product = _call(both, point, extra)
    along = sum(_dot(g, t[p]) for g, p in zip(grads if len(cf.wrt) > 1 else (grads,), cf.wrt))
    fd = _along(lambda h: _call(f, _moved(point, t, h)), point)
    slope = _along(lambda h: _flat(_call(both, _moved(point, t, h), extra)[0]), point)
    return [KindRow("grad_and_hvp", "its gradient . t against finite differences of the function", _rel(along, fd)),
            KindRow("grad_and_hvp", "its hvp against finite differences of its gradient", _rel(_flat(product), slope))]


def _hessian(cf, generated, f, point, rng):
    hessian = _call(getattr(generated, _name(cf, "hessian")), point)
    grad = getattr(generated, cf.grad_name)
    columns = []
    for k, t in enumerate(_units(point, cf.wrt)):
        columns.append(_along(lambda h: _flat(_call(grad, _moved(point, t, h))), point))
    fd = np.stack(columns, axis=-1) if columns else np.zeros((0, 0))
    return [KindRow("hessian", "against finite differences of the gradient", _rel(hessian, fd)),
            KindRow("hessian", "against its transpose (symmetry)", _rel(hessian, np.transpose(hessian)))]


def _vjp(cf, generated, f, point, rng):
    value = np.asarray(_call(f, point))
    c = rng.standard_normal(value.shape) if value.shape else float(rng.standard_normal())
    vjp = getattr(generated, _name(cf, "vjp"))
    cotangent = [p for p in _keyword_only(vjp) if p not in point][-1]
    product = _call(vjp, point, {cotangent: c})
    product = product if len(cf.wrt) > 1 else (product,)
    t = {p: _like(point[p], rng) for p in cf.wrt}
    got = sum(_dot(g, t[p]) for g, p in zip(product, cf.wrt))
    fd = _along(lambda h: float(np.sum(c * np.asarray(_call(f, _moved(point, t, h))))), point)
    return [KindRow("vjp", "against finite differences of <cotangent, f>", _rel(got, fd))]


def _jacobian(cf, generated, f, point, rng):
    jacobian = _call(getattr(generated, _name(cf, "jacobian")), point)
    parts = jacobian if len(cf.wrt) > 1 else (jacobian,)
    got = np.concatenate([np.reshape(j, (np.size(np.asarray(_call(f, point))), -1)) for j in parts], axis=1)
    columns = [_along(lambda h: np.ravel(np.asarray(_call(f, _moved(point, t, h)), float)), point)
               for t in _units(point, cf.wrt)]
    return [KindRow("jacobian", "against finite differences of the function", _rel(got, np.stack(columns, -1)))]


_CHECKS = {"jvp": _jvp, "hvp": _hvp, "grad_and_hvp": _grad_and_hvp, "hessian": _hessian, "vjp": _vjp,
           "jacobian": _jacobian}


# ---- numbers -----------------------------------------------------------------------------

def _name(cf, kind):
    return next(m.name for m in cf.made if m.kind == kind)


def _call(fn, point, extra=None):
    return fn(**fresh(point), **(extra or {}))


def _keyword_only(fn):
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind == p.KEYWORD_ONLY]


def _tangents(cf, fn, t):
    """The generated function's tangent parameters (d<p>, named by gradgen.codegen.naming), in order."""
    names = _keyword_only(fn)[-len(cf.wrt):] if cf.wrt else []
    return dict(zip(names, (t[p] for p in cf.wrt)))


def _like(value, rng):
    if fields_of(value) is not None:
        return _fields_map(lambda v: _like(v, rng), value)
    if isinstance(value, (list, tuple)):
        return type(value)(_like(v, rng) for v in value)
    if isinstance(value, dict):
        return {k: _like(v, rng) for k, v in value.items()}
    return rng.standard_normal(np.shape(value)) if np.ndim(value) else float(rng.standard_normal())


def _units(point, wrt):
    """A unit direction per element of the differentiated parameters, in C order."""
    for p in wrt:
        shape = np.shape(point[p])
        for k in range(int(np.prod(shape))):
            unit = {q: (np.zeros(np.shape(point[q])) if np.ndim(point[q]) else 0.0) for q in wrt}
            if shape:
                unit[p] = np.zeros(shape)
                unit[p].flat[k] = 1.0
            else:
                unit[p] = 1.0
            yield unit


def _moved(point, t, h):
    return {**point, **{p: _axpy(point[p], v, h) for p, v in t.items()}}


def _axpy(x, t, h):
    if fields_of(x) is not None:
        return _fields_map(lambda a, b: _axpy(a, b, h), x, t)
    if isinstance(x, (list, tuple)):
        return type(x)(_axpy(a, b, h) for a, b in zip(x, t))
    if isinstance(x, dict):
        return {k: _axpy(x[k], t[k], h) for k in x}
    return x + h * t if np.ndim(x) else float(x) + h * t


def _along(g, point):
    """d/dh g(h) at 0, central differences at two steps combined (Richardson)."""
    def central(h):
        return (np.asarray(g(h), float) - np.asarray(g(-h), float)) / (2 * h)
    h = 1e-4
    return (4 * central(h / 2) - central(h)) / 3


def _fields_map(f, x, *others):
    """A NamedTuple or dataclass like x, f applied to each field that is no data (of x and
    of the same field of each of `others`); its data fields as x has them."""
    names = [n for n in fields_of(x) if not is_data(x, n)]
    parts = {n: f(getattr(x, n), *(getattr(o, n) for o in others)) for n in names}
    return x._replace(**parts) if isinstance(x, tuple) else dataclasses.replace(x, **parts)


def _flat(value):
    names = fields_of(value)
    if names is not None:
        parts = [_flat(getattr(value, n)) for n in names if not is_data(value, n)]
        return np.concatenate(parts) if parts else np.zeros(0)
    if isinstance(value, (list, tuple)):
        return np.concatenate([_flat(v) for v in value]) if value else np.zeros(0)
    if isinstance(value, dict):
        return np.concatenate([_flat(v) for v in value.values()]) if value else np.zeros(0)
    return np.ravel(np.asarray(value, float))


def _dot(a, b):
    return float(np.dot(_flat(a), _flat(b)))


def _rel(got, want):
    got, want = np.asarray(got, float), np.asarray(want, float)
    if got.shape != want.shape:
        return float("inf")
    scale = 1.0 + float(np.max(np.abs(want), initial=0.0))
    return float(np.max(np.abs(got - want), initial=0.0)) / scale


def format_kinds(reports):
    """A table per generated function, as for the gradient: point | checked against |
    relative error | ok, then its verdict."""
    lines = []
    for r in reports:
        lines.append(f"{r.name} ({r.kind}): {'ok' if r.ok else 'MISMATCH'}" + ("" if r.rows else
                                                                            " (no point to check at)"))
        table = [("point", "checked against", "relative error", "ok")]
        table += [(str(row.point), row.what.removeprefix("against "), f"{row.error:.1e}", "ok" if row.ok else "FAIL")
                  for row in r.rows]
        widths = [max(len(t[i]) for t in table) for i in range(3)]
        lines += ["    " + " | ".join(c.ljust(w) for c, w in zip(t, widths)) + " | " + t[3] for t in table
                  if r.rows]
    return lines
