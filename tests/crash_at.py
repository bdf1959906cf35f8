"""Runs the command line with a SIGKILL at one named moment of writing the record, on purpose:

    python tests/crash_at.py MOMENT check SCRIPT --db DB ...

The moments are the steps a check takes to write its record, start-up first. Nothing but the kill is changed:
the real command runs, and at the moment named the process kills itself (SIGKILL, no clean-up), so the test can
resume from exactly there, every time.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from assistant import store  # noqa: E402
from assistant.__main__ import main  # noqa: E402

MOMENTS = (
    "opening",  # before the database file exists
    "connected",  # the file created by the connection, nothing written to it
    "migrating",  # inside the schema's transaction, half its statements run
    "migrated",  # the schema written, no occasion yet
    "starting",  # the occasion's first row inserted, not committed
    "started",  # the occasion started, no input recorded
    "input-0",  # the first input recorded, none of its outputs
    "output-2",  # the first output of the third input recorded, not the rest
    "input-40",  # well into the session
    "closing",  # the occasion's closing row inserted, not committed
    "closed",  # the occasion closed, the report not printed
)


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def wrap(
    owner: Any, name: str, before: Callable[..., None] | None = None, after: Callable[..., None] | None = None
) -> None:
    original = getattr(owner, name)

    def patched(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before(*args, **kwargs)
        result = original(*args, **kwargs)
        if after is not None:
            after(result, *args, **kwargs)
        return result

    setattr(owner, name, patched)


def arm(moment: str) -> None:
    """Make the process kill itself at `moment`."""
    S = store.Store
    if moment == "opening":
        original_open = S.open.__func__  # type: ignore[attr-defined]

        def opening(cls: type, *args: Any, **kwargs: Any) -> Any:
            die()
            return original_open(cls, *args, **kwargs)

        S.open = classmethod(opening)  # type: ignore[assignment, method-assign]
    elif moment == "connected":
        wrap(S, "_prepare", before=lambda *_: die())
    elif moment == "migrating":
        statements = store._statements

        def half(script: str) -> Iterator[str]:
            found = list(statements(script))
            yield from found[: len(found) // 2]
            die()

        store._statements = half
    elif moment == "migrated":
        wrap(S, "start_occasion", before=lambda *_, **__: die())
    elif moment in ("starting", "closing"):
        kind = {"starting": "occasion-start", "closing": "occasion-close"}[moment]

        def inserted(_: Any, self: Any, **row: Any) -> None:
            if row.get("kind") == kind:
                die()

        wrap(S, "_append", after=inserted)
    elif moment == "started":
        wrap(S, "start_occasion", after=lambda *_, **__: die())
    elif moment == "closed":
        wrap(S, "close_occasion", after=lambda *_, **__: die())
    elif moment.startswith(("input-", "output-")):
        what, number = moment.split("-")
        seq = int(number)

        def recorded(_: Any, self: Any, occasion: int, kind: str, item: Any, at: int, sub: int | None) -> None:
            if kind == what and at == seq and sub in (None, 0):
                die()

        wrap(S, "_record", after=recorded)
    else:
        raise SystemExit(f"unknown moment {moment!r} (known: {', '.join(MOMENTS)})")


if __name__ == "__main__":
    arm(sys.argv[1])
    sys.exit(main(sys.argv[2:]))
