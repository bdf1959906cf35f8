"""Utterance cutting by voice activity: an energy detector over an adaptive noise level, with hangover.

The noise level is the median of the recent frames that were not speech, so a steady crowd babble raises
it instead of keeping an utterance open forever; speech is what stands clearly above it. An utterance opens
on a few loud frames (levels over 30 ms). What keeps it open can be judged on a longer average and against
the utterance itself (`HALL_CUTTING`): a crowd's babble flickers above its median for a few frames at a time,
and in a hall it stays far below the caller on the microphone, while the pause between a call's letter and
its number is short. So babble neither joins a call nor bridges the quiet between two sayings, and a caller's
"B ... eleven" stays one utterance (`python -m lab.bench cuts`). A maximum length closes an
utterance even if the hall never goes quiet.

Speech barely over a crowd may open no utterance, or one too short to decode. The endpointer reports such a
stirring when it comes near the level of the speaker's speech the engine heard sure; where that level is so low
that a little quieter would stir nothing, every stretch of quiet is one. The engines give a stirring as an unsure
hearing of nothing, so the rule of evidence sees that something may have been said there.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .audio import RATE

FRAME = 160
"""Samples per analysis frame (10 ms at 16 kHz)."""


@dataclass(frozen=True)
class EndpointSettings:
    """How speech is told from background; times in seconds, levels in dB."""

    onset_db: float = 8.0
    """A frame is speech when it is this far above the noise level."""
    offset_db: float = 4.0
    """While in speech, a level (averaged over `close_smoothing` frames) above noise + offset_db keeps the
    utterance open."""
    below_peak_db: float = float("inf")
    """... and only if it is within this many dB of the utterance's loudest such level: babble well under the
    caller does not hold the utterance open."""
    min_level_db: float = 32.0
    """Absolute level (dB re 1 LSB RMS) a frame must reach to count as speech at all."""
    onset_frames: int = 4
    """Speech frames within the last `onset_window` frames that open an utterance."""
    onset_window: int = 6
    """Frames (10 ms) over which `onset_frames` are counted."""
    hangover: float = 0.3
    """Quiet time that closes an utterance: longer than a caller's pause between the letter and the number."""
    pre_roll: float = 0.2
    """Audio kept before the detected start (word onsets are quiet)."""
    min_speech: float = 0.15
    """Utterances with less voiced time than this are dropped (clicks, coughs)."""
    max_utterance: float = 8.0
    """An utterance is closed at this length even without a pause."""
    noise_window: float = 3.0
    """Seconds of recent non-speech frames whose median level is the noise level."""
    smoothing: int = 3
    """Frames averaged (in power) for opening an utterance and for where speech ends."""
    close_smoothing: int = 3
    """Frames averaged (in power) for keeping an utterance open."""
    stir_db: float = 8.0
    """Outside an utterance, a frame this far above the noise (and over `min_level_db`) may be speech: ..."""
    stir_frames: int = 3
    """... and this many of them within `stir_window` frames, short of opening an utterance, are a stirring: speech
    may have stood there under the crowd, and nothing was decoded of it. An utterance closed with less voiced time
    than `min_speech` is one too. 0: none reported. (At 5 dB a caller's call may open no utterance, and
    the rule of evidence must see that something may have been said there.)"""
    stir_window: int = 6
    """Frames (10 ms) over which `stir_frames` are counted."""
    stir_below_db: float = 6.0
    """A stirring is reported only if its loudest level over the noise comes within this many dB of the median
    loudest level of the utterances the engine last heard sure (`STIR_REFERENCE`, `Endpointer.heard_speaker`): a
    crowd's flicker far under the speaker's own level is not the speaker, and before any sure hearing none is
    reported. And when that median stands less than `onset_db` + this over the noise, a saying
    this much quieter than the speaker's usual would open nothing and may stir nothing either: the quiet between
    utterances proves nothing, and each stretch of it is reported as a stirring (`unproven`)."""


HALL_CUTTING = EndpointSettings(below_peak_db=15.0, hangover=0.6, close_smoothing=20)
"""Cutting for a hall (`python -m lab.bench cuts`): what keeps an utterance open is a 200 ms level
within 15 dB of the utterance's loudest, and 0.6 s of quiet, longer than a caller's pause between letter and
number, closes it. It opens as the default does (8 dB over the noise): opening at 6 dB kept more sayings whole at
5 dB but opened the crowd's own words too, and on the scenario library their unsure hearings turned planted
violations uncertain (docs/bench-accuracy.md). The Whisper engines' cutting; pocketsphinx
and vosk keep `EndpointSettings()` (with the 0.6 s hangover pocketsphinx heard a clean "b seven" as "the serial
one"). A benchmark's `--option endpoint.NAME=VALUE` changes it from here for the Whisper engines."""


