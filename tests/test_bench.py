"""The accuracy benchmark's machinery on tiny real runs: espeak and recorded audio, babble, the real engines."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from assistant.engines.whisper_engine import WhisperSettings
from assistant.grammar import Grammar
from lab.bench import audio as gen
from lab.bench import real
from lab.bench.__main__ import main
from lab.bench.accuracy import BenchError, Condition, Plan, check_options, engine_options, run
from lab.bench.score import COLUMNS, Hearing, Score, Tally, fuse, outcome, table_rows, targets_table


def _measured_snr(crowd: gen.Crowd, speech: np.ndarray, snr: float) -> float:
    clean = gen.add_babble(speech.astype(np.float64), gen.power(speech), None, random.Random(2), None)
    noisy = gen.add_babble(speech.astype(np.float64), gen.power(speech), snr, random.Random(2), crowd)
    noise = noisy.astype(np.float64) - clean.astype(np.float64)
    return float(10 * np.log10(gen.power(speech) / gen.power(noise)))


def test_babble_is_mixed_at_the_asked_snr() -> None:
    speech = gen.speak("B seven", gen.Voice("en-us", 165))
    for crowd in (gen.Crowd(random.Random(1), talkers=4, pool_size=6), real.real_crowd(random.Random(1))):
        for snr in (20.0, 5.0):
            assert abs(_measured_snr(crowd, speech, snr) - snr) < 1.5, crowd.name


def test_real_babble_is_human_voices_only() -> None:
    crowd = real.real_crowd(random.Random(1))
    assert crowd.name == "real"
    clips = sum(len(g) for g in crowd.groups)
    letters = [r for r in real.manifest() if r.source == real.LETTERS_SOURCE]
    assert len(letters) == 26
    talk = [r for r in real.manifest() if r.source in (real.FSDD, real.AN4, *real.TALK)]
    assert clips == len(talk)  # the digits, AN4 and the talk: no alphabet, no single word said alone
    assert len(crowd.groups) == 3  # digits, AN4 utterances, sentences: picked equally often


def test_stream_truth_is_where_the_speech_is() -> None:
    rng = random.Random(3)
    items = [gen.Item("B seven", "call"), gen.Item("O sixty one", "call")]
    stream = gen.build_stream("s", items, [gen.Voice("en-gb", 165)] * 2, None, rng, None)
    first, second = stream.segments
    assert 1.0 - 1e-9 <= first.start < first.end < second.start < second.end <= stream.duration
    assert second.start - first.end >= 1.0  # a 1-2 s gap of background only
    inside = stream.samples[int(first.start * gen.RATE) : int(first.end * gen.RATE)].astype(np.float64)
    gap = stream.samples[int(first.end * gen.RATE) + 800 : int(second.start * gen.RATE) - 800].astype(np.float64)
    assert np.sqrt(np.mean(inside**2)) > 100 * np.sqrt(np.mean(gap**2))


def test_real_calls_are_a_letter_then_the_number_said_twice_from_other_takes() -> None:
    grammar = Grammar.load()
    streams = real.call_streams(grammar, 4, seed=5, snr_db=None, crowd=None)
    names = [s.name for s in streams]
    assert names == [f"real-calls-fsdd_{n}" for n in ("george", "jackson", "lucas", "nicolas", "theo", "yweweler")] + [
        "real-calls-an4"
    ]
    calls = [seg for s in streams for seg in s.segments]
    assert len(calls) == 6 * 4 * 2 + 2 * 2  # 4 balls per speaker, the AN4 I 19 and N 33; each said twice
    for first, second in zip(calls[::2], calls[1::2], strict=True):
        assert first.ball == second.ball and (first.hearing, second.hearing) == (1, 2)
        (meaning,) = grammar.parse(first.text, grammar.step_intents("calling")).meanings
        assert meaning.ball == first.ball
        if first.recordings[0].startswith("fsdd/"):
            digits = str(first.ball.number) if first.ball else ""
            assert [Path(r).name.split("_")[0] for r in first.recordings] == list(digits)
            assert not set(first.recordings) & set(second.recordings)  # other takes of the same digits
        else:
            assert first.recordings == second.recordings  # AN4 has one recording of each number
    assert {seg.text for seg in calls if seg.recordings[0].startswith("an4/")} == {"i nineteen", "n thirty three"}
    # Pieces are trimmed: the call is loud where its truth says it starts and ends.
    stream = streams[0]
    seg = stream.segments[0]
    edge = stream.samples[int(seg.start * gen.RATE) : int(seg.start * gen.RATE) + 1600].astype(np.float64)
    assert np.sqrt(np.mean(edge**2)) > 100


def test_the_same_seed_gives_the_same_real_calls_in_every_condition() -> None:
    grammar = Grammar.load()
    crowd = real.real_crowd(random.Random(1))
    clean = real.call_streams(grammar, 2, seed=9, snr_db=None, crowd=None)
    noisy = real.call_streams(grammar, 2, seed=9, snr_db=10.0, crowd=crowd)
    assert [s.segments for s in clean] == [s.segments for s in noisy]


def _h(calls: list[int], uncertain: bool = False, intents: list[str] | None = None) -> Hearing:
    return Hearing(0.0, 1.0, "x", 0.9, uncertain, 1.1, calls, intents if intents is not None else ["call"] * len(calls))


def test_outcomes_and_fusing_the_two_hearings() -> None:
    assert outcome([_h([7])], 7) == ("right", 7)
    assert outcome([_h([8])], 7) == ("wrong", 8)
    assert outcome([_h([7], uncertain=True)], 7) == ("uncertain", None)
    assert outcome([], 7) == ("missed", None)
    assert outcome([_h([], intents=["bingo"])], 7) == ("wrong", None)  # a sure "bingo" over a call
    assert outcome([_h([], intents=["bingo"], uncertain=True)], 7) == ("uncertain", None)
    assert fuse(("right", 7), ("missed", None), 7) == "right"
    assert fuse(("right", 7), ("wrong", 8), 7) == "uncertain"
    assert fuse(("wrong", 8), ("wrong", 8), 7) == "wrong"
    assert fuse(("right", 7), ("wrong", None), 7) == "wrong"


def test_the_sweep_keeps_hearings_held_for_another_reason_uncertain() -> None:
    held = Hearing(0.0, 1.0, "b seven", 0.95, True, 1.1, [7], ["call"], held=True)
    low = Hearing(0.0, 1.0, "b seven", 0.4, True, 1.1, [7], ["call"])
    assert outcome([held], 7, 0.3) == ("uncertain", None)
    assert outcome([low], 7, 0.3) == ("right", 7)
    assert outcome([low], 7, 0.5) == ("uncertain", None)


def test_targets_are_marked_met_or_not() -> None:
    score = Score("whisper", "espeak", "20 dB real babble", snr=20.0, streamed=Tally(right=199, wrong=1))
    score.streamed_fused = Tally(right=100)
    score.chatter_minutes, score.false_calls_chatter = 10.0, 2
    score.latencies = [0.3] * 20
    score.cpu_seconds, score.audio_seconds, score.peak_mb = 10.0, 100.0, 500.0
    (row,) = [[c.strip() for c in r.strip("|").split("|")] for r in targets_table([score]).splitlines()[2:]]
    assert row[3:] == ["99", "99.5 ✓", "100.0 ✓", "0.5 ✓", "0.20 ✗", "300 ✓", "0.100 ✓", "500 ✓"]


def test_real_sets_come_from_the_manifest() -> None:
    sets = real.real_sets()
    assert len(sets["fsdd digit"]) == 300
    assert ("an4 number" in sets) and all(text for _, text in sets["an4 number"])


def test_options_fill_each_engines_settings() -> None:
    options = [("settings.min_confidence", 0.8), ("endpoint.hangover", 0.2), ("whisper:settings.beam", 3)]
    whisper = engine_options("whisper", options)
    assert whisper["settings"] == WhisperSettings(min_confidence=0.8, beam=3)
    assert whisper["endpoint"].hangover == 0.2
    sphinx = engine_options("pocketsphinx", options)
    assert sphinx["settings"].min_confidence == 0.8 and sphinx["settings"].beam != 3
    assert engine_options("pocketsphinx", [("settings.window", 5.0)]) == {}  # whisper's field only
    check_options(("whisper", "pocketsphinx"), [("settings.window", 5.0)])
    with pytest.raises(BenchError, match="sets nothing"):
        check_options(("pocketsphinx",), [("settings.window", 5.0)])
    with pytest.raises(BenchError, match="option group"):
        engine_options("pocketsphinx", [("nonsense.beam", 1.0)])
    with pytest.raises(BenchError, match="has no option"):
        engine_options("whisper", [("whisper:settings.nonsense", 1.0)])
    assert main(["accuracy", "--voices", "0", "--engine", "pocketsphinx"]) == 2
    assert main(["accuracy", "--engine", "pocketsphinx", "--option", "settings.window=5"]) == 2


def test_conditions_name_their_babble() -> None:
    plan = Plan(snrs=("clean", "20"), babble=("real", "espeak"))
    assert [c.name for c in plan.conditions()] == ["clean", "20 dB real babble", "20 dB espeak babble"]
    assert Condition(5.0, "real").key == "5-real"


@pytest.mark.engine
def test_tiny_run_gives_a_full_table_for_both_engines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BINGO_VOSK_MODEL", raising=False)
    plan = Plan(
        engines=("whisper", "pocketsphinx", "vosk"),
        voices=1,
        rates=(165,),
        snrs=("clean",),
        calls=3,
        phrases=False,
        chatter_seconds=8.0,
        real_calls=1,
        real_speakers=1,
        real_sets=False,
        workers=2,
    )
    dump = tmp_path / "hearings.jsonl"
    scores, notes = run(plan, tmp_path, log=lambda _: None, dump=dump)
    assert [(s.engine, s.voices) for s in scores] == [
        ("whisper", "espeak"),
        ("pocketsphinx", "espeak"),
        ("whisper", "real"),
        ("pocketsphinx", "real"),
    ]
    assert any("vosk" in n for n in notes) and any("load average" in n for n in notes)
    rows = {(r[0], r[1]): dict(zip(COLUMNS, r, strict=True)) for r in table_rows(scores)}
    for values in rows.values():
        assert values["condition"] == "clean"
        assert values["calls"] == "6"  # espeak: 3 balls; real: 1 ball of one FSDD speaker, the 2 of AN4
        shares = [float(values[k]) for k in ("right %", "wrong %", "uncertain %", "missed %")]
        assert abs(sum(shares) - 100.0) < 0.2
        assert 0 < float(values["RTF"]) < 2.0
        assert 20 < float(values["peak MB"]) < 2000
        assert float(values["load s"]) > 0
        assert values["false calls/min chatter"] != "-"
    whisper = rows[("whisper", "espeak")]
    assert float(whisper["right %"]) >= 50.0  # clean espeak calls: the real engine gets them
    assert float(rows[("whisper", "real")]["right %"]) > 0  # and some real voices
    assert 0 < float(whisper["latency p50 ms"]) <= float(whisper["latency p95 ms"]) < 10000
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    calls = [d for d in lines if d["kind"] == "call" and d["engine"] == "whisper"]
    assert {d["mode"] for d in calls} == {"streamed", "cut"}
    assert sum(d["mode"] == "cut" for d in calls) == 6 + 6  # every said call decoded cut once
    assert all(d["right"] == (d["calls"] == [d["ball"]] and d["intents"] == ["call"]) for d in calls)
    assert any(d["right"] for d in calls)


def test_the_cuts_bench_sets_the_cuttings_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    """`bench cuts`: the hall set's streams cut by the default and the hall cutting (and a variant), no recognizer;
    at 20 dB the hall cutting keeps more sayings whole. A bad option is one clear line."""
    assert main(["cuts", "--sets", "tuning", "--snr", "20", "--calls", "6", "--option", "endpoint.hangover=0.5"]) == 0
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines() if "| 20 dB |" in line]
    whole = {row[1].strip(): float(row[4]) for row in rows}
    assert set(whole) == {"default", "hall cutting (HALL_CUTTING)", "hangover=0.5"}
    assert whole["hall cutting (HALL_CUTTING)"] > whole["default"]
    assert main(["cuts", "--option", "settings.beam=3"]) == 2
    assert "endpoint.NAME options only" in capsys.readouterr().err


def test_the_voice_activity_models_cut_a_clean_call_whole_and_join_calls_in_babble(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`bench cuts --vad`: silero-vad and WebRTC's VAD cut the same streams with the hall cutting's bookkeeping.
    Clean, each saying is one utterance; in babble they hear the crowd as the speech it is and join the calls,
    which is why the product cuts by level (docs/bench-accuracy.md)."""
    assert main(["cuts", "--sets", "tuning", "--snr", "clean,10", "--calls", "4", "--vad"]) == 0
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines() if " dB |" in line or "| clean |" in line]
    whole = {(row[1].strip(), row[2].strip()): float(row[4]) for row in rows}
    joined = {(row[1].strip(), row[2].strip()): float(row[6]) for row in rows}
    for name in ("silero-vad (p >= 0.5)", "webrtcvad (mode 3)"):
        assert whole[(name, "clean")] >= 75.0, whole
        assert joined[(name, "10 dB")] > joined[("hall cutting (HALL_CUTTING)", "10 dB")] + 25.0, joined


