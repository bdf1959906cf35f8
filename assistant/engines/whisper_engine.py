"""The Whisper adapter (the default engine): Whisper base hears, the step's grammar decides what it may write.

Each utterance (cut by `Endpointer`) is turned into Whisper's log-mel features, padded to a fixed window and
encoded by CTranslate2 (int8). The decoder (`whisper_decoder`, numpy) then searches only the sentences the
procedure's step allows (`constrained`), so a call is always a letter with a number of its column and a
phrase is always the rule's words. Its confidence is the share of the N-best that agrees on the meaning,
lowered when the decoder left to itself would rather write something the grammar does not hold.

Every call is said twice: in a stream, the second saying is weighed with the first. Two sayings heard as the
same ball confirm each other; two heard as different balls, when each hearing left room for the other, are
a doubt about the hearing (uncertain), not a mis-call.
"""

from __future__ import annotations

import difflib
import functools
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..audio import RATE, AudioChunk
from ..endpoint import HALL_CUTTING, Endpointer, EndpointSettings
from ..grammar import Grammar, Parse, expand
from ..messages import Ball, Meaning
from . import call_head, decision
from .base import EngineError, Heard, stirring
from .constrained import ConstrainedSearch, SearchResult, TokenTable, Walker, WordNet, build_net, call_forms
from .whisper_decoder import Array, WhisperDecoder

N_FFT = 400
HOP = 160
EXAMPLE_CALLS = ((4, 19, 35, 52, 68), (11, 27, 40, 58, 73), (7, 23, 44, 49, 62))
"""Calls named in the prompt, one per column, written in words: with numerals in the prompt a doubtful call was
heard as one of the prompt's numbers far more often than as any other (8 of 16 errors at 10 dB); in words,
never, and more calls were heard right (docs/bench-accuracy.md). Without them fewer calls are heard (103 of 150
real sayings at 20 dB instead of 125), but a doubtful hearing is drawn to them: the sets take turns,
utterance by utterance, so that no call is the prompt's default answer, and a hearing of one of the prompt's own
calls counts only if the decoder, left to itself with no prompt, writes its number too."""


def goes_on(number: int) -> bool:
    """Whether more words could make this call another: "G fifty" (G 55 to come), "B one" ("B one two", said
    digit by digit)."""
    return number == 1 or (number >= 20 and number % 10 == 0)


HEAD_DOUBT = 0.5
"""At most this sure: a call the call head, sure of itself, hears as another ball or as no call."""
NO_BALL_DOUBT = 0.5
"""A call heard with its number's letter under the grammar but another letter when decoded freely is at most
this sure: a doubt between a mis-call and a mis-hearing of the letter, for review (never a violation)."""
LETTER_LIKE = frozenset(
    {"b", "be", "bee", "b.", "i", "eye", "aye", "n", "en", "and", "an", "g", "gee", "ji", "o", "oh", "owe", "the"}
)
"""How the decoder, left to itself, writes a letter of the board said alone (measured: ' B', ' And', ' I', ' G.',
' Oh,', ' B, D,'), beside any single letter: the first part of a call said with a pause."""
CALL_FEATURES = (
    "posterior",
    "similarity",
    "free_gap_per_token",
    "logprob_per_token",
    "numbers_heard",
    "letter_heard",
    "meanings",
)
"""What a call's confidence is made of (Reading.features, in this order)."""
ADAPTER = Path(__file__).with_name("decoder_adapter.npz")
"""The decoder adapter trained here (`python -m lab.train decoder`), committed with what made it; the hall
engine's unless told otherwise (`WhisperSettings.adapter`)."""
CALIBRATION = Path(__file__).with_name("call_confidence.json")
"""The call confidence fitted here (`python -m lab.train confidence`), committed with what made it."""
_DIGIT_BY_DIGIT = re.compile(r"\b([bingo])[\s-]+(\d)[\s-]+(\d)\b", re.IGNORECASE)


