"""The loop closed without a sound card: prompts to a voice-out WAV, transcribed back by the recognizer;
the assistant's own voice leaking into the caller's microphone, dropped by the self-hearing gate.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from assistant.audio import RATE, chunks, from_samples, read_wav
from assistant.endpoint import EndpointSettings
from assistant.engines import Heard, make_recognizer
from assistant.gate import SelfHearingGate
from assistant.grammar import DEFAULT_GRAMMAR, Grammar
from assistant.messages import Ball, GamePlan, GameStart, Prompt, Role, Utterance
from assistant.procedure import Procedure, ProcedureSettings, RulePack
from assistant.questions import answer
from assistant.script import parse_script
from assistant.speaker import Pyttsx3Voice, TimelineSpeaker, VoiceSettings
from lab import REAL_AUDIO

REAL = REAL_AUDIO
ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "config" / "rules" / "nm-15.4.7.11.yaml"
VOICE = VoiceSettings(voice="en-us")
VOICE_PHRASES = EndpointSettings(hangover=0.15)
"""Endpointing for transcribing our own voice: espeak pauses about 0.2 s at a comma or colon, and the
pocketsphinx adapter decodes one meaning per utterance, losing what follows a pause inside one
("Ask: are there any other bingos?" comes out as "ask"); cut at those pauses, every phrase is heard."""


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.load()


@pytest.fixture
def fresh_voice() -> Iterator[Pyttsx3Voice]:
    """A voice process of its own: espeak-ng varies its intonation from one sentence to the next, so a
    fresh process renders the same session to the same audio whatever ran before."""
    voice = Pyttsx3Voice(VOICE)
    yield voice
    voice.close()


def with_call_slots(grammar: Grammar, text: str) -> str:
    """Prompt words with every ball replaced by the {call} slot, so the recognizer must tell the ball."""
    tokens, out, i = grammar.normalize(text), [], 0
    while i < len(tokens):
        found = grammar.read_call(tokens, i)
        if found:
            out.append("{call}")
            i = max(end for end, _ in found)
        else:
            out.append(tokens[i])
            i += 1
    return " ".join(out)


def voice_grammar(grammar: Grammar, prompts: list[Prompt]) -> Grammar:
    """What the assistant can say here, as a grammar: each prompt, and each run of its phrases (a pause
    at a comma or colon can cut it into several utterances)."""
    templates: set[str] = set()
    for prompt in prompts:
        phrases = [p for p in re.split(r"[,:.?!]", prompt.text) if p.strip()]
        for a in range(len(phrases)):
            for b in range(a + 1, len(phrases) + 1):
                templates.add(with_call_slots(grammar, " ".join(phrases[a:b])))
    data = yaml.safe_load(DEFAULT_GRAMMAR.read_text(encoding="utf-8"))
    data["intents"] = {f"said-{i}": {"templates": [t]} for i, t in enumerate(sorted(templates))}
    data["steps"] = {}
    return Grammar(data)


def board_after(grammar: Grammar, script: str) -> Procedure:
    proc = Procedure(RulePack.load(RULES), grammar, ProcedureSettings(), lambda _: None)
    for item in parse_script(script, grammar):
        proc.feed(item)
    return proc


def board_of(grammar: Grammar, utterances: list[Utterance]) -> list[Ball]:
    """The master board after a game that hears only these utterances."""
    proc = Procedure(RulePack.load(RULES), grammar, ProcedureSettings(), lambda _: None)
    proc.feed(GameStart(0.0, GamePlan()))
    for u in utterances:
        proc.feed(u)
    return list(proc.board.called)


# ----- the gate alone --------------------------------------------------------------------------


def utt(start: float, end: float, role: Role = Role.CALLER) -> Utterance:
    return Utterance(start, end, role, "are there any other bingos")


def test_gate_drops_what_overlaps_our_voice_on_gated_channels_only() -> None:
    gate = SelfHearingGate(margin_before=0.1, margin_after=0.5)
    gate.mark(9.0, 11.0)
    assert gate.drops(utt(9.2, 10.8))
    assert gate.drops(utt(8.0, 9.05))  # starts before, runs into the voice
    assert gate.drops(utt(11.3, 12.0))  # the echo after the voice is within the margin
    assert not gate.drops(utt(11.6, 12.5))
    assert not gate.drops(utt(7.0, 8.85))
    assert not gate.drops(utt(9.2, 10.8, Role.FLOOR))  # the floor microphone does not hear the earpiece
    assert [u.start for u in gate.passed([utt(1.0, 2.0), utt(9.5, 10.0), utt(12.0, 13.0)])] == [1.0, 12.0]
    with pytest.raises(ValueError, match="ends before it starts"):
        gate.mark(3.0, 2.0)


def test_gate_while_the_voice_plays_and_after_it_stops() -> None:
    gate = SelfHearingGate(margin_before=0.0, margin_after=0.5, roles=(Role.CALLER, Role.FLOOR))
    gate.begin(20.0)
    assert gate.drops(utt(25.0, 26.0)) and gate.drops(utt(25.0, 26.0, Role.FLOOR))  # open until end()
    assert not gate.drops(utt(18.0, 19.9))
    gate.end(22.0)
    assert gate.intervals() == [(20.0, 22.5)]
    assert not gate.drops(utt(25.0, 26.0))
    gate.reset([(1.0, 2.0)])
    assert gate.intervals() == [(1.0, 2.5)]


def test_gate_learns_the_echo_from_the_echo_not_from_the_caller_talking_over_it() -> None:
    """Our voice plays for 8 s; its echo comes back 6 dB down; from 2 s on the caller talks over it, 10 dB
    over the echo, without a break. The echo's gain is learnt from the first two seconds and stays: the
    caller's long stretch does not teach the gate that the echo is that loud, so it is kept to the end."""
    rng = np.random.default_rng(7)
    ours = (rng.normal(0.0, 3000.0, 8 * RATE)).astype(np.int16)
    echo = 0.5 * ours.astype(np.float64)
    caller = np.zeros(8 * RATE)
    caller[2 * RATE :] = rng.normal(0.0, 3000.0 * 0.5 * 10 ** (10 / 20), 6 * RATE)
    mic = np.clip(echo + caller + rng.normal(0.0, 30.0, 8 * RATE), -32768, 32767).astype(np.int16)
    gate = SelfHearingGate(margin_before=0.1, margin_after=1.0)
    gate.filter(rng.normal(0.0, 30.0, 2 * RATE).astype(np.int16), -2.0, RATE)
    gate.begin(0.0, ours, RATE)
    gate.end(8.0)

    out = np.concatenate([gate.filter(c.samples, c.start, RATE) for c in chunks(mic, start=0.0)])

    assert np.count_nonzero(out[: 2 * RATE]) < 0.05 * 2 * RATE  # the echo alone: silenced
    last = out[6 * RATE :]
    assert np.count_nonzero(last) > 0.9 * len(last)  # the caller, four seconds on: still heard


