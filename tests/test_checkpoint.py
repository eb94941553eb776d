"""Binomial checkpointing (`gradgen compile --checkpoint K`): the gradient equals the taped
one, the schedule reverses every trip once with at most K states and the least
recomputation, the option is recorded and kept, and the loops it cannot take say why."""

import functools
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import gradgen
from gradgen.codegen import checkpointing
from gradgen.tools.files import compile_file

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden_checkpoint"

PROGRAMS = '''
import numpy as np


def heat(kappa, u0, *, steps, target):
    u = np.copy(u0)
    for t in range(steps):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum((u - target) ** 2)


def strided(a, b, *, steps):
    s = 0.5
    for i in range(3, 3 + 4 * steps, 4):
        s = np.sin(a * s + 0.1 * i) * b
    return s


def rows(w, X):
    h = 0.0
    for x in X:
        h = np.tanh(w * h + np.sum(x))
    return h


def before(a, *, steps):
    h = a * a
    z = h * h
    for i in range(steps):
        h = np.cos(a * i)
        z = z + h * z
    return z + h


def returned(a, x0, *, steps):
    x = x0
    for i in range(steps):
        x = x - 0.1 * (x**3 - a)
    return x


def branched(a, *, steps):
    x = 1.0
    for i in range(steps):
        if x > 0.5:
            x = x * a - 0.3
        else:
            y = np.exp(x)
            x = x + 0.2 * y * a
    return x


def first_bound_inside(a, *, steps):
    s = 0.0
    for i in range(steps):
        if i > 0:
            s = s + y * a
        y = np.sin(a * i + s)
    return s


def nested(a, *, steps):
    x = 0.3
    for i in range(steps):
        for j in range(3):
            x = np.sin(x * a + j)
    return x
'''


@functools.lru_cache(maxsize=None)
def _modules(source, filename, function, snapshots):
    plain = gradgen.load_module(gradgen.compile_source(source, filename, functions=[function], wrt="all").text, "plain")
    compiled = gradgen.compile_source(source, filename, functions=[function], checkpoint=snapshots, wrt="all")
    return plain, gradgen.load_module(compiled.text, "checkpointed"), compiled


def _same_gradients(source, filename, function, snapshots, args, kwargs):
    plain, checkpointed, _ = _modules(source, filename, function, snapshots)
    for kind in ("grad", "value_and_grad"):
        expected = getattr(plain, f"{function}_{kind}")(*args, **kwargs)
        got = getattr(checkpointed, f"{function}_{kind}")(*args, **kwargs)
        for e, g in zip(_leaves(expected), _leaves(got), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=0)


def _leaves(value):
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


TRIPS = [0, 1, 2, 7, 100]
SNAPSHOTS = [1, 2, 3, 1000]


@pytest.mark.parametrize("trips", TRIPS)
@pytest.mark.parametrize("snapshots", SNAPSHOTS)
def test_ode_fit(trips, snapshots):
    source = (ROOT / "examples" / "ode_fit.py").read_bytes()
    _same_gradients(source, "examples/ode_fit.py", "loss", snapshots, (1.5, 0.7, 0.2), {"N_STEPS": trips})


@pytest.mark.parametrize("trips", TRIPS)
@pytest.mark.parametrize("snapshots", SNAPSHOTS)
def test_kalman_filter(trips, snapshots):
    source = (ROOT / "benchmarks" / "gradbench" / "kalman.py").read_bytes()
    y = np.random.default_rng(trips).standard_normal(trips)
    _same_gradients(source, str(ROOT / "benchmarks" / "gradbench" / "kalman.py"), "objective", snapshots,
                    (0.8, np.log(0.1), np.log(0.2)), {"y": y})


@pytest.mark.parametrize("trips", TRIPS)
@pytest.mark.parametrize("snapshots", SNAPSHOTS)
@pytest.mark.parametrize("function", ["heat", "strided", "rows", "before", "returned", "branched", "nested",
                                      "first_bound_inside"])
def test_programs(function, trips, snapshots):
    rng = np.random.default_rng(7)
    n = 12
    args, kwargs = {
        "heat": ((0.2, np.sin(np.linspace(0, 3, n))), {"steps": trips, "target": np.cos(np.linspace(0, 3, n))}),
        "strided": ((0.7, 0.9), {"steps": trips}),
        "rows": ((0.7, rng.standard_normal((trips, 3))), {}),
        "before": ((0.4,), {"steps": trips}),
        "returned": ((1.3, 0.4), {"steps": trips}),
        "branched": ((0.9,), {"steps": trips}),
        "nested": ((0.8,), {"steps": trips}),
        "first_bound_inside": ((0.8,), {"steps": trips}),
    }[function]
    _same_gradients(PROGRAMS, "programs.py", function, snapshots, args, kwargs)


