"""doctor's `sandbox` section: which sandbox tests and commands run in, what they may
write, see and reach. The registry in `autocode.doctor` loads it when a report is built."""

from __future__ import annotations

from typing import Any

from autocode import sandbox
from autocode.doctor import DoctorContext, Section

Json = Any


def _sandbox(ctx: DoctorContext) -> Json:
    return sandbox.describe(sandbox.policy_from_settings(ctx.snapshot))


def _render_sandbox(data: Json) -> list[str]:
    if "error" in data:
        return [f"Sandbox: PROBLEM: {data['error']}"]
    lines = []
    if data["state"] == "unavailable":
        lines.append(f"Sandbox: PROBLEM: none can be made here, so tasks refuse to run code: {data['why']}")
    elif data["state"] == "off":
        lines.append("Sandbox: off (sandbox = \"off\"): tests and commands run unconfined")
    else:
        lines.append(f"Sandbox: {data['kind']} ({data['why']})")
    lines.append("  writable: " + "; ".join(data["writable"]))
    if data["hidden"]:
        lines.append("  hidden: " + "; ".join(data["hidden"]))
    lines.append(f"  network: {data['network']}")
    if "engine_network" in data:
        lines.append(f"  an engine's network: {data['engine_network']}")
    lines.append("  environment: " + ", ".join(data["env_names"]) + " (credential names never)")
    lines += [f"  note: {note}" for note in data["notes"]]
    return lines


def sandbox_section() -> Section:
    return Section("sandbox", _sandbox, _render_sandbox)
