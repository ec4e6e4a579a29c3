"""doctor's `prep` section: what the prep copies and staging folders hold, and
`keep_prep_copies`. The registry in `autocode.doctor` loads it when a report is built."""

from __future__ import annotations

from typing import Any

from autocode.doctor import DoctorContext, Section
from autocode.prep.retention import usage

Json = Any


def _prep(ctx: DoctorContext) -> Json:
    data = usage(ctx.root)
    item = ctx.snapshot["keep_prep_copies"]
    data["keep_prep_copies"] = {"value": item.value, "origin": item.origin, "source": item.source}
    return data


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _render_prep(data: Json) -> list[str]:
    if "error" in data:
        return [f"Prep copies: PROBLEM: {data['error']}"]
    copies, staging, keep = data["copies"], data["staging"], data["keep_prep_copies"]
    lines = [
        f"Prep copies: {copies['count']} ({copies['files']} files, {_size(copies['bytes'])}) in {data['path']}",
        f"  staging folders: {staging['count']} ({staging['files']} files, {_size(staging['bytes'])})"
        + (f", {staging['abandoned']} left by a killed prep" if staging["abandoned"] else ""),
        f"  keep_prep_copies = {keep['value']} ({keep['origin']}, {keep['source']})",
    ]
    if copies["count"] or staging["count"]:
        lines.append("  `autocode prep prune` removes the copies no task in progress uses")
    return lines


def prep_section() -> Section:
    return Section("prep", _prep, _render_prep)