def test_voice_activity_frames_become_utterances_as_the_endpointer_cuts_them() -> None:
    """Speech frames open an utterance, a pause shorter than the hangover stays inside it, a longer one closes
    it; a blip shorter than min_speech is dropped; the pre-roll goes before the start."""
    from lab.bench.vad import Bookkeeping, utterances

    frame = 0.01
    speech = np.zeros(400, dtype=bool)
    speech[50:100] = speech[130:160] = True  # a letter, 0.3 s of pause, a number
    speech[300:305] = True  # a click
    keep = Bookkeeping(hangover=0.6, pre_roll=0.2, min_speech=0.15)
    (only,) = utterances(speech, frame, keep)
    assert only == pytest.approx((0.50 - 0.2, 1.60))
    assert len(utterances(speech, frame, Bookkeeping(hangover=0.2, pre_roll=0.2, min_speech=0.15))) == 2


def test_a_human_voice_calls_only_balls_it_can_say_in_its_own_words() -> None:
    grammar = Grammar.load()
    gcompris = real.human_balls("susan_rich", "susan_rich", grammar)  # recorded zero to twenty
    assert [b.number for b in gcompris] == list(range(1, 30))  # twenty-one on: "twenty" and the unit
    assert len(real.human_number(22, "susan_rich", grammar) or []) == 2
    assert real.human_number(47, "susan_rich", grammar) is None  # never "G four seven"
    digits = real.human_balls("klettres_en_gb", "fsdd_jackson", grammar)
    assert [b.number for b in digits] == list(range(1, 10))
    letter, number = real.human_call(gcompris[21], "susan_rich", "susan_rich", grammar, random.Random(1))
    assert 0.1 * real.RATE < len(letter) < len(number) < 3 * real.RATE
    with pytest.raises(real.RealAudioError, match="sixty"):
        real.human_call(real.Ball(66), "susan_rich", "susan_rich", grammar, random.Random(1))


def test_the_rulings_bench_names_an_unknown_step_or_intent_in_one_line_before_loading(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--step` and `--intents` are the grammar's: anything else is one line and exit 2, before a model loads (the
    fast tier has none)."""
    assert main(["rulings", "--step", "nowhere", "--patter"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "step 'nowhere'" in err[0] and "calling" in err[0], err
    assert main(["rulings", "--intents", "bingo,maybe", "--step", "calling"]) == 2
    assert "unknown intents ['maybe']" in capsys.readouterr().err
