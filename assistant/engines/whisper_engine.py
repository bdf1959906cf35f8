"""The Whisper adapter (the default engine): Whisper base hears, the step's grammar decides what it may write.

Each utterance (cut by `Endpointer`) is turned into Whisper's log-mel features, padded to a fixed window and
encoded by CTranslate2 (int8). The decoder (`whisper_decoder`, numpy) then searches only the sentences the
procedure's step allows (`constrained`), so a call is always a letter with a number of its column and a
phrase is always the rule's words. Its confidence is the share of the N-best that agrees on the meaning,
lowered when the decoder left to itself would rather write something the grammar does not hold.

This module reads (`Reading`: the decoder's words, N-best, confidence and free sentence; the call head's
posterior); how sure a hearing is, the call head's word on it and a call's second saying weighed with its first,
is decided in one place, `engines.decision` (`Decider`), which the engine asks for every hearing.
"""

from __future__ import annotations

import difflib
import functools
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audio import RATE, AudioChunk
from ..endpoint import HALL_CUTTING, Endpointer, EndpointSettings
from ..grammar import Grammar, Parse, expand
from ..messages import Ball, Meaning
from . import call_head, decision
from .base import EngineError, Heard, stirring
from .constrained import ConstrainedSearch, SearchResult, TokenTable, Walker, WordNet, build_net, call_forms
from .decision import CALL_FEATURES, NO_BALL_DOUBT, Decider, Reading
from .whisper_decoder import Array, WhisperDecoder
from .whisper_settings import WhisperSettings as WhisperSettings

N_FFT = 400
HOP = 160
EXAMPLE_CALLS = ((4, 19, 35, 52, 68), (11, 27, 40, 58, 73), (7, 23, 44, 49, 62))
"""Calls named in the prompt, one per column, written in words: with numerals in the prompt a doubtful call was
heard as one of the prompt's numbers far more often than as any other (8 of 16 errors at 10 dB); in words,
never, and more calls were heard right (docs/bench-accuracy.md). Without them fewer calls are heard (103 of 150
real sayings at 20 dB instead of 125), but a doubtful hearing is drawn to them: the sets take turns,
utterance by utterance, so that no call is the prompt's default answer, and a hearing of one of the prompt's own
calls counts only if the decoder, left to itself with no prompt, writes its number too."""


LETTER_LIKE = frozenset(
    {"b", "be", "bee", "b.", "i", "eye", "aye", "n", "en", "and", "an", "g", "gee", "ji", "o", "oh", "owe", "the"}
)
"""How the decoder, left to itself, writes a letter of the board said alone (measured: ' B', ' And', ' I', ' G.',
' Oh,', ' B, D,'), beside any single letter: the first part of a call said with a pause."""
ADAPTER = Path(__file__).with_name("decoder_adapter.npz")
"""The decoder adapter trained here (`python -m lab.train decoder`), committed with what made it; the hall
engine's unless told otherwise (`WhisperSettings.adapter`)."""
CALIBRATION = Path(__file__).with_name("call_confidence.json")
"""The call confidence fitted here (`python -m lab.train confidence`), committed with what made it."""
_DIGIT_BY_DIGIT = re.compile(r"\b([bingo])[\s-]+(\d)[\s-]+(\d)\b", re.IGNORECASE)


def loops(words: str, least: int = 6, share: float = 0.6) -> bool:
    """Whisper's sign of no speech it can follow: left to itself it writes one word over and over ("No, no, no,
    no, no, no, ..."). Against such a free sentence a phrase of the grammar is not borne out, however close their
    scores (held-out hall audio, 20 dB real babble, nobody speaking: "i am reading the correct number" sure at 1.00
    against "No, no, no, ...", a false A(5) paraphrase)."""
    said = words.split()
    if len(said) < least:
        return False
    top = max(said.count(w) for w in set(said))
    return top >= share * len(said)


