"""The diagram is drawn from the rule pack: every state and trigger shows, and a changed pack changes it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from assistant.procedure import DEFAULT_RULES, RulePack, write_diagram

SVG = "{http://www.w3.org/2000/svg}"


def test_writes_mermaid_and_svg_from_the_rule_pack(tmp_path: Path) -> None:
    rules = RulePack.load()
    paths = write_diagram(rules, tmp_path / "out")
    assert [p.name for p in paths] == ["procedure.mmd", "procedure.svg"]
    mermaid = paths[0].read_text(encoding="utf-8")
    assert mermaid.startswith("stateDiagram-v2\n")
    assert "    [*] --> idle" in mermaid
    assert "    calling --> claim: bingo [B(1)]" in mermaid
    assert "    claim --> closing: valid [B(4) B(7) B(8)]" in mermaid
    root = ET.parse(paths[1]).getroot()
    assert root.tag == f"{SVG}svg"
    text = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    for state in rules.states:
        assert f"state-{state}" in {g.get("id") for g in root.iter(f"{SVG}g")}
    for spec in rules.transitions:
        assert spec.trigger in mermaid and spec.trigger in text
    assert len(list(root.iter(f"{SVG}path"))) >= 10


def test_a_changed_rule_pack_changes_the_picture(tmp_path: Path) -> None:
    data = yaml.safe_load(DEFAULT_RULES.read_text(encoding="utf-8"))
    data["machine"]["states"].append({"name": "intermission"})
    data["steps"]["intermission"] = "before-first-ball"
    data["machine"]["transitions"].append(
        {"trigger": "game-completed", "source": "idle", "dest": "intermission", "clause": "X(1)"}
    )
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    mmd, svg = write_diagram(RulePack.load(path), tmp_path)
    assert "    idle --> intermission: game-completed [X(1)]" in mmd.read_text(encoding="utf-8")
    assert "intermission" in svg.read_text(encoding="utf-8")
    assert "intermission" not in write_diagram(RulePack.load(), tmp_path / "plain")[0].read_text(encoding="utf-8")
