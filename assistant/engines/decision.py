"""The hearing decision: what the listeners heard in one utterance, turned into a hearing and how sure it is.

The decoder (`whisper_engine`) reads the utterance (`Reading`: the grammar's words, its N-best share of each ball,
its confidence, the free sentence) and the call head gives its posterior; the engine hands both here and gives out
what `Decider` makes of them. One operating point: a hearing is sure from `WhisperSettings.min_confidence`. Two ways
decide a call hearing (`WhisperSettings.decision`):

- "rules" (the default): hand-set thresholds, each measured (`Decider.weigh`; docs/hall-model.md, "How a hearing is
  made"): the head agreeing with the decoder makes a call sure, the head hearing another label makes it unsure, the
  head sure of a call the decoder did not hear writes it, and the second saying of a call is weighed with the first
  (`Decider.fuse`);
- "fitted": each listener gives evidence as data (`Evidence`): the constrained decoder's N-best share of each ball
  and its confidence, the call head's posterior over no call and the balls, the utterance's length, and the other
  saying of the same call when there was one. The rules say whether an utterance is one call at all; then

  - the ball is the one the saying's own evidence favours: the decoder's N-best and the head's posterior multiplied
    (each floored, so that neither can veto alone). The other saying of the call does not choose the ball (a caller
    who repeats a call as another ball must be heard saying it, A(5)); whether it agrees is evidence of the
    probability;
  - the probability that this ball is what was said comes from a logistic model over what made the choice (its
    share, each listener's word on it, whether they agree, the length, whether more words could make another ball),
    fitted on human voices (`python -m lab.train decision`), never on the voices it is reported on;
  - the hearing is sure from one operating point (`sure_at`, scaled onto `min_confidence`), chosen on the fit's own
    data so that at most one sure hearing in a thousand is wrong there.

  The model is a small JSON file committed with the command, data and seed that remade it (`DECISION`).

What needs the decoder (the two-ball choice of `Decider.fuse`) is asked through a callable the engine hands in; this
module imports nothing of the engine.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from ..audio import RATE
from ..grammar import Grammar
from ..messages import Ball, Meaning
from .base import EngineError, Heard
from .call_head import CallHead
from .whisper_settings import WhisperSettings

DECISION = Path(__file__).with_name("call_decision.json")
"""The fitted decision (`python -m lab.train decision`), committed with what made it."""
FLOOR = 1e-3
"""The least share a listener gives any ball: one listener's silence about a ball is a doubt, not a veto."""
BALLS = 75
FEATURES = (
    "fused_share",
    "decoder_share",
    "head_share",
    "head_no_call",
    "decoder_certainty",
    "decoder_likeness",
    "decoder_agrees",
    "head_agrees",
    "seconds",
    "goes_on",
    "pair_agrees",
    "pair_share",
)
"""What the probability is made of (`features`, in this order). `decoder_certainty` is -ln(1 - the decoder's
confidence) when it read the favoured ball: 0.85 and 0.96 are far apart in what they say, not 0.11."""


HEAD_DOUBT = 0.5
"""At most this sure: a call the call head, sure of itself, hears as another ball or as no call."""
NO_BALL_DOUBT = 0.5
"""A call heard with its number's letter under the grammar but another letter when decoded freely is at most
this sure: a doubt between a mis-call and a mis-hearing of the letter, for review (never a violation)."""
CALL_FEATURES = (
    "posterior",
    "similarity",
    "free_gap_per_token",
    "logprob_per_token",
    "numbers_heard",
    "letter_heard",
    "meanings",
)
"""What the decoder's confidence in a call is made of (Reading.features, in this order)."""


def goes_on(number: int) -> bool:
    """Whether more words could make this call another: "G fifty" (G 55 to come), "B one" ("B one two", said
    digit by digit)."""
    return number == 1 or (number >= 20 and number % 10 == 0)


