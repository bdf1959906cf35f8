"""The procedure as a picture, drawn from the rule pack itself: Mermaid text and an SVG (no Graphviz needed).

States stand in a row in the rule pack's order; a transition to another state is an arc (forward above the
row, backward below); a transition that keeps the state is listed inside the state's box with its clause.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

if TYPE_CHECKING:
    from .rules import RulePack

ANY = "any state"
"""The pseudo-state a '*' transition starts from."""
BOX_WIDTH = 230
GAP = 70
LINE = 16
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"


@dataclass(frozen=True)
class _Edge:
    source: str
    dest: str
    label: str


def _label(trigger: str, clause: str | None) -> str:
    return f"{trigger} [{clause}]" if clause else trigger


def _edges(rules: RulePack) -> tuple[list[_Edge], dict[str, list[str]]]:
    """Arcs between states (labels merged per pair) and, per state, the checks that keep it."""
    arcs: dict[tuple[str, str], list[str]] = defaultdict(list)
    inside: dict[str, list[str]] = defaultdict(list)
    for spec in rules.transitions:
        label = _label(spec.trigger, spec.clause)
        for source in spec.sources:
            name = ANY if source == "*" else source
            if spec.dest is None or spec.dest == source:
                if label not in inside[name]:
                    inside[name].append(label)
            elif label not in arcs[(name, spec.dest)]:
                arcs[(name, spec.dest)].append(label)
    return [_Edge(s, d, " / ".join(labels)) for (s, d), labels in arcs.items()], inside


def mermaid(rules: RulePack) -> str:
    """A Mermaid stateDiagram-v2 of the rule pack's machine."""

    def node(name: str) -> str:
        return "any_state" if name == ANY else name.replace("-", "_")

    lines = ["stateDiagram-v2", f"    %% {rules.rule}: {rules.title}", f"    [*] --> {node(rules.initial)}"]
    edges, inside = _edges(rules)
    if ANY in inside or any(e.source == ANY for e in edges):
        lines.append(f'    state "{ANY}" as any_state')
    for state in rules.states:
        lines.append(f'    state "{state} (listens: {rules.steps[state]})" as {node(state)}')
    for edge in edges:
        lines.append(f"    {node(edge.source)} --> {node(edge.dest)}: {edge.label}")
    for state, labels in inside.items():
        for label in labels:
            lines.append(f"    {node(state)} --> {node(state)}: {label}")
    return "\n".join(lines) + "\n"


def svg(rules: RulePack) -> str:
    """An SVG drawing of the same machine."""
    edges, inside = _edges(rules)
    names = list(rules.states)
    if ANY in inside or any(e.source == ANY for e in edges):
        names = [ANY, *names]
    box_height = {n: 40 + LINE * len(inside.get(n, [])) for n in names}
    tallest = max(box_height.values())
    x = {n: 20 + i * (BOX_WIDTH + GAP) for i, n in enumerate(names)}
    index = {n: i for i, n in enumerate(names)}
    span = lambda e: abs(index[e.dest] - index[e.source])  # noqa: E731 - short arcs inside, long arcs outside
    forward = sorted((e for e in edges if index[e.dest] > index[e.source]), key=span)
    backward = sorted((e for e in edges if index[e.dest] <= index[e.source]), key=span)
    top_space = 70 + 34 * len(forward)
    row_y = top_space
    width = 40 + len(names) * (BOX_WIDTH + GAP)
    height = row_y + tallest + 60 + 34 * len(backward)
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' viewBox='0 0 {width} {height}'>",
        "<defs><marker id='arrow' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' markerHeight='7' "
        "orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' fill='#333'/></marker></defs>",
        f"<rect width='{width}' height='{height}' fill='white'/>",
        f"<text x='20' y='24' {FONT} font-size='16' font-weight='bold'>{escape(rules.rule)}: "
        f"{escape(rules.title)}</text>",
    ]
    for name in names:
        h = box_height[name]
        fill = "#f4f4f4" if name == ANY else ("#e8f0fe" if name != rules.initial else "#e6f4ea")
        out.append(
            f"<g id='state-{escape(name.replace(' ', '-'))}'><rect x='{x[name]}' y='{row_y}' width='{BOX_WIDTH}' "
            f"height='{h}' rx='10' fill='{fill}' stroke='#333'/>"
        )
        title = name if name == ANY else f"{name} · {rules.steps[name]}"
        out.append(
            f"<text x='{x[name] + BOX_WIDTH / 2}' y='{row_y + 22}' {FONT} font-size='14' font-weight='bold' "
            f"text-anchor='middle'>{escape(title)}</text>"
        )
        for k, label in enumerate(inside.get(name, [])):
            out.append(
                f"<text x='{x[name] + 10}' y='{row_y + 42 + k * LINE}' {FONT} font-size='11'>↻ {escape(label)}</text>"
            )
        out.append("</g>")
    for k, edge in enumerate(forward):
        x1, x2 = x[edge.source] + BOX_WIDTH * 0.65, x[edge.dest] + BOX_WIDTH * 0.35
        lift = row_y - 40 - 34 * k
        out.append(_arc(x1, row_y, x2, row_y, lift, row_y, edge.label, above=True))
    for k, edge in enumerate(backward):
        bottom = row_y + tallest
        x1, x2 = x[edge.source] + BOX_WIDTH * 0.35, x[edge.dest] + BOX_WIDTH * 0.65
        y1, y2 = row_y + box_height[edge.source], row_y + box_height[edge.dest]
        drop = bottom + 40 + 34 * k
        out.append(_arc(x1, y1, x2, y2, drop, bottom, edge.label, above=False))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _arc(x1: float, y1: float, x2: float, y2: float, level: float, base: float, label: str, above: bool) -> str:
    """A rounded path from one box to another through `level`, its label at the top (or bottom) of the curve."""
    mid = (x1 + x2) / 2
    path = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{level:.0f} {x2:.0f},{level:.0f} {x2:.0f},{y2:.0f}"
    text_y = (3 * level + base) / 4 + (-4 if above else 12)
    return (
        f"<g class='transition'><path d='{path}' fill='none' stroke='#333' marker-end='url(#arrow)'/>"
        f"<text x='{mid:.0f}' y='{text_y:.0f}' {FONT} font-size='11' text-anchor='middle' "
        f"fill='#1a1a8c'>{escape(label)}</text></g>"
    )


def write_diagram(rules: RulePack, out_dir: Path) -> list[Path]:
    """Write procedure.mmd and procedure.svg into out_dir (made if missing); returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    mmd = out_dir / "procedure.mmd"
    picture = out_dir / "procedure.svg"
    mmd.write_text(mermaid(rules), encoding="utf-8")
    picture.write_text(svg(rules), encoding="utf-8")
    return [mmd, picture]
