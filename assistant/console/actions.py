"""The operator's actions on the page, read from the JSON the page sends into typed values, with one-line errors."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..messages import Ball, GamePlan, GameType


class ConsoleInputError(ValueError):
    """An operator action the console cannot take (a bad ball, a malformed plan): one line for the page."""


def read_ball(data: Mapping[str, object]) -> Ball:
    """`{"ball": "B7"}` -> Ball(7); the letter must match the number."""
    text = data.get("ball")
    if not isinstance(text, str) or not text.strip():
        raise ConsoleInputError("key a ball like B7 or O75")
    try:
        return Ball.parse(text)
    except ValueError as exc:
        raise ConsoleInputError(str(exc)) from exc


def _whole(data: Mapping[str, object], name: str, low: int, high: int) -> int | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConsoleInputError(f"{name} must be a whole number, not {value!r}") from None
    if not low <= number <= high:
        raise ConsoleInputError(f"{name} must be between {low} and {high}, not {number}")
    return number


def _dollars(data: Mapping[str, object], name: str) -> float | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    try:
        amount = float(str(value).replace("$", "").replace(",", "").strip())
    except ValueError:
        raise ConsoleInputError(f"{name} must be an amount in dollars, not {value!r}") from None
    if not math.isfinite(amount) or amount < 0:
        raise ConsoleInputError(f"{name} must be a positive amount in dollars, not {value!r}")
    return amount


def _yes_no(data: Mapping[str, object], name: str) -> bool | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("yes", "true"):
        return True
    if text in ("no", "false"):
        return False
    raise ConsoleInputError(f"{name} must be yes or no, not {value!r}")


def read_plan(data: Mapping[str, object]) -> GamePlan:
    """The next game's plan as the hall's program states it (the `@game` line of the script format)."""
    raw_type = data.get("type") or GameType.REGULAR.value
    try:
        game_type = GameType(str(raw_type))
    except ValueError:
        allowed = ", ".join(t.value for t in GameType)
        raise ConsoleInputError(f"game type must be one of {allowed}, not {raw_type!r}") from None
    balls = _whole(data, "balls", 1, 75)
    if game_type == GameType.LIMITED and balls is None:
        raise ConsoleInputError("a limited game needs its ball count (D)")
    cards_sold = _whole(data, "cards_sold", 0, 1_000_000)
    prize = _dollars(data, "prize")
    pattern = data.get("pattern")
    if pattern is not None and not isinstance(pattern, str):
        raise ConsoleInputError("pattern must be text")
    return GamePlan(
        type=game_type,
        balls=balls,
        cards_sold=cards_sold,
        prize=prize,
        last_ball_required=_yes_no(data, "last_ball_required"),
        pattern=(pattern.strip() or None) if pattern else None,
    )


def read_valid(data: Mapping[str, object]) -> bool:
    """`{"valid": true|false}`: the caller's verdict on the claim, confirmed on the master board (B(8))."""
    value = data.get("valid")
    if not isinstance(value, bool):
        raise ConsoleInputError("the claim result must be valid (true) or not valid (false)")
    return value


def read_winner(data: Mapping[str, object]) -> tuple[str, str, float, str | None]:
    """Name, contact, prize and tax document reference of a winner (E(2)(c), E(2)(d))."""
    name = str(data.get("name") or "").strip()
    contact = str(data.get("contact") or "").strip()
    if not name:
        raise ConsoleInputError("the winner's name is missing")
    if not contact:
        raise ConsoleInputError("the winner's contact information is missing (E(2)(c))")
    prize = _dollars(data, "prize")
    if prize is None:
        raise ConsoleInputError("the prize paid is missing")
    tax = str(data.get("tax_document") or "").strip() or None
    return name, contact, prize, tax
