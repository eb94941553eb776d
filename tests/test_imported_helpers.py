"""Helpers imported from the user's own files beside the compiled one (`from model import
predict`, `import model as m`): read, never run, inlined with their names resolved in their
own file; the header records each file read, and `status` notices when one changes."""

from __future__ import annotations

import numpy as np
import pytest

from gradgen import CompileError, compile_source
from gradgen.tools.cli import main
from gradgen.codegen import freshness
from gradgen.verify.check import check_source

MODEL = '''import numpy as np

SCALE = 2.0


def predict(w, x):
    return np.tanh(SCALE * x @ w)


def shift(v, by=SCALE):
    return v + by
'''

LOSS = '''import numpy as np
from {name} import predict, SCALE as K
import {name} as m

SCALE = 5.0


def loss(w, *, x, y):
    r = predict(w, x) - y
    return np.sum(r ** 2) + m.SCALE * np.sum(m.shift(m.predict(w, x))) + K
'''


def _project(tmp_path, name, model=MODEL, loss=LOSS):
    (tmp_path / f"{name}.py").write_text(model)
    path = tmp_path / "loss.py"
    path.write_text(loss.format(name=name))
    return path


def _point():
    rng = np.random.default_rng(0)
    return {"w": rng.normal(size=3), "x": rng.normal(size=(4, 3)), "y": rng.normal(size=4)}


def test_a_helper_imported_both_ways_is_inlined_and_its_gradient_checks(tmp_path):
    path = _project(tmp_path, "model_both")
    compiled = compile_source(path.read_text(), str(path))
    assert "import model_both" not in compiled.text and "from model_both" not in compiled.text
    assert "5.0" not in compiled.text  # the caller's SCALE is not the one predict reads
    (report,) = check_source(path.read_text(), str(path), at=_point())
    assert report.ok
    # the value: model's constants, model's default
    namespace = {}
    exec(compile(compiled.text, "loss_grad.py", "exec"), namespace)
    p = _point()
    value, _ = namespace["loss_value_and_grad"](p["w"], x=p["x"], y=p["y"])
    t = np.tanh(2.0 * p["x"] @ p["w"])
    assert value == pytest.approx(np.sum((t - p["y"]) ** 2) + 2.0 * np.sum(t + 2.0) + 2.0)


def test_a_package_module_and_an_import_of_an_import(tmp_path):
    (tmp_path / "pkg_a").mkdir()
    (tmp_path / "pkg_a" / "__init__.py").write_text("")
    (tmp_path / "pkg_a" / "layers.py").write_text("import numpy as np\nfrom util_a import square\n\n\n"
                                                  "def energy(w):\n    return np.sum(square(w))\n")
    (tmp_path / "util_a.py").write_text("P = 3.0\n\n\ndef square(v):\n    return P * v * v\n")
    path = tmp_path / "loss.py"
    path.write_text("from pkg_a.layers import energy as e\n\n\ndef loss(w):\n    return e(w)\n")
    compiled = compile_source(path.read_text(), str(path))
    header = freshness.read_header(compiled.text.encode())
    assert [p for p, _ in header.imported] == [str(tmp_path / "pkg_a" / "__init__.py"),
                                               str(tmp_path / "pkg_a" / "layers.py"), str(tmp_path / "util_a.py")]
    (report,) = check_source(path.read_text(), str(path), at={"w": np.array([0.5, -1.0])})
    assert report.ok


def test_an_error_inside_the_imported_helper_is_located_in_its_file(tmp_path):
    path = _project(tmp_path, "model_bad", model="def predict(w, x):\n    global q\n    return w * x\n",
                    loss="from {name} import predict\n\n\ndef loss(w, *, x):\n    return predict(w, x)\n")
    with pytest.raises(CompileError) as caught:
        compile_source(path.read_text(), str(path), functions=["loss"])
    assert caught.value.format() == (f"{tmp_path / 'model_bad.py'}:2:5: 'global' is not supported\n"
                                     "        global q\n        ^")


