"""The graph of gradgen/tools/graph.py drawn: laid out by levels, written as SVG or DOT text.

No layout engine and no graphviz binary: each node's column is its topological depth
(a constant or parameter sits just before its first use), the order within a column comes
from a few barycentre passes (each node moved towards the mean position of its
neighbours, which removes most crossings), and the SVG is written as text. The DOT text
is for people who have graphviz and want its layout instead. Same graph, same bytes.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

import numpy as np

from gradgen.tools.graph import format_value, is_array, summary

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
CHAR = 7.3  # width of one character at FONT_SIZE, in px (a monospaced font)
LABEL_CHAR = 6.7  # at an edge label's size
FONT_SIZE = 12
LINE = 16  # px between text lines
PAD = 10  # px inside a node, around its text
ROW_GAP = 26  # px between nodes of one column
MIN_GAP = 56  # px between columns (more where an edge's label needs it)
MARGIN = 20
SWEEPS = 4  # barycentre passes, each one left to right and one right to left

STYLE = {  # kind -> (fill, stroke)
    "param": ("#dbeafe", "#2563eb"),
    "data": ("#f3f4f6", "#9ca3af"),
    "var": ("#fef9c3", "#ca8a04"),
    "result": ("#dcfce7", "#16a34a"),
    "op": ("#ffffff", "#4b5563"),
}
LEGEND = ("node: its value at the point, then ∂{L}/∂node (where a differentiated parameter reaches it)",
          "edge: the local derivative ∂(operation)/∂(input) at the point; for arrays, the rule that "
          "turns g = ∂{L}/∂(operation) into ∂{L}/∂(input)")


def node_lines(graph, node):
    """The text lines of a node: its name (or operation), value, gradient."""
    if node.kind == "op" and node.names:  # value and gradient shown on the variable it is assigned to
        return [node.label]
    lines = [node.label, f"= {summary(node.value)}"]
    if node.grad is not None:
        name = "·" if node.kind == "op" else node.label
        grad = f": norm {format_value(np.linalg.norm(node.grad))}" if is_array(node.grad) else f" = {summary(node.grad)}"
        lines.append(f"∂{graph.result_name}/∂{name}{grad}")
    return lines


def title(graph):
    """`loss(w1=0.5, ...)`: the function and the point (an array by its shape)."""
    return f"{graph.function}({', '.join(f'{k}={format_value(v)}' for k, v in graph.point.items())})"


def kind_of(node):
    return "result" if node.result else node.kind


# ---- layout ------------------------------------------------------------------------------

def columns(graph):
    """Nodes by column (topological depth), each column ordered to reduce crossings."""
    nodes = graph.nodes
    preds = {n.id: [] for n in nodes}
    succs = {n.id: [] for n in nodes}
    for e in graph.edges:
        preds[e.dst].append(e.src)
        succs[e.src].append(e.dst)
    depth = {}
    for n in nodes:  # created in topological order
        depth[n.id] = 1 + max((depth[p] for p in preds[n.id]), default=-1)
    for n in reversed(nodes):  # as late as its first use allows: short edges into operations
        if succs[n.id]:
            depth[n.id] = min(depth[s] for s in succs[n.id]) - 1
    levels = [[] for _ in range(max(depth.values(), default=0) + 1)]
    for n in nodes:
        levels[depth[n.id]].append(n.id)
    for _ in range(SWEEPS):
        _order(levels, preds)
        _order(levels[::-1], succs)
    return [level for level in levels if level]


def _order(levels, neighbours):
    """One barycentre pass: each level sorted by the mean centred position of its nodes'
    neighbours in the levels already placed (a node without any keeps its place)."""
    position = {}
    for level in levels:
        keys = {}
        for index, node in enumerate(level):
            placed = [position[m] for m in neighbours[node] if m in position]
            keys[node] = sum(placed) / len(placed) if placed else index - (len(level) - 1) / 2
        level.sort(key=lambda n: (keys[n], n))
        for index, node in enumerate(level):
            position[node] = index - (len(level) - 1) / 2


def layout(graph):
    """(boxes, width, height): each node's (x, y, width, height) in px."""
    cols = columns(graph)
    sizes = {}
    for n in graph.nodes:
        lines = node_lines(graph, n)
        width, height = max(len(t) for t in lines) * CHAR + 2 * PAD, len(lines) * LINE + 2 * PAD - 4
        if n.kind == "op":  # an ellipse around the text's box
            width, height = max(width * 1.25, 44), height * (1.3 if len(lines) > 1 else 1)
        sizes[n.id] = (round(width), round(height))
    column_of = {n: c for c, col in enumerate(cols) for n in col}
    gaps = [MIN_GAP] * len(cols)
    for e in graph.edges:
        if e.label:
            c = column_of[e.dst]
            gaps[c] = max(gaps[c], round(len(e.label) * LABEL_CHAR) + 24)
    heights = [sum(sizes[n][1] for n in col) + ROW_GAP * (len(col) - 1) for col in cols]
    tallest = max(heights, default=0)
    top = MARGIN + 2 * LINE  # under the title
    boxes, x = {}, MARGIN
    for c, col in enumerate(cols):
        if c:
            x += gaps[c]
        width = max(sizes[n][0] for n in col)
        y = top + (tallest - heights[c]) / 2
        for n in col:
            w, h = sizes[n]
            boxes[n] = (round(x + (width - w) / 2, 1), round(y, 1), w, h)
            y += h + ROW_GAP
        x += width
    return boxes, gaps, column_of, x + MARGIN, top + tallest + MARGIN + 2 * LINE