STIR_REFERENCE = 15
"""Utterances heard sure whose loudest levels set the level a stirring must come near: the speaker's own, as the
stream has heard it lately (`Endpointer.heard_speaker`). The crowd opens utterances too, and a floor employee who
speaks seldom would be outnumbered by them; they are seldom heard sure."""


@dataclass(frozen=True)
class SpeechEvent:
    """What the endpointer saw in one chunk: audio to feed, and where utterances begin and end."""

    kind: str
    """'start' (samples = pre-roll and onset), 'audio' (samples inside an utterance), 'end' (samples = tail),
    'stir' (speech may have been here and opened no utterance, or one too short to decode; no samples)."""
    time: float
    """Stream time of the first sample of `samples` ('start', 'audio'), of the end of speech ('end'), or where the
    stirring began ('stir')."""
    samples: np.ndarray
    until: float = 0.0
    """Where a stirring ended ('stir')."""


class Endpointer:
    """Feed 16 kHz int16 audio in any chunk size; get start/audio/end events in stream order."""

    def __init__(self, settings: EndpointSettings | None = None) -> None:
        self.settings = settings or EndpointSettings()
        s = self.settings
        self._pending = np.zeros(0, dtype=np.int16)
        self._position = 0  # samples consumed into frames
        self._noise: deque[float] = deque(maxlen=max(1, round(s.noise_window * RATE / FRAME)))
        self._noise_level: float | None = None
        self._since_median = 0
        self._powers: deque[float] = deque(maxlen=max(1, s.smoothing))
        self._long_powers: deque[float] = deque(maxlen=max(1, s.close_smoothing))
        self._long_level = 0.0
        self._peak = 0.0  # the loudest long level of the utterance in progress
        self._levels: list[float] = []  # levels of the utterance in progress
        self._history: deque[np.ndarray] = deque(maxlen=max(1, round(s.pre_roll * RATE / FRAME)) + s.onset_window)
        self._recent: deque[bool] = deque(maxlen=s.onset_window)
        self._in_speech = False
        self._utt_start = 0  # sample index
        self._last_voiced = 0  # sample index after the last voiced frame
        self._voiced_frames = 0
        self._after_cut = 0  # frames left in which an utterance opens only near the cut one's level
        self._cut_floor = 0.0
        self._quiet_frames = 0  # frames since the last loud one (where speech may have ended)
        self._closing_frames = 0  # frames since the utterance was last held open (the hangover runs on these)
        self._over: deque[float] = deque(maxlen=max(s.onset_window, s.stir_window))  # the frames' levels over noise
        self._stirs: deque[bool] = deque(maxlen=max(1, s.stir_window))  # frames that may be speech, outside one
        self._utt_peak = 0.0  # the loudest level over the noise of the utterance in progress
        self._peaks: deque[float] = deque(maxlen=STIR_REFERENCE)  # ... of the last utterances heard sure
        self._stir_start: int | None = None  # sample index where the stirring in progress began
        self._stir_end = 0
        self._stir_peak = 0.0
        self._after_close = 0  # frames left in which no stirring begins (the closed utterance's own tail)
        self._reference: float | None = None  # the median of _peaks: the speaker's usual level over the noise
        self._quiet_from: int | None = None  # sample index where the quiet since the last utterance began
        self.limited = False
        """The utterance just closed was closed at `max_utterance`, the hall never quiet: what was decoded of it
        may not be all that was said in it, and the engines give its hearing as unsure."""

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    @property
    def noise_db(self) -> float | None:
        """The background level speech is measured against (dB re 1 LSB RMS)."""
        return self._noise_level

    def _level(self, frame: np.ndarray) -> float:
        """Level of the last few frames (power average), in dB; the longer average goes to `_long_level`."""
        x = frame.astype(np.float64)
        x = x - x.mean()
        power = float(np.mean(x * x))
        self._powers.append(power)
        self._long_powers.append(power)
        self._long_level = float(10.0 * np.log10(sum(self._long_powers) / len(self._long_powers) + 1.0))
        return float(10.0 * np.log10(sum(self._powers) / len(self._powers) + 1.0))

    def _add_noise(self, level: float) -> None:
        self._noise.append(level)
        self._since_median += 1
        # the median is re-taken every 10 frames (100 ms): cheap, and the background changes slower than that
        if self._noise_level is None or self._since_median >= 10:
            self._noise_level = float(np.median(np.fromiter(self._noise, dtype=np.float64)))
            self._since_median = 0

    def feed(self, samples: np.ndarray) -> Iterator[SpeechEvent]:
        """Consume a chunk; yield the events it completes."""
        s = self.settings
        data = np.concatenate([self._pending, samples.astype(np.int16, copy=False)])
        n = len(data) // FRAME * FRAME
        self._pending = data[n:]
        out: list[np.ndarray] = []
        out_start = 0
        for i in range(0, n, FRAME):
            frame = data[i : i + FRAME]
            self._position += FRAME
            level = self._level(frame)
            noise = self._noise_level if self._noise_level is not None else level
            voiced = level >= s.min_level_db and level > noise + s.onset_db
            if self._after_cut:
                self._after_cut -= 1
                voiced = voiced and level > self._cut_floor
            if not self._in_speech:
                if not voiced:
                    self._add_noise(level)
                self._history.append(frame)
                self._recent.append(voiced)
                self._over.append(level - noise)
                if self._after_close:
                    self._after_close -= 1
                if sum(self._recent) >= s.onset_frames:
                    self._stir_start = None  # it was the utterance's onset
                    self._utt_peak = max(list(self._over)[-s.onset_window :])
                    self._in_speech = True
                    pre = np.concatenate(list(self._history))
                    self._utt_start = self._position - len(pre)
                    if self.unproven and self._quiet_from is not None and self._utt_start > self._quiet_from:
                        yield self._stir(self._quiet_from, self._utt_start)
                    self._quiet_from = None
                    self._last_voiced = self._position
                    self._voiced_frames = sum(self._recent)
                    self._levels = []
                    self._peak = self._long_level
                    self._quiet_frames = 0
                    self._closing_frames = 0
                    self._history.clear()
                    self._recent.clear()
                    self._stirs.clear()
                    self.limited = False
                    yield SpeechEvent("start", self._utt_start / RATE, pre)
                    out, out_start = [], self._position
                elif self.unproven and self._quiet_from is not None:
                    self._stir_start = None  # the stretch covers it
                    if self._position - self._quiet_from >= s.max_utterance * RATE:
                        yield self._stir(self._quiet_from, self._position)
                        self._quiet_from = self._position
                else:
                    may_be = level >= s.min_level_db and level > noise + s.stir_db
                    yield from self._stirring(may_be and (not self._after_cut or level > self._cut_floor))
                continue
            if not out:
                out_start = self._position - FRAME
            out.append(frame)
            self._levels.append(level)
            self._utt_peak = max(self._utt_peak, level - noise)
            loud = level >= s.min_level_db and level > noise + s.offset_db
            held = self._long_level
            self._peak = max(self._peak, held)
            keeps_open = held >= s.min_level_db and held > max(noise + s.offset_db, self._peak - s.below_peak_db)
            if loud and keeps_open:
                self._last_voiced = self._position
                self._quiet_frames = 0
                self._voiced_frames += 1
            else:
                self._quiet_frames += 1
                self._add_noise(level)
            self._closing_frames = 0 if keeps_open else self._closing_frames + 1
            too_long = (self._position - self._utt_start) >= s.max_utterance * RATE
            if self._closing_frames * FRAME >= s.hangover * RATE or too_long:
                if out:
                    yield SpeechEvent("audio", out_start / RATE, np.concatenate(out))
                out = []
                self._in_speech = False
                self.limited = too_long
                if too_long:
                    # Never quiet for max_utterance: the background itself got louder. Learn it as noise.
                    for past in self._levels[-(self._noise.maxlen or 1) :]:
                        self._add_noise(past)
                end = self._last_voiced if not too_long else self._position
                yield SpeechEvent("end", end / RATE, np.zeros(0, dtype=np.int16))
                yield from self._closed(end)
        if self._in_speech and out:
            yield SpeechEvent("audio", out_start / RATE, np.concatenate(out))

    def _stirring(self, may_be: bool) -> Iterator[SpeechEvent]:
        """Outside an utterance: follow a stirring (frames that may be speech, short of an onset); report it when
        it is over."""
        s = self.settings
        if not s.stir_frames:
            return
        self._stirs.append(may_be)
        if sum(self._stirs) >= s.stir_frames and not self._after_close and self._noise_level is not None:
            if self._stir_start is None:
                self._stir_start = self._position - len(self._stirs) * FRAME
                self._stir_peak = -np.inf
            self._stir_peak = max(self._stir_peak, max(list(self._over)[-len(self._stirs) :]))
        if may_be and self._stir_start is not None:
            self._stir_end = self._position
        if self._stir_start is not None and not any(self._stirs):
            yield from self._stirred(self._stir_start, self._stir_end, self._stir_peak)
            self._stir_start = None

    def _stirred(self, start: int, end: int, peak: float) -> Iterator[SpeechEvent]:
        if self._reference is None:
            return  # no speech of the stream's own yet: nothing to tell the speaker from the crowd by
        if peak >= self._reference - self.settings.stir_below_db:
            yield self._stir(start, end)

    @staticmethod
    def _stir(start: int, end: int) -> SpeechEvent:
        return SpeechEvent("stir", start / RATE, np.zeros(0, dtype=np.int16), until=end / RATE)

    def heard_speaker(self, peak: float) -> None:
        """The engine heard an utterance sure whose loudest level over the noise was `peak` (`last_peak`): that is
        how loud the speaker stands over this hall."""
        self._peaks.append(peak)
        self._reference = float(np.median(np.fromiter(self._peaks, dtype=np.float64)))

    @property
    def unproven(self) -> bool:
        """The speaker's usual level stands so little over the noise (under `onset_db` + `stir_below_db`) that the
        quiet between utterances proves nothing: each stretch of it is reported as a stirring."""
        s = self.settings
        return bool(s.stir_frames) and self._reference is not None and self._reference < s.onset_db + s.stir_below_db

    @property
    def stirring_since(self) -> float | None:
        """Where the stirring not yet reported began (stream time), or None: until it is reported, time passing
        is no proof of quiet."""
        if self._in_speech:
            return None
        if self.unproven and self._quiet_from is not None:
            return self._quiet_from / RATE
        return None if self._stir_start is None else self._stir_start / RATE

    def _closed(self, end: int) -> Iterator[SpeechEvent]:
        """An utterance closed (its 'end' given): too short to decode, it is a stirring; long enough, its level is
        the speaker's. An utterance closed at its longest is the crowd's as likely as anyone's, and is neither."""
        s = self.settings
        self._after_close = round(s.hangover * RATE / FRAME)
        self._quiet_from = end
        self._forget_frames()
        if self.voiced_seconds() < s.min_speech and s.stir_frames:
            yield from self._stirred(self._utt_start, max(end, self._utt_start), self._utt_peak)

    def cut(self) -> None:
        """The utterance in progress has been heard whole before its hangover ran out (the listener knows it is
        complete): close it now, with no 'end' event. For the next `hangover` seconds an utterance opens only
        near the cut one's level, so its own tail and the babble under it do not open another; a caller who
        goes on does."""
        if not self._in_speech:
            return
        s = self.settings
        self._in_speech = False
        self._after_cut = round(s.hangover * RATE / FRAME)
        self._cut_floor = self._peak - s.below_peak_db
        self._history.clear()
        self._after_close = self._after_cut
        self._quiet_from = self._position
        self._forget_frames()

    def _forget_frames(self) -> None:
        """An utterance closed: the frames before it open nothing and stir nothing after it."""
        self._recent.clear()
        self._over.clear()
        self._stirs.clear()

    @property
    def last_peak(self) -> float:
        """The loudest level over the noise (30 ms) of the utterance in progress or the last one."""
        return self._utt_peak

    @property
    def speech_end(self) -> float:
        """Stream time where the speech of the utterance in progress (or the last one) last stood out."""
        return self._last_voiced / RATE

    def speech_over_noise_db(self) -> float | None:
        """How far the utterance in progress (or just closed) stood above the background: its loud frames
        (90th percentile level) over the noise level, in dB; None before there is either."""
        if not self._levels or self._noise_level is None:
            return None
        return float(np.percentile(self._levels, 90)) - self._noise_level

    def quiet_seconds(self) -> float:
        """How long the utterance in progress has been quiet (0 outside speech): its end may be near."""
        return self._quiet_frames * FRAME / RATE if self._in_speech else 0.0

    def voiced_seconds(self) -> float:
        """Voiced time of the utterance in progress (or the one just closed)."""
        return self._voiced_frames * FRAME / RATE

    def flush(self) -> Iterator[SpeechEvent]:
        """The stream ended: close an open utterance."""
        if self._in_speech:
            self._in_speech = False
            self.limited = False
            yield SpeechEvent("end", self._last_voiced / RATE, np.zeros(0, dtype=np.int16))
            yield from self._closed(self._last_voiced)
        elif self.unproven and self._quiet_from is not None and self._position > self._quiet_from:
            yield self._stir(self._quiet_from, self._position)
            self._quiet_from = None
        elif self._stir_start is not None:
            yield from self._stirred(self._stir_start, self._stir_end, self._stir_peak)
            self._stir_start = None