def test_a_cycle_of_imports_is_read_once_and_recursion_through_it_refused(tmp_path):
    (tmp_path / "cyc_a.py").write_text("from cyc_b import g\n\n\ndef f(x):\n    return g(x) + 1\n")
    (tmp_path / "cyc_b.py").write_text("import cyc_a\n\n\ndef g(x):\n    return 2 * x\n\n\n"
                                       "def h(x):\n    return cyc_a.f(x)\n")
    path = tmp_path / "loss.py"
    path.write_text("from cyc_a import f\nfrom cyc_b import h\n\n\ndef loss(x):\n    return f(x) * x\n\n\n"
                    "def loss2(x):\n    return h(x) + x\n")
    compiled = compile_source(path.read_text(), str(path))
    assert [p for p, _ in freshness.read_header(compiled.text.encode()).imported] == [
        str(tmp_path / "cyc_a.py"), str(tmp_path / "cyc_b.py")]
    reports = check_source(path.read_text(), str(path), at={"x": 0.7})
    assert [r.name for r in reports] == ["loss", "loss2"] and all(r.ok for r in reports)
    (tmp_path / "cyc_b.py").write_text("import cyc_a\n\n\ndef g(x):\n    return cyc_a.f(x)\n")
    with pytest.raises(CompileError) as caught:
        compile_source(path.read_text(), str(path), functions=["loss"])
    assert caught.value.format() == (f"{tmp_path / 'cyc_b.py'}:5:12: recursive call to 'f' on a depth known only "
                                     "when it runs: write it as a loop\n        return cyc_a.f(x)\n               ^")


def test_a_module_that_is_no_file_beside_it_has_no_rule(tmp_path):
    path = tmp_path / "loss.py"
    path.write_text("from thirdparty_lib import sq\n\n\ndef f(x):\n    return sq(x)\n")
    with pytest.raises(CompileError) as caught:
        compile_source(path.read_text(), str(path))
    assert caught.value.format() == (
        f"{path}:5:12: no derivative rule for 'sq' on the value of 'x' (a differentiated parameter); 'sq' comes "
        "from 'thirdparty_lib', which gradgen does not read: it differentiates functions of this file, of the "
        "files beside it that it imports, and known library functions; copy the function into this file\n"
        "        return sq(x)\n               ^")


def test_a_name_the_imported_file_does_not_define_as_a_function(tmp_path):
    path = _project(tmp_path, "model_cls", model="class Net:\n    pass\n",
                    loss="import {name}\n\n\ndef loss(w):\n    return {name}.Net(w)\n")
    with pytest.raises(CompileError) as caught:
        compile_source(path.read_text(), str(path))
    assert f"'model_cls.Net' names 'Net' of {tmp_path / 'model_cls.py'}, which is a class there" \
        in caught.value.format()


def test_status_notices_an_edit_of_the_imported_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, "model_st")
    out = tmp_path / "generated"
    out.mkdir()
    compiled = compile_source((tmp_path / "loss.py").read_text(), "loss.py")
    (out / "loss_grad.py").write_text(compiled.text)
    assert '# Imported "model_st.py" (sha256 ' in compiled.text
    (entry,) = freshness.status("generated")
    assert entry.state == freshness.FRESH
    (tmp_path / "model_st.py").write_text(MODEL.replace("2.0", "3.0"))
    (entry,) = freshness.status("generated")
    assert (entry.state, entry.reason) == (freshness.STALE, "model_st.py, which the source imports, changed since "
                                           "it was generated; run `gradgen compile loss.py`")
    (tmp_path / "model_st.py").unlink()
    (entry,) = freshness.status("generated")
    assert entry.reason.startswith("model_st.py, which the source imports, is gone")


def test_a_call_without_a_rule_inside_the_imported_helper_is_located_there(tmp_path):
    path = _project(tmp_path, "model_nr", model="import scipy.special as sp\n\n\ndef feats(w):\n"
                                                "    n = sp.comb(5, 2)\n    return sp.erfcx(w) * n\n",
                    loss="import numpy as np\nfrom {name} import feats\n\n\ndef loss(w):\n"
                         "    return np.sum(feats(w))\n")
    with pytest.raises(CompileError) as caught:
        compile_source(path.read_text(), str(path), functions=["loss"])
    assert caught.value.format() == (f"{tmp_path / 'model_nr.py'}:6:12: no derivative rule for 'sp.erfcx' on the "
                                     "value of 'w' (a differentiated parameter)\n        return sp.erfcx(w) * n\n"
                                     "               ^")


# ---- relative imports in a package ---------------------------------------------------------

def _package(tmp_path, top, files):
    """Files under tmp_path/top (a package: an __init__.py in each folder), by relative path."""
    for rel, text in files.items():
        path = tmp_path / top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for folder in [path.parent, *path.parent.parents]:
            if folder == tmp_path:
                break
            if not (folder / "__init__.py").exists():
                (folder / "__init__.py").write_text("")
        path.write_text(text)
    return tmp_path / top


