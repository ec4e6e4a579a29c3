"""The language server's words for the engine's typed remedies (`autocode.remedy`).

The engine's messages carry the CLI's words (`--base-url`, `autocode task resume`), which a
person in an editor often cannot act on (VS Code with the bundled server has no `autocode`
command at all). A VS Code client is told the setting or palette command (`VSCODE`); any other
LSP client the `.autocode/config.toml` key or the LSP command (`LSP`).
"""

from __future__ import annotations

from typing import assert_never

from autocode import wire
from autocode.remedy import Face, Remedy, RemedyKind, and_list, in_config
from autocode_lsp.protocol import names

VSCODE_CLIENTS = frozenset({
    "Visual Studio Code", "Visual Studio Code - Insiders", "code-server", "VSCodium", "Code - OSS",
})
"""`clientInfo.name` of VS Code builds (vscode-languageclient sends `vscode.env.appName`)."""

MODEL_SETTINGS = "AutoCode: Open Model Settings"
"""The palette title of the extension's `autocode.openModelSettings` (editors/vscode/package.json)."""

_VSCODE_SETTINGS = {"base_url": "autocode.baseUrl", "model": "autocode.model"}
_VSCODE_ARGUMENTS = {"agent": "the agent name", "brief": "the brief you type", "feedback": "the feedback you type",
                     "package": "the package folder", "test_command": "the test command"}


class VSCode:
    """Settings and palette commands of the VS Code extension."""

    def phrase(self, remedy: Remedy) -> str:
        match remedy.kind:
            case RemedyKind.SET_SETTINGS:
                settings = and_list([_VSCODE_SETTINGS[k] for k in remedy.keys])
                keys = and_list(list(remedy.keys))
                comma = "," if len(remedy.keys) > 1 else ""
                return (f"set {settings} in VS Code's settings ({MODEL_SETTINGS}){comma} or {keys} "
                        "in .autocode/config.toml")
            case RemedyKind.SET_TEST_COMMAND:
                return "set test_command in .autocode/config.toml"
            case RemedyKind.TURN_OFF_SANDBOX:
                return ""
            case RemedyKind.USE_REAL_MODEL:
                return ("or, for a real model, set autocode.provider, autocode.model and autocode.baseUrl "
                        f"({MODEL_SETTINGS}) and run AutoCode: Set API Key")
            case RemedyKind.RESUME_TASK:
                return "the task's Resume action"
            case RemedyKind.GIVE_WORKSPACE:
                return "open the folder of your repository in VS Code (File > Open Folder)"
            case RemedyKind.LIST_TASKS:
                return "the AutoCode Tasks view lists"
            case RemedyKind.LIST_MEMORIES:
                return "the AutoCode Memory view lists"
            case RemedyKind.TRUST_REPOSITORY:
                return "run AutoCode: Trust Repository (it shows them and records your yes)"
            case RemedyKind.NAME_ARGUMENT:
                return _VSCODE_ARGUMENTS[remedy.argument]
            case _:
                assert_never(remedy.kind)


class Lsp:
    """Any other LSP client: `.autocode/config.toml` keys and the server's command names."""

    def phrase(self, remedy: Remedy) -> str:
        match remedy.kind:
            case RemedyKind.SET_SETTINGS | RemedyKind.SET_TEST_COMMAND:
                return in_config(remedy)
            case RemedyKind.TURN_OFF_SANDBOX:
                return ""
            case RemedyKind.USE_REAL_MODEL:
                return "or use a scenario with scripted 'edits'"
            case RemedyKind.RESUME_TASK:
                which = f" with taskId {remedy.task_id}" if remedy.task_id else ""
                return f"{names.TASK_RESUME}{which} or the task's Resume code action"
            case RemedyKind.GIVE_WORKSPACE:
                return "open the folder of your repository as a workspace folder, or pass it as the `workspace` argument"
            case RemedyKind.LIST_TASKS:
                where = f" (workspace {remedy.workspace})" if remedy.workspace else ""
                return f"{names.TASK_LIST}{where} shows"
            case RemedyKind.LIST_MEMORIES:
                return f"{names.MEMORY_LIST} shows"
            case RemedyKind.TRUST_REPOSITORY:
                return (f"say yes to your editor's prompt, or run {names.PROJECT_TRUST} with this error's "
                        "`data.digest` (it records your yes)")
            case RemedyKind.NAME_ARGUMENT:
                return f"the `{wire.camel(remedy.argument)}` argument"
            case _:
                assert_never(remedy.kind)


VSCODE = VSCode()
LSP = Lsp()
FACES: dict[str, Face] = {"vscode": VSCODE, "lsp": LSP}


def for_vscode(client_name: str) -> bool:
    return client_name in VSCODE_CLIENTS


def face_for(client_name: str) -> Face:
    return VSCODE if for_vscode(client_name) else LSP
