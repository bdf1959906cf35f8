"""Speaker port: the assistant's voice, live to a sound device, onto a WAV timeline, or silent.

Only this module touches pyttsx3 and (for playback) sounddevice. pyttsx3 blocks while it synthesizes, hangs
when driven from several threads and (with espeak-ng) ignores rate changes between sentences, so it runs in
a process of its own per voice setting (`Pyttsx3Voice`), driven by one thread there; it renders to a WAV,
never to the speakers, and the audio is played by `Playback` on the configured device (the caller's
earpiece) so the hall hears only the caller.
"""

from __future__ import annotations

import atexit
import contextlib
import heapq
import io
import itertools
import json
import math
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from .gate import SelfHearingGate
from .messages import Prompt

DEFAULT_VOICE = "en-us"
"""American English, for halls in New Mexico (espeak-ng's own default is British English)."""

ANSWER_PREFIX = "answer-"
"""Kinds of prompts the caller asked for (questions.py): never suppressed as a needless repeat."""


class SpeakerError(Exception):
    """The voice cannot be used as configured (no output device, unknown voice, bad setting); one line."""


@dataclass(frozen=True)
class VoiceSettings:
    """How the assistant speaks and what it leaves unsaid."""

    rate: int = 170
    """Words per minute."""
    volume: float = 1.0
    """0..1."""
    voice: str | None = None
    """An espeak-ng voice name (`espeak-ng --voices`); None or "" for DEFAULT_VOICE."""
    device: str | int | None = None
    """Output device for the prompts (name or index): the caller's earpiece; None or "" for the default."""
    muted_kinds: frozenset[str] = frozenset()
    """Prompt kinds never spoken, e.g. ["answer-ask-count"]."""
    repeat_suppress: float = 20.0
    """Seconds within which the same prompt text is not said again (answers the caller asked for excepted)."""
    interrupt: bool = True
    """A prompt of higher priority cuts off the one playing (a violation interrupts a reminder)."""
    notice_quiet: float = 3.0
    """Seconds the caller's channel must have been quiet before a notice (a prompt of priority 0: a violation
    recorded, where the record is kept) is said live: a notice never talks over a call. Said at once when the
    speaker hears no channel; on closing, whatever waits is said."""

    def __post_init__(self) -> None:
        if not 50 <= self.rate <= 500:
            raise SpeakerError(f"voice rate must be 50-500 words per minute: {self.rate}")
        if not 0.0 <= self.volume <= 1.0:
            raise SpeakerError(f"voice volume must be 0..1: {self.volume}")
        if self.repeat_suppress < 0:
            raise SpeakerError(f"repeat_suppress must be >= 0 seconds: {self.repeat_suppress}")
        if self.notice_quiet < 0:
            raise SpeakerError(f"notice_quiet must be >= 0 seconds: {self.notice_quiet}")


@dataclass(frozen=True)
class Rendered:
    """One prompt as audio: mono int16 samples at `rate`."""

    samples: np.ndarray
    rate: int

    @property
    def duration(self) -> float:
        return len(self.samples) / self.rate


@dataclass
class Said:
    """What became of one prompt: "said" (to the end) or "cut" (interrupted); not said: "muted", "repeat"
    (said within repeat_suppress), "empty", "dropped" (pending at close), "failed" (the voice failed), "silent"."""

    prompt: Prompt
    status: str
    start: float | None = None
    end: float | None = None
    audio: Rendered | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "time": round(self.prompt.time, 2),
            "start": None if self.start is None else round(self.start, 2),
            "end": None if self.end is None else round(self.end, 2),
            "text": self.prompt.text,
            "kind": self.prompt.kind,
            "priority": self.prompt.priority,
            "clause": self.prompt.clause,
            "status": self.status,
        }


