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
from .store import PRIZE_CAP, OccasionInfo, RecordGap, Store, VerifyResult, WinnerTakeAllRecord, occasion_record
from .store.records import winner_take_all_records

STORE_KEPT = "E(2)(a)-(e)"
"""The clause-table row of the winner-take-all record: filled from the store, not from speech."""


@dataclass(frozen=True)
class ClauseRow:
    clause: str
    title: str
    status: str
    """pass | finding | warning | uncertain | not observable | not applicable | incomplete (the E(2) record)"""
    note: str = ""


def _clock(seconds: float) -> str:
    minutes, rest = divmod(max(seconds, 0.0), 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{rest:04.1f}" if hours else f"{minutes:02d}:{rest:04.1f}"


def _money(amount: float | None) -> str:
    return "—" if amount is None else f"${amount:,.2f}"


@dataclass(frozen=True)
class Summary:
    """What every form of an occasion's report says of it (text, JSON, CSV, HTML, and `check`'s exit status), computed
    once by `summarize`: the procedure's findings, what the E(2) record still lacks, the verdict."""

    findings: tuple[tuple[int | None, Finding], ...]
    """(game or None, finding): each game's findings in game order, then the occasion's."""
    gaps: tuple[RecordGap, ...]
    """What the E(2) record of a winner-take-all game still lacks (entered with `winner`): not a finding of the
    conduct, but the record is incomplete until it is entered."""
    review: int
    """Speech heard for review (not findings)."""
    incomplete: tuple[str, ...] = ()
    """What the input lacked (`OccasionRecord.incomplete`: no speech on a channel, no call, a truncated file):
    nothing heard is never compliant."""

    @property
    def counts(self) -> Counter[Severity]:
        return Counter(f.severity for _, f in self.findings)

    @property
    def has_findings(self) -> bool:
        """Violations or warnings; unsure hearings alone leave an occasion compliant, listed for review."""
        return any(f.severity is not Severity.UNCERTAIN for _, f in self.findings)

    @property
    def exit_status(self) -> int:
        """`check`, `listen` and `serve`: 1 when the occasion has findings (violations or warnings), else 0."""
        return 1 if self.has_findings else 0

    @property
    def verdict(self) -> str:
        """One line: the findings by severity, and whether the E(2) record is complete."""
        counts = self.counts
        total = sum(counts.values())
        gaps = len(self.gaps)
        incomplete = (
            f"the E(2) record lacks {gaps} entr{'ies' if gaps != 1 else 'y'} (enter winners with "
            "`bingo-assistant winner`)"
        )
        if self.incomplete:
            found = f"{total} finding{'s' if total != 1 else ''}" if total else "no findings"
            return f"Not compliant: the input is incomplete ({found} in what it held)."
        if total == 0:
            return f"No findings; {incomplete}." if gaps else "Compliant: no findings."
        parts = ", ".join(f"{counts[s]} {s.value}" for s in Severity if counts[s])
        verdict = f"{total} finding{'s' if total != 1 else ''}: {parts}."
        return f"{verdict[:-1]}; {incomplete}." if gaps else verdict

    def to_json(self) -> dict[str, object]:
        counts = self.counts
        return {
            "verdict": self.verdict,
            "findings": len(self.findings),
            **{s.value: counts[s] for s in Severity},
            "review": self.review,
            "record_incomplete": [{"game": g.game, "clause": g.clause, "missing": g.what} for g in self.gaps],
            "input_incomplete": list(self.incomplete),
        }


def summarize(record: OccasionRecord, e2: Sequence[WinnerTakeAllRecord] | None = None) -> Summary:
    """The one summary every form renders. `e2`: the E(2) records with the winners the store holds; None for a
    record with no store behind it (`check` without one): its winner-take-all games then have no winner entered."""
    if e2 is None:
        e2 = winner_take_all_records(record.games, ())
    findings = [(g.number, f) for g in record.games for f in g.findings] + [(None, f) for f in record.findings]
    return Summary(
        findings=tuple(findings),
        gaps=tuple(gap for r in e2 for gap in r.gaps),
        review=len(record.all_review()),
        incomplete=tuple(record.incomplete),
    )


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
                status, note = "incomplete", "; ".join(gaps)
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


def _gap_line(gap: RecordGap) -> str:
    return f"  {'':>7}  {gap.clause:<8} {'incomplete':<9} missing from the E(2) record: {gap.what}"


def render_text(occasion: OccasionRecord, e2: Sequence[WinnerTakeAllRecord] | None = None) -> str:
    """What `check` prints without --json: each game with its findings and E(2) gaps, then the occasion's, then the
    verdict (`summarize`). `e2`: the E(2) records from the store, when there is one."""
    summary = summarize(occasion, e2)
    lines: list[str] = []
    for game in occasion.games:
        calls = [c for c in game.calls if not c.withdrawn]
        claims = len(game.claims)
        lines.append(
            f"Game {game.number} ({game.plan.type.value}): {len(calls)} calls, "
            f"{claims} claim{'s' if claims != 1 else ''}, {game.status}"
        )
        lines.extend(_finding_line(f) for f in game.findings)
        lines.extend(_gap_line(gap) for gap in summary.gaps if gap.game == game.number)
        lines.extend(_review_line(r) for r in game.review)
    lines.append(f"Occasion: prizes {_money(occasion.prizes_total)} of the {_money(PRIZE_CAP)} cap")
    lines.extend(_finding_line(f) for f in occasion.findings)
    lines.extend(_review_line(r) for r in occasion.review)
    lines.extend(f"  note: {note}" for note in occasion.notes)
    lines.extend(f"  incomplete: {what}" for what in occasion.incomplete)
    if summary.review:
        lines.append(f"{summary.review} heard for review (speech the procedure could not place; not findings).")
    lines.append(summary.verdict)
    return "\n".join(lines) + "\n"


def render_json(occasion: OccasionRecord, e2: Sequence[WinnerTakeAllRecord] | None = None, **extra: object) -> str:
    """The `check --json` contract (OccasionRecord.to_json) with its `summary` (`summarize`), and any extra top-level
    keys. `e2`: the E(2) records from the store, when there is one."""
    document = {**occasion.to_json(), "summary": summarize(occasion, e2).to_json(), **extra}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def json_extras(store: Store, occasion: int) -> dict[str, object]:
    """What `report --format json` adds to the contract from the store: the occasion, E(2) records, integrity."""
    return ReportData.load(store, occasion).json_extras()


def render_occasions(store: Store) -> str:
    """`report --list`: the occasions the record holds, one a line: id, date, games by type, open or closed, source."""
    infos = store.occasions()
    hall = f" (hall {store.hall})" if store.hall is not None else ""
    if not infos:
        return f"{store.path}{hall} holds no occasion\n"
    lines = [f"{store.path}{hall}: {len(infos)} occasion{'s' if len(infos) != 1 else ''}"]
    rows = [("OCCASION", "DATE", "GAMES", "STATE", "SOURCE")]
    for info in infos:
        games = occasion_record(store, info.id).games
        kinds = Counter(g.plan.type.value for g in games)
        listed = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
        closed = f"closed {info.closed_at.astimezone():%Y-%m-%d %H:%M}" if info.closed_at else "open"
        rows.append(
            (
                str(info.id),
                f"{info.started_at.astimezone():%Y-%m-%d %H:%M}",
                f"{len(games)}{f' ({listed})' if listed else ''}",
                closed,
                info.source,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines.extend("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]) for row in rows)
    return "\n".join(lines) + "\n"


CSV_COLUMNS = ("occasion", "game", "time", "clock", "clause", "code", "severity", "heard", "message")
RECORD_GAP = "record-incomplete"
"""The code of a CSV row for an entry the E(2) record lacks (severity "incomplete")."""


def render_csv(occasion: OccasionRecord, e2: Sequence[WinnerTakeAllRecord] | None = None, *, occasion_id: int) -> str:
    """One finding per row, game findings in game order, then the occasion's; then one row per entry the E(2) record
    lacks (`summarize`)."""
    summary = summarize(occasion, e2)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for game, finding in summary.findings:
        writer.writerow(
            (
                occasion_id,
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
    for gap in summary.gaps:
        writer.writerow(
            (occasion_id, gap.game, "", "", gap.clause, RECORD_GAP, "incomplete", "", f"missing: {gap.what}")
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

    @property
    def summary(self) -> Summary:
        return summarize(self.record, self.winners)

    def wall(self, seconds: float) -> str:
        moment = (self.info.started_at + timedelta(seconds=seconds)).astimezone()
        return moment.strftime("%H:%M:%S")

    def json_extras(self) -> dict[str, object]:
        """What `report --format json` adds to the contract from the store: the occasion, E(2) records, integrity."""
        info, integrity = self.info, self.integrity
        return {
            "occasion_id": self.occasion_id,
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
                        {
                            "entry": p.id,
                            "name": p.name,
                            "contact": p.contact,
                            "prize": p.prize,
                            "tax_document": p.tax_document,
                        }
                        for p in w.winners
                    ],
                    "missing": list(w.missing),
                }
                for w in self.winners
            ],
            "prize_cap": PRIZE_CAP,
            "integrity": {
                "ok": integrity.ok,
                "records": integrity.checked,
                "head": integrity.head,
                "first_bad": str(integrity.first_bad) if integrity.first_bad else None,
            },
        }

    def render(self, form: str) -> str:
        """The report in one of its forms (`REPORT_FORMS`), each rendering the same `summary`."""
        if form == "html":
            return html_report(self)
        if form == "json":
            return render_json(self.record, self.winners, **self.json_extras())
        if form == "csv":
            return render_csv(self.record, self.winners, occasion_id=self.occasion_id)
        if form == "text":
            return render_text(self.record, self.winners)
        raise ValueError(f"no report form {form!r}: one of {', '.join(REPORT_FORMS)}")


REPORT_FORMS = ("html", "json", "csv", "text")


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
.status.incomplete { color: var(--warn); border-style: dashed; }
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
        state = _status("incomplete") + f"<br>{missing}" if w.missing else _status("pass")
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
    record, info, summary = data.record, data.info, data.summary
    counts = summary.counts
    clauses = clause_rows(record, data.winners)
    breached = [row.clause for row in clauses if row.status == "finding"]
    cautioned = [row.clause for row in clauses if row.status == "warning"]
    under = "; ".join(
        f"{what} under {', '.join(listed)}"
        for what, listed in (("violations", breached), ("warnings", cautioned))
        if listed
    )
    bad = counts[Severity.VIOLATION] or summary.incomplete  # nothing heard is never a pass
    tone = "bad" if bad else "warn" if summary.has_findings or summary.gaps else "ok"
    clauses_line = f"<br>{escape(under[0].upper() + under[1:])}" if under else ""
    lacked = "".join(f"<br>Incomplete input: {escape(what)}" for what in summary.incomplete)
    verdict = f'<div class="verdict {tone}">{escape(summary.verdict)}{lacked}{clauses_line}</div>'
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
            f"{len(summary.findings)} ({counts[Severity.VIOLATION]} violation, {counts[Severity.WARNING]} warning, "
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
    all_rows = sorted(summary.findings, key=lambda row: row[1].time)
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
