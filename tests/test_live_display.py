"""A function gradgen.grad(f) returns, shown in a notebook (gradgen/live/display.py): its
generated module, highlighted, as HTML (pygments, else a tokenize-based fallback) and as
Markdown; still the same plain function (called, inspected, returned again)."""

import html
import importlib.util
import inspect
import itertools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import gradgen
from gradgen.live import display

_imports = itertools.count()

LOSS = '''\
import numpy as np

SCALE = 3.0


def loss(x, y):
    """The <loss> & its "doc"."""
    return np.sum(x ** 2) * y * SCALE  # a <comment>


def plain(x):
    return np.sin(x) * 2.5
'''


pytestmark = pytest.mark.usefixtures("fresh_cache")  # (tests/conftest.py)


@pytest.fixture
def user(tmp_path):
    path = Path(tmp_path) / "userloss.py"
    path.write_text(LOSS)
    spec = importlib.util.spec_from_file_location(f"userloss_display_{next(_imports)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unhtml(text):
    return html.unescape(re.sub(r"<[^>]+>", "", text))


@pytest.mark.parametrize("name", ["loss", "plain"])  # (loss reads SCALE: a wrapper passes it on each call)
def test_the_html_shows_the_generated_module_escaped_and_highlighted(user, name):
    pytest.importorskip("pygments")
    g = gradgen.grad(getattr(user, name))
    shown = g._repr_html_()
    assert shown.startswith(f'<details open class="gradgen-source"><summary><code>gradgen.grad({name})'
                            "</code></summary>")
    assert unhtml(shown.split("</summary>", 1)[1]).strip() == g.source.strip()
    assert "<loss>" not in shown and "<comment>" not in shown  # (escaped)
    assert re.search(r'<span style="[^"]+">def</span>', shown)  # (pygments' inline styles)


def test_the_markdown_is_a_fenced_python_block(user):
    g = gradgen.value_and_grad(user.plain)
    assert g._repr_markdown_() == f"**gradgen.value_and_grad(plain)**\n\n```python\n{g.source.rstrip()}\n```\n"
    assert display.as_markdown("x = '```'\n", "t") == "**t**\n\n````python\nx = '```'\n````\n"


def test_without_pygments_tokenize_highlights(user, monkeypatch):
    monkeypatch.setitem(sys.modules, "pygments", None)  # (importing it raises ImportError)
    g = gradgen.grad(user.loss)
    shown = g._repr_html_()
    body = shown.split("</style>", 1)[1]
    assert unhtml(body).strip() == g.source.strip()
    assert '<span class="k">def</span> <span class="nf">loss_grad</span>(' in body
    assert '<span class="k">return</span>' in body
    assert '<span class="c"># line 8: return np.sum(x ** 2) * y * SCALE</span>' in body
    assert re.search(r'<span class="s">&quot;&quot;&quot;Gradient of loss', body)
    assert '<span class="m">2</span>' in body


def test_the_fallback_keeps_every_character_and_escapes_what_it_cannot_read():
    text = "def f(x):\n    return x  # <b>\n\n\nclass C:\n    pass\n"
    assert unhtml(display.plain_highlighted(text).split("</style>", 1)[1]) == text
    broken = 'x = """never closed <\n'
    assert display.plain_highlighted(broken).endswith("<pre style=\"line-height:125%\">x = &quot;&quot;&quot;"
                                                      "never closed &lt;\n</pre></div>")


def test_still_the_plain_generated_function(user):
    g = gradgen.grad(user.plain)
    assert g is gradgen.grad(user.plain)
    assert inspect.isfunction(g) and g.__name__ == "plain_grad"
    assert str(inspect.signature(g)) == "(x)"
    assert g(0.5) == pytest.approx(2.5 * np.cos(0.5), rel=1e-15)
    assert "<details" not in g.__doc__ and g.source in g._repr_markdown_()
    wrapped = gradgen.grad(user.loss, wrt="all")  # (a functools.wraps wrapper: the display comes along)
    assert str(inspect.signature(wrapped)) == "(x, y, *, SCALE=3.0)"
    dx, dy = wrapped(np.array([1.0, 2.0]), 0.5)
    np.testing.assert_array_equal(dx, [3.0, 6.0])
    assert dy == 15.0
    assert "gradgen.grad(loss)" in wrapped._repr_markdown_()


def test_ipython_displays_it(user):
    pytest.importorskip("IPython")
    from IPython.core.formatters import DisplayFormatter

    g = gradgen.hvp(user.plain)
    shown, _ = DisplayFormatter().format(g)
    assert shown["text/html"] == g._repr_html_()
    assert shown["text/markdown"] == g._repr_markdown_()
    assert shown["text/plain"].startswith("<function ")
