"""The one interface every engine adapter fills: how to find the CLI, what to run, what its
output means.

An adapter is a small class: its program name, the package that installs it, the versions
it was written against, the command line and environment for one non-interactive run in the
prep copy, and `parse(line)`, which turns one line of the CLI's machine output into events
(a tool call, an edit, text, usage, a login failure, the end). The runner (`runner.py`) does
the rest the same way for every engine: the sandbox, the idle timeout, cancel, the
transcript, the change as a diff.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocode.errors import AutoCodeError


class EngineError(AutoCodeError):
    """An engine could not run or did not finish. Each raise names its kind: engineMissing,
    engineVersion, engineLogin, engineIdle, engineCrashed, engineNetwork or engineRefused
    (docs/engines.md), and its message the remedy."""

    kind = "engineCrashed"
    exit_code = 1


@dataclass(frozen=True)
class Job:
    """One run of an engine: what it is told and where, as the program sees it."""

    prompt: str
    workdir: Path  # where the program runs (the copy, shown at the workspace's path)
    scratch: Path  # a private folder for the CLI's own files (its HOME inside the sandbox)
    model: str | None
    base_url: str | None
    key: str | None  # the key's value, passed in the variable the CLI reads; never written anywhere
    files: tuple[str, ...] = ()  # repository paths the plan cites (engines that want them named)
    context_window: int | None = None


@dataclass
class Event:
    """What one output line said. kind: tool | edit | text | usage | login | error | result."""

    kind: str
    text: str = ""
    path: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None
    data: dict[str, Any] = field(default_factory=dict)


class Adapter:
    """One engine. Subclasses set the class attributes and fill `argv`, `env` and `parse`."""

    name: str = ""
    program: str = ""  # the executable looked up on PATH
    install: str = ""  # how a person installs it (the remedy of a missing binary)
    key_variable: str = ""  # the variable the CLI reads its key from
    # The CLI's own endpoint when engine_base_url is not set: the one host:port its sandbox may reach.
    endpoint: str = ""
    # The major.minor versions the adapter was written and checked against: another major is refused.
    majors: tuple[int, ...] = ()
    # Paths the CLI writes in its working folder for itself (never part of the change).
    scratch_patterns: tuple[str, ...] = ()
    # In the sandbox a plain-http endpoint is named by the forwarder (egress.py); a CLI that opens a
    # CONNECT tunnel through the proxy even for http (Gemini CLI's fetch) keeps the endpoint's own URL.
    forwarded_base_url: bool = True
    tested: bool = False  # run end to end by this project's tests (docs/engines.md says how)

    def version_of(self, text: str) -> str | None:
        """The version number in `program --version`'s output."""
        found = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
        return found.group(0) if found else None

    def supported(self, version: str) -> bool:
        major = int(version.split(".", 1)[0])
        return not self.majors or major in self.majors

    def argv(self, program: str, job: Job) -> list[str]:
        raise NotImplementedError

    def env(self, job: Job) -> dict[str, str]:
        raise NotImplementedError

    def prepare(self, job: Job) -> None:
        """Write what the CLI needs in its scratch folder before it starts (settings files)."""

    def parse(self, line: str) -> list[Event]:
        raise NotImplementedError

    def login_remedy(self, variable: str | None) -> str:
        named = variable or self.key_variable
        return (
            f"{self.name} has no key it can use: set the variable {named} in the environment AutoCode runs in "
            f"and name it with engine_api_key_env = \"{named}\" in your user config (~/.config/autocode/config.toml)"
        )


def json_line(line: str) -> Mapping[str, Any] | None:
    """One JSON object per line (stream-json, JSON lines), or None for anything else."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
