"""`check` on hall audio, in-process: the same recognizers, step follower, session and procedure as the CLI verb.

`check_recording` is what `bingo-assistant check HALL.wav --plan PLAN.txt` does with a recording already read;
`check_stream` does the same on a WAV read chunk by chunk (steady memory, progress on stderr); `check_script`
is `check` on a transcript script. Board keys from a script can be merged into the audio's inputs (the
master board console is not speech: it is keyed, not heard).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from assistant.audio import AudioChunk, Recording
from assistant.engines.base import Recognizer
from assistant.grammar import Grammar
from assistant.messages import BoardKey, GamePlan, Input, OccasionRecord, Output, Prompt, SessionEnd, end_of
from assistant.pipeline import Listening, Session
from assistant.settings import Settings


def make_recognizers(
    channels: int, settings: Settings, grammar: Grammar, options: dict[str, Any] | None = None
) -> list[Recognizer]:
    """One recognizer per channel (caller, floor), each limited to its roles' intents: made once, heard with again
    and again (`check_recording`'s `recognizers`)."""
    return Listening.of(channels, settings, grammar, options).recognizers


@dataclass
class AudioCheck:
    """What `check` found in a recording, with every input the procedure was fed."""

    occasion: OccasionRecord
    inputs: list[Input]
    prompts: list[Prompt]
    """What the caller was told, in order."""


def _run(
    settings: Settings, grammar: Grammar, listening: Listening, inputs: Callable[[], Iterable[Input]]
) -> AudioCheck:
    prompts: list[Prompt] = []
    session = Session.create(settings, grammar, [_prompts_into(prompts)])
    listening.follow(session)
    fed: list[Input] = []
    session.on_input.append(fed.append)
    session.run(inputs())
    return AudioCheck(session.procedure.occasion, fed, prompts)


def _prompts_into(prompts: list[Prompt]) -> Callable[[Output], None]:
    def keep(item: Output) -> None:
        if isinstance(item, Prompt):
            prompts.append(item)

    return keep


def check_recording(
    recording: Recording,
    plans: Sequence[GamePlan],
    settings: Settings,
    grammar: Grammar,
    *,
    keys: Sequence[BoardKey] = (),
    recognizers: Sequence[Recognizer] | None = None,
) -> AudioCheck:
    """`check HALL.wav --plan PLAN`: the real recognizers, step follower and procedure on a recording."""
    listening = (
        Listening(recognizers, grammar)
        if recognizers is not None
        else Listening.of(len(recording.channels), settings, grammar)
    )
    return _run(settings, grammar, listening, lambda: listening.recording(recording, plans, keys=keys))


def check_chunks(
    channel_chunks: Iterable[Sequence[AudioChunk]],
    channels: int,
    plans: Sequence[GamePlan],
    settings: Settings,
    grammar: Grammar,
    duration: Callable[[], float],
) -> AudioCheck:
    """`check` on audio that streams in chunks (a WAV read piece by piece), never holding the whole file."""
    listening = Listening.of(channels, settings, grammar)
    return _run(settings, grammar, listening, lambda: listening.inputs(channel_chunks, plans, end=duration))


def check_script(
    items: Sequence[Input], settings: Settings, grammar: Grammar, prompts: list[Prompt] | None = None
) -> OccasionRecord:
    """`check SCRIPT.txt`: the script's inputs through the same session; it ends after its last input. `prompts`,
    when given, gets what the caller was told."""
    feed = list(items)
    if not feed or not isinstance(feed[-1], SessionEnd):
        last = max((end_of(i) for i in feed), default=0.0)
        feed.append(SessionEnd(last))
    session = Session.create(settings, grammar, [] if prompts is None else [_prompts_into(prompts)])
    session.run(feed)
    return session.procedure.occasion
