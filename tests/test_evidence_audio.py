"""The rule of evidence on hall audio, as a property: a compliant session, rendered in any voice and mixed with
real-speech babble at any SNR, never gives a violation. Whatever the recognizer could not hear for sure can only
make findings uncertain, for review, each naming the hearings that made it so."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from assistant.audio import from_samples
from assistant.grammar import Grammar
from assistant.messages import Ball, Severity
from assistant.script import parse_plan, parse_script
from assistant.settings import load_settings
from lab.bench.audio import Voice
from lab.bench.real import real_crowd
from lab.scenarios.check import check_recording
from lab.scenarios.long import game_script
from lab.scenarios.render import HELD_OUT_VOICES, TUNING_VOICES, HallVoices, in_babble, render

pytestmark = pytest.mark.engine

VOICES = (
    TUNING_VOICES,
    HELD_OUT_VOICES,
    HallVoices(caller=Voice("en-029", 150), floor=Voice("en-us+f4", 175), player=Voice("en-gb", 170), name="mixed"),
)

_GRAMMAR = Grammar.load()
_SETTINGS = load_settings()


@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.generate],  # shrinking a session of hall audio takes many minutes and says little
)
@given(
    balls=st.lists(st.integers(1, 75), min_size=6, max_size=6, unique=True),
    snr=st.sampled_from([None, 20.0, 10.0, 5.0, 0.0]),
    voices=st.sampled_from(VOICES),
    seed=st.integers(0, 10_000),
)
def test_a_compliant_session_in_hall_audio_never_gives_a_violation(
    balls: list[int], snr: float | None, voices: HallVoices, seed: int
) -> None:
    script = game_script([Ball(n) for n in balls], _GRAMMAR)
    items = parse_script(script, _GRAMMAR)
    rendering = render(items, voices=voices, seed=seed)
    crowd = real_crowd(random.Random(seed)) if snr is not None else None
    samples = in_babble(rendering, snr, seed, crowd)
    result = check_recording(from_samples(samples, 16000), parse_plan(script.splitlines()[0]), _SETTINGS, _GRAMMAR)
    findings = result.occasion.all_findings()
    violations = [f for f in findings if f.severity is not Severity.UNCERTAIN]
    assert violations == [], f"{voices.name} at {snr} dB: {[(f.clause, f.code, f.heard) for f in violations]}"
    for finding in findings:
        if finding.code not in ("repeat-mismatch", "bingo-unsure"):
            assert finding.doubts, f"{finding.code} is uncertain with no hearing named: {finding.message}"
