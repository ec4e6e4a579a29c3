"""The scrubbing every log line passes through: the log file's and what a client is sent."""

from __future__ import annotations

import logging
import os
from typing import ClassVar


class ScrubbingFormatter(logging.Formatter):
    """Every log line passes through the scrub module before it reaches the file.

    Briefs, answers and memory text can hold a credential a person pasted; whatever the
    log level, the file gets `[redacted:<kind>]` in its place.
    """

    _env: dict[str, str] | None = None
    literals: ClassVar[set[str]] = set()
    """Exact strings never to write (the listener's token: pygls logs `initialize` params)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        try:
            # optional: autocode may not be installed
            from autocode.scrub import redact
        except ImportError:  # a server installed without the engine logs as it is
            return text
        if self._env is None:
            # The values of secret-named variables are redacted too; PWD (the working
            # folder, not a password) would only blank out paths.
            self._env = {k: v for k, v in os.environ.items() if k != "PWD"}
        for literal in self.literals:
            text = text.replace(literal, "[redacted:token]")
        return redact(text, env=self._env, paths=False)
