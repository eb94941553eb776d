"""`gradgen check` of functions that use custom rules or `gradgen.stop_gradient`.

Two things change there (gradgen/verify/check.py calls `prepare` at each point):

* Each custom rule is checked on its own, by name: at the point, the rule is called at the
  inputs the function passes its custom function, with a random upstream gradient g, and
  each contribution is compared (along a random direction, for an array) with central
  finite differences of `<g, f(...)>` in that input. A rule that disagrees is a failed row
  `rule safe_log_vjp: x` whose note says `custom rule safe_log_vjp disagrees with finite
  differences of safe_log in 'x' (line 9)`. A rule marked `estimator=True` is shown, not
  compared.
* Finite differences of the whole function are taken of an oracle where the deliberate
  departures from the derivative are the ones the generated code makes: every
  `stop_gradient` returns the value it returned at the point (a constant), and every call of
  an estimator returns its value at the point plus the linear map its rule gives (the rule's
  Jacobian, built from one rule call per element of the value), applied to the change of
  its inputs. Calls are matched by their order, so a step that changes which calls run has
  no finite difference. A function without either is differenced as it is: a custom rule
  that is wrong then shows in its parameters' rows too.

The runtime hooks: gradgen.custom's `_stop_hook`, and the custom functions replaced, while
the function runs under the oracle, by wrappers in the module the function reads them from.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import sys
import types
from dataclasses import dataclass, field, replace

import numpy as np

from gradgen import custom
from gradgen.frontend import custom_calls
from gradgen.verify.finite import difference
from gradgen.verify.report import Row, judge
from gradgen.verify.usercode import fresh

MAX_ESTIMATOR_ELEMENTS = 4096  # an estimator's value: its Jacobian is built one row per element
NOT_COMPARED = "not compared"  # a Row's fd_verdict for an estimator's row (its note is shown with "ok")


@dataclass
class Plan:
    """The custom functions (name -> custom_calls.Custom) and whether stop_gradient is used."""

    customs: dict = field(default_factory=dict)
    stops: bool = False


def plan(fn):
    """What the check of IR function `fn` must account for, or None if nothing."""
    found = Plan()
    for call in custom_calls.calls_in(fn):
        if call.prim == "stop_gradient":
            found.stops = True
        else:
            rule = dict(call.params)["rule"]
            found.customs[rule.custom.name] = rule.custom
    return found if found.customs or found.stops else None


def prepare(cf, f, point):
    """The Session of function `f` (compiled as `cf`) at `point`, recorded; None when `cf`
    uses neither custom rules nor stop_gradient, or `f` raises at the point."""
    p = plan(cf.ir)
    if p is None:
        return None
    user = getattr(getattr(f, "__wrapped__", f), "__globals__", {})
    session = Session(p, f, user)
    try:
        session.record(point)
    except Exception:  # noqa: BLE001 - the user's function at the point: reported by the rows as it is
        return None
    return session


class Session:
    """The calls of custom functions and stop_gradient `f` makes at one point, recorded, and
    `f` replayed around that point as the oracle of finite differences."""

    def __init__(self, plan_, f, user):
        self.plan, self.f, self.user = plan_, f, user
        self.namespaces = _namespaces(user)
        self.functions = {}
        for name in plan_.customs:
            found = [ns[name] for ns in self.namespaces if callable(ns.get(name)) and hasattr(ns[name], "defvjp")]
            if found:
                self.functions[name] = found[0]
        self.frozen, self.linear, self.calls = [], [], {}
        self.replaying, self.depth, self.next_stop, self.next_linear = False, 0, 0, 0
        self.estimators = any(c.estimator for c in plan_.customs.values())

    # ---- running f under the hooks ---------------------------------------------------------
    def record(self, point):
        with self._hooks():
            self.f(**fresh(point))

    def oracle(self, **kw):
        """`f` with every stop_gradient value held and every estimator linearised (see above)."""
        self.replaying, self.next_stop, self.next_linear = True, 0, 0
        try:
            with self._hooks():
                value = self.f(**kw)
        finally:
            self.replaying = False
        if self.next_stop != len(self.frozen) or self.next_linear != len(self.linear):
            raise _Diverged("the step changed which calls run")
        return value

    @property
    def needs_oracle(self):
        return self.plan.stops or self.estimators

    @contextlib.contextmanager
    def _hooks(self):
        before, custom._stop_hook = custom._stop_hook, self._stop
        bound = [(ns, name, fn) for name, fn in self.functions.items() for ns in self.namespaces if ns.get(name) is fn]
        for ns, name, fn in bound:
            ns[name] = self._wrapper(name, fn)
        try:
            yield
        finally:
            custom._stop_hook = before
            for ns, name, fn in bound:
                ns[name] = fn

    def _stop(self, x):
        if self.depth:  # inside a custom function: its own body, as it is
            return x
        if not self.replaying:
            self.frozen.append(np.copy(x) if isinstance(x, np.ndarray) else x)
            return x
        if self.next_stop >= len(self.frozen):
            raise _Diverged("more stop_gradient calls than at the point")
        value = self.frozen[self.next_stop]
        self.next_stop += 1
        return np.copy(value) if isinstance(value, np.ndarray) else value

    def _wrapper(self, name, fn):
        estimator = self.plan.customs[name].estimator

        def call(*args, **kwargs):
            if self.depth:
                return fn(*args, **kwargs)
            inputs = _inputs(fn, args, kwargs)
            if estimator and self.replaying:
                if self.next_linear >= len(self.linear):
                    raise _Diverged("more estimator calls than at the point")
                self.next_linear += 1
                return self.linear[self.next_linear - 1](inputs)
            self.depth += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                self.depth -= 1
            if not self.replaying:
                self.calls.setdefault(name, []).append(([_copy(x) for x in inputs], _copy(out)))
                if estimator:
                    self.linear.append(_linearised(fn.gradgen_rule, inputs, out))
            return out

        return call

    # ---- the rules, one by one --------------------------------------------------------------
    def rule_rows(self):
        """A row per custom rule and input, at the first call the function made at the point."""
        rows = []
        for name, calls in self.calls.items():
            fn, spec = self.functions[name], self.plan.customs[name]
            if getattr(fn, "gradgen_rule", None) is None:
                continue
            inputs, out = calls[0]
            rows += _rule_rows(spec, fn, inputs, out)
        return rows


class _Diverged(Exception):
    """A step of finite differences ran other custom calls than the point did."""


def _inputs(fn, args, kwargs):
    """The call's inputs in the function's parameter order, defaults filled in."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return list(bound.arguments.values())


