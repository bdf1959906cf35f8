"""The transcript script format (a contract): a session written as text, read into inputs.

    @game type=limited balls=50 last_ball_required=yes    the next game of the hall's program
    12.5 caller: B seven                                   TIME ROLE: WORDS (TIME in seconds or mm:ss.s)
    13 board: B7                                           a ball keyed on the master board console
    # a comment

Additions that keep the contract: `ROLE?` marks an utterance the recognizer was unsure of, `ROLE(0.42)` gives
its confidence; `(or N31 N34)` after a call's words names the other balls its hearing left room for (the
recognizer's sound-alikes); `TIME tick` lets time pass; `TIME end` ends the session. A `@game` line takes the
time of the next timed line (the game begins when its first words are said).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from .grammar import Grammar
from .messages import Ball, BoardKey, GamePlan, GameStart, GameType, Input, Role, SessionEnd, Tick

UNSURE_CONFIDENCE = 0.5
"""Confidence given to an utterance marked unsure (`caller?:`) without a number."""
SECONDS_PER_WORD = 0.4
"""Estimated speaking time per word: a typed utterance's end (the recognizer gives real ends)."""

_TIME = r"(?:\d+:)?\d+(?:\.\d+)?"
_LINE = re.compile(rf"^(?P<time>{_TIME})\s+(?P<rest>.*)$")
_SPEAKER = re.compile(r"^(?P<role>[A-Za-z]+)\s*(?:\((?P<conf>[^)]*)\))?\s*(?P<unsure>\?)?\s*:\s*(?P<words>.*)$")
_COULD_BE = re.compile(r"^(?P<words>.*?)\s*\(\s*or\s+(?P<balls>[^()]*)\)\s*$")
"""`WORDS (or N31 N34)`: the other balls a hearing of one call left room for."""
_PLAN_KEYS = ("type", "balls", "cards_sold", "prize", "last_ball_required", "pattern")


class ScriptError(ValueError):
    """A transcript script line that cannot be read; the message names the file and line."""


def parse_time(text: str) -> float:
    """'12.5' -> 12.5; '01:02.5' -> 62.5."""
    if ":" in text:
        minutes, seconds = text.split(":", 1)
        if float(seconds) >= 60:
            raise ValueError(f"seconds must be under 60 in {text!r}")
        return int(minutes) * 60 + float(seconds)
    return float(text)


def format_time(t: float) -> str:
    return f"{t:.3f}".rstrip("0").rstrip(".")


def _parse_plan_line(line: str) -> GamePlan:
    """The words after '@game'; raises ValueError with a one-line reason."""
    try:
        tokens = shlex.split(line)
    except ValueError as exc:
        raise ValueError(f"@game line: {exc}") from exc
    values: dict[str, str] = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        if not sep or not value:
            raise ValueError(f"@game expects key=value, got {token!r}")
        if key not in _PLAN_KEYS:
            raise ValueError(f"@game: unknown key {key!r} (known: {', '.join(_PLAN_KEYS)})")
        if key in values:
            raise ValueError(f"@game: {key} given twice")
        values[key] = value
    if "type" not in values:
        raise ValueError("@game needs type=regular|limited|winner-take-all|cover-all")
    try:
        game_type = GameType(values["type"])
    except ValueError:
        raise ValueError(
            f"@game: unknown type {values['type']!r} (regular, limited, winner-take-all, cover-all)"
        ) from None

    def count(key: str) -> int | None:
        if key not in values:
            return None
        if not values[key].isdigit():
            raise ValueError(f"@game: {key} must be a whole number, got {values[key]!r}")
        return int(values[key])

    prize: float | None = None
    if "prize" in values:
        try:
            prize = float(values["prize"].lstrip("$").replace(",", ""))
        except ValueError:
            raise ValueError(f"@game: prize must be dollars, got {values['prize']!r}") from None
        if prize < 0:
            raise ValueError(f"@game: prize cannot be negative ({values['prize']})")
    last_ball: bool | None = None
    if "last_ball_required" in values:
        flag = values["last_ball_required"].lower()
        if flag not in ("yes", "no", "true", "false"):
            raise ValueError(f"@game: last_ball_required must be yes or no, got {values['last_ball_required']!r}")
        last_ball = flag in ("yes", "true")
    balls = count("balls")
    if balls is not None and not 1 <= balls <= 75:
        raise ValueError(f"@game: balls must be 1-75, got {balls}")
    return GamePlan(
        type=game_type,
        balls=balls,
        cards_sold=count("cards_sold"),
        prize=prize,
        last_ball_required=last_ball,
        pattern=values.get("pattern"),
    )


