"""Editing a generated module's text in place: what the Array API backend
(gradgen/codegen/array_api.py) and the numba jit (gradgen/codegen/numba_jit.py) share.

Both parse the NumPy module gradgen wrote, replace the spans of some nodes with new text
(recorded as byte edits, applied once, so every untouched byte stays as black wrote it),
and point a refusal at the line of the user's file a generated line came from (the
`# line 14: ...` comment its backward block starts with)."""

from __future__ import annotations

import ast
import re

from gradgen.codegen import emit

CITED = re.compile(r"\s*# line (?P<line>\d+):")
SECTION = re.compile(r"\s*# (forward pass|backward pass)")


class ModuleEdits:
    """A generated module's body, its nodes' byte spans and the edits made to them."""

    def __init__(self, body, compiled):
        self.body = body
        self.data = body.encode("utf-8")
        self.tree = ast.parse(body)
        self.starts = [0]
        for line in self.data.split(b"\n"):
            self.starts.append(self.starts[-1] + len(line) + 1)
        self.lines = body.split("\n")
        self.compiled = compiled
        self.user = compiled.module
        self.edits = []  # (start, end, text), replacing bytes of the body

    def _apply(self):
        out, pos = [], 0
        for start, end, text in sorted(self.edits, key=lambda e: (e[0], e[1])):
            out += [self.data[pos:start], text.encode("utf-8")]
            pos = end
        out.append(self.data[pos:])
        return b"".join(out).decode("utf-8")

    def _docstring_ends(self, ending):
        """The module docstring with its last sentence's full stop replaced by `ending`."""
        doc = self.tree.body[0]
        if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str):
            self._edit(doc, emit._docstring(doc.value.value.rstrip(".") + ending).replace('\n"""', '"""'))

    def _cited(self, generated_line, fdef):
        """The line of the user's file the backward block holding `generated_line` cites."""
        for i in range(generated_line - 1, fdef.lineno - 1, -1):
            found = CITED.match(self.lines[i])
            if found or SECTION.match(self.lines[i]):
                return int(found["line"]) if found else None
        return None

    def _span(self, node):
        return (self.starts[node.lineno - 1] + node.col_offset, self.starts[node.end_lineno - 1] + node.end_col_offset)

    def _edit(self, node, text):
        self.edits.append((*self._span(node), text))
