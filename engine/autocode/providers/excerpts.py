"""Text helpers shared by the OpenAI-compatible provider and its agent loop: a model's answer
without its Markdown fence, and excerpts of the files a task cites from its copy."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autocode.providers.base import ProviderContext


def strip_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
    return stripped


def file_excerpts(ctx: ProviderContext, paths: list[str], limit: int = 40000) -> str:
    if ctx.copy is None:
        return ""
    out: list[str] = []
    used = 0
    for rel in paths:
        path = ctx.copy / rel
        if ".." in rel.split("/") or not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        chunk = f"--- {rel}\n{text[:8000]}\n"
        if used + len(chunk) > limit:
            break
        out.append(chunk)
        used += len(chunk)
    return "".join(out)
