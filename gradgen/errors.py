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
        """`file:line:col: message`, then the source line and a caret under the column."""
        if self.line is None:
            return f"{self.filename}: {self.message}"
        head = f"{self.filename}:{self.line}:{self.col}: {self.message}"
        if self.source_line is None:
            return head
        text = self.source_line.rstrip("\r\n").expandtabs(1)
        caret = " " * (max(self.col, 1) - 1) + "^"
        return f"{head}\n    {text}\n    {caret}"

    def __str__(self) -> str:
        return self.format()


def error_at(node, message, ctx):
    """Build a CompileError at an AST node; `ctx` knows the file name and source lines."""
    line = getattr(node, "lineno", None)
    col = getattr(node, "col_offset", 0) + 1 if line is not None else None
    return CompileError(message, ctx.filename, line, col, ctx.line_text(line))
