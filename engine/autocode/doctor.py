"""`doctor`: one report of settings origins, the learned record's health and the environment.

The report is a dict of sections built in order: the core sections, then
the registered ones. A part of AutoCode (memory, prep ...) or an extension
module adds its section with `register_section(provider)`: the provider is a
function returning a `Section`, or "module:function" naming one, imported
only when a report is built. A failing provider shows up as an error in its
own section instead of breaking the report. Existing keys and their shapes
never change.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# pydantic is loaded anyway by the settings a report resolves; this module is never imported at start-up.
from pydantic import BaseModel, ConfigDict

from autocode import gitsafe
from autocode.errors import UsageError
from autocode.settings import resolve_settings
from autocode.workspace import WorkspaceInvalid

Json = Any


@dataclass(frozen=True)
class DoctorContext:
    workspace: Path
    flags: Mapping[str, Any] | None
    package: Path | None
    snapshot: Any  # autocode.settings.SettingsSnapshot (kept loose so this module imports cheaply)
    root: Path  # the original workspace (differs when `workspace` is a prep copy or worktree)


@dataclass(frozen=True)
class Section:
    name: str
    build: Callable[[DoctorContext], Json]
    render: Callable[[Json], list[str]] | None = None


# ---- core sections -------------------------------------------------------


def _settings(ctx: DoctorContext) -> Json:
    return ctx.snapshot.to_dict()


def _render_settings(data: Json) -> list[str]:
    rows = [("setting", "value", "origin", "source")]
    notes: dict[int, list[str]] = {}
    for name, item in data.items():
        rows.append((name, _show(item["value"]), item["origin"], item["source"]))
        notes[len(rows) - 1] = [
            f"shadows {_show(s['value'])} ({s['origin']}, {s['source']})" for s in item["shadowed"]
        ]
    widths = [min(max(len(r[i]) for r in rows), 48) for i in range(3)]
    lines = ["Settings"]
    for index, row in enumerate(rows):
        lines.append("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
        lines += [" " * (widths[0] + 4) + note for note in notes.get(index, [])]
    return lines


def _warnings(ctx: DoctorContext) -> Json:
    return list(ctx.snapshot.warnings)


def _render_warnings(data: Json) -> list[str]:
    return [f"Warning: {w}" for w in data]


def _trust(ctx: DoctorContext) -> Json:
    # a section's module loads when a report is built (see the registry rule)
    from autocode.settings import user_config_path

    trust = ctx.snapshot.trust
    data: dict[str, Any] = trust.to_dict() if trust is not None else {}
    data["ignored"] = [item.to_dict() for item in ctx.snapshot.ignored]
    config = user_config_path()
    data["user_config"] = {"path": str(config), "exists": config.is_file()}
    return data


def _render_trust(data: Json) -> list[str]:
    status, config = data.get("status"), data["user_config"]
    lines = [f"User config: {config['path']}" + ("" if config["exists"] else " (not created)")]
    lines.append("Repository trust: " + {
        "trusted": "trusted; its files may name these destinations:",
        "not-trusted": "not trusted; its files ask to (not done until you trust them):",
        "changed": "its values changed since you trusted it; its files ask to (not done until you trust them):",
    }.get(str(status), "its files name no destination"))
    lines += [f"  - {sentence}" for sentence in data.get("says", [])]
    if status in ("not-trusted", "changed"):
        lines.append(f"  to trust exactly these values: {data['command']}")
    for item in data["ignored"]:
        lines.append(f"Ignored: {item['name']} = {_show(item['value'])} ({item['origin']}, {item['source']})")
        lines.append(f"  {item['reason']}")
    return lines


def _record(ctx: DoctorContext) -> Json:
    data = ctx.snapshot.record.to_dict()
    record = data.get("data") or {}
    if record.get("test_command"):
        # lazy: read only when the record has a learned command
        from autocode.record.origin import learned_origin

        data["test_command_origin"] = learned_origin(ctx.snapshot.workspace, record["test_command"])
    return data


def _render_record(data: Json) -> list[str]:
    lines = [f"Learned record: {data['status']}  ({data['path']})"]
    lines += [f"  problem: {p}" for p in data["problems"]]
    if data["status"] not in ("valid", "missing"):
        lines.append("  it is ignored: fix it, or run `autocode forget` to remove it")
    record = data["data"]
    if record:
        lines.append(f"  framework: {_show(record['framework'])}  test_command: {_show(record['test_command'])}")
        if record["test_command"]:
            origin = data.get("test_command_origin")
            lines.append(
                f"  test_command learned by task {origin['task_id']} ({origin['time']})" if origin
                else "  test_command learned by a task this machine has no record of (a teammate's, or cleaned up)"
            )
        for route in record["routes"]:
            lines.append(f"  route: {route['role']} -> {route['provider']}:{route['model']}")
        if record["human_pause_states"]:
            lines.append(f"  pause states that needed a person: {', '.join(record['human_pause_states'])}")
    return lines


def _conventions(ctx: DoctorContext) -> Json:
    record = ctx.snapshot.record.record
    return [c.to_dict() for c in record.conventions] if record is not None else []


def _render_conventions(data: Json) -> list[str]:
    lines = [f"Learned conventions: {len(data)}"]
    for item in data:
        lines += [f"  Q: {item['question']}", f"  A: {item['answer']}"]
    return lines


def _omitted(ctx: DoctorContext) -> Json:
    # a section's module loads when a report is built (see the registry rule)
    from autocode.record import last_merge_omitted

    return last_merge_omitted(ctx.root)


def _render_omitted(data: Json) -> list[str]:
    if not data or not data["fields"]:
        return []
    return [f"Omitted at the last learning ({data['at']}), by field:"] + [f"  {f}" for f in data["fields"]]


def _gitignore(ctx: DoctorContext) -> Json:
    # a section's module loads when a report is built (see the registry rule)
    from autocode.record import gitignore_state

    return gitignore_state(ctx.root).to_dict()


def _render_gitignore(data: Json) -> list[str]:
    state = data["state"]
    explain = {
        "missing": "not created yet (the first learning creates it)",
        "current": "generated, current template",
        "outdated": f"generated from template {data['template_version']}; the next learning upgrades it",
        "custom": "custom content, kept as it is",
        "unavailable": "cannot be read",
    }[state]
    lines = [f".autocode/.gitignore: {explain}"]
    if data["record_hidden"]:
        lines.append(f"  your ignore rules hide the record ({data['hidden_by']})")
        lines.append(f"  to share it anyway: {data['hint']}")
    return lines


def _git(ctx: DoctorContext) -> Json:
    return gitsafe.check_version().to_dict()


def _render_git(data: Json) -> list[str]:
    return [f"git: {data['message']}" if data["ok"] else f"git: PROBLEM: {data['message']}"]


CORE_SECTIONS: tuple[Section, ...] = (
    Section("settings", _settings, _render_settings),
    Section("warnings", _warnings, _render_warnings),
    Section("trust", _trust, _render_trust),
    Section("record", _record, _render_record),
    Section("conventions", _conventions, _render_conventions),
    Section("omitted", _omitted, _render_omitted),
    Section("gitignore", _gitignore, _render_gitignore),
    Section("git", _git, _render_git),
)

def _memory(ctx: DoctorContext) -> Json:
    # a section's module loads when a report is built (see the registry rule)
    from autocode.memory import doctor_section

    return doctor_section(ctx.snapshot)


def _render_memory(data: Json) -> list[str]:
    if "error" in data:
        return [f"Memory: PROBLEM: {data['error']}"]
    lines = [f"Memory: {data['store']} at {data.get('location', '(unknown)')}"]
    if data.get("status") == "ok":
        lines.append(f"  {data.get('memories', 0)} memories")
        index = data.get("index") or {}
        if index:
            lines.append(f"  index: {index.get('state')} ({index.get('detail')})")
    elif "status" in data:
        lines.append(f"  {data['status']}")
    lines.append(f"  search: {data['search_mode']} ({data['why']})")
    return lines


def memory_section() -> Section:
    return Section("memory", _memory, _render_memory)


def _autocode_folder(ctx: DoctorContext) -> Json:
    # a section's module loads when a report is built (see the registry rule)
    from autocode.record.location import autocode_folder_state

    return autocode_folder_state(ctx.root)


def _render_autocode_folder(data: Json) -> list[str]:
    if data.get("ok"):
        return [f".autocode: {data['state']}  ({data['path']})"]
    return [f".autocode: PROBLEM: {data['message']}"]


def autocode_folder_section() -> Section:
    return Section("autocode_folder", _autocode_folder, _render_autocode_folder)


SectionProvider = str | Callable[[], Section]
"""A function returning a `Section`, or "module:function" naming one (imported when a report is built)."""

SECTION_PROVIDERS: list[SectionProvider] = [
    "autocode.proof.doctor_section:test_interpreter_section",
    memory_section,
    autocode_folder_section,
    "autocode.prep.doctor_section:prep_section",
    "autocode.sandbox.doctor_section:sandbox_section",
    "autocode.providers.engines.found:engines_section",
]
"""The registered sections after the core ones, in report order."""


def register_section(provider: SectionProvider) -> SectionProvider:
    """Add a section to every later report (once; usable as a decorator); returns the provider."""
    if provider not in SECTION_PROVIDERS:
        SECTION_PROVIDERS.append(provider)
    return provider


def unregister_section(provider: SectionProvider) -> None:
    if provider in SECTION_PROVIDERS:
        SECTION_PROVIDERS.remove(provider)


def _section_of(provider: SectionProvider) -> Section:
    if callable(provider):
        return provider()
    module_name, _, func_name = provider.partition(":")
    section: Section = getattr(importlib.import_module(module_name), func_name)()
    return section


def _extra_sections() -> list[Section]:
    sections = []
    for provider in list(SECTION_PROVIDERS):
        try:
            sections.append(_section_of(provider))
        except Exception as exc:
            name = provider.partition(":")[0].rsplit(".", 1)[-1] if isinstance(provider, str) else provider.__name__
            sections.append(Section(name, _failed(f"cannot load this section: {exc}")))
    return sections


def _failed(message: str) -> Callable[[DoctorContext], Json]:
    return lambda ctx: {"error": message}


def _show(value: Any) -> str:
    if value is None:
        return "(unset)"
    return value if isinstance(value, str) else json.dumps(value)


# ---- the report ----------------------------------------------------------


class DoctorReport(BaseModel):
    """One doctor report: the workspace (and package) it is about, then each section's data in
    report order (core sections first). `to_dict()` is `autocode doctor --json` and the `report`
    of the server's `autocode.doctor`: `{workspace, package?, <section>: data, ...}`."""

    model_config = ConfigDict(frozen=True)

    workspace: str
    package: str | None = None
    sections: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workspace": self.workspace}
        if self.package is not None:
            out["package"] = self.package
        out.update(self.sections)
        return out


