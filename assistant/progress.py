"""A one-line progress bar on stderr for a long recording being checked, and this process's memory."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import TextIO

from .audio import AudioChunk, FileSource


def rss_mb() -> float:
    """This process's resident memory now, in MB (Linux /proc; 0.0 where there is none)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Progress:
    """A one-line progress bar on stderr: audio done, speed (real-time factor) and memory, redrawn in place."""

    def __init__(self, total_seconds: float, out: TextIO = sys.stderr, every: float = 0.5, width: int = 30) -> None:
        self.total = max(total_seconds, 1e-9)
        self.out = out
        self.every = every
        self.width = width
        self.started = time.perf_counter()
        self._last = -1e9
        self.samples: list[tuple[float, float, float]] = []
        """(audio seconds done, wall seconds, RSS MB) at each redraw."""

    def update(self, done: float, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last < self.every:
            return
        self._last = now
        wall = now - self.started
        rss = rss_mb()
        self.samples.append((done, wall, rss))
        share = min(1.0, done / self.total)
        filled = int(share * self.width)
        rtf = wall / done if done > 0 else 0.0
        self.out.write(
            f"\r[{'#' * filled}{'.' * (self.width - filled)}] {_clock(done)}/{_clock(self.total)} "
            f"{100 * share:3.0f}%  RTF {rtf:.3f}  RSS {rss:.0f} MB"
        )
        self.out.flush()

    def close(self, done: float) -> None:
        self.update(done, force=True)
        self.out.write("\n")
        self.out.flush()


def _clock(seconds: float) -> str:
    minutes, s = divmod(int(seconds), 60)
    return f"{minutes:02d}:{s:02d}"


def with_progress(source: FileSource, progress: Progress) -> Iterator[tuple[AudioChunk, ...]]:
    """The file's chunks, redrawing the bar as they go (and once more at the end)."""
    for step in source.steps():
        progress.update(source.now())
        yield step
    progress.close(source.now())
