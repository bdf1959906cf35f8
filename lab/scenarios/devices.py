"""Real audio devices for a hall that has no sound card: a PulseAudio server of our own with null sinks.

Each device of the hall is a null sink; what is played into it in real time comes out of its monitor, so the
sink is a microphone for `listen` (PortAudio's ALSA host reaches it through the pulse plugin of
libasound2-plugins) and a loudspeaker for the assistant's voice. PortAudio sees every device by its name
through an ALSA configuration of our own (ALSA_CONFIG_PATH); nothing of the user's audio set-up is touched.
The server runs from a folder of its own and stops with `close()`. Used by the live tests and
`python -m lab.scenarios long --live`; Debian's `pulseaudio` and `pulseaudio-utils` (tools/setup.sh).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant.audio import RATE

ALSA_CONFIG = Path("/usr/share/alsa/alsa.conf")


class DeviceError(Exception):
    """The virtual hall cannot start (no PulseAudio, no ALSA pulse plugin) or a device is unknown."""


@dataclass(frozen=True)
class Device:
    """One device of the hall: a null sink `name` with `channels`; capture reads its monitor."""

    name: str
    channels: int = 1
    description: str = ""
    self_noise_db: float | None = None
    """A microphone's own noise, dBFS RMS, always under what is played into it (a real input never gives exact
    zeros: digital silence is a dropout or a muted input, see `mute`); None: none (a loudspeaker)."""


class VirtualHall:
    """A PulseAudio server with one null sink per device, in `folder`, until `close()`."""

    def __init__(self, folder: Path, devices: Sequence[Device]) -> None:
        for tool in ("pulseaudio", "pacat", "pactl"):
            if shutil.which(tool) is None:
                raise DeviceError(f"no {tool}: install Debian's pulseaudio and pulseaudio-utils (tools/setup.sh)")
        if not any(Path("/usr/lib").glob("*/alsa-lib/libasound_module_pcm_pulse.so")):
            raise DeviceError("no ALSA pulse plugin: install Debian's libasound2-plugins (tools/setup.sh)")
        self.folder = folder
        self.devices = {d.name: d for d in devices}
        folder.mkdir(parents=True, exist_ok=True)
        self.socket = folder / "native"
        self.server = f"unix:{self.socket}"
        script = folder / "hall.pa"
        lines = [" ".join(["load-module module-null-sink", *self._sink_arguments(d)]) for d in devices]
        lines.append(f"load-module module-native-protocol-unix socket={self.socket} auth-anonymous=1")
        script.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.alsa_config = folder / "asound.conf"
        self.alsa_config.write_text(self._alsa(), encoding="utf-8")
        runtime = folder / "runtime"
        runtime.mkdir(exist_ok=True)
        env = dict(os.environ, HOME=str(folder), XDG_RUNTIME_DIR=str(runtime), PULSE_RUNTIME_PATH=str(runtime))
        self._log = open(folder / "pulseaudio.log", "wb")  # noqa: SIM115 - closed in close()
        self._process = subprocess.Popen(
            [
                "pulseaudio",
                "-n",
                "-F",
                str(script),
                "--daemonize=no",
                "--exit-idle-time=-1",
                "--disallow-exit",
                "--use-pid-file=no",
                "--log-target=stderr",
            ],
            stdout=self._log,
            stderr=self._log,
            env=env,
            start_new_session=True,
        )
        self._players: list[subprocess.Popen[bytes]] = []
        deadline = time.monotonic() + 15.0
        while not self.socket.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.close()
                log = (folder / "pulseaudio.log").read_text(errors="replace").strip().splitlines()
                raise DeviceError(f"PulseAudio did not start: {log[-1] if log else 'no output'}")
            time.sleep(0.05)
        self._hissing = threading.Event()
        self._hissing.set()
        for d in devices:
            if d.self_noise_db is not None:
                self._hiss(d, d.self_noise_db)

    def _hiss(self, d: Device, level_db: float) -> None:
        """Play the device's own noise into it for as long as the hall runs."""
        player = subprocess.Popen(
            [*self._pacat("--playback", d.name, d.channels, RATE), "--latency-msec=100"],
            stdin=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._players.append(player)
        rng = np.random.default_rng(len(self._players))
        scale = 32768 * 10 ** (level_db / 20)

        def feed() -> None:
            assert player.stdin is not None
            while self._hissing.is_set():
                block = np.round(rng.normal(0.0, scale, (RATE // 10, d.channels)))
                try:
                    player.stdin.write(np.clip(block, -32768, 32767).astype("<i2").tobytes())
                except (BrokenPipeError, ValueError, OSError):
                    return

        threading.Thread(target=feed, name=f"hiss-{d.name}", daemon=True).start()

    def _alsa(self) -> str:
        out = [f"<{ALSA_CONFIG}>"]
        for d in self.devices.values():
            what = d.description or f"{d.name} (virtual hall)"
            out.append(
                f"pcm.{d.name} {{ type asym"
                f' playback.pcm {{ type pulse server "{self.server}" device "{d.name}" }}'
                f' capture.pcm {{ type pulse server "{self.server}" device "{d.name}.monitor" }}'
                f' hint {{ show on description "{what}" }} }}'
            )
        return "\n".join(out) + "\n"

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to see the hall's devices (PortAudio through ALSA, and the pulse tools)."""
        return {"ALSA_CONFIG_PATH": str(self.alsa_config), "PULSE_SERVER": self.server}

    def play(self, device: str, samples: np.ndarray, rate: int = RATE) -> subprocess.Popen[bytes]:
        """Start playing int16 `samples` (frames x channels, or mono) into `device` in real time; returns
        the player, whose exit is the end of playback."""
        frames = np.asarray(samples, dtype=np.int16).reshape(len(samples), -1)
        if frames.shape[1] != self._device(device).channels:
            raise DeviceError(f"{device} has {self._device(device).channels} channel(s); got {frames.shape[1]}")
        return self.play_blocks(device, [frames], rate)

    def play_blocks(self, device: str, blocks: Iterable[np.ndarray], rate: int = RATE) -> subprocess.Popen[bytes]:
        """As `play`, for audio made or read as it plays (hours of it): int16 blocks of frames x channels (or
        mono, for a one-channel device)."""
        d = self._device(device)
        player = subprocess.Popen(
            [*self._pacat("--playback", device, d.channels, rate), "--latency-msec=50"],
            stdin=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._players.append(player)

        def feed() -> None:
            assert player.stdin is not None
            try:
                for block in blocks:
                    player.stdin.write(np.asarray(block, dtype=np.int16).astype("<i2").tobytes())
                player.stdin.close()
            except (BrokenPipeError, ValueError):
                pass

        threading.Thread(target=feed, name=f"play-{device}", daemon=True).start()
        return player

    def route(
        self, source: str, sink: str, transform: Callable[[np.ndarray], np.ndarray], block: float = 0.02
    ) -> Callable[[], None]:
        """Everything played into `source` goes on into `sink` through `transform` (a stream of mono int16
        blocks in, the same count out: a room's echo path), in real time, until the returned stop is called."""
        src, dst = self._device(source), self._device(sink)
        if src.channels != 1 or dst.channels != 1:
            raise DeviceError("a route joins mono devices")
        size = round(block * RATE)
        reader = subprocess.Popen(
            [*self._pacat("--record", f"{source}.monitor", 1, RATE), f"--latency-msec={round(block * 1000)}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        writer = subprocess.Popen(
            [*self._pacat("--playback", sink, 1, RATE), "--latency-msec=50"],
            stdin=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._players += [reader, writer]
        stopped = threading.Event()

        def pump() -> None:
            assert reader.stdout is not None and writer.stdin is not None
            while not stopped.is_set():
                data = reader.stdout.read(size * 2)
                if not data:
                    break
                out = transform(np.frombuffer(data, dtype="<i2"))
                try:
                    writer.stdin.write(np.clip(out, -32768, 32767).astype("<i2").tobytes())
                    writer.stdin.flush()
                except (BrokenPipeError, ValueError):
                    break

        thread = threading.Thread(target=pump, name=f"route-{source}-{sink}", daemon=True)
        thread.start()

        def stop() -> None:
            stopped.set()
            for p in (reader, writer):
                p.kill()
                p.wait()
            thread.join(timeout=2.0)
            _close_pipes(reader, writer)

        return stop

    def halt(self, device: str) -> None:
        """The device stops delivering, as a USB interface that hangs or is pulled out: its sink is suspended, so
        whoever records from it gets nothing. (Unloading the sink instead would not do: PulseAudio moves its
        recording streams to another source, which goes on delivering.)"""
        self._pactl("suspend-sink", self._device(device).name, "1")

    def restore(self, device: str) -> None:
        """The device delivers again."""
        self._pactl("suspend-sink", self._device(device).name, "0")

    def mute(self, device: str, muted: bool = True) -> None:
        """The device goes on delivering, but exact zeros: a dropout, or the input's mute button."""
        self._pactl("set-sink-mute", self._device(device).name, "1" if muted else "0")

    def _pactl(self, *args: str) -> str:
        result = subprocess.run(["pactl", f"--server={self.server}", *args], capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            raise DeviceError(f"pactl {' '.join(args)}: {result.stderr.strip() or result.returncode}")
        return result.stdout

    @staticmethod
    def _sink_arguments(d: Device) -> list[str]:
        return [
            f"sink_name={d.name}",
            f"rate={RATE}",
            f"channels={d.channels}",
            f"sink_properties=device.description={(d.description or d.name).replace(' ', '_')}",
        ]

    def _pacat(self, mode: str, device: str, channels: int, rate: int) -> list[str]:
        return [
            "pacat",
            mode,
            f"--server={self.server}",
            f"--device={device}",
            "--raw",
            "--format=s16le",
            f"--rate={rate}",
            f"--channels={channels}",
        ]

    def _device(self, name: str) -> Device:
        try:
            return self.devices[name]
        except KeyError:
            raise DeviceError(f"no device {name!r} in this hall ({', '.join(self.devices)})") from None

    def close(self) -> None:
        """Stop every player and the server."""
        self._hissing.clear()
        for p in self._players:
            if p.poll() is None:
                p.kill()
            p.wait()
        _close_pipes(*self._players)
        if self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
        self._log.close()

    def __enter__(self) -> VirtualHall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_pipes(*processes: subprocess.Popen[bytes]) -> None:
    for p in processes:
        for pipe in (p.stdin, p.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a writer's last bytes could not go: the player was stopped
                    pipe.close()


class EchoPath:
    """A hall's return of its loudspeakers into a microphone, as a `VirtualHall.route` transform: `delay`
    seconds later, `gain_db` quieter, through a room of reverberation time `rt60` (a synthetic impulse
    response, `bench.hallset.room`). Streams block by block: each output block is the input so far convolved."""

    def __init__(self, delay: float = 0.08, gain_db: float = -8.0, rt60: float = 0.8, seed: int = 0) -> None:
        import random

        from lab.bench.hallset import room

        response = room(random.Random(seed), rt60) * 10 ** (gain_db / 20)
        self._response = np.concatenate([np.zeros(round(delay * RATE)), response])
        self._tail = np.zeros(len(self._response) - 1)

    def __call__(self, block: np.ndarray) -> np.ndarray:
        from scipy.signal import oaconvolve

        wet: np.ndarray = oaconvolve(block.astype(np.float64), self._response)
        wet[: len(self._tail)] += self._tail
        self._tail = wet[len(block) :]
        return wet[: len(block)]
