"""A throwaway doctor section for tests: `line_count`, the number of lines of README.md.

It is the whole of adding a doctor section: this one module and one registry
entry (`register_section` on import, as an extension module named by
`AUTOCODE_EXTENSIONS` does).
"""

from __future__ import annotations

from typing import Any

from autocode.doctor import DoctorContext, Section, register_section


def _build(ctx: DoctorContext) -> dict[str, Any]:
    readme = ctx.root / "README.md"
    lines = len(readme.read_text(encoding="utf-8").splitlines()) if readme.is_file() else None
    return {"ok": lines is not None, "lines": lines}


def _render(data: dict[str, Any]) -> list[str]:
    return [f"README.md: {data['lines']} lines" if data["ok"] else "README.md: PROBLEM: none"]


@register_section
def line_count_section() -> Section:
    return Section("line_count", _build, _render)