@dataclass(frozen=True)
class WhisperSettings:
    """How the Whisper adapter listens; each value was measured (docs/bench-accuracy.md)."""

    window: float = 10.0
    """Seconds of audio the encoder sees (the utterance, then silence): 10 s heard calls better than 5 s (95 against
    92 % right on clean cut calls); Whisper's own 30 s cost nine times as much and was no better."""
    beam: int = 5
    """Hypotheses kept by the constrained search."""
    prompt_phrase_tokens: int = 40
    """Tokens of the prompt given to the step's phrases (the calls come on top)."""
    threads: int = 1
    """CPU threads of the encoder."""
    noise_floor: float = 60.0
    """Standard deviation (16-bit units, about -55 dBFS) of a fixed noise floor under the audio: digitally
    silent stretches (synthetic speech, gated microphones) derail the encoder; on clean espeak calls cut out,
    88 % were heard right without it and 93 % with it."""
    min_confidence: float = 0.9
    """Below this a hearing is uncertain."""
    min_similarity: float = 0.6
    """Below this similarity (of the letters of the words) between the grammar's best sentence and what the
    decoder writes with no grammar, the hearing's confidence is scaled by it: chatter forced onto a call comes
    out unsure (0 false calls in 96 chatter sentences at 10 dB and clean, against 5 by the N-best share
    alone), while "to" for "two" or "I-one-six" for "I 16" do not."""
    phrase_gap: float = 1.0
    """A hearing of a phrase (no call, at least `phrase_words` words) keeps its confidence when the free sentence
    beats it by at most this much log-probability per token, however differently it is written."""
    phrase_words: int = 3
    """Shorter hearings ("bingo", "last ball") must be written alike freely: babble is forced onto them easily."""
    early: float = 0.1
    """Quiet seconds after which the utterance is decoded ahead of the endpointer's verdict."""
    whole_early: bool = True
    """A call decoded ahead that is sure and cannot go on ("B seven", not "G fifty", which may be "G fifty five")
    is given out at once, without waiting for the endpointer's hangover (`HALL_CUTTING`: 0.6 s, longer than a
    caller's pause between letter and number), and closes its utterance: what follows is another
    (docs/bench-accuracy.md)."""
    free_prompt: str = "step"
    """The prompt of the free sentence, the yardstick of a hearing: 'step' (the grammar search's own prompt) or
    'bare' (Whisper's start tokens alone). Measured on the hall set's tuning voices, 'bare' heard fewer calls
    sure (clean 18 of 30 against 25 for en-us)."""
    calibrated: bool = True
    """A call's confidence from the fitted model (CALIBRATION) instead of N-best share x likeness, where the model
    file is there."""
    join_gap: float = 0.8
    """Seconds an utterance whose free sentence holds no number waits for the rest of the call (0: never)."""
    fuse_window: float = 10.0
    """Seconds within which a call's second saying is weighed with its first."""
    compatible: float = 0.02
    """Two sayings heard as different balls are one doubtful hearing when each gave the other at least this; a call
    hearing leaves room for another ball (`Heard.could_be`) that has at least this of its N-best."""
    head_room: float = 0.1
    """A call hearing leaves room for another ball (`Heard.could_be`) that the call head hears with at least this.
    Espeak en-029's "N thirty one" heard "n forty one" gave N 31 0.10-0.12; on the validation voices'
    dumps 1-2 % of the sure call hearings have such a ball (20 % from 0.02: the head spreads thinly over many)."""
    adapter: str = ""
    """A decoder adapter (low-rank updates of Whisper's decoder trained here, `python -m lab.train decoder`)
    merged into a second decoder that reads calls only (what the head hears as no call, and what it does not read
    as a call, is Whisper's own decoder's reading): its file, "none" for Whisper's own decoder
    alone, or "" (the default) for the committed one (`ADAPTER`) in the hall engine and none in the zero-shot
    whisper engine. The hall engine's default, which holds because the procedure keeps the balls a call's hearing
    left room for (`Heard.could_be`): the adapter hears calls in babble better, and its sharper N-best can leave a
    sound-alike sure that the rule of evidence must not trust (docs/hall-model.md, the adapter reading calls by
    default)."""
    adapter_strength: float = 1.0
    """How much of the adapter's updates is merged (0.5: half of each); full strength heard more than half on every
    validation cell."""
    call_longest: float = 3.0
    """Seconds: a hearing of one call from a longer utterance is never sure. A saying's utterance, its pause between
    letter and number and the cut's margins included, lasted at most 3.0 s in 99.9 % of the sure call hearings on
    the validation voices; the longer ones held two sayings cut as one ("G fifty" then "G fifty nine" at 10 dB,
    read "g fifty nine" sure by both readers, a repeat of G 50 that seemed missing)."""
    head: bool = False
    """Weigh each call with the call head trained here (`call_head`, docs/hall-model.md): the hall engine's way."""
    head_agree: float = 0.5
    """A call the call head hears as the same ball with at least this probability is sure. Chosen on the hall set
    of voices the head never trained on (`hallset.HEAD_VALIDATION`): the lowest of 0.3, 0.4, ... at which at most
    0.1 % of the call hearings were sure and wrong by agreement (0.3 and 0.4: 2 of 1,010, both at 5 dB)."""
    head_confirms: float = 0.5
    """... and from this probability (below `head_agree`) the head hearing the same ball makes a call sure when
    the decoder's own confidence is at least `decoder_confirms` and its free sentence bore the call out (likeness
    1): two readers agreeing, each short of sure alone. Off (equal to `head_agree`): measured at
    0.3, it was chosen on a validation dump (28 more sure and right call hearings of 977, none wrong), then made
    one call sure and wrong on the held-out voices (N 41 heard N 43 at 10 dB, its free sentence a loop, which is
    why the free sentence must bear the call out) and one on the validation voices' next run (G 58 heard G 59 at
    5 dB, the head at 0.45): a false accusation outweighs the 3-4 points it bought at 20 dB."""
    decoder_confirms: float = 0.6
    """The decoder's confidence (0.9 is sure) a call needs for `head_confirms` to make it sure."""
    head_doubt: float = 0.3
    """The call head giving another label (another ball, or no call) at least this probability makes a call
    unsure, whatever the decoder's confidence. On the validation voices 0.3 stopped one sure and wrong call (G 58
    heard G 59 at 5 dB, the head right at 0.34) and no right one; 0.5 stopped none."""
    head_pairs: bool = True
    """A call's second saying, heard as a ball by the decoder, agrees with a first saying the decoder read as
    another ball when the call head heard the second's ball in both, each from `head_agree`: the head's reading
    of the first stands against the decoder's (docs/bench-accuracy.md: on the validation voices 21 more of 1,373
    call hearings sure and right, none wrong). It holds together with a saying that opened no utterance being heard
    as unsure (a stirring): without that, it made a false A(3) at 5 dB, where the second saying of a call opened
    none."""
    decision: str = "rules"
    """How a call hearing is decided once the decoder and the call head have heard it: "rules" (the hand-set
    thresholds below) or "fitted" (`engines.decision`: one ball and one calibrated probability from both listeners'
    evidence and the other saying, fitted on human voices; sure from its one operating point). "fitted" needs the
    head and `engines/call_decision.json`."""
    decoder_alone: bool = False
    """With the call head, whether the decoder's own confidence can make a call sure that the head does not hear
    (below `head_agree`, and no other label from `head_doubt`). Off: the decoder adapter made such
    hearings common, and on the validation voices 1 in 10 of them was wrong (I 24 read "b four" at 0.90, the head at
    B 4 with 0.24; on Whisper's own decoder there were none or one a run); the head hearing the call, or a pair of
    sayings with the head hearing it in one, makes it sure."""
    head_writes: bool = True
    """Let the call head write a call where the decoder heard none (`head_alone`;
    docs/bench-accuracy.md)."""
    head_alone: float = 0.7
    """Where the decoder heard no call (nothing the grammar holds, or a phrase it is unsure of) and the step takes
    calls, a call the call head hears with at least this probability is the hearing, sure, unless more words
    could have made it another (`goes_on`: "N forty" may be N 41 with its "one" lost). Chosen on the validation
    voices' hall set with the hall cutting: the one wrong call the head wrote from 0.7 (N 41 heard
    as N 40 at 0.86, 5 dB) was such a call; without them, 0.7 wrote 22 more right calls than 0.8 and none
    wrong. A patter's highest call was 0.34."""
    head_overrules: float = 0.7
    """Where the decoder heard one call and the call head another ball with at least this probability, the head's
    call is the hearing, sure, on the same terms as `head_alone` (not a call more words could make another, not an
    utterance longer than `head_longest`). Above 1: off, the two readers disagreeing are a doubt."""
    rival: float = 0.1
    """A call whose N-best gives another ball at least this share has a rival: it is sure only when the call head
    hears it from `head_over_rival`, and a pair of its sayings does not confirm it (a confusion of the voice, not of
    the moment, repeats in both). Espeak's Caribbean "N thirty one", said twice in clean audio, was read "n forty
    one" with N 31 at 0.12 of the N-best, the head at N 41 with 0.63 and 0.59: N 41 on the board, sure and wrong,
    and a false B(8) when the floor read N 31. On the validation voices' dumps it
    would have made 8 of 592, 12 of 486 and 21 of 954 sure call hearings unsure, none of them wrong."""
    head_over_rival: float = 0.7
    """The call head's probability that makes a call with a rival sure (`rival`)."""
    head_longest: float = 4.0
    """Seconds: a longer utterance is never made sure by the head. Its training calls lasted at most 3.5 s; a
    longer utterance holds more than a call (a held-out voice's two sayings of G 51 and the first of G 46, cut as
    one 7.3 s utterance in 10 dB babble, were confirmed as G 51)."""


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


