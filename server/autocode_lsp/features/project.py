"""`autocode.doctor` and `autocode.project.forget`: the learned record and settings report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode.doctor import doctor_report, render_text
from autocode.record import forget_record
from autocode_lsp import protocol, workspaces
from autocode_lsp.commands import command
from autocode_lsp.errors import domain_error, engine_call

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer


def _doctor(workspace: Path) -> tuple[dict[str, Any], str]:
    report = doctor_report(workspace)
    return report.to_dict(), render_text(report)


@command(protocol.DOCTOR)
async def doctor(server: AutoCodeServer, args: protocol.WorkspaceArgs) -> protocol.DoctorResult:
    workspace = workspaces.resolve(server, args.workspace, command=protocol.DOCTOR)
    report, text = await engine_call(_doctor, workspace)
    # Like ruff's debug command: the text is both returned and written to the log.
    server.log_to_client(text)
    return protocol.DoctorResult(report=report, text=text)


def _forget(workspace: Path) -> tuple[bool, str]:
    result = forget_record(workspace)
    return bool(result.removed), str(result.path)


@command(protocol.PROJECT_FORGET)
async def forget(server: AutoCodeServer, args: protocol.ForgetArgs) -> protocol.ForgetResult:
    workspace = workspaces.resolve(server, args.workspace, command=protocol.PROJECT_FORGET)
    if not args.confirm:
        raise domain_error(
            "confirmationRequired",
            f"forgetting removes {workspace}/.autocode/project.json (what AutoCode learned about "
            "this project); ask the person, then call autocode.project.forget again with "
            "`confirm: true`",
            workspace=str(workspace),
        )
    removed, path = await engine_call(_forget, workspace)
    return protocol.ForgetResult(removed=removed, path=path)
