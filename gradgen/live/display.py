"""How a function `gradgen.grad(f)` (or another kind) returns shows itself in a notebook:
its generated module, syntax-highlighted, when it is the value of a Jupyter cell.

IPython asks the object itself for `_repr_html_` and `_repr_markdown_` (not its type), so
the generated function carries them as attributes: it stays the plain function (no wrapper,
no extra frame; `inspect.signature`, `help()` and `.source` unchanged). The HTML is
highlighted by pygments when it is installed (inline styles: a notebook has no stylesheet
for pygments' classes), else by Python's own `tokenize`, with a small stylesheet of its own.
"""

from __future__ import annotations

import functools
import html
import io
import keyword
import token
import tokenize

# the fallback's classes: keyword, function name, string, number, comment (pygments' short names)
_STYLE = ("<style>.gradgen-source .k{color:#008000;font-weight:bold}.gradgen-source .nf{color:#0000ff}"
          ".gradgen-source .s{color:#ba2121}.gradgen-source .m{color:#666666}"
          ".gradgen-source .c{color:#3d7b7b;font-style:italic}</style>")


def attach(g, text, title):
    """Give the generated function `g` its notebook display: `text` (the generated module)
    under `title` (`gradgen.grad(loss)`)."""
    g._repr_html_ = functools.partial(as_html, text, title)
    g._repr_markdown_ = functools.partial(as_markdown, text, title)


def as_markdown(text, title):
    """The fallback of a front end that shows Markdown but not HTML: a fenced code block."""
    fence = "```"
    while fence in text:  # (a generated docstring holding a fence: a longer one encloses it)
        fence += "`"
    return f"**{title}**\n\n{fence}python\n{text.rstrip()}\n{fence}\n"


def as_html(text, title):
    """The module in a collapsible block headed by `title`, highlighted."""
    return (f'<details open class="gradgen-source"><summary><code>{html.escape(title)}</code></summary>'
            f"{highlighted(text)}</details>")


def highlighted(text):
    """`text` as highlighted HTML: by pygments if importable, else by `tokenize`."""
    try:
        from pygments import highlight  # (start-up: optional, and only when a notebook shows a function)
        from pygments.formatters import HtmlFormatter  # (start-up: as above)
        from pygments.lexers import PythonLexer  # (start-up: as above)
    except ImportError:
        return plain_highlighted(text)
    return highlight(text, PythonLexer(), HtmlFormatter(noclasses=True))


def plain_highlighted(text):
    """`text` escaped in a <pre>, its keywords, function names, strings, numbers and comments
    in <span>s of pygments' class names, styled by a small stylesheet; escaped only where
    `tokenize` cannot read it."""
    try:
        spans = list(_spans(text))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        spans = [(None, text)]
    body = "".join(html.escape(part) if css is None else f'<span class="{css}">{html.escape(part)}</span>'
                   for css, part in spans)
    return f'{_STYLE}<div class="highlight"><pre style="line-height:125%">{body}</pre></div>'


def _spans(text):
    """(css class or None, text) pieces that join to `text` exactly."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    done, previous = 0, None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == token.ENDMARKER:
            break
        start = offsets[tok.start[0] - 1] + tok.start[1]
        end = offsets[tok.end[0] - 1] + tok.end[1] if tok.end[0] <= len(lines) else len(text)
        css = _css(tok, previous)
        if tok.type not in (token.NL, token.NEWLINE, token.INDENT, token.DEDENT):
            previous = tok
        if css is None or start < done:
            continue
        yield None, text[done:start]
        yield css, text[start:end]
        done = end
    yield None, text[done:]


def _css(tok, previous):
    if tok.type == token.NAME and keyword.iskeyword(tok.string):
        return "k"
    if tok.type == token.NAME and previous is not None and previous.string in ("def", "class"):
        return "nf"
    if tok.type == token.STRING:
        return "s"
    if tok.type == token.NUMBER:
        return "m"
    if tok.type == token.COMMENT:
        return "c"
    return None
