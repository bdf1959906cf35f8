"""A throwaway PostgreSQL server in a temporary folder, on loopback: for the tests and the store benchmark.

Debian's `postgresql` binaries (initdb, pg_ctl) run it; as root (CI) they run as the `postgres` system user, or
`nobody`, which owns the folder, since PostgreSQL refuses to run as root. Nothing outside the folder is touched.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .records import StoreError

SUPERUSER = "bingo"


def _bindir() -> Path:
    """Where initdb and pg_ctl are: PATH first, then Debian's versioned folders (newest first)."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if versions:
        return versions[-1].parent
    raise StoreError("PostgreSQL is not installed (apt-get install postgresql): no initdb on PATH or in /usr/lib")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """initdb, start, stop (or kill), start again, and remove: a server of one's own."""

    def __init__(self, folder: Path | None = None) -> None:
        self.bindir = _bindir()
        self._own_folder = folder is None
        self.folder = Path(folder or tempfile.mkdtemp(prefix="bingo-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.port = _free_port()
        self.user: str | None = None
        if os.geteuid() == 0:
            self.user = next((u for u in ("postgres", "nobody") if _exists(u)), None)
            if self.user is None:
                raise StoreError("running as root and no postgres or nobody user to run PostgreSQL as")
            entry = pwd.getpwnam(self.user)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self._run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        )

    def _run(self, command: list[str], timeout: float = 120.0) -> None:
        program = Path(command[0]).name
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=self.folder)
        if done.returncode != 0:
            why = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
            raise StoreError(f"{program} failed: {why}")

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} -c max_connections=60 "
            "-c shared_buffers=32MB -c fsync=off -c full_page_writes=off"
        )
        self._run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start"]
        )

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server; `kill`: at once, as a crash does (no checkpoint; the next start recovers from the WAL)."""
        mode = "immediate" if kill else "fast"
        self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"])

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def url(self, database: str = "postgres", hall: str | None = None) -> str:
        tail = f"?hall={hall}" if hall else ""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}{tail}"

    def create_database(self, name: str) -> str:
        """A fresh, empty database; returns its URL (without a hall)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def remove(self) -> None:
        if self.running():
            with contextlib.suppress(StoreError, subprocess.TimeoutExpired):
                self.stop(kill=True)
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.remove()


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


def wait_until_up(url: str, seconds: float = 30.0) -> None:
    """Wait for a server to take connections again (after a restart)."""
    import psycopg

    deadline = time.monotonic() + seconds
    while True:
        try:
            psycopg.connect(url.split("?")[0], connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