@dataclass(frozen=True)
class Evidence:
    """What the listeners heard in one utterance on a step that takes calls."""

    decoder_balls: Mapping[int, float]
    """The decoder's N-best share of each ball it read (empty when it read no single call)."""
    decoder_call: int | None
    decoder_confidence: float
    decoder_likeness: float
    head: Sequence[float] | None
    """The call head's posterior: index 0 no call, then balls 1-75 (None: the engine has no head)."""
    seconds: float
    pair: Mapping[int, float] | None = None
    """The fused posterior over balls of the other saying of this call, when it came within the fuse window."""


@dataclass(frozen=True)
class Verdict:
    """The ball the evidence favours (None: no ball), the probability it is what was said, and the posterior."""

    ball: int | None
    probability: float
    posterior: Mapping[int, float]


def posterior(evidence: Evidence, with_pair: bool = True) -> dict[int, float]:
    """The balls' posterior from the listeners together (the head's no-call mass left out: it is a feature)."""
    if not evidence.decoder_balls and evidence.head is None:
        return {}
    scores = np.ones(BALLS + 1)
    scores[0] = 0.0
    if evidence.decoder_balls:
        share = np.full(BALLS + 1, FLOOR)
        for ball, q in evidence.decoder_balls.items():
            share[ball] = max(FLOOR, q)
        scores *= share
    if evidence.head is not None:
        scores[1:] *= np.maximum(np.asarray(evidence.head[1:], dtype=np.float64), FLOOR)
    if with_pair and evidence.pair:
        prior = np.full(BALLS + 1, FLOOR)
        for ball, q in evidence.pair.items():
            prior[ball] = max(FLOOR, q)
        scores *= prior
    total = float(scores.sum())
    return {b: float(scores[b] / total) for b in range(1, BALLS + 1) if scores[b] / total >= 1e-4}


def features(evidence: Evidence) -> tuple[int | None, list[float], dict[int, float]]:
    """The ball the evidence favours, what its probability is made of (FEATURES), and the posterior."""
    fused = posterior(evidence, with_pair=False)
    if not fused:
        return None, [], {}
    ball = max(fused, key=lambda b: fused[b])
    head = evidence.head
    head_share = float(head[ball]) if head is not None else 0.0
    head_top = int(np.argmax(head)) if head is not None else None
    pair = evidence.pair or {}
    pair_top = max(pair, key=lambda b: pair[b]) if pair else None
    row = [
        np.log(max(fused[ball], 1e-6)),
        np.log(max(evidence.decoder_balls.get(ball, 0.0), FLOOR)),
        np.log(max(head_share, FLOOR)),
        float(head[0]) if head is not None else 0.0,
        -np.log(max(1e-3, 1.0 - evidence.decoder_confidence)) if evidence.decoder_call == ball else 0.0,
        evidence.decoder_likeness if evidence.decoder_call == ball else 0.0,
        float(evidence.decoder_call == ball),
        float(head_top == ball),
        min(evidence.seconds, 6.0),
        float(goes_on(ball)),
        float(pair_top == ball),
        np.log(max(pair.get(ball, 0.0), FLOOR)) if pair else 0.0,
    ]
    return ball, [float(v) for v in row], fused


@dataclass(frozen=True)
class Logistic:
    """A logistic model of "this hearing is right" over standardised features, and the probability from which the
    hearing is sure (the engine's call confidence and the fitted decision are both one)."""

    mean: np.ndarray
    std: np.ndarray
    weights: np.ndarray
    bias: float
    sure_at: float

    def probability(self, row: Sequence[float]) -> float:
        z = float(((np.asarray(row, dtype=np.float64) - self.mean) / self.std) @ self.weights + self.bias)
        return float(1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0))))

    def scaled(self, probability: float, sure: float) -> float:
        """`probability` on an engine's confidence scale, monotone, with `sure_at` landing on `sure`."""
        if probability >= self.sure_at:
            return sure + (1.0 - sure) * (probability - self.sure_at) / max(1e-9, 1.0 - self.sure_at)
        return sure * probability / max(1e-9, self.sure_at)

    def confidence(self, row: Sequence[float], sure: float) -> float:
        """The probability of `row` on the engine's scale (`scaled`)."""
        return self.scaled(self.probability(row), sure)


