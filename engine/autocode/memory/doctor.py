"""The memory section of `autocode doctor`: which store, where (no secrets), which search mode and why."""

from __future__ import annotations

from typing import Any


def doctor_section() -> Any:
    """The `autocode.doctor.Section` for memory (listed as "autocode.memory.doctor:doctor_section")."""
    from autocode.doctor import DoctorContext, Section

    def build(ctx: DoctorContext) -> dict[str, Any]:
        from autocode.memory import doctor_section as memory_health

        return memory_health(ctx.snapshot)

    return Section("memory", build, render)


def render(data: Any) -> list[str]:
    if not isinstance(data, dict):
        return [f"memory: {data}"]
    lines = [
        "memory:",
        f"  store        {data.get('store')} at {data.get('location')}",
        f"  status       {data.get('status')}",
        f"  search mode  {data.get('search_mode')} ({data.get('why')})",
    ]
    if "memories" in data:
        lines.append(f"  memories     {data['memories']} (cap per agent and repository: {data.get('max_count')})")
    if data.get("vectors"):
        lines.append(f"  vectors      {data['vectors']}")
    return lines
