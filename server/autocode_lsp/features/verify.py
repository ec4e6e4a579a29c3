"""`autocode.verify`: the proof for a change AutoCode did not make, in a fresh copy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autocode.proof.change import verify_change
from autocode.tasks.models import Proof
from autocode_lsp import protocol, workspaces
from autocode_lsp.commands import command
from autocode_lsp.errors import engine_call
from autocode_lsp.progress import WorkProgress

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer


@command(protocol.VERIFY)
async def verify(server: AutoCodeServer, args: protocol.VerifyArgs) -> protocol.VerifyResult:
    workspace = workspaces.resolve(server, args.workspace, command=protocol.VERIFY)
    progress = WorkProgress.start(server, "AutoCode: verify my changes", "making a fresh copy")

    def work() -> dict[str, Any]:
        return verify_change(
            workspace, revisions=args.range, branch=args.branch, test_command=args.test_command,
            progress=lambda message: progress.report(message),
        )

    try:
        data = await engine_call(work)
    except BaseException:
        progress.end("verification failed")
        raise
    proof = Proof.model_validate(data)
    progress.end(proof.summary)
    return protocol.VerifyResult(
        change=str(data["change"]), files=list(data["files"]), evidence=str(data["evidence"]), proof=proof
    )
