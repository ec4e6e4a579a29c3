"""The server's log file: private, size-capped, rate-limited, one line per malformed input.

A listener's log is written on behalf of anyone who can reach its port, so what a stranger
sends must not be able to fill the disk: the file rotates at a fixed size (one old file is
kept), each kind of line (its format string) may burst and then passes at a steady rate with
the number left out said on the next one that passes, and the tracebacks the libraries log
for input they cannot read are cut to the one line that says why.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import sys
import threading
import time
from pathlib import Path

from autocode_lsp.logscrub import ScrubbingFormatter
from autocode_lsp.security import private_dir

LOG_MAX_BYTES = 8 * 1024 * 1024
"""Where the log file rotates (one previous file, `lsp.log.1`, is kept): 16 MiB at most on disk."""
BURST_LINES = 20
"""Lines of one kind written at once before the rate applies."""
LINES_PER_SECOND = 1.0
"""Lines of one kind written per second after a burst."""
KINDS_TRACKED = 512
"""Kinds of line whose allowance is remembered (the ones heard from most recently)."""

_LIBRARIES = ("pygls", "asyncio", "websockets", "concurrent")


def default_log_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "autocode" / "lsp.log"


def setup_logging(path: str | None, level: str, *, max_bytes: int = LOG_MAX_BYTES) -> Path | None:
    """Log to a file (never to stdout); returns the file, or None when it cannot be opened."""
    numeric = getattr(logging, level.upper(), logging.INFO)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    for old in list(root.handlers):
        root.removeHandler(old)
    log_file = Path(path) if path else default_log_file()
    written: Path | None = log_file
    handler: logging.Handler
    try:
        handler = PrivateRotatingFile(log_file, max_bytes)
    except OSError as exc:
        sys.stderr.write(
            f"autocode-lsp: cannot write the log file {log_file} ({exc}); logging to stderr\n"
        )
        handler = logging.StreamHandler(sys.stderr)
        written = None
    handler.setFormatter(
        ScrubbingFormatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    handler.setLevel(numeric)
    handler.addFilter(RateLimit())  # first: it counts kinds by their format string
    handler.addFilter(OneLineForLibraries(keep_tracebacks=numeric <= logging.DEBUG))
    root.addHandler(handler)
    logging.getLogger("autocode_lsp").setLevel(numeric)
    logging.getLogger("autocode").setLevel(numeric)
    # pygls logs every message it sends at INFO, websockets every connection: only when debugging.
    for name in ("pygls", "websockets"):
        logging.getLogger(name).setLevel(logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING)
    return written


class PrivateRotatingFile(logging.handlers.RotatingFileHandler):
    """A log file only its owner can read (0600 in a 0700 folder, whatever the umask), the
    new one after a rotation included."""

    def __init__(self, log_file: Path, max_bytes: int) -> None:
        if not log_file.parent.exists():
            private_dir(log_file.parent)
        super().__init__(log_file, maxBytes=max_bytes, backupCount=1, encoding="utf-8")

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            if os.fstat(fd).st_uid == os.getuid():
                os.fchmod(fd, 0o600)
            return open(fd, "a", encoding=self.encoding, errors=self.errors)
        except BaseException:
            os.close(fd)
            raise


class OneLineForLibraries(logging.Filter):
    """A library's traceback for a message it could not read becomes its last line.

    pygls writes the whole cattrs traceback into the message ("Unable to deserialize
    message\\n<traceback>"); asyncio and websockets attach `exc_info`. Both are about the
    peer's input, not a bug of ours, so the file gets one line (the whole story at debug level).
    """

    def __init__(self, *, keep_tracebacks: bool) -> None:
        super().__init__()
        self.keep = keep_tracebacks

    def filter(self, record: logging.LogRecord) -> bool:
        if self.keep or not record.name.startswith(_LIBRARIES):
            return True
        text = record.getMessage()
        if "\n" in text:
            first, _, rest = text.partition("\n")
            lines = [line.strip() for line in rest.splitlines() if line.strip()]
            record.msg = f"{first}: {lines[-1]}" if lines else first
            record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()}: {type(error).__name__}: {error}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


class RateLimit(logging.Filter):
    """Each kind of line (logger and format string) may burst, then passes at a steady rate;
    the next line of a kind that passes says how many of it were left out."""

    def __init__(
        self, burst: int = BURST_LINES, per_second: float = LINES_PER_SECOND, kinds: int = KINDS_TRACKED
    ) -> None:
        super().__init__()
        self.burst, self.per_second, self.kinds = float(burst), per_second, kinds
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], list[float]] = {}
        """kind -> [allowance left, when it was last counted, lines left out since the last one]"""

    def filter(self, record: logging.LogRecord) -> bool:
        template = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
        key = (record.name, template)
        now = time.monotonic()
        with self._lock:
            bucket = self._buckets.pop(key, None)
            if bucket is None:
                if len(self._buckets) >= self.kinds:  # forget the kind heard from longest ago
                    del self._buckets[next(iter(self._buckets))]
                bucket = [self.burst, now, 0.0]
            self._buckets[key] = bucket  # the most recent kind goes last
            allowance = min(self.burst, bucket[0] + (now - bucket[1]) * self.per_second)
            bucket[1] = now
            if allowance < 1.0:
                bucket[0] = allowance
                bucket[2] += 1
                return False
            bucket[0] = allowance - 1.0
            left_out, bucket[2] = int(bucket[2]), 0.0
        if left_out:
            record.msg = f"{record.getMessage()} ({left_out} more like it were not logged)"
            record.args = None
        return True
