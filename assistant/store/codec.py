"""Messages as canonical JSON and back: what a journal row's payload holds."""

from __future__ import annotations

import dataclasses
import json
import types
from enum import Enum
from typing import Any, Union, get_args, get_origin, get_type_hints

from ..messages import (
    Ball,
    BoardKey,
    CallMade,
    CallWithdrawn,
    ClaimOpened,
    ClaimResolved,
    Finding,
    GameClosed,
    GameOpened,
    GameStart,
    HeardForReview,
    Input,
    Output,
    Prompt,
    SessionEnd,
    StepChanged,
    Tick,
    Utterance,
)
from .records import StoreError

_INPUT_TYPES: tuple[type, ...] = (Utterance, BoardKey, GameStart, Tick, SessionEnd)
_OUTPUT_TYPES: tuple[type, ...] = (
    Finding,
    Prompt,
    CallMade,
    CallWithdrawn,
    GameOpened,
    GameClosed,
    ClaimOpened,
    ClaimResolved,
    StepChanged,
    HeardForReview,
)
_MESSAGE_TYPES: dict[str, type] = {cls.__name__: cls for cls in _INPUT_TYPES + _OUTPUT_TYPES}


def plain(value: object) -> Any:
    if isinstance(value, Ball):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot record a {type(value).__name__}")


def typed(hint: Any, value: Any) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = get_args(hint)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return typed(option, value)
            except (TypeError, ValueError, KeyError):
                continue
        raise ValueError(f"{value!r} fits none of {hint}")
    if origin in (tuple, list):
        element = get_args(hint)[0]
        items = [typed(element, v) for v in value]
        return tuple(items) if origin is tuple else items
    if hint is Ball:
        return Ball.parse(value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise TypeError(f"expected an object for {hint.__name__}")
        hints = get_type_hints(hint)
        return hint(
            **{f.name: typed(hints[f.name], value[f.name]) for f in dataclasses.fields(hint) if f.name in value}
        )
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint is bool and isinstance(value, bool):
        return value
    if hint is str and isinstance(value, str):
        return value
    raise TypeError(f"{value!r} is not a {hint}")


def canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_message(item: Input | Output) -> tuple[str, str]:
    """A message as (type name, canonical JSON)."""
    name = type(item).__name__
    if name not in _MESSAGE_TYPES:
        raise StoreError(f"not a message the store records: {name}")
    return name, canonical(plain(item))


def decode_message(type_name: str, payload: str) -> Any:
    """The message a journal row holds."""
    cls = _MESSAGE_TYPES.get(type_name)
    if cls is None:
        raise StoreError(f"unknown message type in the journal: {type_name}")
    return typed(cls, json.loads(payload))