def log_mel(audio: npt.NDArray[np.float32], filters: npt.NDArray[np.float32], frames: int) -> Array:
    """Whisper's log-mel spectrogram of audio in [-1, 1], padded with zeros or cut to `frames` frames."""
    padded = np.pad(audio, (0, HOP))
    padded = np.pad(padded, (N_FFT // 2, N_FFT // 2), mode="reflect")
    count = 1 + (len(padded) - N_FFT) // HOP
    strided = np.lib.stride_tricks.as_strided(padded, (count, N_FFT), (HOP * padded.strides[0], padded.strides[0]))
    window = np.hanning(N_FFT + 1)[:-1].astype(np.float32)
    spectrum = np.fft.rfft(strided * window, axis=-1).astype(np.complex64).T
    power = np.abs(spectrum[:, :-1]) ** 2
    mel = np.log10(np.clip(filters @ power, 1e-10, None))
    mel = np.maximum(mel, mel.max() - 8.0)
    out = ((mel + 4.0) / 4.0).astype(np.float32)
    if out.shape[1] >= frames:
        return np.ascontiguousarray(out[:, :frames])
    return np.pad(out, ((0, 0), (0, frames - out.shape[1])))


def mel_filters(n_mels: int, rate: int = RATE) -> npt.NDArray[np.float32]:
    """Slaney-style mel filters (librosa's, as Whisper was trained with)."""
    fft_freqs = np.fft.rfftfreq(n=N_FFT, d=1.0 / rate)
    mels = np.linspace(0.0, 45.245640471924965, n_mels + 2)
    freqs = 200.0 / 3 * mels
    log_region = mels >= 15.0
    freqs[log_region] = 1000.0 * np.exp(np.log(6.4) / 27.0 * (mels[log_region] - 15.0))
    gaps = np.diff(freqs)
    ramps = freqs[:, None] - fft_freqs[None, :]
    weights = np.maximum(0.0, np.minimum(-ramps[:-2] / gaps[:-1, None], ramps[2:] / gaps[1:, None]))
    weights *= (2.0 / (freqs[2 : n_mels + 2] - freqs[:n_mels]))[:, None]
    out: npt.NDArray[np.float32] = weights.astype(np.float32)
    return out


NOISE_TABLE = 48_017
_Key = tuple[tuple[str, Ball | None, int | None, str | None, str | None, str | None], ...]
"""What a hearing means: its meanings' intents and slots, whatever words wrote them."""


def _slots(m: Meaning) -> tuple[str, Ball | None, int | None, str | None, str | None, str | None]:
    return (m.intent, m.ball, m.number, m.manufacturer, m.serial, m.letter)


@dataclass(frozen=True, eq=False)
class _Loaded:
    """One model in memory, shared by every recognizer of the process (a caller's and a floor's channel)."""

    encoder: Any
    decoder: WhisperDecoder
    tokenizer: Any
    filters: npt.NDArray[np.float32]
    end: int
    previous: int
    start: list[int]


@functools.cache
def _load(model: Path, threads: int) -> _Loaded:
    try:
        import ctranslate2
        import tokenizers
        from threadpoolctl import threadpool_limits
    except ImportError as exc:  # pragma: no cover - declared dependencies
        raise EngineError(f"the whisper engine needs ctranslate2, tokenizers and threadpoolctl: {exc}") from exc
    # The decoder's products are small: one BLAS thread each is fastest, and two contend on two cores.
    threadpool_limits(limits=1, user_api="blas")
    try:
        tokenizer: Any = tokenizers.Tokenizer.from_file(str(model / "tokenizer.json"))
        encoder: Any = ctranslate2.models.Whisper(str(model), device="cpu", compute_type="int8", intra_threads=threads)
    except (OSError, ValueError, RuntimeError) as exc:
        raise EngineError(f"cannot load the whisper model in {model}: {exc}") from exc

    def special(token: str) -> int:
        found = tokenizer.token_to_id(token)
        if found is None:
            raise EngineError(f"the whisper tokenizer has no {token} token")
        return int(found)

    start = [special(t) for t in ("<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>")]
    return _Loaded(
        encoder=encoder,
        decoder=WhisperDecoder(model / "model.bin"),
        tokenizer=tokenizer,
        filters=mel_filters(int(encoder.n_mels)),
        end=special("<|endoftext|>"),
        previous=special("<|startofprev|>"),
        start=start,
    )


@functools.cache
def _table(loaded: _Loaded, words: frozenset[str]) -> TokenTable:
    return TokenTable(loaded.tokenizer, loaded.end, words)


@functools.cache
def _adapted(loaded: _Loaded, adapter: Path, strength: float = 1.0) -> WhisperDecoder:
    """The model's decoder with a decoder adapter's updates merged (`WhisperSettings.adapter`), each scaled by
    `strength` (`WhisperSettings.adapter_strength`); merged once a process, so that the caller's and the floor's
    recognizers share it (and its search) as they share the model."""
    try:
        with np.load(adapter) as found:
            deltas = {key: found[key] for key in found.files if key != "meta"}
    except FileNotFoundError:
        raise EngineError(
            f"the decoder adapter {adapter} is missing: remake it with python -m lab.train decoder"
        ) from None
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot read the decoder adapter {adapter}: {exc}") from exc
    if strength != 1.0:
        deltas = {key: v * np.float32(strength) if key.endswith(".a") else v for key, v in deltas.items()}
    return loaded.decoder.adapted(deltas)


@functools.cache
def _search(decoder: WhisperDecoder, table: TokenTable) -> ConstrainedSearch:
    return ConstrainedSearch(decoder, table)


@functools.cache
def _calibration(path: Path) -> decision.Logistic | None:
    """The fitted call confidence at `path` (`CALL_FEATURES`); None when there is none."""
    return decision.read_logistic(path, CALL_FEATURES, "the call confidence", "python -m lab.train", decision.Logistic)


@dataclass(frozen=True)
class _Prompt:
    """Whisper's previous-text prompt for a step, and the calls it names."""

    tokens: tuple[int, ...]
    calls: frozenset[int]
    phrases: frozenset[str] = frozenset()
    """The intents whose words the prompt says (" Bingo!", the rule's phrases of the step)."""
    sentences: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Each of those intents with the words the prompt says for it."""

    def echoed(self, text: str) -> frozenset[str]:
        """The intents whose words in the prompt hold all of `text`, two words or more in a row: a hearing made of
        the prompt's own words ("i am reading the correct number", inside the A(5) sentence the prompt says) may
        be the prompt writing itself, whatever intent those words make on their own (here a paraphrase)."""
        words = tuple(text.split())
        n = len(words)
        if n < 2:
            return frozenset()
        return frozenset(
            intent for intent, said in self.sentences if any(said[i : i + n] == words for i in range(len(said) - n + 1))
        )


class WhisperRecognizer:
    """The recognizer port over Whisper base: grammar-constrained decoding of each cut utterance."""

    name = "whisper"
    pending_since: float | None = None
    decodes_ahead = True
    """Streamed hearings carry their live latency (CPU seconds), the decode that ran ahead counted from its start."""

    def __init__(
        self,
        grammar: Grammar,
        model: Path,
        settings: WhisperSettings | None = None,
        endpoint: EndpointSettings | None = None,
    ) -> None:
        started = time.process_time()
        self.grammar = grammar
        self.settings = settings or WhisperSettings()
        self.endpoint_settings = endpoint or HALL_CUTTING
        loaded = _load(model.resolve(), self.settings.threads)
        self._tokenizer = loaded.tokenizer
        self._encoder = loaded.encoder
        self._filters = loaded.filters
        self._end, self._previous, self._start = loaded.end, loaded.previous, loaded.start
        self._table = _table(loaded, frozenset(grammar.vocabulary() | set(grammar.spellings)))
        adapter = self.settings.adapter or (str(ADAPTER) if self.settings.head else "none")
        decoder = (
            loaded.decoder
            if adapter == "none"
            else _adapted(loaded, Path(adapter).resolve(), self.settings.adapter_strength)
        )
        self._search = _search(decoder, self._table)
        self._own_search = _search(loaded.decoder, self._table)
        """Whisper's own decoder, unadapted: the reader of all but calls, and the second reader of `could_be`."""
        self._walkers: dict[tuple[str, ...], Walker] = {}
        self._prompts: dict[tuple[str, ...], list[_Prompt]] = {}
        self._yardsticks: dict[tuple[tuple[str, ...], frozenset[str]], list[_Prompt]] = {}
        self._intent_nets: dict[str, Walker] = {}
        """Each intent alone, one meaning, as a walker of Whisper's own decoder (`could_mean`)."""
        self._calibration = _calibration(CALIBRATION) if self.settings.calibrated else None
        self._head = call_head.load() if self.settings.head else None
        fitted: decision.Decision | None = None
        if self.settings.decision not in ("rules", "fitted"):
            raise EngineError(f"decision must be rules or fitted: {self.settings.decision!r}")
        if self.settings.decision == "fitted":
            fitted = decision.load()
            if self._head is None or fitted is None:
                raise EngineError(
                    f"the fitted decision needs the call head and {decision.DECISION}: "
                    "remake it with python -m lab.bench.decision"
                )
        self.name = "hall" if self.settings.head else "whisper"
        if self.settings.head and self._head is None:
            raise EngineError(f"the call head {call_head.WEIGHTS} is missing: remake it with python -m lab.train head")
        self.on_reading: Callable[[Heard, Reading, Heard], None] | None = None
        """Told of every streamed hearing: as read, what it was read from, and as given out (the second saying
        weighed with the first); the benchmark's dump."""
        self._noise: npt.NDArray[np.float32] = (
            np.random.default_rng(15_4_7_11).normal(0.0, self.settings.noise_floor, NOISE_TABLE).astype(np.float32)
        )
        self._active: tuple[str, ...] = tuple(grammar.intents)
        self._walker(self._active)
        self.decider = Decider(self.settings, grammar, self._head, fitted, self.could_be)
        """How sure each hearing is (`engines.decision`): the engine reads, the decider decides."""
        self._number_vocabulary = {w for n in range(100) for w in grammar.number_words(n).split()} | {"hundred"}
        self.load_seconds = time.process_time() - started

    # ----- the step's grammar ----------------------------------------------------------------------

    def _walker(self, intents: tuple[str, ...]) -> Walker:
        walker = self._walkers.get(intents)
        if walker is None:
            unknown = [i for i in intents if i not in self.grammar.known]
            if unknown:
                raise EngineError(f"unknown intents for the recognizer: {unknown}")
            walker = Walker(build_net(self.grammar, intents))
            self._walkers[intents] = walker
            self._prompts[intents] = self.prompt(intents)
        return walker

    def prompt(self, intents: tuple[str, ...], leave_out: frozenset[str] = frozenset()) -> list[_Prompt]:
        """Whisper's previous-text prompt: the way the hall says what this step may hear. The rule's phrases of
        the step (those with no number in them: a number in the prompt draws doubtful hearings to itself), then
        calls in words. Phrases come first and are cut at `prompt_phrase_tokens`; the calls, the most frequent
        thing heard, come last, nearest to what is decoded. `leave_out`: intents not to prime (the yardstick
        for a hearing of one of them)."""
        phrases: list[str] = []
        primed: set[str] = set()
        sentences: list[tuple[str, tuple[str, ...]]] = []
        budget = self.settings.prompt_phrase_tokens
        for name in intents:
            intent = self.grammar.known[name]
            if name in leave_out:
                continue
            if name == "call" or name.endswith("-paraphrase") or intent.clause is None or not intent.templates:
                continue  # not the words other than the rule's: they are findings, not to be primed
            plain = [seq for seq in expand(intent.templates[0]) if not any(p.startswith("{") for p in seq)]
            if not plain:
                continue
            sequence = max(plain, key=len)  # "the last ball called is required"
            sentence = " " + " ".join(sequence).capitalize().replace(" i ", " I ") + "."
            cost = len(self._tokenizer.encode(sentence, add_special_tokens=False).ids)
            if cost > budget:
                continue
            budget -= cost
            phrases.append(sentence)
            primed.add(name)
            sentences.append((name, tuple(sequence)))
        text = "".join(phrases)
        if "bingo" not in leave_out:
            text = " Bingo!" + text
            primed.add("bingo")
        prompts = []
        for calls in EXAMPLE_CALLS if "call" in intents else ((),):
            words = [f"{Ball(n).letter} {self.grammar.number_words(n).replace(' ', '-')}" for n in calls]
            said = text + (" " + ", ".join(words) + "." if words else "")
            ids: list[int] = self._tokenizer.encode(said, add_special_tokens=False).ids
            prompt = _Prompt(
                (self._previous, *ids, *self._start), frozenset(calls), frozenset(primed), tuple(sentences)
            )
            prompts.append(prompt)
        return prompts

    def set_step(self, intents: Sequence[str]) -> None:
        """Listen only for these intents from the next utterance on."""
        key = tuple(intents)
        self._walker(key)
        self._active = key

    # ----- decoding --------------------------------------------------------------------------------

    def encode(self, samples: npt.NDArray[np.int16]) -> Array:
        """The encoder's states of one utterance (int16, 16 kHz): the noise floor under it, then Whisper's log-mel
        features of `window` seconds."""
        import ctranslate2

        audio = samples.astype(np.float32)
        if self.settings.noise_floor > 0:
            index = np.arange(len(audio)) % NOISE_TABLE
            audio = audio + self._noise[index]
        audio = np.clip(audio, -32768, 32767) / np.float32(32768.0)
        frames = round(self.settings.window * RATE / HOP)
        features = log_mel(audio.astype(np.float32), self._filters, frames)
        encoded = self._encoder.encode(ctranslate2.StorageView.from_array(features[None]), to_cpu=True)
        memory: Array = np.asarray(encoded, dtype=np.float32)[0]
        return memory

    def read(self, result: SearchResult, intents: tuple[str, ...]) -> Reading:
        """What the N-best means, and how sure it is."""
        grouped: dict[_Key, float] = {}
        words: dict[_Key, str] = {}
        for hyp in result.finished:  # best first: a meaning's words are those of its best sentence
            parse = self.grammar.parse(self.written(hyp.tokens), intents)
            if not parse.meanings or parse.unknown or parse.ambiguous:
                continue
            found: _Key = tuple(_slots(m) for m in parse.meanings)
            grouped[found] = float(np.logaddexp(grouped.get(found, -np.inf), hyp.score))
            words.setdefault(found, self.spoken(parse))
        if not grouped:
            return Reading("", 0.0, {}, None)
        total = float(np.logaddexp.reduce(list(grouped.values())))
        key = max(grouped, key=grouped.__getitem__)
        best = words[key]
        posterior = float(np.exp(grouped[key] - total))
        # Speech the grammar does not hold: left to itself the decoder writes other words than the grammar's best.
        # A phrase of the rule is long: chatter forced onto it scores far below what the decoder writes freely,
        # so a phrase the free sentence only misspells ("last Paul called ...") keeps its confidence.
        written = self.written(result.free.tokens)
        free = " ".join(decision.free_words(self.grammar, written))
        similarity = difflib.SequenceMatcher(a=free, b=best).ratio()
        top = result.finished[0]
        per_token = (result.free.score - top.score) / max(1, len(top.tokens))
        phrase = (
            not loops(free)
            and all(meaning[0] != "call" for meaning in key)
            and len(best.split()) >= self.settings.phrase_words
            and per_token <= self.settings.phrase_gap
        )
        likeness = 1.0 if similarity >= self.settings.min_similarity or phrase else similarity
        confidence = posterior * likeness
        if any(meaning[0] != "call" for meaning in key):
            # The number of a phrase is what it says ("five balls will be called"): a number the decoder left to
            # itself did not write is a guess of the grammar's, however alike the rest of the sentence.
            confidence *= self.numbers_heard(best, written, sounds=True)
        balls: dict[int, float] = {}
        for meanings, score in grouped.items():
            if len(meanings) == 1 and meanings[0][0] == "call" and isinstance(meanings[0][1], Ball):
                number = meanings[0][1].number
                balls[number] = balls.get(number, 0.0) + float(np.exp(score - total))
        said = key[0][1] if len(key) == 1 and key[0][0] == "call" and isinstance(key[0][1], Ball) else None
        if said is not None:
            noball = decision.names_no_ball(self.grammar, written, said)
            if noball is not None:
                # The grammar holds only calls that name a ball, so it wrote this number's own letter; the
                # decoder left to itself wrote another. Perhaps the caller said a call naming no ball (A(5)):
                # those words, never sure, so the procedure lists them for review instead of a ball in play.
                return Reading(noball, confidence * NO_BALL_DOUBT, {}, None, free=written)
        features: tuple[float, ...] = ()
        if said is not None and len(key) == 1:
            free_words = set(free.split())
            features = (
                posterior,
                similarity,
                min(per_token, 10.0),
                top.score / max(1, len(top.tokens)),
                self.numbers_heard(best, written),
                float(said.letter.lower() in free_words or said.letter.lower() in written.lower()[:3]),
                float(len(grouped)),
            )
        if features and self._calibration is not None:
            # the fitted confidence, still scaled by how far the free sentence bore the call out: a decoder adapted
            # to calls can put the whole N-best on one call in patter ("b six" at N-best 1.0, written freely "N
            # thirty."), a case the fit, made on Whisper's own decoder, never saw
            confidence = self._calibration.confidence(features, self.settings.min_confidence) * likeness
        return Reading(
            best,
            confidence,
            balls,
            said.number if said is not None else None,
            likeness,
            written,
            features,
            tuple(meaning[0] for meaning in key),
        )

    def numbers_heard(self, best: str, free: str, sounds: bool = False) -> float:
        """The share of the number words of `best` that the free sentence holds, its numerals read both as a
        number and digit by digit ("142": "one hundred forty two" and "one four two"); with `sounds`, its words
        said like a number word as that word too ("one for two": the grammar's `sounds_like`). A call's own
        confidence is fitted on the spelling alone (`CALL_FEATURES`), so only a phrase's number is heard by sound."""
        said = [w for w in best.split() if w in self._number_vocabulary]
        if not said:
            return 1.0
        heard: set[str] = set()
        for word in self.grammar.normalize(free):
            number = word.lstrip("#")
            if not number.isdigit():
                heard.add(word)
                if sounds and word in self.grammar.sounds_like:
                    heard.add(self.grammar.sounds_like[word])
                continue
            heard.update(self.grammar.units[int(d)] for d in number)
            if int(number) < 1000:
                heard.update(self.grammar.number_words(int(number)).split())
        return sum(w in heard for w in said) / len(said)

    def written(self, tokens: Sequence[int]) -> str:
        """The text of these tokens, a call read digit by digit ('O 6 1') written as one number ('O 61')."""
        return _DIGIT_BY_DIGIT.sub(r"\1 \2\3", str(self._tokenizer.decode(list(tokens))))

    def spoken(self, parse: Parse) -> str:
        """The grammar's words for what was written: 'b seven', 'manufacturer one four two'."""
        return " ".join(decision.meaning_words(self.grammar, m) for m in parse.meanings)

    def _hear(self, samples: npt.NDArray[np.int16], start: float) -> tuple[Heard, Reading]:
        if len(samples) == 0:
            raise EngineError("empty utterance: no samples to decode")
        intents = self._active
        walker = self._walker(intents)
        memory = self.encode(samples)
        prompts = self._prompts[intents]
        turn = round(start * 10) % len(prompts)  # by where the utterance starts: its early decode alike
        prompt = prompts[turn]
        free = list(self._start) if self.settings.free_prompt == "bare" else None
        posterior = self._head.posterior(memory, len(samples)) if self._head is not None else None

        # The adapted decoder reads calls; anything else is Whisper's own decoder's reading. Trained mostly on calls,
        # the adapter wrote phrases worse: "valid bingo" as "bad bingo", "are there any other bingos" as "an error
        # has been made" through a 48 kHz device, and a phrase's "fifty" as "fifty four" in babble, sure. What the
        # head hears as no call goes to Whisper's own decoder at once; what the adapted decoder reads as no call is
        # read again by it.
        def read(search: ConstrainedSearch, tokens: Sequence[int]) -> Reading:
            return self.read(search.search(memory, tokens, walker, beam=self.settings.beam, free_prompt=free), intents)

        search = self._own_search if posterior is not None and int(np.argmax(posterior)) == 0 else self._search
        reading = read(search, prompt.tokens)
        if reading.single_call is None and search is not self._own_search:
            search = self._own_search
            reading = read(search, prompt.tokens)
        if reading.single_call in prompt.calls and len(prompts) > 1:
            # One of the prompt's own calls: the prompt may have written it. Only if the decoder, prompted with
            # the next set of calls (which does not name it), writes its number too is it heard; otherwise nothing
            # is (unsure, and no ball goes on the board). A prompt with no calls at all is no yardstick: it
            # unlearns the form of a call ("I nineteen" written "I'm I'm team."), and no prompt loops ("I'd I'd").
            other = prompts[(turn + 1) % len(prompts)]
            bare = self.written(search.free_sentence(memory, other.tokens))
            if self.numbers_heard(self.grammar.number_words(reading.single_call), bare) < 1.0:
                # Not borne out. What the grammar's decoder hears prompted with the calls of a third set (naming
                # neither this call nor the yardstick's) is the hearing if it is none of them and the free sentence
                # there writes its number too: "b seven" read "b eleven" under a prompt naming B eleven, "B seven"
                # by the yardstick naming B seven, and "b seven" under the third. Otherwise nothing is heard.
                third = prompts[(turn + 2) % len(prompts)]
                second = read(search, third.tokens)
                call = second.single_call
                borne = call is not None and call not in third.calls and call != reading.single_call
                if borne and self.numbers_heard(self.grammar.number_words(call or 0), second.free) >= 1.0:
                    reading = second
                else:
                    reading = Reading("", 0.0, {}, None, 0.0, bare)
        primed = (frozenset(reading.intents) & prompt.phrases) | prompt.echoed(reading.text)
        if primed and reading.single_call is None and reading.text:
            # A phrase the prompt says ("Bingo!" opens every prompt), or words of one: the prompt may have written
            # it, in the free sentence as much as in the grammar's. It is borne out only by the decoder prompted
            # without it.
            key = (intents, primed)
            if key not in self._yardsticks:
                self._yardsticks[key] = self.prompt(intents, primed)
            without = self._yardsticks[key][turn % len(self._yardsticks[key])]
            free_words, bearing = self._unprimed(memory, search, without, reading)
            if bearing < 1.0:
                reading = replace(reading, confidence=reading.confidence * bearing)
            if reading.intents == ("bingo",):
                # "bingo" inside a sentence ("welcome to tonight's bingo"): the hearing is the sentence, so that
                # the procedure can tell a claim from the word in someone's talk (B(1)). The decoder
                # prompted with "Bingo!" writes the word and the sentence around it; without that prompt it may
                # write another word for it ("tonight's game go"), so that sentence is read second.
                for sentence in (" ".join(decision.free_words(self.grammar, reading.free)), free_words):
                    said = self.grammar.parse(sentence, intents)
                    if [m.intent for m in said.meanings] == ["bingo"] and said.unknown:
                        reading = replace(reading, text=sentence)
                        break
        if (
            self.settings.near_meanings
            and len(reading.intents) == 1
            and reading.single_call is None
            and reading.confidence >= self.settings.min_confidence
        ):
            # a sure phrase a word away from another meaning: how much the decoder, asked to choose, gives the
            # other (about 0.25 s a choice; an unsure phrase is not asked, the choice could only make it less sure)
            heard_intent = reading.intents[0]
            near = [o for o in self.grammar.known[heard_intent].near if o in intents]
            if near:
                reading = replace(reading, near=self.could_mean(memory, heard_intent, near))
        reading = self.decider.decide(reading, posterior, len(samples), takes_calls="call" in self._active)
        if reading.single_call is not None:
            reading = replace(reading, memory=memory)
        end = start + len(samples) / RATE
        too_long = len(samples) > self.settings.window * RATE
        heard = Heard(
            start=start,
            end=end,
            text=reading.text,
            confidence=reading.confidence,
            uncertain=not reading.text or too_long or reading.confidence < self.settings.min_confidence,
            could_be=self.decider.left_room(reading),
        )
        return heard, reading

    def _unprimed(
        self, memory: Array, search: ConstrainedSearch, without: _Prompt, reading: Reading
    ) -> tuple[str, float]:
        """What the decoder prompted `without` the phrase writes (its words the grammar knows), and how far the
        unprimed decoder bears the phrase out: 1.0 when that sentence is alike, or when Whisper's decoder with no
        prompt at all scores the phrase's own words within `primed_gap` nats of what it writes (a rare word
        written as another: "Bindle" for "bingo"), unless the step hears a near meaning of the phrase (`near`: a
        word apart, as little as the score lets pass; "bad bingo" was a sure "bingo" by it); otherwise the
        likeness, as low as chatter the prompt drew onto the phrase."""
        free_words = " ".join(
            decision.free_words(self.grammar, self.written(search.free_sentence(memory, without.tokens)))
        )
        similarity = difflib.SequenceMatcher(a=free_words, b=reading.text).ratio()
        if similarity >= self.settings.min_similarity:
            return free_words, 1.0
        intent = reading.intents[0] if len(reading.intents) == 1 else None
        if intent is not None and not set(self.grammar.known[intent].near) & set(self._active):
            # a near meaning of the step is a word away, and a word is about what the score lets pass
            bare = search.search(memory, self._start, self._intent_net(intent), beam=self.settings.beam)
            phrase = max((h.score for h in bare.finished), default=-np.inf)
            if bare.free.score - phrase <= self.settings.primed_gap:
                return free_words, 1.0
        return free_words, similarity

    def decode(self, samples: np.ndarray, start: float = 0.0) -> Heard:
        """Recognize one utterance that is already cut out (int16, 16 kHz), on its own."""
        heard, _ = self._hear(np.asarray(samples, dtype=np.int16), start)
        return heard

    # ----- streaming -------------------------------------------------------------------------------

    def could_be(self, memory: Array | None, other: int, heard: int) -> float:
        """How much of a saying heard as ball `heard` the decoder gives ball `other` when asked to choose between
        the two alone. The N-best of a hearing holds only what its beam kept: "I twenty two" then "I twenty
        three", each sure, may not name the other at all, though a word apart (a false A(5) mis-call at 10 dB).
        Asked of Whisper's own decoder: the adapted one, trained to be sure of calls, left no room for the other
        ball where the saying was the other (I 22's second saying heard "i twenty three" by it and the head, a false
        A(5) at 10 dB in the scenario library)."""
        if memory is None:
            return 0.0
        nets = []
        for ball in (heard, other):
            net = WordNet()
            end = net.node()
            net.accepting.add(end)
            for form in call_forms(self.grammar, Ball(ball)):
                net.path(0, form, end)
            nets.append(Walker(net))
        return self._choice(memory, nets[0], nets[1:], self.settings.beam)

    def could_mean(self, memory: Array, heard: str, others: Sequence[str]) -> float:
        """The most of a saying heard as a phrase of intent `heard` that the decoder gives one of the intents
        `others` said in nearly the same words (`Intent.near`) when asked to choose between that one and `heard`
        alone, prompted with nothing. The step's prompt, which lists its short phrases, drew Whisper's own decoder
        to "not a valid bingo" (3.6 nats better than "valid bingo") for "that is a valid bingo" said in 10 dB of
        babble; asked alone, it gave the saying 98 % to "this is a valid bingo"."""
        walkers = [self._intent_net(other) for other in others]
        return self._choice(memory, self._intent_net(heard), walkers, self.settings.near_beam)

    def _intent_net(self, intent: str) -> Walker:
        """One meaning of `intent`, as a walker of Whisper's own decoder (it keeps what may follow each state)."""
        if intent not in self._intent_nets:
            self._intent_nets[intent] = Walker(build_net(self.grammar, [intent], repeat=False))
        return self._intent_nets[intent]

    def _choice(self, memory: Array, heard: Walker, others: Sequence[Walker], beam: int) -> float:
        """The largest share one of `others` takes when Whisper's own decoder, prompted with nothing, is asked
        whether the saying is it or `heard`: each network's best sentence against the other's (0.0 for none)."""

        def best(walker: Walker) -> float:
            found = self._own_search.search(memory, self._start, walker, beam=beam, max_free=0).finished
            return max((h.score for h in found), default=-np.inf)

        mine = best(heard)
        shares = [0.0]
        for other in others:
            theirs = best(other)
            if np.isfinite(theirs):
                shares.append(1.0 if not np.isfinite(mine) else float(1.0 / (1.0 + np.exp(mine - theirs))))
        return max(shares)

    def stream(self, chunks: Iterable[AudioChunk]) -> Iterator[Heard]:
        """Cut the stream by voice activity; decode each utterance as it closes.

        Decoding starts early, on another thread, once the speaker has been quiet for `early` seconds: if the
        utterance then closes without more speech, its hearing is ready sooner than the endpointer's hangover
        plus a decode; if speech resumes, that early decode is dropped.

        A caller pauses between the letter and the number ("B ... eleven"): an utterance in which the decoder,
        left to itself, wrote no number is held for `join_gap` seconds; speech that starts within them is the
        rest of it, and the two are decoded as one, the pause between them included.

        A stirring (speech that opened no utterance, or one too short to decode) is given as an unsure hearing of
        nothing, in stream order: after a hearing held for what may follow, and not at all inside a hearing."""
        endpointer = Endpointer(self.endpoint_settings)
        pieces: list[np.ndarray] = []
        utt_start = 0.0
        early: Future[tuple[Heard, Reading, float]] | None = None
        early_at = early_end = 0.0
        held: _Held | None = None
        joined = False
        stirs: list[Heard] = []
        given_until = -np.inf

        def release() -> Iterator[Heard]:
            for stir in stirs:
                if stir.start >= given_until:  # a stirring inside a hearing given was part of it
                    yield stir
            stirs.clear()

        def give(held: _Held) -> Iterator[Heard]:
            nonlocal given_until
            for heard in self._emit(held):
                given_until = max(given_until, heard.end)
                if not heard.uncertain and held.peak is not None:
                    endpointer.heard_speaker(held.peak)
                yield heard
            yield from release()

        self.decider.reset()
        recent = _Recent(seconds=self.settings.window + self.settings.join_gap + 1.0)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="whisper-early") as pool:
            for chunk in chunks:
                recent.add(chunk)
                for event in endpointer.feed(chunk.samples):
                    if event.kind == "start":
                        utt_start, pieces, early, joined = event.time, [event.samples], None, False
                        if held is not None and event.time - held.speech_end <= self.settings.join_gap:
                            utt_start, pieces = held.start, [recent.since(held.start, event.time), event.samples]
                            joined = True
                            stirs.clear()  # in the pause the joined decode spans
                        elif held is not None:
                            yield from give(held)
                        held = None
                    elif event.kind == "audio":
                        pieces.append(event.samples)
                    elif event.kind == "stir":
                        stirs.append(stirring(event))
                        if held is None:
                            yield from release()
                    else:
                        ahead = (early, early_at) if early is not None else None
                        closed = self._close(endpointer, pieces, utt_start, event.time, chunk.end, ahead, joined)
                        pieces, early = [], None
                        if closed is not None and self._incomplete(closed) and self.settings.join_gap > 0:
                            held = closed
                        elif closed is not None:
                            yield from give(closed)
                if (
                    held is not None
                    and not endpointer.in_speech
                    and chunk.end - held.speech_end > self.settings.join_gap
                ):
                    yield from give(replace(held, fed_until=chunk.end))
                    held = None
                quiet = endpointer.quiet_seconds()
                if endpointer.in_speech and quiet >= self.settings.early and early is None and not joined:
                    samples = np.concatenate(pieces).astype(np.int16)
                    if endpointer.voiced_seconds() >= self.endpoint_settings.min_speech:
                        early, early_at = pool.submit(self._timed, samples, utt_start), chunk.end
                        early_end = endpointer.speech_end
                elif endpointer.in_speech and quiet == 0:
                    early = None  # speech went on: that decode heard only part of it
                elif early is not None and endpointer.in_speech and chunk.end > early_at and self.settings.whole_early:
                    heard, reading, took = early.result()
                    if self._whole(heard, reading):
                        latency = max(chunk.end - early_end, early_at - early_end + took)
                        snr = endpointer.speech_over_noise_db()
                        endpointer.cut()
                        peak = endpointer.last_peak
                        yield from give(_Held(utt_start, early_end, heard, reading, latency, chunk.end, snr, peak=peak))
                        pieces, early = [], None
                since = held.start if held is not None else utt_start if endpointer.in_speech else None
                stirred = endpointer.stirring_since
                self.pending_since = stirred if since is None else since if stirred is None else min(since, stirred)
            for event in endpointer.flush():
                if event.kind == "stir":
                    stirs.append(stirring(event))
                    continue
                ahead = (early, early_at) if early is not None else None
                closed = self._close(endpointer, pieces, utt_start, event.time, event.time, ahead, joined)
                if held is not None:
                    yield from give(held)
                    held = None
                if closed is not None:
                    yield from give(closed)
                pieces, early = [], None
            if held is not None:
                yield from give(held)
            yield from release()
            self.pending_since = None

    def _whole(self, heard: Heard, reading: Reading) -> bool:
        """A sure call that no more words can make another (`goes_on`)."""
        n = reading.single_call
        return n is not None and not heard.uncertain and not decision.goes_on(n)

    def _incomplete(self, held: _Held) -> bool:
        """The decoder, left to itself, wrote a letter of the board alone (or a word that sounds like one): the
        call's number is to come. Anything else ("yes", a number, nothing at all) stands on its own: babble ahead
        of a call does not join it."""
        words = decision.free_words(self.grammar, held.reading.free)
        return bool(words) and len(words) <= 2 and all(w in LETTER_LIKE or (len(w) == 1 and w.isalpha()) for w in words)

    def _emit(self, held: _Held) -> Iterator[Heard]:
        heard = self.decider.fuse(held.heard, held.reading)
        if held.limited:  # the hall never went quiet: more may have been said in it than was read
            heard = replace(heard, uncertain=True)
        latency = max(held.latency, held.fed_until - held.speech_end)
        given = replace(heard, end=held.speech_end, latency=latency, snr_db=held.snr_db)
        if self.on_reading is not None:
            self.on_reading(held.heard, held.reading, given)
        yield given

    def _timed(self, samples: npt.NDArray[np.int16], start: float) -> tuple[Heard, Reading, float]:
        """A hearing and the CPU seconds it took: what it takes on a free core, however busy the machine is
        (the process's time, the encoder's threads included; a second channel's decoding would add to it)."""
        began = time.process_time()
        heard, reading = self._hear(samples, start)
        return heard, reading, time.process_time() - began

    def _close(
        self,
        endpointer: Endpointer,
        pieces: list[np.ndarray],
        utt_start: float,
        speech_end: float,
        fed_until: float,
        ahead: tuple[Future[tuple[Heard, Reading, float]], float] | None,
        joined: bool = False,
    ) -> _Held | None:
        """The utterance closed at `speech_end`, known when the stream reached `fed_until`: its hearing.

        Its latency is what it would be live: the decode that started ahead (at stream time `ahead[1]`) or now,
        plus the CPU seconds it took. One with too little voiced time is none, unless a held letter was joined to
        it (the letter was speech enough)."""
        short = endpointer.voiced_seconds() < self.endpoint_settings.min_speech
        if (short and not joined) or not pieces:
            return None
        waited = max(0.0, fed_until - speech_end)
        if ahead is not None:
            heard, reading, took = ahead[0].result()
            latency = max(waited, ahead[1] - speech_end + took)
        else:
            heard, reading, took = self._timed(np.concatenate(pieces).astype(np.int16), utt_start)
            latency = waited + took
        snr = endpointer.speech_over_noise_db()
        return _Held(
            utt_start, speech_end, heard, reading, latency, fed_until, snr, endpointer.limited, endpointer.last_peak
        )


@dataclass(frozen=True)
class _Held:
    """A hearing not yet given out: its utterance may go on after a pause."""

    start: float
    speech_end: float
    heard: Heard
    reading: Reading
    latency: float
    fed_until: float
    snr_db: float | None
    limited: bool = False
    """Closed at the endpointer's longest utterance (`Endpointer.limited`)."""
    peak: float | None = None
    """Its loudest level over the noise (`Endpointer.last_peak`): heard sure, the speaker's level."""


class _Recent:
    """The last seconds of the stream, to cut the pause between two parts of one utterance from."""

    def __init__(self, seconds: float) -> None:
        self._chunks: deque[AudioChunk] = deque()
        self._seconds = seconds

    def add(self, chunk: AudioChunk) -> None:
        self._chunks.append(chunk)
        while self._chunks and chunk.end - self._chunks[0].end > self._seconds:
            self._chunks.popleft()

    def since(self, start: float, end: float) -> np.ndarray:
        """Samples from `start` up to (not including) `end`, as far as they are kept."""
        out = []
        for chunk in self._chunks:
            lo = max(0, round((start - chunk.start) * RATE))
            hi = min(len(chunk.samples), round((end - chunk.start) * RATE))
            if hi > lo:
                out.append(chunk.samples[lo:hi])
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int16)
