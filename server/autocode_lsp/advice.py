"""Advice a VS Code user can follow: the engine's messages name CLI flags and commands
(`--base-url`, `autocode forget`), which a person in VS Code (often with the bundled server and
no `autocode` command at all) cannot run. For a client whose `clientInfo` names VS Code, the
errors it is sent and the error of each task snapshot name the setting or palette command
instead. Other clients get the messages as they are.
"""

from __future__ import annotations

import re
from typing import Any

VSCODE_CLIENTS = frozenset({
    "Visual Studio Code", "Visual Studio Code - Insiders", "code-server", "VSCodium", "Code - OSS",
})
"""`clientInfo.name` of VS Code builds (vscode-languageclient sends `vscode.env.appName`)."""

_MODEL_SETTINGS = "AutoCode: Open Model Settings"
_FOR_VSCODE = (
    (re.compile(r"set them in \.autocode/config\.toml or pass --base-url and --model"),
     f"set autocode.baseUrl and autocode.model in VS Code's settings ({_MODEL_SETTINGS}), or base_url and "
     "model in .autocode/config.toml"),
    (re.compile(r"set model in \.autocode/config\.toml or pass --model"),
     f"set autocode.model in VS Code's settings ({_MODEL_SETTINGS}) or model in .autocode/config.toml"),
    (re.compile(r"or use a scenario with scripted 'edits'"),
     "or, for a real model, set autocode.provider, autocode.model and autocode.baseUrl "
     f"({_MODEL_SETTINGS}) and run AutoCode: Set API Key"),
    (re.compile(r"pass --test-command, or set test_command"), "set test_command"),
    (re.compile(r" or pass --sandbox off\."), "."),
    (re.compile(r"run `autocode forget`"), "run AutoCode: Forget Project Memory"),
    (re.compile(r"`autocode doctor`|`autocode\.doctor`"), "AutoCode: Doctor"),
    (re.compile(r"`autocode task resume[^`]*`"), "the task's Resume action"),
)


def for_vscode(client_name: str) -> bool:
    return client_name in VSCODE_CLIENTS


def editor_wording(message: str, client_name: str) -> str:
    """`message` as a person in this client can act on it."""
    if not for_vscode(client_name):
        return message
    for pattern, replacement in _FOR_VSCODE:
        message = pattern.sub(replacement, message)
    return message


def advise_wire(value: Any, client_name: str) -> Any:
    """A command result or notification on the wire with each task's error message reworded
    (a snapshot, a list of them, or a didChange's `task`); other values are returned as they are."""
    if not for_vscode(client_name) or not isinstance(value, dict):
        return value
    error = value.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        error["message"] = editor_wording(error["message"], client_name)
    result = value.get("result")
    if isinstance(result, dict):
        advise_wire(result, client_name)
    task = value.get("task")
    if isinstance(task, dict):
        advise_wire(task, client_name)
    tasks = value.get("tasks")
    if isinstance(tasks, list):
        for item in tasks:
            advise_wire(item, client_name)
    return value
