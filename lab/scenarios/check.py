"""`check` on hall audio, in-process: the same recognizers, step follower, session and procedure as the CLI verb.

`check_recording` is what `bingo-assistant check HALL.wav --plan PLAN.txt` does with a recording already read;
`check_stream` does the same on a WAV read chunk by chunk (steady memory, progress on stderr); `check_script`
is `check` on a transcript script. Board keys from a script can be merged into the audio's inputs (the
master board console is not speech: it is keyed, not heard).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from assistant.audio import AudioChunk, Recording
from assistant.engines.base import Recognizer
from assistant.grammar import Grammar
from assistant.messages import BoardKey, GamePlan, Input, OccasionRecord, Output, Prompt, SessionEnd, end_of
from assistant.pipeline import (
    CHANNEL_ROLES,
    Session,
    inputs_from_recording,
    lockstep_utterances,
    merge_keys,
    program_games,
    recognizers_for,
    role_intents,
    step_follower,
)
from assistant.settings import Settings

make_recognizers = recognizers_for
"""One recognizer per channel (caller, floor), each limited to its roles' intents."""


@dataclass
class AudioCheck:
    """What `check` found in a recording, with every input the procedure was fed."""

    occasion: OccasionRecord
    inputs: list[Input]
    prompts: list[Prompt]
    """What the caller was told, in order."""


def _run(
    settings: Settings,
    grammar: Grammar,
    recognizers: Sequence[Recognizer],
    inputs: Iterable[Input],
) -> AudioCheck:
    prompts: list[Prompt] = []
    session = Session.create(settings, grammar, [_prompts_into(prompts)])
    session.sinks.append(step_follower(recognizers, grammar))
    fed: list[Input] = []
    session.on_input.append(fed.append)
    session.run(inputs)
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
    if recognizers is None:
        recognizers = make_recognizers(len(recording.channels), settings, grammar)
    else:
        for recognizer, role in zip(recognizers, CHANNEL_ROLES, strict=False):
            recognizer.set_step(role_intents(grammar, role))
    inputs = inputs_from_recording(recording, recognizers, grammar, plans)
    return _run(settings, grammar, recognizers, merge_keys(inputs, keys))


def inputs_from_chunks(
    channel_chunks: Iterable[Sequence[AudioChunk]],
    recognizers: Sequence[Recognizer],
    grammar: Grammar,
    plans: Sequence[GamePlan],
    duration: Callable[[], float],
) -> Iterator[Input]:
    """`inputs_from_recording` on a stream of chunks: the same games, utterances and session end."""
    yield from program_games(lockstep_utterances(channel_chunks, recognizers, grammar), plans)
    yield SessionEnd(duration())


def check_chunks(
    channel_chunks: Iterable[Sequence[AudioChunk]],
    channels: int,
    plans: Sequence[GamePlan],
    settings: Settings,
    grammar: Grammar,
    duration: Callable[[], float],
) -> AudioCheck:
    """`check` on audio that streams in chunks (a WAV read piece by piece), never holding the whole file."""
    recognizers = make_recognizers(channels, settings, grammar)
    return _run(
        settings, grammar, recognizers, inputs_from_chunks(channel_chunks, recognizers, grammar, plans, duration)
    )


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
