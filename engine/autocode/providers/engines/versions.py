"""Which version an engine's program is: `program --version`, run with no input, no credential
and an empty home, remembered in the user cache by the program's real path, size and time (so a
task does not pay the CLI's start-up twice)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from autocode.private import private_folder
from autocode.providers.engines.base import Adapter
from autocode.tasks.store import write_json_atomic

VERSION_TIMEOUT = 60.0


def _cache_file() -> Path:
    # lazy: platformdirs is needed only on a version look-up
    import platformdirs

    return Path(platformdirs.user_cache_dir("autocode", appauthor=False)) / "engines.json"


def cached_version(found: Adapter, program: str) -> tuple[str | None, str | None]:
    """(version, why not) of `program --version`, remembered by the program's real path, size and time."""
    try:
        real = os.path.realpath(program)
        st = os.stat(real)
    except OSError as exc:
        return None, str(exc)
    stamp = f"{real}:{st.st_size}:{st.st_mtime_ns}"
    cache = _cache_file()
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(stamp), str):
        return str(known[stamp]), None
    version, problem = _ask_version(found, program)
    if version is not None:
        known = known if isinstance(known, dict) else {}
        known[stamp] = version
        with contextlib.suppress(OSError):
            private_folder(cache.parent)
            write_json_atomic(cache, known, durable=False)
    return version, problem


def _ask_version(found: Adapter, program: str) -> tuple[str | None, str | None]:
    """Run `program --version` with no input, no credential and an empty home; never waits long."""
    # lazy: the sandbox's process runner is needed only on a cache miss
    from autocode.sandbox import environment, process

    with tempfile.TemporaryDirectory(prefix="autocode-engine-") as home:
        env, _ = environment.build(home=home, git_ceiling=home)
        try:
            ended = process.run_streaming([program, "--version"], cwd=Path(home), env=env, timeout=VERSION_TIMEOUT,
                                          cancelled=lambda: False, output_file=None, on_output=None)
        except OSError as exc:
            return None, str(exc)
    if ended.status != "finished":
        return None, f"it did not answer within {VERSION_TIMEOUT:g} s"
    version = found.version_of(ended.output)
    return version, None if version else f"it printed {ended.output.strip()[:200]!r}"