COMMON = "import numpy as np\n\nK = 3.0\n\n\ndef act(v):\n    return np.tanh(K * v)\n"
REL_MODEL = "from ..common import act\n\n\ndef predict(w, x):\n    return act(x @ w)\n"
REL_LOSS = '''import numpy as np
from .model import predict
from . import model
from ..common import act, K as k

K = 100.0


def loss(w, *, x):
    return np.sum(predict(w, x) ** 2) + np.sum(model.predict(w, x)) + k * np.sum(act(w))
'''


def test_relative_imports_resolve_in_the_files_package(tmp_path):
    top = _package(tmp_path, "rel_pkg1", {"common.py": COMMON, "sub/model.py": REL_MODEL, "sub/loss.py": REL_LOSS})
    path = top / "sub" / "loss.py"
    compiled = compile_source(path.read_text(), str(path))
    assert "import rel_pkg1" not in compiled.text and "from ." not in compiled.text and "100.0" not in compiled.text
    assert [p for p, _ in freshness.read_header(compiled.text.encode()).imported] == [
        str(top / "__init__.py"), str(top / "sub" / "__init__.py"), str(top / "sub" / "model.py"),
        str(top / "common.py")]
    p = _point()
    (report,) = check_source(path.read_text(), str(path), at={"w": p["w"], "x": p["x"]})
    assert report.ok
    namespace = {}
    exec(compile(compiled.text, "loss_grad.py", "exec"), namespace)
    value, _ = namespace["loss_value_and_grad"](p["w"], x=p["x"])
    t = np.tanh(3.0 * p["x"] @ p["w"])
    assert value == pytest.approx(np.sum(t ** 2) + np.sum(t) + 3.0 * np.sum(np.tanh(3.0 * p["w"])))


def test_a_relative_import_of_a_name_the_package_init_defines(tmp_path):
    top = _package(tmp_path, "rel_pkg2", {"sub/loss.py": "from . import double\n\n\ndef loss(w):\n"
                                                          "    return double(w) * w\n"})
    (top / "sub" / "__init__.py").write_text("def double(v):\n    return 2.0 * v\n")
    path = top / "sub" / "loss.py"
    (report,) = check_source(path.read_text(), str(path), at={"w": 0.7})
    assert report.ok and report.points[0].value_generated == pytest.approx(0.98)


def test_a_relative_import_above_the_top_package_is_refused_at_its_line(tmp_path):
    top = _package(tmp_path, "rel_pkg3", {"loss.py": "from ..common import act\n\n\ndef loss(w):\n"
                                                     "    return act(w)\n"})
    path = top / "loss.py"
    with pytest.raises(CompileError) as caught:
        compile_source(path.read_text(), str(path))
    assert caught.value.format() == (
        f"{path}:1:1: 'from ..common import act' reaches above the top package 'rel_pkg3': import a module of the "
        "package, or write `from common import act` for a file beside this one\n    from ..common import act\n    ^")
    alone = tmp_path / "alone.py"
    alone.write_text("from .model import predict\n\n\ndef loss(w):\n    return predict(w)\n")
    with pytest.raises(CompileError) as caught:
        compile_source(alone.read_text(), str(alone))
    assert caught.value.format().startswith(
        f"{alone}:1:1: 'from .model import predict' is a relative import, and this file is in no package (no "
        "__init__.py beside it): write `from model import predict`\n")


def test_a_relative_import_of_no_file_is_refused_where_it_is_used(tmp_path):
    top = _package(tmp_path, "rel_pkg4", {"loss.py": "from .missing import f\n\n\ndef loss(w):\n"
                                                     "    return f(w)\n"})
    path = top / "loss.py"
    with pytest.raises(CompileError) as caught:
        compile_source(path.read_text(), str(path))
    assert caught.value.format() == (
        f"{path}:5:12: 'f' is imported from '.missing', which gradgen does not read; copy it into this file\n"
        "        return f(w)\n               ^")