def test_heat_equation_keeps_copies_of_the_state_it_writes_into():
    _, _, compiled = _modules(PROGRAMS, "programs.py", "heat", 2)
    assert "            snapshots[trip] = np.copy(u)[()]\n" in compiled.text
    assert "            u = snapshots[trip]\n            u = np.copy(u)[()]\n" in compiled.text
    assert "u_stack.append(np.copy(u))" in compiled.text.split("# backward pass")[2]  # (the tape: backward only)


def test_the_loop_state_is_what_a_trip_reads_before_it_writes_it():
    source = (ROOT / "benchmarks" / "gradbench" / "kalman.py").read_bytes()
    text = gradgen.compile_source(source, str(ROOT / "benchmarks" / "gradbench" / "kalman.py"),
                                  functions=["objective"], checkpoint=8).text
    assert "(checkpointed: at most 8 states of mean, variance)" in text
    assert "            snapshots[trip] = (mean, variance)\n" in text


# ---- the schedule ------------------------------------------------------------------------

def _schedule():
    namespace = {"np": np}
    for _, source in checkpointing.HELPERS.values():
        exec(source, namespace)
    return namespace["checkpoint_schedule"]


@functools.lru_cache(maxsize=None)
def _fewest(trips, states):
    """The fewest trips run again to reverse `trips` trips from a kept state at their start,
    with `states` states (that one included): every split tried."""
    if trips <= 1:
        return 0
    if states == 1:
        return trips * (trips - 1) // 2
    return min(m + _fewest(trips - m, states - 1) + _fewest(m, states) for m in range(1, trips))


def _walk(trips, snapshots):
    """The schedule run on stand-in states: (trips run again in the backward pass, the last
    state the forward pass kept); asserts every action finds the state it needs."""
    stored, actions = _schedule()(trips, snapshots)
    kept = {t: t for t in stored}
    assert len(kept) <= snapshots
    state, reversed_, again = trips, [], 0
    for action, trip, stop in actions:
        if action == "restore":
            state = kept[trip]
        elif action == "store":
            assert state == trip
            kept[trip] = state
        elif action == "forget":
            del kept[trip]
        elif action == "advance":
            assert state == trip < stop
            state, again = stop, again + stop - trip
        else:
            assert action == "reverse" and state == trip and stop == trip + 1
            reversed_.append(trip)
            state = None
        assert len(kept) <= snapshots
    assert reversed_ == list(range(trips))[::-1]
    return again, max(stored, default=0)


@pytest.mark.parametrize("snapshots", range(1, 7))
def test_schedule_reverses_each_trip_once_with_the_least_recomputation(snapshots):
    for trips in range(0, 90):
        again, last = _walk(trips, snapshots)
        # the forward pass ran every trip and kept `last`: the schedule runs again what the optimal
        # one does after its first sweep, from there
        assert again == _fewest(trips, snapshots) - last, (trips, snapshots)


def test_schedule_within_the_binomial_bound_for_long_loops():
    trips, snapshots = 100_000, 32
    again, _ = _walk(trips, snapshots)
    r = next(r for r in range(1, 20) if math.comb(snapshots + r, r) >= trips)
    assert r == 5
    assert again <= r * trips - math.comb(snapshots + r, r - 1)


def test_schedule_of_as_many_states_as_trips_runs_no_trip_again():
    stored, actions = _schedule()(7, 7)
    assert stored == set(range(7))
    assert not [a for a in actions if a[0] == "advance"]


# ---- the option ---------------------------------------------------------------------------

def test_golden_checkpointed_module():
    source = (ROOT / "examples" / "ode_fit.py").read_bytes()
    text = gradgen.compile_source(source, "examples/ode_fit.py", checkpoint=8).text
    assert text == (GOLDEN / "ode_fit_grad.py").read_text(encoding="utf-8"), (
        "run `python tests/regenerate_goldens.py` and review the diff")