def test_gate_filter_silences_the_echo_of_our_voice_and_keeps_the_caller_talking_over_it(
    fresh_voice: Pyttsx3Voice,
) -> None:
    """Our prompt comes back into the caller's microphone 0.2 s later, 6 dB down, through 0.8 s of reverberation,
    over the hall's own noise; in the second half of it the caller says "B seven" (two real-level words).
    The echo alone is silenced; the caller's words are kept, and what is heard of them is unsure. Kept is
    measured in the caller's voice, not in frames: the gate knows only how loud our voice was over the last
    half second, so a quiet frame of the caller's in the trough of an echo can go with it."""
    from lab.scenarios.devices import EchoPath

    played = fresh_voice.render("Say it again: B seven. Say it again: B seven.", VOICE)
    ours = np.asarray(
        np.round(
            np.interp(
                np.arange(0, len(played.samples), played.rate / RATE), np.arange(len(played.samples)), played.samples
            )
        ),
        dtype=np.int16,
    )
    rng = np.random.default_rng(4)
    start, n = 10.0, len(ours) + 2 * RATE
    echo = EchoPath(delay=0.2, gain_db=-6.0, rt60=0.8)(np.concatenate([ours, np.zeros(2 * RATE)]).astype(np.float64))
    mic = rng.normal(0.0, 30.0, n) + echo
    caller = fresh_voice.render("B seven", VOICE)
    said_at = len(ours) // 2
    words = caller.samples[:: max(1, round(caller.rate / RATE))].astype(np.float64) * 1.5
    mic[said_at : said_at + len(words)] += words
    mic16 = np.clip(mic, -32768, 32767).astype(np.int16)
    gate = SelfHearingGate(margin_before=0.1, margin_after=1.0)
    gate.filter(rng.normal(0.0, 30.0, 2 * RATE).astype(np.int16), start - 2.0, RATE)  # the hall before we speak
    gate.begin(start, ours, RATE)
    gate.end(start + len(ours) / RATE)

    out = np.concatenate([gate.filter(c.samples, c.start, RATE) for c in chunks(mic16, start=start)])

    echo_only = np.r_[0 : said_at - RATE // 10, said_at + len(words) + RATE // 2 : len(ours) + RATE]
    assert np.count_nonzero(out[echo_only]) < 0.05 * len(echo_only)  # our voice and its tail: silenced
    frame = RATE // 50
    over = [  # 20 ms frames where the caller stands 10 dB over the echo
        k
        for k in range(said_at, said_at + len(words) - frame, frame)
        if np.mean(words[k - said_at : k - said_at + frame] ** 2) > 10 * np.mean(echo[k : k + frame] ** 2)
    ]
    energy = [float(np.sum(words[k - said_at : k - said_at + frame] ** 2)) for k in over]
    kept = sum(e for k, e in zip(over, energy, strict=True) if out[k : k + frame].any())
    assert len(over) > 15 and kept > 0.9 * sum(energy)  # kept: nearly all the voice of those frames
    assert out[len(ours) + int(1.5 * RATE) :].any()  # after voice and margin, the hall is heard again
    heard = utt(start + said_at / RATE, start + (said_at + len(words)) / RATE)
    assert gate.doubt(heard).uncertain and not gate.doubt(utt(start + 6.0, start + 7.0)).uncertain


# ----- voice out, transcribed back -----------------------------------------------------------------


def heard_during(heard: list[Heard], start: float, end: float) -> list[Heard]:
    """What was heard with its middle inside start..end."""
    return [h for h in heard if start <= (h.start + h.end) / 2 < end and h.text.strip()]


@pytest.mark.engine
def test_voice_out_wav_transcribed_back_says_each_prompt_at_its_time(
    grammar: Grammar, fresh_voice: Pyttsx3Voice, tmp_path: Path
) -> None:
    proc = board_after(
        grammar,
        """
@game type=regular
0:01 caller: last ball called is required
0:03 caller: B seven
0:05 caller: B seven
0:09 caller: I nineteen
0:11 caller: I nineteen
""",
    )
    was_g52 = answer(grammar.parse("was g fifty two called").meanings[0], proc.board, None, grammar, time=14.0)
    last = answer(grammar.parse("what was the last call").meanings[0], proc.board, None, grammar, time=20.0)
    assert was_g52 is not None and last is not None
    session = [
        Prompt(3.0, "Say it again: B seven", "repeat-call", 2, "A(3)"),
        Prompt(8.0, "Ask: are there any other bingos?", "ask-other-bingos", 2, "B(9)"),
        Prompt(9.0, "Board shows O sixty one", "board-differs", 2, "A(5)"),  # overlaps: waits for the voice
        was_g52,
        last,
    ]
    assert was_g52.text == "No, G fifty two has not been called." and last.text == "The last call was I nineteen."
    out = tmp_path / "voice-out.wav"
    speaker = TimelineSpeaker(VOICE, out, voice=fresh_voice)
    for prompt in session:
        speaker.say(prompt)
    speaker.close()
    rows = speaker.prompts_json()

    recording = read_wav(out)  # through the audio port, as `transcribe` reads a file
    recognizer = make_recognizer("pocketsphinx", voice_grammar(grammar, session), endpoint=VOICE_PHRASES)
    heard = list(recognizer.stream(chunks(recording.channels[0])))

    assert [r["text"] for r in rows] == [p.text for p in session]
    assert (
        rows[2]["start"] == rows[1]["end"] and float(str(rows[2]["start"])) > 9.0
    )  # placed after the prompt it overlapped
    for row in rows:
        start, end = float(str(row["start"])), float(str(row["end"]))
        pieces = heard_during(heard, start, end)
        said = " ".join(h.text for h in pieces).split()
        assert said == grammar.normalize(str(row["text"])), row
        assert pieces[0].start == pytest.approx(start, abs=0.25), row  # heard when it was placed
    assert len(heard_during(heard, 0.0, 2.9)) == 0 and len(heard_during(heard, 5.3, 7.9)) == 0  # silence between


# ----- self-hearing: our voice in the caller's microphone ----------------------------------------


@pytest.mark.engine
def test_our_voice_in_the_caller_channel_never_counts_as_the_caller(
    grammar: Grammar, fresh_voice: Pyttsx3Voice
) -> None:
    """The earpiece leaks into the caller's microphone: the recognizer hears the assistant's B(9) prompts
    as the caller's words (here a question and a call that nobody made); the gate drops them and keeps
    the caller's real speech around them."""
    gate = SelfHearingGate()
    speaker = TimelineSpeaker(VOICE, voice=fresh_voice, gate=gate)
    speaker.say(Prompt(3.0, "Ask: are there any other bingos?", "ask-other-bingos", 2, "B(9)"))
    speaker.say(Prompt(10.0, "Announce: this game is completed", "announce-completed", 2, "B(9)"))
    voice = from_samples(speaker.samples(), speaker.rate).channels[0]

    caller = np.random.default_rng(1).normal(0.0, 30.0, 16 * RATE)  # the hall behind the caller
    caller[: len(voice)] += 0.5 * voice  # our voice, leaking in at half level
    real = {7.0: "an4/an90-fbbh-b.wav", 14.0: "an4/an402-mdms2-b.wav"}  # the caller says "no", twice
    for at, name in real.items():
        said = read_wav(REAL / name).channels[0]
        caller[round(at * RATE) : round(at * RATE) + len(said)] += said
    channel = np.clip(caller, -32768, 32767).astype(np.int16)

    recognizer = make_recognizer("pocketsphinx", grammar)
    # The closing step without the next game's opening words: what this test needs is a recognizer that hears our
    # prompts as the caller's words, and those many sentences make pocketsphinx hear them as nothing.
    opening = {"last-ball-required", "last-ball-not-required", "ball-count", "cards-sold", "prize"}
    recognizer.set_step([i for i in grammar.step_intents("closing") if i not in opening])
    utterances = [
        grammar.utterance(h.start, h.end, Role.CALLER, h.text, h.confidence, h.uncertain)
        for h in recognizer.stream(chunks(channel))
    ]
    ours = [u for u in utterances if any(s < u.end and u.start < e for s, e in speaker.intervals())]
    assert len(ours) == 2 and all(u.meanings for u in ours)  # heard as the caller saying something
    kept = list(gate.passed(utterances))
    assert board_of(grammar, utterances) != []  # ungated, our own voice put a ball on the master board
    assert board_of(grammar, kept) == []
    assert not any(gate.overlaps(u.start, u.end) for u in kept)
    assert not any(u in kept for u in ours)
    assert [m.intent for u in kept for m in u.meanings] == ["no", "no"]
    assert [round(u.start) for u in kept] == [7, 14]