def format_plan(plan: GamePlan) -> str:
    parts = [f"@game type={plan.type.value}"]
    if plan.balls is not None:
        parts.append(f"balls={plan.balls}")
    if plan.cards_sold is not None:
        parts.append(f"cards_sold={plan.cards_sold}")
    if plan.prize is not None:
        parts.append(f"prize={format_time(plan.prize)}")
    if plan.last_ball_required is not None:
        parts.append(f"last_ball_required={'yes' if plan.last_ball_required else 'no'}")
    if plan.pattern is not None:
        parts.append(f"pattern={shlex.quote(plan.pattern)}")
    return " ".join(parts)


def _strip_comment(line: str) -> str:
    return line.split("#", 1)[0].strip()


def parse_script(text: str, grammar: Grammar, name: str = "<script>") -> list[Input]:
    """Inputs in time order; a ScriptError names the line of the first problem."""
    items: list[Input] = []
    waiting_plans: list[tuple[int, GamePlan]] = []
    last_time = 0.0

    def place_plans(time: float) -> None:
        for index, plan in waiting_plans:
            items.insert(index, GameStart(time, plan))
        waiting_plans.clear()

    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw)
        if not line:
            continue

        def fail(reason: str, number: int = number) -> ScriptError:
            return ScriptError(f"{name}:{number}: {reason}")

        if line.startswith("@"):
            keyword, _, rest = line.partition(" ")
            if keyword != "@game":
                raise fail(f"unknown directive {keyword!r} (only @game)")
            try:
                plan = _parse_plan_line(rest)
            except ValueError as exc:
                raise fail(str(exc)) from None
            waiting_plans.append((len(items) + len(waiting_plans), plan))
            continue
        match = _LINE.match(line)
        if not match:
            raise fail(f"expected 'TIME ROLE: WORDS', '@game ...' or a comment, got {line[:40]!r}")
        try:
            time = parse_time(match["time"])
        except ValueError as exc:
            raise fail(f"bad time: {exc}") from None
        if time < last_time:
            raise fail(f"time goes backwards ({format_time(time)} after {format_time(last_time)})")
        last_time = time
        rest = match["rest"].strip()
        if rest in ("end", "tick"):
            place_plans(time)
            items.append(SessionEnd(time) if rest == "end" else Tick(time))
            continue
        speaker = _SPEAKER.match(rest)
        if not speaker:
            raise fail(f"expected 'ROLE: WORDS' after the time, got {rest[:40]!r}")
        role_name = speaker["role"].lower()
        try:
            role = Role(role_name)
        except ValueError:
            raise fail(f"unknown role {speaker['role']!r} (caller, floor, player, board)") from None
        words = speaker["words"].strip()
        if not words:
            raise fail("no words after the role")
        place_plans(time)
        if role is Role.BOARD:
            if speaker["conf"] is not None or speaker["unsure"]:
                raise fail("a board key has no confidence")
            try:
                ball = Ball.parse(words)
            except ValueError as exc:
                raise fail(str(exc)) from None
            items.append(BoardKey(time, ball))
            continue
        unsure = bool(speaker["unsure"])
        confidence = UNSURE_CONFIDENCE if unsure else 1.0
        if speaker["conf"] is not None:
            try:
                confidence = float(speaker["conf"])
            except ValueError:
                raise fail(f"confidence must be a number 0..1, got {speaker['conf']!r}") from None
            if not 0.0 <= confidence <= 1.0:
                raise fail(f"confidence must be 0..1, got {speaker['conf']}")
        could_be: tuple[Ball, ...] = ()
        alike = _COULD_BE.match(words)
        if alike:
            words = alike["words"]
            try:
                could_be = tuple(Ball.parse(b) for b in alike["balls"].replace(",", " ").split())
            except ValueError as exc:
                raise fail(f"(or ...): {exc}") from None
            if not could_be or not words:
                raise fail("(or ...) names the balls a call's hearing left room for, after the call's words")
        end = time + max(0.5, SECONDS_PER_WORD * len(words.split()))
        utterance = grammar.utterance(
            time, end, role, words, confidence=confidence, uncertain=unsure, could_be=could_be
        )
        if could_be and [m.intent for m in utterance.meanings] != ["call"]:
            raise fail("(or ...) follows the words of one call")
        items.append(utterance)
    place_plans(last_time)
    return items