class Speaker(Protocol):
    """Where prompts go. `say` never blocks for the length of the speech."""

    def say(self, prompt: Prompt) -> None: ...

    def speaking(self) -> bool: ...

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is queued or playing; False on timeout."""
        ...

    def close(self) -> None: ...

    def prompts_json(self) -> list[dict[str, object]]: ...


class Renderer(Protocol):
    """Text to audio."""

    def render(self, text: str, settings: VoiceSettings) -> Rendered: ...


class Playback(Protocol):
    """Audio to a device."""

    def play(self, samples: np.ndarray, rate: int, stop: threading.Event) -> int:
        """Play until the end or until `stop` is set; returns how many samples were played."""
        ...


# ----- pyttsx3, in a process of its own ------------------------------------------------------

RENDER_TIMEOUT = 30.0
"""Seconds a rendering may take before the voice process is taken for hung."""


def _voice_main() -> None:
    """The voice process: the one place pyttsx3 runs, one thread, voice and rate set once before any speech.

    With espeak-ng, pyttsx3's runAndWait returns before the audio is written (synthesis runs on espeak's
    own thread) and rate changes between renderings are often ignored; its driver also prints
    "Audio saved to ..." on stdout. So the replies go out on a private copy of stdout and fd 1 is
    pointed at /dev/null. Requests: one JSON line per text on stdin; replies: a JSON line, then the audio.
    """
    reply = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of this process
    voice, rate = sys.argv[1] or None, int(sys.argv[2])

    def send(head: dict[str, object], data: bytes = b"") -> None:
        reply.write(json.dumps(head).encode() + b"\n" + data)
        reply.flush()

    try:
        import pyttsx3

        engine = pyttsx3.init()
        if voice and not _known_voice(engine, voice):
            send({"kind": "error", "message": f"unknown voice {voice!r} (see `espeak-ng --voices`)"})
            return
        if voice:
            engine.setProperty("voice", voice)
        engine.setProperty("rate", rate)
        engine.setProperty("volume", 1.0)
        finished = threading.Event()
        engine.connect("finished-utterance", lambda **_: finished.set())
    except Exception as exc:
        send({"kind": "error", "message": f"no voice: pyttsx3 could not start ({exc}); is espeak-ng installed?"})
        return
    send({"kind": "ready"})
    with tempfile.TemporaryDirectory(prefix="bingo-voice-") as tmp:
        for number, line in enumerate(sys.stdin):
            try:
                text = str(json.loads(line)["text"])
                for attempt in range(2):  # now and then espeak-ng writes a sentence as an empty file: say it again
                    path = Path(tmp) / f"prompt-{number}-{attempt}.wav"  # a late write of another cannot pass
                    finished.clear()
                    engine.save_to_file(text, str(path))
                    engine.runAndWait()
                    if not finished.wait(RENDER_TIMEOUT):
                        raise SpeakerError("espeak-ng did not finish the sentence")
                    _settle(engine)
                    audio = _read_rendered(path)
                    path.unlink()
                    if audio.samples.size or not text.strip():
                        break
                else:
                    raise SpeakerError(f"espeak-ng rendered {text!r} as no audio, twice")
                data = audio.samples.astype("<i2").tobytes()
                send({"kind": "audio", "rate": audio.rate, "bytes": len(data)}, data)
            except Exception as exc:
                send({"kind": "error", "message": f"voice (pyttsx3) failed: {exc}"})


def _settle(engine: Any) -> None:
    """Let espeak's thread finish its callback (it marks the engine idle after "finished-utterance"):
    a sentence queued before that is raced by two threads and may speak the previous text again."""
    deadline = time.monotonic() + 2.0
    while engine.isBusy() and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)


def _known_voice(engine: Any, wanted: str) -> bool:
    """pyttsx3 accepts any voice name and silently keeps the old voice: check the name against the list."""
    key = wanted.strip().lower()
    for v in engine.getProperty("voices"):
        ident = str(v.id).lower()
        if key in (ident, ident.rsplit("/", 1)[-1], str(v.name).lower()):
            return True
    return False


def _voice_key(settings: VoiceSettings) -> tuple[str | None, int]:
    return (settings.voice or DEFAULT_VOICE, settings.rate)


class Pyttsx3Voice:
    """pyttsx3 (espeak-ng) in a process of its own for one voice and rate; renders go through it in turn."""

    _voices: ClassVar[dict[tuple[str | None, int], Pyttsx3Voice]] = {}
    _voices_lock = threading.Lock()

    def __init__(self, settings: VoiceSettings) -> None:
        """Start the voice process; raise SpeakerError when pyttsx3 cannot speak with these settings."""
        self.key = _voice_key(settings)
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        code = "from assistant.speaker import _voice_main; _voice_main()"
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", code, self.key[0] or "", str(self.key[1])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError as exc:
            raise SpeakerError(f"cannot start the voice process: {exc}") from exc
        self._buffer = b""
        self._lock = threading.Lock()
        head, _ = self._receive()
        if head.get("kind") != "ready":
            self.close()
            raise SpeakerError(str(head.get("message", "the voice process did not start")))

    @classmethod
    def for_settings(cls, settings: VoiceSettings) -> Pyttsx3Voice:
        """The voice process for these settings, started once and shared by every speaker of this process."""
        key = _voice_key(settings)
        with cls._voices_lock:
            voice = cls._voices.get(key)
            if voice is None or voice._process.poll() is not None:
                voice = cls._voices[key] = cls(settings)
            return voice

    @classmethod
    def close_all(cls) -> None:
        """Stop every voice process (at exit)."""
        with cls._voices_lock:
            voices, cls._voices = list(cls._voices.values()), {}
        for voice in voices:
            voice.close()

    def render(self, text: str, settings: VoiceSettings) -> Rendered:
        """Speech for `text`; waits only for synthesis (tens of ms per sentence), never for playback."""
        if _voice_key(settings) != self.key:
            return Pyttsx3Voice.for_settings(settings).render(text, settings)
        with self._lock:
            stdin = self._process.stdin
            assert stdin is not None
            try:
                stdin.write(json.dumps({"text": text}).encode() + b"\n")
                stdin.flush()
            except OSError as exc:
                raise SpeakerError(f"the voice process has ended ({exc})") from exc
            head, data = self._receive()
        if head.get("kind") != "audio":
            raise SpeakerError(str(head.get("message", "the voice sent no audio")))
        samples = np.frombuffer(data, dtype="<i2").astype(np.int16)
        if settings.volume != 1.0:  # scaled here: exact, and one voice process serves every volume
            samples = np.round(samples * settings.volume).astype(np.int16)
        return Rendered(samples, int(str(head["rate"])))

    def _read(self, deadline: float) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        left = deadline - time.monotonic()
        ready, _, _ = select.select([stdout], [], [], max(0.0, left))
        if not ready:
            self._process.kill()
            self._process.wait()
            raise SpeakerError(f"the voice (pyttsx3) did not answer within {RENDER_TIMEOUT:.0f} s")
        data = os.read(stdout.fileno(), 1 << 16)
        if not data:
            raise SpeakerError("the voice process has ended")
        self._buffer += data

    def _receive(self) -> tuple[dict[str, object], bytes]:
        deadline = time.monotonic() + RENDER_TIMEOUT
        while b"\n" not in self._buffer:
            self._read(deadline)
        line, self._buffer = self._buffer.split(b"\n", 1)
        head: dict[str, object] = json.loads(line)
        size = int(str(head.get("bytes", 0)))
        while len(self._buffer) < size:
            self._read(deadline)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return head, data

    def close(self) -> None:
        """Stop the voice process."""
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(2.0)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


atexit.register(Pyttsx3Voice.close_all)


def _read_rendered(path: Path) -> Rendered:
    try:
        with wave.open(str(path), "rb") as w:
            if w.getsampwidth() != 2:
                raise SpeakerError(f"voice rendered {w.getsampwidth() * 8}-bit audio; expected 16-bit")
            raw = w.readframes(w.getnframes())
            samples = np.frombuffer(raw, dtype="<i2").reshape(-1, w.getnchannels())[:, 0].astype(np.int16)
            return Rendered(samples, w.getframerate())
    except (OSError, EOFError, wave.Error) as exc:
        raise SpeakerError(f"voice rendered no audio ({exc})") from exc


def _resample(audio: Rendered, rate: int) -> np.ndarray:
    if audio.rate == rate:
        return audio.samples
    from scipy.signal import resample_poly  # only here: importing scipy.signal takes a second

    g = math.gcd(audio.rate, rate)
    out: np.ndarray = resample_poly(audio.samples.astype(np.float64), rate // g, audio.rate // g)
    return np.clip(np.round(out), -32768, 32767).astype(np.int16)


# ----- what to say: mute, needless repeats, priorities ---------------------------------------------


class PromptPolicy:
    """Which prompts are said at all: not a muted kind, not the same words again within the window."""

    def __init__(self, settings: VoiceSettings) -> None:
        self.settings = settings
        self._last: dict[str, float] = {}

    def refuse(self, prompt: Prompt) -> str | None:
        """None when the prompt is to be said; otherwise why not ("muted", "repeat", "empty")."""
        if prompt.kind in self.settings.muted_kinds:
            return "muted"
        words = " ".join(prompt.text.lower().split())
        if not words:
            return "empty"
        if not prompt.kind.startswith(ANSWER_PREFIX):
            last = self._last.get(words)
            if last is not None and 0 <= prompt.time - last < self.settings.repeat_suppress:
                return "repeat"
        self._last[words] = prompt.time
        return None

    def forget(self, prompt: Prompt) -> None:
        """The prompt was cut off before it was heard: saying it again is no needless repeat."""
        words = " ".join(prompt.text.lower().split())
        if self._last.get(words) == prompt.time:
            del self._last[words]


@dataclass(frozen=True)
class Placement:
    """Where one prompt sits on the timeline."""

    index: int
    start: float
    end: float
    cut: bool


def schedule(items: Sequence[tuple[Prompt, float]], interrupt: bool = True) -> list[Placement]:
    """Place prompts (with their durations) on one voice, as the live speaker plays them.

    One prompt at a time; a prompt that would overlap the one playing waits for it; waiting prompts go
    highest priority first, then in order; with `interrupt`, a higher-priority prompt cuts off the one
    playing at the moment it arrives (the cut prompt is not resumed).
    """
    order = sorted(range(len(items)), key=lambda i: items[i][0].time)
    pending: list[tuple[int, int]] = []  # (-priority, index)
    placed: list[Placement] = []
    current: Placement | None = None

    def start_next(t: float) -> Placement | None:
        if not pending:
            return None
        _, i = heapq.heappop(pending)
        return Placement(i, t, t + items[i][1], False)

    for i in order:
        prompt = items[i][0]
        while current is not None and current.end <= prompt.time:
            placed.append(current)
            current = start_next(current.end)
        if current is not None and interrupt and prompt.priority > items[current.index][0].priority:
            placed.append(Placement(current.index, current.start, prompt.time, True))
            current = None
        heapq.heappush(pending, (-prompt.priority, i))
        if current is None:
            current = start_next(prompt.time)
    while current is not None:
        placed.append(current)
        current = start_next(current.end)
    return sorted(placed, key=lambda p: p.start)


def mix(said: Sequence[Said], rate: int, duration: float | None = None) -> np.ndarray:
    """One mono int16 track: every prompt's audio at its start, silence between."""
    spoken = [s for s in said if s.audio is not None and s.start is not None and s.end is not None]
    end = max([s.end for s in spoken if s.end is not None], default=0.0)
    total = round(max(end, duration or 0.0) * rate)
    track = np.zeros(total, dtype=np.int32)
    for s in spoken:
        assert s.audio is not None and s.start is not None and s.end is not None
        audio = _resample(s.audio, rate)
        n = min(len(audio), round((s.end - s.start) * rate))
        piece = audio[:n].astype(np.int32)
        if s.status == "cut":  # fade out over 20 ms rather than click
            fade = min(n, rate // 50)
            if fade:
                piece[n - fade :] = (piece[n - fade :] * np.linspace(1.0, 0.0, fade)).astype(np.int32)
        i = max(0, round(s.start * rate))
        piece = piece[: max(0, total - i)]
        track[i : i + len(piece)] += piece
    return np.clip(track, -32768, 32767).astype(np.int16)


def write_track(path: Path, samples: np.ndarray, rate: int) -> None:
    """A mono 16-bit WAV."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())
    try:
        Path(path).write_bytes(buffer.getvalue())
    except OSError as exc:
        raise SpeakerError(f"cannot write voice-out {path}: {exc.strerror or exc}") from exc


# ----- the speakers --------------------------------------------------------------------------


class SilentSpeaker:
    """Says nothing; keeps the prompts it was given."""

    def __init__(self) -> None:
        self.prompts: list[Prompt] = []

    def say(self, prompt: Prompt) -> None:
        self.prompts.append(prompt)

    def speaking(self) -> bool:
        return False

    def idle(self, timeout: float | None = None) -> bool:
        return True

    def close(self) -> None:
        pass

    def prompts_json(self) -> list[dict[str, object]]:
        return [Said(p, "silent").to_json() for p in self.prompts]


class TimelineSpeaker:
    """Renders each prompt and places it at its time on a timeline (`--voice-out FILE.wav`)."""

    def __init__(
        self,
        settings: VoiceSettings,
        out: Path | None = None,
        voice: Renderer | None = None,
        gate: SelfHearingGate | None = None,
        rate: int = 22050,
    ) -> None:
        """`gate`, when given, is kept up to date with where the voice sits on the timeline."""
        self.settings = settings
        self.out = out
        self.voice = voice or Pyttsx3Voice.for_settings(settings)
        self.gate = gate
        self.rate = rate
        self.policy = PromptPolicy(settings)
        self.refused: list[Said] = []
        self._rendered: list[tuple[Prompt, Rendered]] = []
        self._closed = False

    def say(self, prompt: Prompt) -> None:
        reason = self.policy.refuse(prompt)
        if reason is not None:
            self.refused.append(Said(prompt, reason))
            return
        self._rendered.append((prompt, self.voice.render(prompt.text, self.settings)))
        if self.gate is not None:
            self.gate.reset([(s.start, s.end) for s in self.said() if s.start is not None and s.end is not None])

    def speaking(self) -> bool:
        """A timeline never plays aloud."""
        return False

    def idle(self, timeout: float | None = None) -> bool:
        return True

    def said(self) -> list[Said]:
        """Every prompt that is heard, in the order heard, with where it sits."""
        placements = schedule([(p, r.duration) for p, r in self._rendered], self.settings.interrupt)
        out = []
        for pl in placements:
            prompt, audio = self._rendered[pl.index]
            out.append(Said(prompt, "cut" if pl.cut else "said", pl.start, pl.end, audio))
        return out

    def intervals(self) -> list[tuple[float, float]]:
        """(start, end) of the voice on the timeline."""
        return [(s.start, s.end) for s in self.said() if s.start is not None and s.end is not None]

    def samples(self, duration: float | None = None) -> np.ndarray:
        """The whole timeline as mono int16 at `self.rate`, at least `duration` seconds long."""
        return mix(self.said(), self.rate, duration)

    def write(self, path: Path, duration: float | None = None) -> None:
        write_track(path, self.samples(duration), self.rate)

    def prompts_json(self) -> list[dict[str, object]]:
        return [s.to_json() for s in self.said()]

    def close(self) -> None:
        """Write the timeline to `out` (once)."""
        if not self._closed and self.out is not None:
            self.write(self.out)
        self._closed = True


class SoundDevicePlayback:
    """Plays on one output device through sounddevice (PortAudio)."""

    def __init__(self, device: str | int | None) -> None:
        """Raise SpeakerError at once when there is no such output device."""
        if isinstance(device, str):
            device = int(device) if device.strip().isdigit() else (device.strip() or None)
        self.device = device
        try:
            import sounddevice

            sounddevice.query_devices(device, kind="output")
        except Exception as exc:  # PortAudioError, ValueError: no device, or none matching
            name = "the default output device" if device is None else f"output device {device!r}"
            raise SpeakerError(f"no sound output: {name} is not available ({exc})") from exc
        self._sd = sounddevice

    def play(self, samples: np.ndarray, rate: int, stop: threading.Event) -> int:
        sd = self._sd
        position = 0
        done = threading.Event()

        def callback(outdata: np.ndarray, frames: int, _time: Any, _status: Any) -> None:
            nonlocal position
            if stop.is_set():
                outdata.fill(0)
                raise sd.CallbackAbort
            chunk = samples[position : position + frames]
            outdata[: len(chunk), 0] = chunk
            outdata[len(chunk) :, 0] = 0
            position += len(chunk)
            if len(chunk) < frames:
                raise sd.CallbackStop

        try:
            with sd.OutputStream(
                samplerate=rate,
                device=self.device,
                channels=1,
                dtype="int16",
                callback=callback,
                finished_callback=done.set,
            ):
                deadline = time.monotonic() + len(samples) / rate + PLAYBACK_SLACK
                while not done.wait(0.05):
                    if stop.is_set():
                        break
                    if time.monotonic() > deadline:
                        stop.set()
                        raise SpeakerError(f"the output device stalled ({position} of {len(samples)} samples played)")
        except SpeakerError:
            raise
        except Exception as exc:
            raise SpeakerError(f"sound output failed on {self.device!r}: {exc}") from exc
        return position


PLAYBACK_SLACK = 5.0
"""Seconds a prompt may take beyond its length before the output device is taken for stalled."""


NOTICE = 0
"""Prompts of this priority or lower are notices: they tell, they ask nothing, and wait for a quiet caller."""
NOTICE_POLL = 0.1
"""Seconds between looks at the caller's channel while a notice waits."""


class LiveSpeaker:
    """The voice in real time: one thread with a priority queue renders and plays each prompt in turn."""

    def __init__(
        self,
        settings: VoiceSettings,
        playback: Playback,
        voice: Renderer | None = None,
        gate: SelfHearingGate | None = None,
        clock: Callable[[], float] | None = None,
        out: Path | None = None,
    ) -> None:
        """`clock` gives seconds on the listening clock (for the gate and the record); `out` records a WAV."""
        self.settings = settings
        self.playback = playback
        self.voice = voice or Pyttsx3Voice.for_settings(settings)
        self.gate = gate
        t0 = time.monotonic()
        self.clock = clock or (lambda: time.monotonic() - t0)
        self.out = out
        self.policy = PromptPolicy(settings)
        self.history: list[Said] = []
        self.errors: list[str] = []
        self._queue: list[tuple[int, int, Prompt]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._current: Prompt | None = None
        self._stop = threading.Event()
        self._speaking = False
        self._closing = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="speaker", daemon=True)
        self._thread.start()

    def say(self, prompt: Prompt) -> None:
        """Queue the prompt and return at once; a higher-priority prompt cuts off a lower one playing."""
        with self._cond:
            if self._closing:
                raise SpeakerError("the speaker is closed")
            reason = self.policy.refuse(prompt)
            if reason is not None:
                self.history.append(Said(prompt, reason))
                return
            heapq.heappush(self._queue, (-prompt.priority, next(self._seq), prompt))
            current = self._current
            if current is not None and self.settings.interrupt and prompt.priority > current.priority:
                self._stop.set()
            self._cond.notify_all()

    def speaking(self) -> bool:
        """True while our own voice plays."""
        return self._speaking

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is queued or playing; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and self._current is None, timeout)

    def close(self, drain: bool = True) -> None:
        """Say what is queued (drain) or drop it and stop the voice now; then stop the thread and write `out`."""
        with self._cond:
            if self._closed:
                return
            self._closing = True
            if not drain:
                for _, _, prompt in self._queue:
                    self.history.append(Said(prompt, "dropped"))
                self._queue.clear()
                self._stop.set()
            self._cond.notify_all()
        self._thread.join()
        self._closed = True
        if self.out is not None:
            write_track(self.out, mix(self.history, 22050), 22050)

    def prompts_json(self) -> list[dict[str, object]]:
        with self._cond:
            return [s.to_json() for s in self.history]

    def _may_say(self, prompt: Prompt) -> bool:
        """A notice waits until the caller's channel has been quiet for `notice_quiet` (or the speaker closes)."""
        if prompt.priority > NOTICE or self._closing or self.gate is None:
            return True
        quiet = self.gate.quiet()
        return quiet is None or quiet >= self.settings.notice_quiet

    def _next(self) -> Prompt | None:
        with self._cond:
            while True:
                self._cond.wait_for(lambda: bool(self._queue) or self._closing)
                if not self._queue:
                    return None
                if self._may_say(self._queue[0][2]):
                    break
                self._cond.wait(NOTICE_POLL)
            _, _, prompt = heapq.heappop(self._queue)
            self._current = prompt
            self._stop.clear()
            return prompt

    def _run(self) -> None:
        while (prompt := self._next()) is not None:
            said = Said(prompt, "said")
            try:
                audio = self.voice.render(prompt.text, self.settings)
                with self._cond:
                    cut_before = self._stop.is_set()  # something more urgent came while rendering
                    if not cut_before:
                        said.start = self.clock()
                        self._speaking = True
                        if self.gate is not None:
                            self.gate.begin(said.start, audio.samples, audio.rate)
                if cut_before:
                    said.status = "cut"
                else:
                    played = self.playback.play(audio.samples, audio.rate, self._stop)
                    said.audio = Rendered(audio.samples[:played], audio.rate)
                    if played < len(audio.samples):
                        said.status = "cut"
                if said.status == "cut":
                    with self._cond:
                        self.policy.forget(prompt)
            except Exception as exc:  # the voice fails, listening goes on: report it, keep the thread
                said.status = "failed"
                self.errors.append(str(exc))
                print(f"voice: {exc}", file=sys.stderr)
            finally:
                with self._cond:
                    if said.start is not None:
                        said.end = self.clock()
                        if self.gate is not None:
                            self.gate.end(said.end)
                    self._speaking = False
                    self._current = None
                    self.history.append(said)
                    self._cond.notify_all()


def make_speaker(
    mode: str,
    settings: VoiceSettings,
    out: Path | None,
    gate: SelfHearingGate | None = None,
    clock: Callable[[], float] | None = None,
) -> Speaker:
    """The speaker for a voice mode: "live" (sound device; `out` also records a WAV), "wav" (timeline to `out`),
    "silent"."""
    if mode == "live":
        return LiveSpeaker(settings, SoundDevicePlayback(settings.device), gate=gate, clock=clock, out=out)
    if mode == "wav":
        if out is None:
            raise SpeakerError("voice mode 'wav' needs an output file (--voice-out FILE.wav)")
        return TimelineSpeaker(settings, out, gate=gate)
    if mode == "silent":
        return SilentSpeaker()
    raise SpeakerError(f"unknown voice mode {mode!r} (live, wav or silent)")