def test_status_notices_an_edit_of_a_file_reached_only_through_a_relative_import(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _package(tmp_path, "rel_pkg5", {"common.py": COMMON, "sub/model.py": REL_MODEL,
                                    "sub/loss.py": "import numpy as np\nfrom .model import predict\n\n\n"
                                                   "def loss(w, *, x):\n    return np.sum(predict(w, x))\n"})
    source = "rel_pkg5/sub/loss.py"
    compiled = compile_source((tmp_path / source).read_text(), source)
    assert '# Imported "rel_pkg5/common.py" (sha256 ' in compiled.text
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "loss_grad.py").write_text(compiled.text)
    (entry,) = freshness.status("generated")
    assert entry.state == freshness.FRESH
    (tmp_path / "rel_pkg5" / "common.py").write_text(COMMON.replace("3.0", "4.0"))
    (entry,) = freshness.status("generated")
    assert (entry.state, entry.reason) == (freshness.STALE, "rel_pkg5/common.py, which the source imports, changed "
                                           "since it was generated; run `gradgen compile rel_pkg5/sub/loss.py`")


# ---- functions of another file as values ---------------------------------------------------

FV_MODEL = '''import numpy as np

K = 2.0


def relu(v):
    return np.maximum(v, 0.0) * K


def soft(v):
    return np.log1p(np.exp(K * v))


def make_loss(p):
    def inner(w):
        return np.sum(soft(w) ** p) * K
    return inner


def make_lam(p):
    return lambda w: K * np.sum(w ** p)


ACTS = (relu, soft)


def total(v):
    t = 0.0
    for f in ACTS:
        t = t + np.sum(f(v))
    return t
'''

FV_LOSS = '''import numpy as np
import {name} as m
from {name} import relu, soft

K = 50.0


def square(v):
    return v * v


def layer(x, W, act):
    return act(x @ W)


def passed(W, *, x):
    return np.sum(layer(x, W, m.relu)) + np.sum(layer(x, W, soft))


def by_default(W, act=m.soft, *, x):
    return np.sum(act(x @ W))


def over_a_tuple(W, *, x):
    total = 0.0
    for f in (relu, m.soft, np.tanh, square):
        total = total + np.sum(f(x @ W))
    return total


def over_a_list(W, *, x):
    acts = [relu, soft, lambda v: m.relu(-v)]
    return sum(np.sum(a(x @ W)) for a in acts) + np.sum(acts[1](W))


def from_factories(W, *, x):
    f = m.make_loss(3)
    g = m.make_lam(2)
    return f(W) + g(W)


def in_a_lambda(W, *, x):
    h = lambda v: m.soft(v) * relu(v)
    return np.sum(h(x @ W))


ACTS = (m.relu, np.tanh, lambda v: K * v)


def module_tuples(W, *, x):
    t = m.total(x @ W)
    for f in ACTS:
        t = t + np.sum(f(W))
    return t
'''


def test_functions_of_another_file_as_values(tmp_path):
    path = _project(tmp_path, "fv_model", model=FV_MODEL, loss=FV_LOSS)
    rng = np.random.default_rng(1)
    point = {"W": rng.normal(size=(3, 2)), "x": rng.normal(size=(4, 3))}
    reports = check_source(path.read_text(), str(path), at=point)
    assert [r.name for r in reports] == ["passed", "by_default", "over_a_tuple", "over_a_list", "from_factories",
                                         "in_a_lambda", "module_tuples"]
    assert all(r.ok for r in reports), [r.name for r in reports if not r.ok]
    compiled = compile_source(path.read_text(), str(path))
    assert "fv_model" not in compiled.text.split('"""', 3)[-1]  # (past the header and docstring: never imported)
    namespace = {}
    exec(compile(compiled.text, "loss_grad.py", "exec"), namespace)
    value, grad = namespace["from_factories_value_and_grad"](point["W"], x=point["x"])
    W = point["W"]  # the factories' K is their file's (2.0), not the caller's (50.0)
    assert value == pytest.approx(np.sum(np.log1p(np.exp(2.0 * W)) ** 3) * 2.0 + 2.0 * np.sum(W ** 2))
    assert grad == pytest.approx(6.0 * np.log1p(np.exp(2.0 * W)) ** 2 * 2.0 / (1 + np.exp(-2.0 * W)) + 4.0 * W)


# ---- custom rules declared in another file -------------------------------------------------

CR_RULES = '''import numpy as np
import gradgen

LIM = 2.0


def _slope(out):
    return 1 - (out / LIM) ** 2


@gradgen.custom_vjp
def softclip(x):
    return LIM * np.tanh(x / LIM)


@softclip.defvjp
def softclip_vjp(g, out, x):
    return g * _slope(out)


def clipped_energy(w):
    return np.sum(softclip(w) ** 2)
'''

