"""Doctor's `engines` section: each registered engine's program on PATH, with its version."""

from __future__ import annotations

from typing import Any

from autocode.providers import engine_specs
from autocode.providers.engines.catalog import load_adapter, program_path
from autocode.providers.engines.versions import cached_version


def engines_found(path: str | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, spec in engine_specs().items():
        found = load_adapter(spec)
        program = program_path(found, path)
        entry: dict[str, Any] = {"engine": name, "program": found.program, "path": program, "version": None,
                                 "supported": None, "tested": found.tested}
        if program is None:
            entry["remedy"] = found.install
        else:
            version, problem = cached_version(found, program)
            entry["version"] = version
            entry["supported"] = bool(version and found.supported(version))
            if problem:
                entry["problem"] = problem
        out.append(entry)
    return out
