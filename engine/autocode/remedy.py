"""What a person can do about an error, as typed data each face phrases in its own words.

An engine error that has a remedy a face would word differently (a CLI flag, a VS Code
setting, an LSP command) carries an `Advice`: the text before the remedy, the typed `Remedy`
and the text after it. The message is `before + face.phrase(remedy) + after`. The CLI's
phrasing (`TERMINAL`, flags and `autocode` commands) is also the message the engine keeps
(the exception's `message`, a failed task's `error.message`); the language server phrases
the same data for VS Code (settings, palette commands) and for other LSP clients (LSP command
names). A leaf: it imports nothing of AutoCode.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol, assert_never


class RemedyKind(enum.StrEnum):
    SET_SETTINGS = "setSettings"
    """Set the model settings named by `keys` (`base_url`, `model`)."""
    SET_TEST_COMMAND = "setTestCommand"
    """Name the project's test command."""
    TURN_OFF_SANDBOX = "turnOffSandbox"
    """Run the task's commands without a sandbox (a follow-up to setting `sandbox = "off"`)."""
    USE_REAL_MODEL = "useRealModel"
    """The offline fixture provider has nothing scripted: script edits, or configure a real model."""
    RESUME_TASK = "resumeTask"
    """Resume the task (`task_id` when known)."""
    GIVE_WORKSPACE = "giveWorkspace"
    """Say which repository to work in (a CLI flag, an LSP argument or folder, where MCP started)."""
    LIST_TASKS = "listTasks"
    """List the tasks (of `workspace`, when named) to find the right id."""
    LIST_MEMORIES = "listMemories"
    """List the memories visible here to find the right id."""
    TRUST_REPOSITORY = "trustRepository"
    """Review and trust the values the repository at `workspace` asks for."""
    NAME_ARGUMENT = "nameArgument"
    """The command's argument `argument` (one of `ARGUMENTS`), named where the message talks of it."""


SETTING_KEYS = ("base_url", "model")
"""The settings a `SET_SETTINGS` remedy may name (each face knows its word for every one)."""

ARGUMENTS = ("agent", "brief", "feedback", "package", "test_command")
"""The arguments a `NAME_ARGUMENT` remedy may name (each face knows its word for every one)."""


@dataclass(frozen=True)
class Remedy:
    kind: RemedyKind
    keys: tuple[str, ...] = ()
    task_id: str = ""
    workspace: str = ""
    argument: str = ""

    def __post_init__(self) -> None:
        unknown = [k for k in self.keys if k not in SETTING_KEYS]
        if unknown:
            raise ValueError(f"no face knows how to name the settings {unknown}")
        if self.argument not in ("", *ARGUMENTS):
            raise ValueError(f"no face knows how to name the argument {self.argument!r}")
        if (self.kind == RemedyKind.NAME_ARGUMENT) != bool(self.argument):
            raise ValueError("a nameArgument remedy, and only one, names an argument")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "keys": list(self.keys), "taskId": self.task_id,
                "workspace": self.workspace, "argument": self.argument}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Remedy:
        return cls(RemedyKind(data["kind"]), tuple(data.get("keys") or ()), str(data.get("taskId") or ""),
                   str(data.get("workspace") or ""), str(data.get("argument") or ""))


@dataclass(frozen=True)
class Advice:
    """A message with a remedy in it: `before + phrase(remedy) + after`."""

    before: str
    remedy: Remedy
    after: str = ""

    def worded(self, face: Face) -> str:
        return self.before + face.phrase(self.remedy) + self.after

    def to_dict(self) -> dict[str, Any]:
        return {**self.remedy.to_dict(), "before": self.before, "after": self.after}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Advice:
        return cls(str(data["before"]), Remedy.from_dict(data), str(data.get("after") or ""))


class Face(Protocol):
    def phrase(self, remedy: Remedy) -> str: ...


def and_list(words: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`: the faces' way of naming several things."""
    return " and ".join(words) if len(words) <= 2 else ", ".join(words[:-1]) + " and " + words[-1]


def in_config(remedy: Remedy) -> str:
    """A settings remedy as `.autocode/config.toml` keys: the words of every face without a
    settings UI or flags of its own (any LSP client, an MCP agent)."""
    if remedy.kind == RemedyKind.SET_TEST_COMMAND:
        return "set test_command in .autocode/config.toml"
    named = "them" if len(remedy.keys) > 1 else and_list(list(remedy.keys))
    return f"set {named} in .autocode/config.toml"


_FLAGS = {"base_url": "--base-url", "model": "--model"}
_ARGUMENT_FLAGS = {"agent": "--agent NAME", "brief": "--brief or --brief-file", "feedback": "--feedback TEXT",
                   "package": "--package", "test_command": "--test-command"}


class Terminal:
    """The CLI's phrasing: flags and `autocode` sub-commands."""

    def phrase(self, remedy: Remedy) -> str:
        match remedy.kind:
            case RemedyKind.SET_SETTINGS:
                named = "them" if len(remedy.keys) > 1 else and_list(list(remedy.keys))
                flags = and_list([_FLAGS[k] for k in remedy.keys])
                return f"set {named} in .autocode/config.toml or pass {flags}"
            case RemedyKind.SET_TEST_COMMAND:
                return "pass --test-command, or set test_command in .autocode/config.toml"
            case RemedyKind.TURN_OFF_SANDBOX:
                return " or pass --sandbox off"
            case RemedyKind.USE_REAL_MODEL:
                return "or use a scenario with scripted 'edits'"
            case RemedyKind.RESUME_TASK:
                return f"`autocode task resume {remedy.task_id}`" if remedy.task_id else "`autocode task resume`"
            case RemedyKind.GIVE_WORKSPACE:
                return "pass the folder of your repository with --workspace"
            case RemedyKind.LIST_TASKS:
                where = f" --workspace {remedy.workspace}" if remedy.workspace else ""
                return f"`autocode task list{where}` shows"
            case RemedyKind.LIST_MEMORIES:
                return "`autocode memory list` shows"
            case RemedyKind.TRUST_REPOSITORY:
                return f"run `autocode trust --workspace {remedy.workspace}` (it shows them and records your yes)"
            case RemedyKind.NAME_ARGUMENT:
                return _ARGUMENT_FLAGS[remedy.argument]
            case _:
                assert_never(remedy.kind)


TERMINAL = Terminal()