@dataclass(frozen=True)
class Reading:
    """One hearing: its meanings' words, the posterior of each call it may be, and how sure it is."""

    text: str
    confidence: float
    balls: dict[int, float]
    """Posterior of the ball, when the hearing is one call (N-best share)."""
    single_call: int | None
    likeness: float = 1.0
    """How far the free sentence bore the grammar's reading out (1.0, or the similarity that scaled the
    confidence down): N-best shares say which ball, not whether a ball was said at all."""
    free: str = ""
    """What the decoder wrote left to itself (no grammar)."""
    features: tuple[float, ...] = ()
    """What the confidence is made of (CALL_FEATURES, for a call): kept for calibration and the benchmark."""
    intents: tuple[str, ...] = ()
    """The intents of its meanings."""
    head: tuple[int, float] | None = None
    """What the call head heard (label, 0 for no call, and its probability), when the engine has one."""
    memory: Any = field(default=None, repr=False, compare=False)
    """The encoder's states it was read from (a call's: its two sayings are weighed against each other)."""
    posterior: Any = field(default=None, repr=False, compare=False)
    """The call head's posterior over its labels (0 for no call, then the balls), when the engine has a head."""
    decoded: Reading | None = field(default=None, repr=False, compare=False)
    """The decoder's own reading, before the head weighed it (the evidence the hearing decision is fitted on)."""
    evidence: decision.Evidence | None = field(default=None, repr=False, compare=False)
    """What the fitted decision decided this call from (`WhisperSettings.decision`), the other saying left out."""


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
        """Whisper's own decoder, unadapted: the reader of all but calls, and the second reader of `_could_be`."""
        self._walkers: dict[tuple[str, ...], Walker] = {}
        self._prompts: dict[tuple[str, ...], list[_Prompt]] = {}
        self._yardsticks: dict[tuple[tuple[str, ...], frozenset[str]], list[_Prompt]] = {}
        self._calibration = _calibration(CALIBRATION) if self.settings.calibrated else None
        self._head = call_head.load() if self.settings.head else None
        self._decision: decision.Decision | None = None
        if self.settings.decision not in ("rules", "fitted"):
            raise EngineError(f"decision must be rules or fitted: {self.settings.decision!r}")
        if self.settings.decision == "fitted":
            self._decision = decision.load()
            if self._head is None or self._decision is None:
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
        self._last_call: _Said | None = None
        """The last call hearing, to weigh the next one with."""
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
            self._prompts[intents] = self._prompt(intents)
        return walker

    def _prompt(self, intents: tuple[str, ...], leave_out: frozenset[str] = frozenset()) -> list[_Prompt]:
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

    def _encode(self, samples: npt.NDArray[np.int16]) -> Array:
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

    def _read(self, result: SearchResult, intents: tuple[str, ...]) -> Reading:
        """What the N-best means, and how sure it is."""
        grouped: dict[_Key, float] = {}
        words: dict[_Key, str] = {}
        for hyp in result.finished:  # best first: a meaning's words are those of its best sentence
            parse = self.grammar.parse(self.written(hyp.tokens), intents)
            if not parse.meanings or parse.unknown or parse.ambiguous:
                continue
            found: _Key = tuple(
                (m.intent, m.ball, m.number, m.manufacturer, m.serial, m.letter) for m in parse.meanings
            )
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
        free = " ".join(self._words(written))
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
            confidence *= self._numbers_heard(best, written)
        balls: dict[int, float] = {}
        for meanings, score in grouped.items():
            if len(meanings) == 1 and meanings[0][0] == "call" and isinstance(meanings[0][1], Ball):
                number = meanings[0][1].number
                balls[number] = balls.get(number, 0.0) + float(np.exp(score - total))
        said = key[0][1] if len(key) == 1 and key[0][0] == "call" and isinstance(key[0][1], Ball) else None
        if said is not None:
            noball = self._names_no_ball(written, said)
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
                self._numbers_heard(best, written),
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

    def _names_no_ball(self, written: str, said: Ball) -> str | None:
        """The free sentence's words when they are one call naming no ball with the number of `said`."""
        typed = self.grammar.parse(written, ("call", "bad-call"))
        if typed.unknown or len(typed.meanings) != 1:
            return None
        meaning = typed.meanings[0]
        if meaning.intent != "bad-call" or meaning.number != said.number:
            return None
        return self._meaning_words(meaning)

    def _numbers_heard(self, best: str, free: str) -> float:
        """The share of the number words of `best` that the free sentence holds, its numerals read both as a
        number and digit by digit ("142": "one hundred forty two" and "one four two")."""
        said = [w for w in best.split() if w in self._number_vocabulary]
        if not said:
            return 1.0
        heard: set[str] = set()
        for word in self.grammar.normalize(free):
            number = word.lstrip("#")
            if not number.isdigit():
                heard.add(word)
                continue
            heard.update(self.grammar.units[int(d)] for d in number)
            if int(number) < 1000:
                heard.update(self.grammar.number_words(int(number)).split())
        return sum(w in heard for w in said) / len(said)

    def written(self, tokens: Sequence[int]) -> str:
        """The text of these tokens, a call read digit by digit ('O 6 1') written as one number ('O 61')."""
        return _DIGIT_BY_DIGIT.sub(r"\1 \2\3", str(self._tokenizer.decode(list(tokens))))

    def _words(self, text: str) -> list[str]:
        """Normalized words of free text, numerals in words, to compare with the grammar's words."""
        out: list[str] = []
        for word in self.grammar.normalize(text):
            number = word.lstrip("#")
            if not number.isdigit():
                out.append(word)
            elif int(number) <= self.grammar.max_number:
                out.extend(self.grammar.number_words(int(number)).split())
            else:  # a card's digits written as one numeral ("1420251512"): digit by digit
                out.extend(self.grammar.units[int(d)] for d in number)
        return out

    def spoken(self, parse: Parse) -> str:
        """The grammar's words for what was written: 'b seven', 'manufacturer one four two'."""
        return " ".join(self._meaning_words(m) for m in parse.meanings)

    def _meaning_words(self, meaning: Meaning) -> str:
        if meaning.intent == "call" and meaning.ball is not None:
            return self.grammar.call_words(meaning.ball)
        digits = meaning.manufacturer is not None or meaning.serial is not None
        words: list[str] = []
        for word in meaning.words.split():
            if word.isdigit():
                if digits:
                    words.extend(self.grammar.units[int(d)] for d in word)
                else:
                    words.append(self.grammar.number_words(int(word)))
            else:
                words.append(word)
        return " ".join(words)

    def _hear(self, samples: npt.NDArray[np.int16], start: float) -> tuple[Heard, Reading]:
        if len(samples) == 0:
            raise EngineError("empty utterance: no samples to decode")
        intents = self._active
        walker = self._walker(intents)
        memory = self._encode(samples)
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
            return self._read(search.search(memory, tokens, walker, beam=self.settings.beam, free_prompt=free), intents)

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
            if self._numbers_heard(self.grammar.number_words(reading.single_call), bare) < 1.0:
                # Not borne out. What the grammar's decoder hears prompted with the calls of a third set (naming
                # neither this call nor the yardstick's) is the hearing if it is none of them and the free sentence
                # there writes its number too: "b seven" read "b eleven" under a prompt naming B eleven, "B seven"
                # by the yardstick naming B seven, and "b seven" under the third. Otherwise nothing is heard.
                third = prompts[(turn + 2) % len(prompts)]
                second = read(search, third.tokens)
                call = second.single_call
                borne = call is not None and call not in third.calls and call != reading.single_call
                if borne and self._numbers_heard(self.grammar.number_words(call or 0), second.free) >= 1.0:
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
                self._yardsticks[key] = self._prompt(intents, primed)
            without = self._yardsticks[key][turn % len(self._yardsticks[key])]
            free_words = " ".join(self._words(self.written(search.free_sentence(memory, without.tokens))))
            similarity = difflib.SequenceMatcher(a=free_words, b=reading.text).ratio()
            if similarity < self.settings.min_similarity:
                reading = replace(reading, confidence=reading.confidence * similarity)
            if reading.intents == ("bingo",):
                # "bingo" inside a sentence ("welcome to tonight's bingo"): the hearing is the sentence, so that
                # the procedure can tell a claim from the word in someone's talk (B(1)). The decoder
                # prompted with "Bingo!" writes the word and the sentence around it; without that prompt it may
                # write another word for it ("tonight's game go"), so that sentence is read second.
                for sentence in (" ".join(self._words(reading.free)), free_words):
                    said = self.grammar.parse(sentence, intents)
                    if [m.intent for m in said.meanings] == ["bingo"] and said.unknown:
                        reading = replace(reading, text=sentence)
                        break
        if posterior is not None:
            weighed = self._weigh(reading, posterior, len(samples) / RATE)
            reading = replace(weighed, posterior=posterior, decoded=reading)
            if self._decision is not None and reading.single_call is not None:
                reading = self._decided(reading, len(samples) / RATE)
        if reading.single_call is not None and len(samples) > self.settings.call_longest * RATE:
            # one call read from more audio than one saying takes: the cut may have joined two sayings (the second
            # of one ball and the first of the next, read as the next alone), so the repeat it seems to lack may be
            # in it; never sure
            reading = replace(reading, confidence=min(reading.confidence, HEAD_DOUBT))
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
            could_be=self._left_room(reading),
        )
        return heard, reading

    def _left_room(self, reading: Reading) -> tuple[int, ...]:
        """The other balls a hearing of one call left room for: at least `compatible` of its N-best, or `head_room`
        of the call head's posterior. The Caribbean "N thirty one" heard "n forty one" sure by the adapted decoder
        gave N 31 0.07 of the N-best and 0.10 of the head: the procedure keeps them with the call, so
        that a winning number missing from the board is no violation while a call on it may have been that
        number."""
        said = reading.single_call
        if said is None:
            return ()
        alike = {ball for ball, share in reading.balls.items() if share >= self.settings.compatible}
        if reading.posterior is not None:
            alike |= {n for n in range(1, len(reading.posterior)) if reading.posterior[n] >= self.settings.head_room}
        alike.discard(said)
        return tuple(sorted(alike))

    def _weigh(self, reading: Reading, posterior: npt.NDArray[np.float32], seconds: float = 0.0) -> Reading:
        """A call as the head hears it too. The head hears the same ball with at least `head_agree`: the call is sure
        (two readings of one encoder, one through Whisper's language model and the step's grammar, one trained on
        calls in babble, that agree). The head gives another label (another ball, or no call) at least
        `head_doubt`: the call is unsure, whatever the decoder's confidence, unless the head is sure of another ball
        (`head_overrules`): then the head's call is the hearing. Otherwise the call is unsure (the decoder alone
        makes no call sure unless `decoder_alone`). Where
        the decoder heard no call at all, the head's call is the hearing when it is sure of it (`head_alone`; see
        `_heads_call`). The head makes no utterance longer than `head_longest` sure, and agrees with a call the
        free sentence says otherwise (`_free_says_otherwise`) only as sure as it must be to write a call alone
        (`head_alone`): a number in the crowd between two sayings of O 62, written "Eighty-eight." freely and read
        "b eight" by the grammar and by the head at 0.53, made a false A(3) at 10 dB in the scenario library."""
        assert self._head is not None
        said = reading.single_call
        top = int(np.argmax(posterior))
        q = float(posterior[top])
        if said is None:
            alone = self.settings.head_writes and q >= self.settings.head_alone
            if top and alone and not goes_on(top) and seconds <= self.settings.head_longest:
                return self._heads_call(reading, posterior, top)
            if self._vetoed(replace(reading, head=(top, q))):
                return replace(reading, confidence=min(reading.confidence, HEAD_DOUBT), head=(top, q))
            return replace(reading, head=(top, q))
        if top not in (0, said) and q >= self.settings.head_doubt:
            noball = self._names_no_ball(reading.free, Ball(top))
            if noball is not None:
                # The decoder left to itself wrote a call naming no ball, the head heard its number, and the
                # grammar's reader, which holds calls that name a ball only, kept the letter and changed the number
                # ("B thirty two" read "b thirteen" by the adapted decoder, the head at N 32, 0.47): perhaps the
                # caller's bad call (A(5)), those words, never sure, and never the head's ball.
                return Reading(noball, reading.confidence * NO_BALL_DOUBT, {}, None, free=reading.free, head=(top, q))
        if (
            top == said
            and seconds <= self.settings.head_longest
            and not self._rivalled(reading.balls, said, (top, q))
            and (q >= self.settings.head_alone or not self._free_says_otherwise(reading, said))
            and (
                q >= self.settings.head_agree
                or (
                    q >= self.settings.head_confirms
                    and reading.confidence >= self.settings.decoder_confirms
                    and reading.likeness >= 1.0  # its free sentence bore the call out too
                )
            )
        ):
            confidence = max(reading.confidence, self._sure(q))
            return replace(reading, confidence=min(confidence, 1.0), head=(top, q))
        if (
            top
            and reading.intents == ("call",)
            and q >= self.settings.head_overrules
            and not goes_on(top)
            and seconds <= self.settings.head_longest
        ):
            return self._call_of_head(reading, posterior, top)
        if self._vetoed(replace(reading, head=(top, q))) or not self.settings.decoder_alone or goes_on(said):
            # the decoder alone, the head not hearing its ball: not sure (`decoder_alone`), and never a call more
            # words could make another ("I twenty": I 29 with its "nine" lost in the crowd)
            return replace(reading, confidence=min(reading.confidence, HEAD_DOUBT), head=(top, q))
        return replace(reading, head=(top, q))

    def _decided(self, reading: Reading, seconds: float) -> Reading:
        """A call hearing as the fitted decision hears it (`engines.decision`): the rules above only said that it is
        one call; which ball, and how sure, come from both listeners' evidence."""
        assert self._decision is not None and reading.decoded is not None and reading.posterior is not None
        decoded = reading.decoded
        evidence = decision.Evidence(
            decoder_balls=dict(decoded.balls) if decoded.single_call is not None else {},
            decoder_call=decoded.single_call,
            decoder_confidence=decoded.confidence,
            decoder_likeness=decoded.likeness,
            head=[float(q) for q in reading.posterior],
            seconds=seconds,
        )
        verdict = self._decision.decide(evidence)
        if verdict.ball is None:
            return reading
        text = reading.text if verdict.ball == reading.single_call else self.grammar.call_words(Ball(verdict.ball))
        return replace(
            reading,
            text=text,
            confidence=self._decided_confidence(verdict.probability),
            balls=dict(verdict.posterior),
            single_call=verdict.ball,
            intents=("call",),
            evidence=evidence,
        )

    def _decided_confidence(self, probability: float) -> float:
        """The fitted probability on the engine's confidence scale: its operating point lands on `min_confidence`."""
        assert self._decision is not None
        return self._decision.scaled(probability, self.settings.min_confidence)

    def _free_says_otherwise(self, reading: Reading, ball: int) -> bool:
        """The decoder left to itself wrote neither the call's letter nor its number, but another number ("Eighty-
        eight." read "b eight" under the grammar): a number in the crowd, not a call."""
        if not reading.features or reading.features[CALL_FEATURES.index("letter_heard")] > 0:
            return False
        said = self.grammar.numbers_in(self._words(reading.free))
        digits = [int(d) for d in str(ball)]
        digit_by_digit = any(said[k : k + len(digits)] == digits for k in range(len(said)))
        return bool(said) and ball not in said and not digit_by_digit

    def _heads_call(self, reading: Reading, posterior: npt.NDArray[np.float32], top: int) -> Reading:
        """The head's own call, where the decoder heard none: the step takes calls, and the decoder found nothing
        the grammar holds, or only a phrase it is unsure of (in babble the prompt's "Bingo!" draws such hearings).
        A call the decoder did hear (another ball, or one naming no ball, A(5)) and a phrase it is sure of stand
        here: two readers that disagree make a doubt, unless the head is sure of another ball (`head_overrules`,
        in `_weigh`). Measured on the validation voices, most of
        the calls the hall engine missed in babble were heard right by the head alone (docs/hall-model.md)."""
        q = float(posterior[top])
        unheard = not reading.text or (
            reading.intents and "call" not in reading.intents and reading.confidence < self.settings.min_confidence
        )
        if not unheard or "call" not in self._active:
            return replace(reading, head=(top, q))
        return self._call_of_head(reading, posterior, top)

    def _call_of_head(self, reading: Reading, posterior: npt.NDArray[np.float32], top: int) -> Reading:
        """The head's call as the hearing, sure, its balls the head's posterior."""
        q = float(posterior[top])
        balls = {n: float(posterior[n]) for n in range(1, len(posterior)) if posterior[n] >= 0.01}
        return Reading(
            self.grammar.call_words(Ball(top)), self._sure(q), balls, top, 1.0, reading.free, (), ("call",), (top, q)
        )

    def _sure(self, q: float) -> float:
        """The confidence of a call the head made sure, hearing it with probability q: sure, higher with q."""
        return self.settings.min_confidence + (1 - self.settings.min_confidence) * q

    def _vetoed(self, reading: Reading) -> bool:
        """The call head, sure enough, heard another label than this reading's call. A reading of two calls in one
        breath is no one call: any label the head, which hears one call or none, gave it is another ("B thirty
        two" said, read "b three n thirty two" at 0.97 with the head at N 32, 0.52)."""
        if self._head is None or reading.head is None:
            return False
        if reading.single_call is None and reading.intents.count("call") < 2:
            return False
        label, q = reading.head
        return label != reading.single_call and q >= self.settings.head_doubt

    def decode(self, samples: np.ndarray, start: float = 0.0) -> Heard:
        """Recognize one utterance that is already cut out (int16, 16 kHz), on its own."""
        heard, _ = self._hear(np.asarray(samples, dtype=np.int16), start)
        return heard

    # ----- streaming -------------------------------------------------------------------------------

    def _fuse(self, heard: Heard, reading: Reading) -> Heard:
        """Weigh a call's second saying with its first (see the module's docstring)."""
        previous, self._last_call = self._last_call, None
        if reading.single_call is None:
            return heard
        self._last_call = _Said(heard.end, reading.balls, reading.likeness, reading.memory, head=reading.head)
        if previous is None or heard.start - previous.end > self.settings.fuse_window:
            return heard
        first = previous.balls
        # Two hearings of chatter forced onto the same call agree on the ball too: what the free sentences said
        # against a call bounds what their agreement can prove (measured: two espeak chatter sentences at 10 dB,
        # each "b four" at 0.12 and 0.05, fused to a sure B 4 without this bound).
        likeness = min(previous.likeness, reading.likeness)
        said = reading.single_call
        heard_first = max(first, key=lambda b: first[b]) if first else None
        if (
            self._decision is not None
            and reading.evidence is not None
            and not previous.paired
            and heard_first == reading.single_call
        ):
            # the fitted decision weighs the other saying that heard this ball itself: how surely it did; another
            # ball is another call, or a mismatch the rules below weigh
            p = self._decision.decide(replace(reading.evidence, pair=dict(first))).probability
            confidence = self._decided_confidence(p)
            other_doubt = heard.uncertain and heard.confidence >= self.settings.min_confidence
            self._last_call = self._last_call._replace(paired=True)
            return replace(
                heard, confidence=confidence, uncertain=other_doubt or confidence < self.settings.min_confidence
            )
        floor = 1e-3
        fused = {b: first.get(b, floor) * reading.balls.get(b, floor) for b in set(first) | set(reading.balls)}
        share = likeness * fused.get(said, 0.0) / sum(fused.values()) if fused else 0.0
        if heard_first == said:
            if previous.paired:
                return heard  # a third hearing of a complete pair's ball: no repeat owed, so no confirmation either
            self._last_call = self._last_call._replace(paired=True)
            if self._vetoed(reading):
                return heard  # the head heard something else in this saying: agreeing sayings do not outvote it
            if heard.end - heard.start > self.settings.call_longest:
                return heard  # it may hold more sayings than it reads (`call_longest`): the pair does not prove it
            if self._rivalled(first, said, previous.head) or self._rivalled(reading.balls, said, reading.head):
                return heard  # another ball close behind (`rival`): the same confusion twice proves nothing
            if (
                self._head is not None
                and (not self.settings.decoder_alone or goes_on(said))
                and not any(self._head_heard(h, said) for h in (previous.head, reading.head))
            ):
                return heard  # as in `_weigh`: the decoder alone cannot make a call sure, twice or once
            confidence = max(heard.confidence, share)
            return replace(heard, confidence=confidence, uncertain=confidence < self.settings.min_confidence)
        if self.settings.head_pairs and self._head_heard(previous.head, said) and self._head_heard(reading.head, said):
            # the decoder misread the first saying; the head heard this ball in both: the pair agrees, and this
            # saying keeps its own confidence
            self._last_call = self._last_call._replace(paired=True)
            return heard
        room = self.settings.compatible
        if heard_first is not None and (
            first.get(said, 0.0) >= room
            or reading.balls.get(heard_first, 0.0) >= room
            # asked only after a lone saying: after a pair that agreed, a new ball comes next, and the two-ball
            # choice, far finer than the N-best, would doubt its first saying whenever the two sound alike
            # (68 right hearings of 982 on the validation voices)
            or (not previous.paired and self._could_be(reading.memory, heard_first, said) >= room)
            or (not previous.paired and self._could_be(previous.memory, said, heard_first) >= room)
        ):
            self._last_call = None  # the doubt is settled by the procedure, not by a third hearing
            return replace(heard, confidence=min(heard.confidence, share), uncertain=True)
        return heard

    def _rivalled(self, balls: dict[int, float], ball: int, head: tuple[int, float] | None) -> bool:
        """Another ball has at least `rival` of this call's N-best, and the head does not hear the call from
        `head_over_rival`."""
        if max((share for other, share in balls.items() if other != ball), default=0.0) < self.settings.rival:
            return False
        return head is None or head[0] != ball or head[1] < self.settings.head_over_rival

    def _head_heard(self, head: tuple[int, float] | None, ball: int) -> bool:
        return head is not None and head[0] == ball and head[1] >= self.settings.head_agree

    def _could_be(self, memory: Array | None, other: int, heard: int) -> float:
        """How much of a saying heard as ball `heard` the decoder gives ball `other` when asked to choose between
        the two alone. The N-best of a hearing holds only what its beam kept: "I twenty two" then "I twenty
        three", each sure, may not name the other at all, though a word apart (a false A(5) mis-call at 10 dB).
        Asked of Whisper's own decoder: the adapted one, trained to be sure of calls, left no room for the other
        ball where the saying was the other (I 22's second saying heard "i twenty three" by it and the head, a false
        A(5) at 10 dB in the scenario library)."""
        if memory is None:
            return 0.0
        scores = []
        for ball in (other, heard):
            net = WordNet()
            end = net.node()
            net.accepting.add(end)
            for form in call_forms(self.grammar, Ball(ball)):
                net.path(0, form, end)
            found = self._own_search.search(memory, self._start, Walker(net), beam=self.settings.beam).finished
            scores.append(max((h.score for h in found), default=-np.inf))
        if not np.isfinite(scores[0]):
            return 0.0
        return float(1.0 / (1.0 + np.exp(scores[1] - scores[0])))

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

        self._last_call = None
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
        return n is not None and not heard.uncertain and not goes_on(n)

    def _incomplete(self, held: _Held) -> bool:
        """The decoder, left to itself, wrote a letter of the board alone (or a word that sounds like one): the
        call's number is to come. Anything else ("yes", a number, nothing at all) stands on its own: babble ahead
        of a call does not join it."""
        words = self._words(held.reading.free)
        return bool(words) and len(words) <= 2 and all(w in LETTER_LIKE or (len(w) == 1 and w.isalpha()) for w in words)

    def _emit(self, held: _Held) -> Iterator[Heard]:
        heard = self._fuse(held.heard, held.reading)
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


class _Said(NamedTuple):
    """A call hearing as the next one is weighed with it (`_fuse`)."""

    end: float
    balls: dict[int, float]
    likeness: float
    memory: Array | None
    """The encoder's states it was read from."""
    paired: bool = False
    """A second saying that agreed with its first: the pair is complete, and what follows is most likely the
    next ball."""
    head: tuple[int, float] | None = None
    """What the call head heard in it (`Reading.head`)."""


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