def test_the_header_records_the_option_and_a_plain_recompile_keeps_it(tmp_path):
    source = tmp_path / "ode_fit.py"
    shutil.copy(ROOT / "examples" / "ode_fit.py", source)
    out = tmp_path / "generated"
    compile_file(str(source), str(out), checkpoint="4", wrt="all")
    first = (out / "ode_fit_grad.py").read_text()
    assert f"# Do not edit: run `gradgen compile {source} --out-dir {out} --checkpoint 4`" in first or \
        f"--checkpoint 4` again instead." in first.splitlines()[1]
    source.write_text(source.read_text().replace("N_STEPS = 200", "N_STEPS = 300"))
    compile_file(str(source), str(out), wrt="all")
    again = (out / "ode_fit_grad.py").read_text()
    assert "checkpoint_schedule(len(range(N_STEPS)), 4)" in again and "N_STEPS = 300" in again
    compile_file(str(source), str(out), checkpoint="auto", memory="2MB", wrt="all")
    auto = (out / "ode_fit_grad.py").read_text()
    assert "--checkpoint auto --memory 2MB` again instead." in auto.splitlines()[1]
    assert "snapshots_within(2000000, x)" in auto
    compile_file(str(source), str(out), wrt="all")
    assert (out / "ode_fit_grad.py").read_text() == auto
    compile_file(str(source), str(out), checkpoint="none", wrt="all")
    assert "checkpoint" not in (out / "ode_fit_grad.py").read_text()


def test_auto_fits_the_states_in_the_budget():
    source = PROGRAMS.replace("def heat(", "def heat_auto(")
    compiled = gradgen.compile_source(source, "programs.py", functions=["heat_auto"], checkpoint="auto",
                                      memory="800", wrt="all")
    module = gradgen.load_module(compiled.text, "auto")
    assert module.snapshots_within(800, np.zeros(20)) == 5
    assert module.snapshots_within(10, np.zeros(20)) == 1
    plain, _, _ = _modules(PROGRAMS, "programs.py", "heat", 2)
    u0, target = np.sin(np.linspace(0, 3, 20)), np.cos(np.linspace(0, 3, 20))
    expected = plain.heat_grad(0.2, u0, steps=30, target=target)
    got = module.heat_auto_grad(0.2, u0, steps=30, target=target)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-12)


@pytest.mark.parametrize("checkpoint, memory, message", [
    ("0", None, "--checkpoint takes the number of states to keep (1 or more), 'auto' or 'none', not '0'"),
    ("two", None, "--checkpoint takes the number of states to keep (1 or more), 'auto' or 'none', not 'two'"),
    ("3", "1MB", "--memory is the budget of --checkpoint auto, not of --checkpoint 3"),
    (None, "1MB", "--memory is the budget of --checkpoint auto: give --checkpoint auto too"),
    ("auto", "lots", "--memory takes a size such as 256MB, 2GB or a number of bytes, not 'lots'"),
])
def test_option_errors(checkpoint, memory, message):
    with pytest.raises(gradgen.CompileError) as info:
        gradgen.compile_source(PROGRAMS, "programs.py", functions=["heat"], checkpoint=checkpoint, memory=memory, wrt="all")
    assert info.value.message == message


def test_a_while_loop_is_refused_where_it_is():
    source = "def f(a, x0=0.5):\n    x = x0\n    while abs(x**3 - a) > 1e-3:\n        x = x - 0.1 * (x**3 - a)\n" \
             "    return x\n"
    with pytest.raises(gradgen.CompileError) as info:
        gradgen.compile_source(source, "w.py", functions=["f"], checkpoint=2, wrt="all")
    assert (info.value.line, info.value.col) == (3, 5)
    assert info.value.message == (
        "--checkpoint: this while loop keeps a tape of every trip, and how many trips it makes is unknown on "
        "entry, so no schedule can be made for it; where the count is known, write it as a for loop over "
        "range(n) (with no break: a loop that can stop early keeps its tape), or compile without --checkpoint")


def test_a_loop_that_can_break_keeps_its_tape_and_says_so():
    source = ("def f(a, x0=0.5):\n    x = x0\n    for i in range(100):\n        x = x - 0.1 * (x**3 - a)\n"
              "        if abs(x**3 - a) < 1e-3:\n            break\n    return x\n")
    compiled = gradgen.compile_source(source, "b.py", functions=["f"], checkpoint=2, wrt="all")
    assert compiled.functions[0].notes == [(3, "line 3: the loop keeps its tape: it can stop early (a break or a "
                                               "return in it), so its trip count is unknown on entry")]
    assert "checkpoint_schedule" not in compiled.text
    module = gradgen.load_module(compiled.text, "b")
    plain = gradgen.load_module(gradgen.compile_source(source, "b.py", functions=["f"], wrt="all").text, "b0")
    assert module.f_grad(1.3) == plain.f_grad(1.3)


@pytest.mark.parametrize("body", ["        t -= math.exp(math.cosh(0.1 * t))\n        continue\n",
                                  "        a = a - b\n        if i == 1:\n            continue\n        b += a + a\n"])
