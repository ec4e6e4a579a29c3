"""`autocode.doctor`, `autocode.project.forget` and `autocode.project.trust`: the settings report,
the learned record, and the person's trust in what the repository's settings files ask for."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from autocode.doctor import doctor_report, render_text
from autocode.record import forget_record
from autocode.settings import repository_trust, revoke_trust, trust_repository
from autocode_lsp import protocol, workspaces
from autocode_lsp.commands import command
from autocode_lsp.errors import domain_error, engine_call, invalid_arguments

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer


def _doctor(workspace: Path, flags: dict[str, str]) -> tuple[dict[str, Any], str]:
    report = doctor_report(workspace, flags=flags or None)
    return report.to_dict(), render_text(report)


@command(protocol.DOCTOR)
async def doctor(server: AutoCodeServer, args: protocol.WorkspaceArgs) -> protocol.DoctorResult:
    workspace = workspaces.resolve(server, args.workspace, command=protocol.DOCTOR)
    # lazy: the session's model settings live with its feature module
    from autocode_lsp.features.session import session_flags

    report, text = await engine_call(_doctor, workspace, session_flags(server))
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


def _trust(workspace: Path, args: protocol.TrustArgs) -> protocol.TrustResult:
    recorded = False
    if args.revoke:
        recorded = revoke_trust(workspace)
        trust = repository_trust(workspace)
    elif args.confirm:
        trust = trust_repository(workspace, digest=args.digest)
        recorded = bool(trust.asks)
    else:
        trust = repository_trust(workspace)
    data = trust.to_dict()
    return protocol.TrustResult(
        workspace=str(trust.workspace), status=data["status"], trusted=data["trusted"], says=data["says"],
        digest=data["digest"], asks=data["asks"], recorded=recorded,
    )


@command(protocol.PROJECT_TRUST)
async def trust(server: AutoCodeServer, args: protocol.TrustArgs) -> protocol.TrustResult:
    workspace = workspaces.resolve(server, args.workspace, command=protocol.PROJECT_TRUST)
    if args.confirm and not args.digest:
        raise invalid_arguments(
            "autocode.project.trust with `confirm: true` needs the `digest` of the values the person "
            "was shown (call it without `confirm` first, or take `data.digest` of the trustRequired error)"
        )
    if args.confirm and args.revoke:
        raise invalid_arguments("pass either `confirm: true` or `revoke: true`, not both")
    return await engine_call(_trust, workspace, args)