def doctor_report(
    workspace: Path | str,
    flags: Mapping[str, Any] | None = None,
    package: Path | str | None = None,
) -> DoctorReport:
    """The doctor report, typed. Raises WorkspaceInvalid (exit 2) for a missing workspace
    and SettingsError (exit 2) for a settings file AutoCode cannot read."""
    # the record is where built-in sections live: imported when used (see the registry rule)
    from autocode.record import workspace_root

    snapshot = resolve_settings(workspace, flags=flags, package=package)
    path = snapshot.workspace
    ctx = DoctorContext(path, flags, snapshot.package, snapshot, workspace_root(path))
    sections: dict[str, Any] = {}
    for section in (*CORE_SECTIONS, *_extra_sections()):
        if section.name in ("workspace", "package"):
            raise ValueError(f"a doctor section may not be named {section.name!r}")
        try:
            sections[section.name] = section.build(ctx)
        except (UsageError, WorkspaceInvalid):
            raise
        except Exception as exc:
            if section in CORE_SECTIONS:
                raise
            sections[section.name] = {"error": f"{type(exc).__name__}: {exc}"}
    package_text = str(snapshot.package) if snapshot.package is not None else None
    return DoctorReport.model_validate({"workspace": str(path), "package": package_text, "sections": sections})


def build_report(
    workspace: Path | str,
    flags: Mapping[str, Any] | None = None,
    package: Path | str | None = None,
) -> dict[str, Any]:
    """The doctor report as the JSON-ready dict of `autocode doctor --json` (`DoctorReport.to_dict`)."""
    return doctor_report(workspace, flags, package).to_dict()


def render_text(report: Mapping[str, Any] | DoctorReport) -> str:
    """The report as aligned, readable text."""
    if not isinstance(report, Mapping):
        report = report.to_dict()
    renderers = {s.name: s.render for s in (*CORE_SECTIONS, *_extra_sections())}
    lines = [f"AutoCode doctor: {report['workspace']}"]
    if "package" in report:
        lines.append(f"package: {report['package']}")
    for name, data in report.items():
        if name in ("workspace", "package"):
            continue
        render = renderers.get(name)
        block = render(data) if render else [f"{name}: {_show(data)}"]
        if block:
            lines += ["", *block]
    return "\n".join(lines) + "\n"

