"""The one error type users see, printed the way compilers print errors."""

from __future__ import annotations


class CompileError(Exception):
    """Input gradgen will not compile, located at `file:line:col` (both 1-based).

    `line`/`col` may be None when the problem has no place in the source (e.g. an
    unknown --function name); the message then stands alone.
    """

    def __init__(self, message, filename="<string>", line=None, col=None, source_line=None):
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line

    def format(self) -> str:
        """`file:line:col: message`, then the source line and a caret under the column.

        Characters a terminal would act on (escape sequences, carriage returns, ...) are
        shown as `?`: the user's file is echoed, never obeyed."""
        filename = printable(self.filename)
        if self.line is None:
            return f"{filename}: {printable(self.message)}"
        head = f"{filename}:{self.line}:{self.col}: {printable(self.message)}"
        if self.source_line is None:
            return head
        text = printable(self.source_line.rstrip("\r\n").expandtabs(1))
        caret = " " * (max(self.col, 1) - 1) + "^"
        return f"{head}\n    {text}\n    {caret}"

    def __str__(self) -> str:
        return self.format()


def printable(text) -> str:
    """`text` with every character that is not printable (or is a tab or a newline, which
    would break the one-line layout) replaced by `?`, one for one, so columns still line up."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else "?" for c in text)


class Final(CompileError):
    """A refusal that keeping the expression as written (gradgen.frontend.inactive) would
    not cure: Python itself would fail there (`x + None`, a number plus a string)."""


class NoRule(CompileError):
    """A function, method or attribute gradgen has no rule for: on data it runs as written;
    where a derivative reaches it, gradgen.analysis.activity says "no derivative rule for"."""


def error_at(node, message, ctx):
    """Build a CompileError at an AST node; `ctx` knows the file name and source lines.

    The column counts characters (the AST counts UTF-8 bytes), so the caret sits under
    the node on a line with non-ASCII text before it."""
    line = getattr(node, "lineno", None)
    text = ctx.line_text(line)
    col = None
    if line is not None:
        offset = getattr(node, "col_offset", 0)
        if text is not None:
            offset = len(text.encode("utf-8", "surrogatepass")[:offset].decode("utf-8", "replace"))
        col = offset + 1
    return CompileError(message, ctx.filename, line, col, text)