@dataclass(frozen=True)
class Decision(Logistic):
    """The fitted decision: the logistic over FEATURES, and the ball the evidence favours."""

    def decide(self, evidence: Evidence) -> Verdict:
        ball, row, fused = features(evidence)
        if ball is None:
            return Verdict(None, 0.0, {})
        return Verdict(ball, self.probability(row), fused)


L = TypeVar("L", bound=Logistic)


def read_logistic(path: Path, names: Sequence[str], what: str, remake: str, kind: type[L]) -> L | None:
    """The logistic model of `kind` at `path`, made over the features `names`; None when there is none; a one-line
    error naming `what` it is and the command that remakes it when it cannot be read or was made for others."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if tuple(data["features"]) != tuple(names):
            raise EngineError(f"{path}: made for other features {data['features']}; remake it ({remake})")
        return kind(
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["std"], dtype=np.float64),
            np.asarray(data["weights"], dtype=np.float64),
            float(data["bias"]),
            float(data["sure_at"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EngineError(f"cannot read {what} {path}: {exc}") from exc


@functools.cache
def load(path: Path = DECISION) -> Decision | None:
    """The fitted decision at `path`; None when there is none; a one-line error when it does not fit FEATURES."""
    return read_logistic(path, FEATURES, "the hearing decision", "python -m lab.bench.decision", Decision)


# ----- the decoder's reading, as the decision takes it ---------------------------------------------------------


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
    near: float = 0.0
    """The largest share Whisper's own decoder gave a near meaning of this phrase (`Intent.near`) when asked to
    choose between the two alone (`WhisperRecognizer.could_mean`); 0.0 when it has none or was not asked."""
    evidence: Evidence | None = field(default=None, repr=False, compare=False)
    """What the fitted decision decided this call from (`WhisperSettings.decision`), the other saying left out."""


def free_words(grammar: Grammar, text: str) -> list[str]:
    """Normalized words of free text, numerals in words, to compare with the grammar's words."""
    out: list[str] = []
    for word in grammar.normalize(text):
        number = word.lstrip("#")
        if not number.isdigit():
            out.append(word)
        elif int(number) <= grammar.max_number:
            out.extend(grammar.number_words(int(number)).split())
        else:  # a card's digits written as one numeral ("1420251512"): digit by digit
            out.extend(grammar.units[int(d)] for d in number)
    return out


def meaning_words(grammar: Grammar, meaning: Meaning) -> str:
    """The grammar's words for one meaning: 'b seven', 'manufacturer one four two'."""
    if meaning.intent == "call" and meaning.ball is not None:
        return grammar.call_words(meaning.ball)
    digits = meaning.manufacturer is not None or meaning.serial is not None
    words: list[str] = []
    for word in meaning.words.split():
        if word.isdigit():
            if digits:
                words.extend(grammar.units[int(d)] for d in word)
            else:
                words.append(grammar.number_words(int(word)))
        else:
            words.append(word)
    return " ".join(words)


def names_no_ball(grammar: Grammar, written: str, said: Ball) -> str | None:
    """The free sentence's words when they are one call naming no ball with the number of `said`."""
    typed = grammar.parse(written, ("call", "bad-call"))
    if typed.unknown or len(typed.meanings) != 1:
        return None
    meaning = typed.meanings[0]
    if meaning.intent != "bad-call" or meaning.number != said.number:
        return None
    return meaning_words(grammar, meaning)


# ----- the decider ------------------------------------------------------------------------------------------------

CouldBe = Callable[[Any, int, int], float]
"""How much of a saying (the encoder's states it was read from) heard as one ball the decoder gives another when
asked to choose between the two alone (`WhisperRecognizer.could_be`: memory, other, heard)."""


class _Said(NamedTuple):
    """A call hearing as the next one is weighed with it (`Decider.fuse`)."""

    end: float
    balls: dict[int, float]
    likeness: float
    memory: Any
    """The encoder's states it was read from."""
    paired: bool = False
    """A second saying that agreed with its first: the pair is complete, and what follows is most likely the
    next ball."""
    head: tuple[int, float] | None = None
    """What the call head heard in it (`Reading.head`)."""