CR_LOSS = '''import numpy as np
from {name} import softclip, clipped_energy
import {name} as r

LIM = 100.0


def loss(w):
    y = softclip(w)
    return np.sum(y ** 2) + np.sum(r.softclip(2 * w)) + clipped_energy(3 * w)
'''


def test_a_custom_rule_declared_in_another_file_applies_as_if_written_here(tmp_path):
    path = _project(tmp_path, "cr_rules", model=CR_RULES, loss=CR_LOSS)
    w = np.array([0.3, -1.2, 2.5])
    (report,) = check_source(path.read_text(), str(path), at={"w": w})
    assert report.ok and [row.param for row in report.points[0].rows][-1] == "rule softclip_vjp: x"
    compiled = compile_source(path.read_text(), str(path))
    assert "# custom rule softclip_vjp (cr_rules.py, line 17)" in compiled.text
    assert "import cr_rules" not in compiled.text and "gradgen" not in compiled.text.split('"""', 3)[-1]
    assert compiled.text.count("# custom rule softclip_vjp") == 6  # three calls, in loss_grad and loss_value_and_grad
    assert "(1 - (y / 2.0) ** 2)" in compiled.text  # the rule as written (its helper inlined), LIM of its file
    namespace = {}
    exec(compile(compiled.text, "loss_grad.py", "exec"), namespace)
    _, grad = namespace["loss_value_and_grad"](w)
    slope = lambda v: 1 - np.tanh(v / 2.0) ** 2  # noqa: E731
    expected = 2 * 2.0 * np.tanh(w / 2.0) * slope(w) + 2 * slope(2 * w) \
        + 3 * 2 * 2.0 * np.tanh(3 * w / 2.0) * slope(3 * w)
    assert grad == pytest.approx(expected)


def test_a_wrong_rule_in_another_file_is_reported_with_its_file(tmp_path, capsys):
    path = _project(tmp_path, "cr_wrong", model=CR_RULES.replace("g * _slope(out)", "0.5 * g * _slope(out)"),
                    loss="import numpy as np\nimport {name} as r\n\n\ndef loss(w):\n"
                         "    return np.sum(r.softclip(2 * w) ** 2)\n")
    assert main(["check", str(path), "--at", "w=0.3"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"MISMATCH in loss: custom rule softclip_vjp disagrees with finite differences of softclip in 'x' "
        f"({tmp_path / 'cr_wrong.py'}, line 17); a deliberate estimator is marked @gradgen.custom_vjp(estimator=True)")


def test_a_function_of_this_file_passed_into_an_imported_helper_reads_this_file(tmp_path):
    path = _project(tmp_path, "fv_apply", model="import numpy as np\n\nK = 2.0\n\n\ndef apply(f, v):\n"
                                                "    return np.sum(f(v)) * K\n",
                    loss="import numpy as np\nimport {name} as m\n\nK = 50.0\n\n\n"
                         "def scaled(v):\n    return K * v\n\n\ndef loss(w):\n"
                         "    return m.apply(lambda v: K * v * v, w) + m.apply(scaled, w)\n")
    w = np.array([0.5, -1.5])
    (report,) = check_source(path.read_text(), str(path), at={"w": w})
    expected = 2.0 * (50.0 * np.sum(w * w) + 50.0 * np.sum(w))  # K of each function's own file
    assert report.ok and report.points[0].value_generated == pytest.approx(expected)


def test_a_rule_given_here_to_a_function_of_another_file_is_refused_at_its_line(tmp_path):
    path = _project(tmp_path, "cr_elsewhere", model="def plain(x):\n    return x * x\n",
                    loss="from {name} import plain\n\n\ndef my_rule(g, out, x):\n    return g * 2 * x\n\n\n"
                         "plain.defvjp(my_rule)\n\n\ndef loss(w):\n    return plain(w)\n")
    with pytest.raises(CompileError) as caught:
        compile_source(path.read_text(), str(path))
    assert caught.value.format() == (
        f"{path}:8:1: 'plain.defvjp': 'plain' is a function of {tmp_path / 'cr_elsewhere.py'}: give it its rule "
        "there, where it is defined (@gradgen.custom_vjp on its def, @plain.defvjp on the rule)\n"
        "    plain.defvjp(my_rule)\n    ^")
