"""Reports of an occasion: text for the terminal, JSON (the `check --json` contract), CSV of findings, HTML to print."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import escape

from .messages import Finding, GameRecord, GameType, HeardForReview, OccasionRecord, Severity
from .procedure import clause_table
from .store import PRIZE_CAP, OccasionInfo, Store, VerifyResult, WinnerTakeAllRecord, occasion_record

STORE_KEPT = "E(2)(a)-(e)"
"""The clause-table row of the winner-take-all record: filled from the store, not from speech."""


@dataclass(frozen=True)
class ClauseRow:
    clause: str
    title: str
    status: str
    """pass | finding | uncertain | not observable | not applicable"""
    note: str = ""


def _clock(seconds: float) -> str:
    minutes, rest = divmod(max(seconds, 0.0), 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{rest:04.1f}" if hours else f"{minutes:02d}:{rest:04.1f}"


def _money(amount: float | None) -> str:
    return "—" if amount is None else f"${amount:,.2f}"


def clause_rows(record: OccasionRecord, winners: Sequence[WinnerTakeAllRecord] = ()) -> list[ClauseRow]:
    """Every clause of the rule pack with its status (the procedure's clause table), the E(2) record from the store."""
    findings = record.all_findings()
    rows = []
    for row in clause_table(record):
        cited = [f for f in findings if f.clause == row.clause]
        note = "; ".join(f"{f.code} at {_clock(f.time)}" for f in cited[:3])
        if len(cited) > 3:
            note += f" (+{len(cited) - 3} more)"
        status = row.status.replace("-", " ")
        if row.clause == STORE_KEPT:
            gaps = [gap for w in winners for gap in w.missing]
            if gaps:
                status, note = "finding", "; ".join(gaps)
            elif any(w.type is GameType.WINNER_TAKE_ALL for w in winners):
                status, note = "pass", "cards sold, date and time, prize and winners recorded; kept in the journal"
            else:
                status, note = "not applicable", "no winner-take-all game"
        rows.append(ClauseRow(row.clause, row.title, status, note))
    return rows


# ---------------------------------------------------------------- text, JSON, CSV


def _finding_line(finding: Finding) -> str:
    heard = f' heard "{finding.heard}"' if finding.heard else ""
    where = f"{_clock(finding.time)}  {finding.clause:<8} {finding.severity.value:<9}"
    return f"  {where} {finding.code}: {finding.message}{heard}"


def _review_line(item: HeardForReview) -> str:
    unsure = " (heard unsure)" if item.unsure else ""
    return f'  {_clock(item.time)}  for review {item.role.value}: "{item.heard}"{unsure}: {item.reason}'


def render_text(occasion: OccasionRecord) -> str:
    """What `check` prints without --json: each game with its findings, then the occasion's, then the verdict."""
    lines: list[str] = []
    for game in occasion.games:
        calls = [c for c in game.calls if not c.withdrawn]
        claims = len(game.claims)
        lines.append(
            f"Game {game.number} ({game.plan.type.value}): {len(calls)} calls, "
            f"{claims} claim{'s' if claims != 1 else ''}, {game.status}"
        )
        lines.extend(_finding_line(f) for f in game.findings)
        lines.extend(_review_line(r) for r in game.review)
    lines.append(f"Occasion: prizes {_money(occasion.prizes_total)} of the {_money(PRIZE_CAP)} cap")
    lines.extend(_finding_line(f) for f in occasion.findings)
    lines.extend(_review_line(r) for r in occasion.review)
    lines.extend(f"  note: {note}" for note in occasion.notes)
    lines.extend(f"  incomplete: {what}" for what in occasion.incomplete)
    review = len(occasion.all_review())
    if review:
        lines.append(f"{review} heard for review (speech the procedure could not place; not findings).")
    counts = Counter(f.severity for f in occasion.all_findings())
    total = sum(counts.values())
    if occasion.incomplete:
        found = f"{total} finding{'s' if total != 1 else ''}" if total else "no findings"
        lines.append(f"Not compliant: the input is incomplete ({found} in what it held).")
    elif total == 0:
        lines.append("Compliant: no findings.")
    else:
        parts = ", ".join(f"{counts[s]} {s.value}" for s in Severity if counts[s])
        lines.append(f"{total} finding{'s' if total != 1 else ''}: {parts}.")
    return "\n".join(lines) + "\n"


def render_json(occasion: OccasionRecord, **extra: object) -> str:
    """The `check --json` contract (OccasionRecord.to_json), with any extra top-level keys."""
    return json.dumps({**occasion.to_json(), **extra}, indent=2, ensure_ascii=False) + "\n"


def json_extras(store: Store, occasion: int) -> dict[str, object]:
    """What `report --format json` adds to the contract from the store: the occasion, E(2) records, integrity."""
    info = store.occasion_info(occasion)
    integrity = store.verify()
    return {
        "occasion_id": occasion,
        "source": info.source,
        "started_at": info.started_at.isoformat(),
        "closed_at": info.closed_at.isoformat() if info.closed_at else None,
        "winner_take_all": [
            {
                "game": w.game,
                "type": w.type.value,
                "cards_sold": w.cards_sold,
                "conducted_at": w.conducted_at.isoformat() if w.conducted_at else None,
                "prize": w.prize,
                "winners": [
                    {"name": p.name, "contact": p.contact, "prize": p.prize, "tax_document": p.tax_document}
                    for p in w.winners
                ],
                "missing": list(w.missing),
            }
            for w in store.winner_take_all_records(occasion)
        ],
        "prize_cap": PRIZE_CAP,
        "integrity": {
            "ok": integrity.ok,
            "records": integrity.checked,
            "head": integrity.head,
            "first_bad": str(integrity.first_bad) if integrity.first_bad else None,
        },
    }


CSV_COLUMNS = ("occasion", "game", "time", "clock", "clause", "code", "severity", "heard", "message")


def render_csv(occasion: OccasionRecord, *, occasion_id: int | None = None) -> str:
    """One finding per row, game findings in game order, then the occasion's."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    rows = [(g.number, f) for g in occasion.games for f in g.findings] + [(None, f) for f in occasion.findings]
    for game, finding in rows:
        writer.writerow(
            (
                "" if occasion_id is None else occasion_id,
                "" if game is None else game,
                round(finding.time, 2),
                _clock(finding.time),
                finding.clause,
                finding.code,
                finding.severity.value,
                finding.heard,
                finding.message,
            )
        )
    return out.getvalue()


# ---------------------------------------------------------------- HTML for the inspector


@dataclass(frozen=True)
class ReportData:
    """Everything the inspector's report shows, read from the store."""

    occasion_id: int
    info: OccasionInfo
    record: OccasionRecord
    winners: tuple[WinnerTakeAllRecord, ...]
    integrity: VerifyResult
    generated_at: datetime

    @classmethod
    def load(cls, store: Store, occasion: int) -> ReportData:
        return cls(
            occasion_id=occasion,
            info=store.occasion_info(occasion),
            record=occasion_record(store, occasion),
            winners=tuple(store.winner_take_all_records(occasion)),
            integrity=store.verify(),
            generated_at=datetime.now().astimezone(),
        )

    def wall(self, seconds: float) -> str:
        moment = (self.info.started_at + timedelta(seconds=seconds)).astimezone()
        return moment.strftime("%H:%M:%S")


CSS = """
:root { --ink: #1b1b1b; --muted: #5b5b5b; --rule: #c9c9c9; --bad: #a4161a; --warn: #8a5a00; --ok: #1f6f3f; }
* { box-sizing: border-box; }
body { font: 10.5pt/1.4 "DejaVu Sans", "Liberation Sans", Arial, sans-serif; color: var(--ink); margin: 2em auto;
       max-width: 60em; padding: 0 1.5em; }
h1 { font-size: 17pt; margin: 0 0 .2em; }
h2 { font-size: 13pt; margin: 1.6em 0 .5em; border-bottom: 1.5pt solid var(--ink); padding-bottom: .15em; }
h3 { font-size: 11.5pt; margin: 1.2em 0 .4em; }
p.sub { color: var(--muted); margin: 0 0 1em; }
table { border-collapse: collapse; width: 100%; margin: .3em 0 .8em; }
th, td { text-align: left; vertical-align: top; padding: .25em .5em; border-bottom: .5pt solid var(--rule); }
th { font-size: 9pt; text-transform: uppercase; letter-spacing: .03em; color: var(--muted);
     border-bottom: 1pt solid var(--ink); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.clause { white-space: nowrap; font-weight: bold; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15em 1.2em; margin: .3em 0 1em; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.status { display: inline-block; min-width: 7.5em; padding: 0 .4em; border: 1pt solid; border-radius: 3pt;
          font-size: 9pt; font-weight: bold; text-align: center; white-space: nowrap; }
.status.pass { color: var(--ok); }
.status.finding, .status.violation { color: var(--bad); }
.status.warning { color: var(--warn); }
.status.uncertain, .status.not-observable, .status.not-applicable { color: var(--muted); border-style: dashed; }
.verdict { border: 1.5pt solid; padding: .5em .8em; margin: 1em 0; font-weight: bold; }
.verdict.bad { color: var(--bad); }
.verdict.ok { color: var(--ok); }
.verdict.warn { color: var(--warn); }
.balls { display: flex; flex-wrap: wrap; gap: .25em; margin: .3em 0 .6em; padding: 0; list-style: none; }
.balls li { border: .75pt solid var(--ink); border-radius: 1em; padding: 0 .45em; font-size: 9.5pt;
            font-variant-numeric: tabular-nums; }
.balls li small { color: var(--muted); }
.balls li.withdrawn { text-decoration: line-through; border-style: dashed; color: var(--muted); }
q { font-style: italic; }
.muted { color: var(--muted); }
footer { margin-top: 2em; color: var(--muted); font-size: 8.5pt; border-top: .5pt solid var(--rule);
         padding-top: .4em; }
footer .hash { font-family: "DejaVu Sans Mono", monospace; word-break: break-all; }
td.nowrap { white-space: nowrap; }
h4 { font-size: 10pt; margin: .8em 0 .3em; }
@page { size: letter; margin: 16mm 14mm 18mm; }
@media print {
  body { margin: 0; max-width: none; padding: 0; font-size: 9.5pt; }
  h2 { break-after: avoid; }
  h3 { break-after: avoid; }
  tr, .verdict, dl.facts, .balls li { break-inside: avoid; }
  thead { display: table-header-group; }
  section.game { break-before: auto; }
  a { color: inherit; text-decoration: none; }
}
"""


def _status(text: str) -> str:
    return f'<span class="status {escape(text.replace(" ", "-"))}">{escape(text)}</span>'


def _findings_table(data: ReportData, rows: Sequence[tuple[int | None, Finding]], *, with_game: bool) -> str:
    if not rows:
        return '<p class="muted">No findings.</p>'
    head = "<th>Game</th>" if with_game else ""
    body = []
    for game, f in rows:
        game_cell = f'<td class="num">{"" if game is None else game}</td>' if with_game else ""
        heard = f"<q>{escape(f.heard)}</q>" if f.heard else '<span class="muted">—</span>'
        body.append(
            f'<tr>{game_cell}<td class="num">{_clock(f.time)}<br><small class="muted">{data.wall(f.time)}</small></td>'
            f'<td class="clause">{escape(f.clause)}</td><td>{_status(f.severity.value)}</td>'
            f'<td>{heard}</td><td>{escape(f.message)}<br><small class="muted">{escape(f.code)}</small></td></tr>'
        )
    return (
        f'<table class="findings"><thead><tr>{head}<th class="num">Time</th><th>Clause</th><th>Severity</th>'
        f"<th>Words heard</th><th>Finding</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _review_table(data: ReportData, rows: Sequence[HeardForReview]) -> str:
    if not rows:
        return '<p class="muted">Every word heard from the caller was placed by the grammar.</p>'
    unsure = '<br><small class="muted">heard unsure</small>'
    body = "".join(
        f'<tr><td class="num">{"" if r.game is None else r.game}</td>'
        f'<td class="num">{_clock(r.time)}<br><small class="muted">{data.wall(r.time)}</small></td>'
        f"<td>{escape(r.role.value)}</td><td><q>{escape(r.heard)}</q>{unsure if r.unsure else ''}</td>"
        f"<td>{escape(r.reason)}</td></tr>"
        for r in rows
    )
    return (
        '<table class="review"><thead><tr><th class="num">Game</th><th class="num">Time</th><th>Who</th>'
        f"<th>Words heard</th><th>Why it is listed</th></tr></thead><tbody>{body}</tbody></table>"
    )


def _game_section(data: ReportData, game: GameRecord) -> str:
    plan = game.plan
    facts = [("Type", plan.type.value), ("Started", f"{_clock(game.start)} ({data.wall(game.start)})")]
    facts.append(("Status", game.status))
    if plan.last_ball_required is not None:
        facts.append(("Last ball required", "yes" if plan.last_ball_required else "no"))
    if plan.balls is not None:
        facts.append(("Balls (limited game)", str(plan.balls)))
    if plan.cards_sold is not None:
        facts.append(("Cards sold", str(plan.cards_sold)))
    if plan.prize is not None:
        facts.append(("Prize", _money(plan.prize)))
    if plan.pattern:
        facts.append(("Pattern", plan.pattern))
    in_play = [c for c in game.calls if not c.withdrawn]
    facts.append(("Balls called", str(len(in_play))))
    dl = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    balls = "".join(
        f'<li class="{"withdrawn" if c.withdrawn else ""}" title="{_clock(c.time)}">{c.ball}'
        f" <small>{_clock(c.time)}</small></li>"
        for c in game.calls
    )
    calls = f'<ol class="balls">{balls}</ol>' if balls else '<p class="muted">No calls.</p>'
    if game.claims:
        claim_rows = []
        for c in game.claims:
            verdict = {True: "valid", False: "not valid", None: "not resolved"}[c.valid]
            claim_rows.append(
                f'<tr><td class="num">{_clock(c.time)}</td><td>{escape(str(c.held_ball or "—"))}</td>'
                f"<td>{escape(c.manufacturer or '—')}</td><td>{escape(c.serial or '—')}</td>"
                f"<td>{escape(' '.join(str(b) for b in c.winning) or '—')}</td>"
                f"<td>{escape(' '.join(str(b) for b in c.not_called) or '—')}</td><td>{escape(verdict)}</td></tr>"
            )
        claims = (
            '<table><thead><tr><th class="num">Time</th><th>Held ball</th><th>Manufacturer ID</th><th>Serial</th>'
            "<th>Winning numbers read</th><th>Not called</th><th>Verification</th></tr></thead>"
            f"<tbody>{''.join(claim_rows)}</tbody></table>"
        )
    else:
        claims = '<p class="muted">No claims.</p>'
    if game.findings:
        by_clause = Counter(f.clause for f in game.findings)
        listed = ", ".join(f"{clause} × {n}" for clause, n in sorted(by_clause.items()))
        findings = f"<p>{len(game.findings)} finding(s): {escape(listed)} — each is listed under Findings above.</p>"
    else:
        findings = '<p class="muted">No findings in this game.</p>'
    return (
        f'<section class="game"><h3>Game {game.number}</h3><dl class="facts">{dl}</dl>'
        f"<h4>Calls in order</h4>{calls}<h4>Claims and verification</h4>{claims}{findings}</section>"
    )


def _winners_section(data: ReportData) -> str:
    if not data.winners:
        return '<p class="muted">No winner-take-all game in this occasion.</p>'
    rows = []
    for w in data.winners:
        people = (
            "<br>".join(
                f"{escape(p.name)} — {escape(p.contact or 'no contact')}"
                f"{' — tax doc ' + escape(p.tax_document) if p.tax_document else ''} ({_money(p.prize)})"
                for p in w.winners
            )
            or '<span class="muted">none entered</span>'
        )
        when = w.conducted_at.astimezone().strftime("%Y-%m-%d %H:%M") if w.conducted_at else "—"
        missing = "<br>".join(escape(m) for m in w.missing)
        state = _status("finding") + f"<br>{missing}" if w.missing else _status("pass")
        rows.append(
            f'<tr><td class="num">{w.game}</td><td class="nowrap">{escape(w.type.value)}</td>'
            f'<td class="num">{"—" if w.cards_sold is None else w.cards_sold}</td><td class="nowrap">{when}</td>'
            f'<td class="num">{_money(w.prize)}</td><td>{people}</td><td>{state}</td></tr>'
        )
    return (
        '<table><thead><tr><th class="num">Game</th><th>Type</th><th class="num">Cards sold</th><th>Date and time</th>'
        '<th class="num">Prize</th><th>Winners, contact, tax documents</th><th>Record</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def html_report(data: ReportData) -> str:
    """The inspector's report as one self-contained HTML page that prints on letter paper."""
    record, info = data.record, data.info
    findings = record.all_findings()
    counts = Counter(f.severity for f in findings)
    clauses = clause_rows(record, data.winners)
    breached = [row.clause for row in clauses if row.status == "finding"]
    cautioned = [row.clause for row in clauses if row.status == "warning"]
    warned = f"warnings under {escape(', '.join(cautioned))}" if cautioned else ""
    if breached:
        also = f"; {warned}" if warned else ""
        verdict = f'<div class="verdict bad">Findings under {escape(", ".join(breached))}{also}</div>'
    elif cautioned:
        verdict = f'<div class="verdict warn">No violation; {warned}</div>'
    else:
        verdict = '<div class="verdict ok">No finding: every observable clause passed</div>'
    if record.incomplete:  # what the input lacked comes first: nothing heard is never a pass
        lacked = "; ".join(record.incomplete)
        verdict = f'<div class="verdict bad">Incomplete input: {escape(lacked)}</div>' + (verdict if breached else "")
    closed = info.closed_at.astimezone().strftime("%Y-%m-%d %H:%M:%S") if info.closed_at else "not closed"
    integrity = data.integrity
    chain = f"intact ({integrity.checked} records)" if integrity.ok else f"BROKEN — {escape(str(integrity.first_bad))}"
    over = record.prizes_total > PRIZE_CAP
    facts = [
        ("Occasion", str(data.occasion_id)),
        ("Source", info.source),
        ("Started", info.started_at.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")),
        ("Closed", closed),
        ("Games", str(len(record.games))),
        (
            "Findings",
            f"{len(findings)} ({counts[Severity.VIOLATION]} violation, {counts[Severity.WARNING]} warning, "
            f"{counts[Severity.UNCERTAIN]} uncertain)",
        ),
        ("Prizes of the occasion", f"{_money(record.prizes_total)} of the {_money(PRIZE_CAP)} cap (E(2)(f))"),
        ("Record integrity", chain),
    ]
    dl = "".join(f"<dt>{escape(k)}</dt><dd>{v if k == 'Record integrity' else escape(v)}</dd>" for k, v in facts)
    clause_table = "".join(
        f'<tr><td class="clause">{escape(r.clause)}</td><td>{escape(r.title)}</td><td>{_status(r.status)}</td>'
        f"<td>{escape(r.note)}</td></tr>"
        for r in clauses
    )
    all_rows = [(g.number, f) for g in record.games for f in g.findings] + [(None, f) for f in record.findings]
    all_rows.sort(key=lambda row: row[1].time)
    games = "".join(_game_section(data, g) for g in record.games) or '<p class="muted">No game was opened.</p>'
    notes = "".join(f"<li>{escape(n)}</li>" for n in record.notes)
    outages = "".join(
        f"<li>Game {o.game or '—'}: outage at {_clock(o.start)}, approval "
        f"{_clock(o.approved) if o.approved is not None else 'not heard'}, power back "
        f"{_clock(o.restored) if o.restored is not None else 'not recorded'}</li>"
        for o in record.outages
    )
    prize_line = (
        f'<p class="{"verdict bad" if over else ""}">Aggregate prizes offered or given: {_money(record.prizes_total)}'
        f" — cap {_money(PRIZE_CAP)}{' — OVER THE CAP' if over else ''}.</p>"
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Occasion {data.occasion_id} — bingo conduct record (15.4.7.11 NMAC)</title>
<style>{CSS}</style></head>
<body>
<header><h1>Bingo conduct record — occasion {data.occasion_id}</h1>
<p class="sub">Checked against N.M. Admin. Code § 15.4.7.11, Conduct during bingo games</p></header>
<dl class="facts">{dl}</dl>
{verdict}
<h2>Clauses of the rule</h2>
<table class="clauses"><thead><tr><th>Clause</th><th>The rule asks</th><th>Result</th><th>Evidence</th></tr></thead>
<tbody>{clause_table}</tbody></table>
<h2>Findings, with the words heard</h2>
{_findings_table(data, all_rows, with_game=True)}
<h2>Speech for review</h2>
<p class="sub">What the caller said that the procedure could not place, kept so that nothing heard is lost.
These are not findings.</p>
{_review_table(data, sorted(record.all_review(), key=lambda r: r.time))}
<h2>Games</h2>
{games}
<h2>Winner-take-all records (E(2))</h2>
{_winners_section(data)}
{prize_line}
{f"<h2>Power outages (F)</h2><ul>{outages}</ul>" if outages else ""}
{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}
<footer>Generated {data.generated_at.strftime("%Y-%m-%d %H:%M:%S %Z")} by bingo-assistant.
Journal chain head (sha256): <span class="hash">{escape(integrity.head)}</span>
— keep this number: verifying the journal against it (<code>bingo-assistant verify --head</code>) proves that
no record was added or cut since this report.</footer>
</body></html>
"""


def render_html(store: Store, occasion: int) -> str:
    """The inspector's report of one occasion, read from the store."""
    return html_report(ReportData.load(store, occasion))