class Decider:
    """How sure a hearing is, from what the decoder read and what the call head heard: the engine's one decision.

    Built from the engine's settings (its thresholds, each measured: `WhisperSettings`), the grammar (a call's
    words), the call head (None: the engine has none, and its decoder's confidence stands), the fitted decision
    (None: the rules decide, `WhisperSettings.decision`) and the decoder's two-ball choice (`CouldBe`; None: asked of
    no decoder, it leaves no room). `decide` weighs one utterance's reading; `fuse` weighs a streamed call hearing
    with the saying before it, and remembers the last call until `reset`."""

    def __init__(
        self,
        settings: WhisperSettings,
        grammar: Grammar,
        head: CallHead | None = None,
        fitted: Decision | None = None,
        could_be: CouldBe | None = None,
    ) -> None:
        self.settings = settings
        self.grammar = grammar
        self.head = head
        self.fitted = fitted
        self._could_be: CouldBe = could_be if could_be is not None else lambda memory, other, heard: 0.0
        self._last_call: _Said | None = None
        """The last call hearing, to weigh the next one with (`fuse`)."""

    def reset(self) -> None:
        """Forget the last call: a new stream begins, and its first call has no saying before it."""
        self._last_call = None

    # ----- one utterance -----------------------------------------------------------------------------------------

    def decide(
        self,
        reading: Reading,
        posterior: npt.NDArray[np.float32] | None,
        samples: int,
        takes_calls: bool = True,
    ) -> Reading:
        """The hearing of an utterance of `samples` samples: the decoder's `reading` weighed with the call head's
        `posterior` (None: no head) by the rules (`weigh`) or the fitted decision, and never sure as one call read
        from more audio than one saying takes (`call_longest`). `takes_calls`: the step asks for calls."""
        if posterior is not None:
            weighed = self.weigh(reading, posterior, samples / RATE, takes_calls)
            reading = replace(weighed, posterior=posterior, decoded=reading)
            if self.fitted is not None and reading.single_call is not None:
                reading = self._decided(reading, samples / RATE)
        if reading.near > 0.0:
            # "that is a valid bingo" read "not a valid bingo" at 0.92 under the step's prompt, and the choice
            # between the two alone gave the opposite 0.99: no surer than that choice
            reading = replace(reading, confidence=min(reading.confidence, 1.0 - reading.near))
        if reading.single_call is not None and samples > self.settings.call_longest * RATE:
            # one call read from more audio than one saying takes: the cut may have joined two sayings (the second
            # of one ball and the first of the next, read as the next alone), so the repeat it seems to lack may be
            # in it; never sure
            reading = replace(reading, confidence=min(reading.confidence, HEAD_DOUBT))
        return reading

    def left_room(self, reading: Reading) -> tuple[int, ...]:
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

    def weigh(
        self, reading: Reading, posterior: npt.NDArray[np.float32], seconds: float = 0.0, takes_calls: bool = True
    ) -> Reading:
        """A call as the head hears it too. The head hears the same ball with at least `head_agree`: the call is sure
        (two readings of one encoder, one through Whisper's language model and the step's grammar, one trained on
        calls in babble, that agree). The head gives another label (another ball, or no call) at least
        `head_doubt`: the call is unsure, whatever the decoder's confidence, unless the head is sure of another ball
        (`head_overrules`): then the head's call is the hearing. Otherwise the call is unsure (the decoder alone
        makes no call sure unless `decoder_alone`). Where
        the decoder heard no call at all, the head's call is the hearing when it is sure of it (`head_alone`; see
        `_heads_call`; only where the step `takes_calls`). The head makes no utterance longer than `head_longest`
        sure, and agrees with a call the free sentence says otherwise (`_free_says_otherwise`) only as sure as it
        must be to write a call alone (`head_alone`): a number in the crowd between two sayings of O 62, written
        "Eighty-eight." freely and read "b eight" by the grammar and by the head at 0.53, made a false A(3) at 10 dB
        in the scenario library."""
        assert self.head is not None
        said = reading.single_call
        top = int(np.argmax(posterior))
        q = float(posterior[top])
        if said is None:
            alone = self.settings.head_writes and q >= self.settings.head_alone
            if top and alone and not goes_on(top) and seconds <= self.settings.head_longest:
                return self._heads_call(reading, posterior, top, takes_calls)
            if self._vetoed(replace(reading, head=(top, q))):
                return replace(reading, confidence=min(reading.confidence, HEAD_DOUBT), head=(top, q))
            return replace(reading, head=(top, q))
        if top not in (0, said) and q >= self.settings.head_doubt:
            noball = names_no_ball(self.grammar, reading.free, Ball(top))
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
        """A call hearing as the fitted decision hears it (`Decision`): the rules (`weigh`) only said that it is
        one call; which ball, and how sure, come from both listeners' evidence."""
        assert self.fitted is not None and reading.decoded is not None and reading.posterior is not None
        decoded = reading.decoded
        evidence = Evidence(
            decoder_balls=dict(decoded.balls) if decoded.single_call is not None else {},
            decoder_call=decoded.single_call,
            decoder_confidence=decoded.confidence,
            decoder_likeness=decoded.likeness,
            head=[float(q) for q in reading.posterior],
            seconds=seconds,
        )
        verdict = self.fitted.decide(evidence)
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
        assert self.fitted is not None
        return self.fitted.scaled(probability, self.settings.min_confidence)

    def _free_says_otherwise(self, reading: Reading, ball: int) -> bool:
        """The decoder left to itself wrote neither the call's letter nor its number, but another number ("Eighty-
        eight." read "b eight" under the grammar): a number in the crowd, not a call."""
        if not reading.features or reading.features[CALL_FEATURES.index("letter_heard")] > 0:
            return False
        said = self.grammar.numbers_in(free_words(self.grammar, reading.free))
        digits = [int(d) for d in str(ball)]
        digit_by_digit = any(said[k : k + len(digits)] == digits for k in range(len(said)))
        return bool(said) and ball not in said and not digit_by_digit

    def _heads_call(self, reading: Reading, posterior: npt.NDArray[np.float32], top: int, takes_calls: bool) -> Reading:
        """The head's own call, where the decoder heard none: the step takes calls, and the decoder found nothing
        the grammar holds, or only a phrase it is unsure of (in babble the prompt's "Bingo!" draws such hearings).
        A call the decoder did hear (another ball, or one naming no ball, A(5)) and a phrase it is sure of stand
        here: two readers that disagree make a doubt, unless the head is sure of another ball (`head_overrules`,
        in `weigh`). Measured on the validation voices, most of
        the calls the hall engine missed in babble were heard right by the head alone (docs/hall-model.md)."""
        q = float(posterior[top])
        unheard = not reading.text or (
            reading.intents and "call" not in reading.intents and reading.confidence < self.settings.min_confidence
        )
        if not unheard or not takes_calls:
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
        if self.head is None or reading.head is None:
            return False
        if reading.single_call is None and reading.intents.count("call") < 2:
            return False
        label, q = reading.head
        return label != reading.single_call and q >= self.settings.head_doubt

    # ----- two sayings of a call ---------------------------------------------------------------------------------

    def fuse(self, heard: Heard, reading: Reading) -> Heard:
        """Weigh a call's second saying with its first: two sayings heard as the same ball confirm each other; two
        heard as different balls, when each hearing left room for the other, are a doubt about the hearing
        (uncertain), not a mis-call. Remembers this hearing as the last call (`reset` forgets it)."""
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
            self.fitted is not None
            and reading.evidence is not None
            and not previous.paired
            and heard_first == reading.single_call
        ):
            # the fitted decision weighs the other saying that heard this ball itself: how surely it did; another
            # ball is another call, or a mismatch the rules below weigh
            p = self.fitted.decide(replace(reading.evidence, pair=dict(first))).probability
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
                self.head is not None
                and (not self.settings.decoder_alone or goes_on(said))
                and not any(self._head_heard(h, said) for h in (previous.head, reading.head))
            ):
                return heard  # as in `weigh`: the decoder alone cannot make a call sure, twice or once
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
