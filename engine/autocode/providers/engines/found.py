"""Doctor's `engines` section: each registered engine's program on PATH, with its version. The
registry in `autocode.doctor` loads it when a report is built."""

from __future__ import annotations

from typing import Any

from autocode.doctor import DoctorContext, Section
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


def _engines(ctx: DoctorContext) -> Any:
    chosen = ctx.snapshot.value("engine")
    return {"chosen": chosen, "engines": engines_found()}


def _render_engines(data: Any) -> list[str]:
    if "error" in data:
        return [f"Engines: PROBLEM: {data['error']}"]
    chosen = data["chosen"]
    lines = [f"Engines: {chosen} implements tasks" if chosen else "Engines: none chosen (AutoCode's own loop implements)"]
    for item in data["engines"]:
        if item["path"] is None:
            lines.append(f"  {item['engine']}: not on PATH ({item['remedy']})")
            continue
        state = "" if item["supported"] else " PROBLEM: a version AutoCode does not read"
        tested = "tested" if item["tested"] else "untested here"
        lines.append(f"  {item['engine']}: {item['version'] or 'unknown version'} at {item['path']} ({tested}){state}")
        if item.get("problem"):
            lines.append(f"    {item['problem']}")
    return lines


def engines_section() -> Section:
    return Section("engines", _engines, _render_engines)