def _copy(x):
    return np.copy(x) if isinstance(x, np.ndarray) else x


def _differentiable(x):
    return isinstance(x, (float, np.floating, np.ndarray)) and np.asarray(x).dtype.kind == "f" \
        or isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _contributions(value, n):
    """A rule's result as n contributions (one may be returned bare, or as a 1-tuple)."""
    if n == 1 and not (isinstance(value, tuple) and len(value) == 1):
        return (value,)
    if not isinstance(value, tuple) or len(value) != n:
        raise ValueError(f"the rule returned {type(value).__name__}, not {n} contributions")
    return value


def _linearised(rule, inputs, out):
    """x -> out + J (x - inputs), J the Jacobian the rule gives at `inputs` (rule(e_k) for
    each element e_k of the value), for finite differences through an estimator."""
    shape, size = np.shape(out), int(np.size(out))
    if rule is None or size > MAX_ESTIMATOR_ELEMENTS:
        def unavailable(new_inputs):
            raise _Diverged("no rule to linearise")
        return unavailable
    n = len(inputs)
    rows = []
    for k in range(size):
        e = np.zeros(size)
        e[k] = 1.0
        g = e.reshape(shape) if shape else 1.0
        rows.append([None if c is None else np.ravel(np.asarray(c, dtype=float))
                     for c in _contributions(rule(g, out, *inputs), n)])
    jacobians = [None if any(r[i] is None for r in rows) or not _differentiable(inputs[i])
                 else np.stack([r[i] for r in rows]) for i in range(n)]
    base = [_copy(x) for x in inputs]

    def linear(new_inputs):
        change = np.zeros(size)
        for J, x, x0 in zip(jacobians, new_inputs, base):
            if J is not None:
                change = change + J @ np.ravel(np.asarray(x, dtype=float) - np.asarray(x0, dtype=float))
        return out + (change.reshape(shape) if shape else float(change[0]))

    return linear


def _namespaces(user):
    """Where a custom function may be called by name: the user's module, and the modules of
    the user's other files it imports (`import rules as r; r.softclip(x)`) or defines
    its functions in (a helper of rules.py that calls softclip)."""
    found = [user]
    for value in list(user.values()):
        module = value if isinstance(value, types.ModuleType) else sys.modules.get(getattr(value, "__module__", None)
                                                                                   or "")
        if module is not None and getattr(module, "__file__", None) and not any(vars(module) is ns for ns in found):
            found.append(vars(module))
    return found


def _rule_rows(spec, fn, inputs, out):
    """The rule of custom function `fn` against finite differences of `<g, fn(...)>`."""
    rng = np.random.default_rng(sum(map(ord, spec.rule_name)))
    g = rng.standard_normal(np.shape(out)) if np.ndim(out) else float(rng.uniform(0.5, 1.5))
    try:
        contributions = _contributions(fn.gradgen_rule(g, out, *inputs), len(inputs))
    except Exception as exc:  # noqa: BLE001 - the user's rule: said in its row
        return [Row(f"rule {spec.rule_name}", math.nan, None, None, math.inf, False,
                    f"custom rule {spec.rule_name} raised {type(exc).__name__}: {exc}")]
    rows = []
    for i, (name, x, c) in enumerate(zip(spec.params, inputs, contributions)):
        if c is None or not _differentiable(x):
            continue
        rows.append(_rule_row(spec, fn, inputs, i, name, g, c))
    return rows


def _rule_row(spec, fn, inputs, i, name, g, c):
    label = f"rule {spec.rule_name}: {name}"
    x = inputs[i]
    if np.shape(c) != np.shape(x):
        return Row(label, math.nan, None, None, math.inf, False,
                   f"custom rule {spec.rule_name} returns a contribution of shape {np.shape(c)} for '{name}', "
                   f"whose shape is {np.shape(x)}")

    def along(**kw):
        moved = list(inputs)
        moved[i] = kw[name]
        return float(np.vdot(g, np.asarray(fn(*moved), dtype=float)))

    direction = None
    if np.ndim(x):
        direction = np.random.default_rng(i).standard_normal(np.shape(x))
        direction /= np.linalg.norm(direction) or 1.0
    generated = float(np.vdot(c, direction)) if direction is not None else float(c)
    start = np.asarray(x, dtype=float) if np.ndim(x) else float(x)
    row = judge(label, generated, None, difference(along, {name: start}, name, direction))
    if spec.estimator:
        return replace(row, ok=True, note="a marked estimator: not compared", fd_verdict=NOT_COMPARED)
    if not row.ok:
        row.note = (f"custom rule {spec.rule_name} disagrees with finite differences of {spec.name} in "
                    f"'{name}' ({spec.rule_line}); a deliberate estimator is marked "
                    "@gradgen.custom_vjp(estimator=True)")
    return row