def read_text(path: Path) -> str:
    """A text file as editors save it: UTF-8 with or without a byte-order mark, or UTF-16 with one (Notepad's
    "Unicode"); any line ends. ScriptError in one line otherwise."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        return raw.decode("utf-16" if raw.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8-sig")
    except UnicodeDecodeError:
        raise ScriptError(f"{path}: not a text file in UTF-8 or UTF-16 (save it as UTF-8)") from None


def read_script(path: Path, grammar: Grammar) -> list[Input]:
    return parse_script(read_text(path), grammar, name=str(path))


def read_board(path: Path, grammar: Grammar) -> list[BoardKey]:
    """The master board console's key log for a recording: only 'TIME board: BALL' lines (and comments)."""
    text = read_text(path)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw)
        match = _LINE.match(line) if line else None
        speaker = _SPEAKER.match(match["rest"].strip()) if match else None
        if line and (speaker is None or speaker["role"].lower() != Role.BOARD.value):
            raise ScriptError(f"{path}:{number}: a board log holds only 'TIME board: BALL' lines, got {line[:40]!r}")
    keys = [item for item in parse_script(text, grammar, name=str(path)) if isinstance(item, BoardKey)]
    if not keys:
        raise ScriptError(f"{path}: no 'TIME board: BALL' line")
    return keys


def format_script(items: Iterable[Input]) -> str:
    """The script that reads back into the same inputs."""
    lines: list[str] = []
    for item in items:
        if isinstance(item, GameStart):
            lines.append(format_plan(item.plan))
        elif isinstance(item, BoardKey):
            lines.append(f"{format_time(item.time)} board: {item.ball}")
        elif isinstance(item, Tick):
            lines.append(f"{format_time(item.time)} tick")
        elif isinstance(item, SessionEnd):
            lines.append(f"{format_time(item.time)} end")
        else:
            marks = ""
            if item.uncertain:
                marks = "?" if item.confidence == UNSURE_CONFIDENCE else f"({format_time(item.confidence)})?"
            elif item.confidence != 1.0:
                marks = f"({format_time(item.confidence)})"
            text = " ".join(item.text.split())
            if item.could_be:
                text += f" (or {' '.join(str(b) for b in item.could_be)})"
            lines.append(f"{format_time(item.start)} {item.role.value}{marks}: {text}")
    return "\n".join(lines) + "\n"


def parse_plan(text: str, name: str = "<plan>") -> list[GamePlan]:
    """The hall's program: a file of only @game lines (and comments)."""
    plans: list[GamePlan] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw)
        if not line:
            continue
        keyword, _, rest = line.partition(" ")
        if keyword != "@game":
            raise ScriptError(f"{name}:{number}: a plan holds only '@game ...' lines, got {line[:40]!r}")
        try:
            plans.append(_parse_plan_line(rest))
        except ValueError as exc:
            raise ScriptError(f"{name}:{number}: {exc}") from None
    if not plans:
        raise ScriptError(f"{name}: no @game line")
    return plans