# ---- SVG ---------------------------------------------------------------------------------

def svg(graph):
    """The graph as an SVG document (text)."""
    boxes, gaps, column_of, width, height = layout(graph)
    heading = title(graph)
    legend = [line.format(L=graph.result_name) for line in LEGEND]
    width = max(width, round(max(len(t) for t in [heading] + legend) * CHAR * 0.85) + 2 * MARGIN)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="{FONT}" font-size="{FONT_SIZE}">',
        f"<title>computational graph of {escape(heading)}, drawn by gradgen</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#4b5563"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text class="title" x="{MARGIN}" y="{MARGIN + LINE}" font-size="14" font-weight="bold">'
        f"{escape(heading)}</text>",
    ]
    labels = _label_places(graph, boxes, gaps, column_of)
    for e in graph.edges:
        out.append(_svg_edge(e, boxes, labels.get(id(e))))
    for n in graph.nodes:
        out.append(_svg_node(graph, n, boxes[n.id]))
    for i, line in enumerate(legend):
        out.append(f'<text class="legend" x="{MARGIN}" y="{height - MARGIN - (len(legend) - 1 - i) * LINE}" '
                   f'font-size="10" fill="#4b5563">{escape(line)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _svg_node(graph, node, box):
    x, y, w, h = box
    fill, stroke = STYLE[kind_of(node)]
    lines = node_lines(graph, node)
    if node.kind == "op":
        shape = f'<ellipse cx="{_n(x + w / 2)}" cy="{_n(y + h / 2)}" rx="{_n(w / 2)}" ry="{_n(h / 2)}"'
    else:
        shape = f'<rect x="{_n(x)}" y="{_n(y)}" width="{w}" height="{h}" rx="6"'
    text = []
    for i, line in enumerate(lines):
        bold = ' font-weight="bold"' if i == 0 else ""
        ty = y + PAD + LINE * i + FONT_SIZE - 2
        text.append(f'<text x="{_n(x + w / 2)}" y="{_n(ty)}" text-anchor="middle"{bold}>{escape(line)}</text>')
    classes = f"node {kind_of(node)}" + (" active" if node.active else "")
    return (f'<g class="{classes}" id="n{node.id}"><title>{escape(" | ".join(lines))}</title>'
            f'{shape} fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>{"".join(text)}</g>')


def _ends(edge, boxes):
    sx, sy, sw, sh = boxes[edge.src]
    dx, dy, dw, dh = boxes[edge.dst]
    return sx + sw, sy + sh / 2, dx, dy + dh / 2


def _label_places(graph, boxes, gaps, column_of):
    """Where each edge's label goes: on the edge, in the middle of the gap before its
    operation's column; labels that would overlap there are moved apart vertically."""
    places = {}
    by_gap = {}
    for e in graph.edges:
        if not e.label:
            continue
        x1, y1, x2, y2 = _ends(e, boxes)
        gap = gaps[column_of[e.dst]]
        lx = x2 - gap / 2 if x2 - x1 > gap else (x1 + x2) / 2
        t = (lx - x1) / (x2 - x1) if x2 != x1 else 0.5
        places[id(e)] = [lx, y1 + (y2 - y1) * t - 4, len(e.label) * LABEL_CHAR + 4]
        by_gap.setdefault(column_of[e.dst], []).append(places[id(e)])
    for placed in by_gap.values():
        placed.sort(key=lambda p: (p[1], p[0]))
        for i, p in enumerate(placed):
            for q in placed[:i]:
                if abs(p[0] - q[0]) < (p[2] + q[2]) / 2 and p[1] - q[1] < 14:
                    p[1] = q[1] + 14
    return places


def _svg_edge(edge, boxes, place):
    x1, y1, x2, y2 = _ends(edge, boxes)
    dashed = ' stroke-dasharray="4 3"' if edge.label == "0" else ""
    parts = [f'<g class="edge {edge.kind}" id="e{edge.src}-{edge.dst}-{edge.index}">',
             f'<path d="M {_n(x1)} {_n(y1)} L {_n(x2)} {_n(y2)}" fill="none" stroke="#4b5563" '
             f'stroke-width="1.2"{dashed} marker-end="url(#arrow)"/>']
    if edge.label:
        lx, ly, w = place
        parts.append(f'<rect x="{_n(lx - w / 2)}" y="{_n(ly - 10)}" width="{_n(w)}" height="13" fill="#ffffff" '
                     'fill-opacity="0.85"/>')
        parts.append(f'<text class="local" x="{_n(lx)}" y="{_n(ly)}" text-anchor="middle" font-size="11" '
                     f'fill="#1f2937">{escape(edge.label)}</text>')
    parts.append("</g>")
    return "".join(parts)


def _n(value):
    """A coordinate: at most one decimal, no trailing `.0` (the same text everywhere)."""
    value = round(value, 1)
    return str(int(value)) if value == int(value) else str(value)


# ---- DOT ---------------------------------------------------------------------------------

def dot(graph):
    """The graph in graphviz's DOT language (`dot -Tsvg` lays it out its own way)."""
    out = [f"// computational graph of {title(graph)}, drawn by gradgen",
           f"digraph {_quoted(graph.function)} {{",
           "  rankdir=LR;",
           f'  node [fontname="{FONT.split(",")[0]}", fontsize=11];',
           "  edge [fontsize=10];"]
    for n in graph.nodes:
        fill, stroke = STYLE[kind_of(n)]
        shape = "ellipse" if n.kind == "op" else "box"
        label = "\\n".join(_escaped(t) for t in node_lines(graph, n))
        out.append(f'  n{n.id} [label="{label}", shape={shape}, style="rounded,filled", '
                   f'fillcolor="{fill}", color="{stroke}"];')
    for e in graph.edges:
        attrs = [f'label="{_escaped(e.label)}"'] if e.label else []
        if e.label == "0":
            attrs.append("style=dashed")
        out.append(f"  n{e.src} -> n{e.dst}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    out.append("}")
    return "\n".join(out) + "\n"


def _escaped(text):
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _quoted(text):
    return f'"{_escaped(text)}"'


__all__ = ["svg", "dot", "layout", "columns", "node_lines", "title"]
