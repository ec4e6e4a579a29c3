"""The titles of the code actions a stock client shows: one place, so the messages that tell the
person what to do next name the very menu entry they will see ("run the code action 'AutoCode:
approve plan r2 of …'"), never a command id with its arguments."""

from __future__ import annotations


def short(text: str, limit: int = 50) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def review_plan(revision: int, brief: str) -> str:
    return f"AutoCode: review plan r{revision} of '{short(brief)}'"


def approve_plan(revision: int, brief: str) -> str:
    return f"AutoCode: approve plan r{revision} of '{short(brief)}'"


def request_changes(revision: int, brief: str) -> str:
    return f"AutoCode: request changes to plan r{revision} of '{short(brief)}'…"


def review_changes(brief: str) -> str:
    return f"AutoCode: review the changes of '{short(brief)}'"


def apply_changes(brief: str, unproven: str | None = None) -> str:
    if unproven:
        return f"AutoCode: apply the {unproven} changes of '{short(brief)}' (no test proves them)"
    return f"AutoCode: apply the changes of '{short(brief)}'"


def answer(question: str) -> str:
    return f"AutoCode: answer '{short(question, 60)}'…"


def cancel(brief: str) -> str:
    return f"AutoCode: cancel '{short(brief)}'"


def resume(brief: str, step: str) -> str:
    return f"AutoCode: resume '{short(brief)}' (interrupted while {step})"


def retry_verification(brief: str) -> str:
    return f"AutoCode: retry verification of '{short(brief)}'"


def run(title: str) -> str:
    """How a message asks for a code action: by its title, found on any file of the workspace."""
    return f"run the code action '{title}' (on any file of the workspace)"