def test_a_loop_that_can_continue_keeps_its_tape_and_says_so(body):
    """Soak seed 30000 #252, #1607: replayed inside the schedule's loop, the trip's `continue`
    skipped its adjoint (dt/da 1.0 for -23.8)."""
    source = f"import math\n\n\ndef f(a=1.3, b=-0.2):\n    t = a\n    for i in range(4):\n{body}    return t + b\n"
    compiled = gradgen.compile_source(source, "c.py", checkpoint=2)
    assert compiled.functions[0].notes == [(6, "line 6: the loop keeps its tape: a continue in it ends a trip early, "
                                               "which the replay of one trip does not follow")]
    plain = gradgen.load_module(gradgen.compile_source(source, "c.py").text, "c0")
    assert gradgen.load_module(compiled.text, "c").f_grad() == plain.f_grad()


def test_a_loop_reading_a_name_bound_again_after_it_keeps_its_tape():
    """Soak seed 33004 #1616 (also 33003 #1190, #1307): the loop runs over `data`, and `data = xi`
    after it; the backward pass ran its trips again over the later data (a float: no len()).
    In the value-and-gradient function only too (`z = np.tanh(data)` after a loop reading z)."""
    source = ("import numpy as np\n\n\ndef f(w, *, data) -> float:\n    total = 0.0\n    for row in data:\n"
              "        total = np.tanh(total + np.sum(w * row))\n    for k in range(2):\n        data = 2.0\n    return total * data\n")
    compiled = gradgen.compile_source(source, "r.py", checkpoint=2)
    assert compiled.functions[0].notes == [(6, "line 6: the loop keeps its tape: it reads data, bound again after "
                                               "it, which running its trips again would not see")]
    data, w = np.array([[0.5, -1.0], [1.5, 0.2], [0.3, 0.3]]), np.array([0.4, -0.7])
    plain = gradgen.load_module(gradgen.compile_source(source, "r.py").text, "r0")
    np.testing.assert_array_equal(gradgen.load_module(compiled.text, "r").f_grad(w, data=data), plain.f_grad(w, data=data))


def test_the_live_api_takes_the_option():
    from tests import checkpoint_live

    g = gradgen.grad(checkpoint_live.euler, checkpoint=3)
    assert "checkpoint_schedule(len(range(steps)), 3)" in g.source
    plain = gradgen.grad(checkpoint_live.euler)
    np.testing.assert_allclose(g(1.5, 0.7, steps=40), plain(1.5, 0.7, steps=40), rtol=1e-12)


def test_the_command_line_help_names_it(capsys):
    from gradgen.tools.cli import main

    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--checkpoint K long loops in bounded memory" in help_text
    assert "--memory SIZE the budget of --checkpoint auto's states (default 256MB)" in help_text


def test_a_value_the_tape_keeps_only_for_its_shape_is_part_of_the_state():
    """Soak seed 36000 #1085: `for i, row in H: x = row` reads no x, so the state was empty; the
    adjoint of `x = row` reads the x the trip found (its gradient is zeros of that shape), and a
    reversed first trip found the last row's x, not the parameter: d/dx came back 0.0, not
    [0, 0, 0]. What the tape keeps from before a trip is state."""
    source = "import numpy as np\n\n\ndef f(x, H):\n    for row in H:\n        x = row * x[0]\n    return np.sum(x)\n"
    source2 = "import numpy as np\n\n\ndef f(x, H):\n    for i, row in H:\n        x = row\n    return np.sum(x)\n"
    x, H = np.array([-1.2, 1.1, 0.3]), np.array([[1.1, 0.6], [0.7, -1.1], [0.2, 0.4]])
    for text in (source, source2):
        plain = gradgen.load_module(gradgen.compile_source(text, "x.py", wrt="all").text, "x0")
        checked = gradgen.load_module(gradgen.compile_source(text, "x.py", wrt="all", checkpoint=2).text, "x2")
        for got, want in zip(checked.f_grad(x, H), plain.f_grad(x, H)):
            assert np.shape(got) == np.shape(want)
            np.testing.assert_allclose(got, want, rtol=1e-12)
    assert "(checkpointed: at most 2 states of x)" in gradgen.compile_source(source2, "x.py", wrt="all", checkpoint=2).text


def test_the_benchmark_runs_and_its_two_gradients_agree():
    """benchmarks/checkpointing.py at a small T (its own runs take minutes): the checkpointed
    and the taped gradient of the heat equation, both parameters (a change of the default
    parameters once left it with d/dkappa alone, found only 40 minutes into a 10^6-step run)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_ckpt", Path(__file__).parent.parent / "benchmarks" / "checkpointing.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    taped, checked = bench.run_gradgen(30, None), bench.run_gradgen(30, 4)
    assert np.shape(checked["du0"]) == (bench.N,)
    np.testing.assert_allclose(checked["du0"], taped["du0"], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(checked["dkappa"], taped["dkappa"], rtol=1e-12)
