"""`autocode.prep.run`: a checked prep copy of the workspace, reporting `$/progress`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autocode.prep import make_prep_copy
from autocode_lsp import protocol, workspaces
from autocode_lsp.commands import command
from autocode_lsp.errors import engine_call
from autocode_lsp.progress import WorkProgress

if TYPE_CHECKING:
    from autocode_lsp.server import AutoCodeServer


@command(protocol.PREP_RUN)
async def prep_run(server: AutoCodeServer, args: protocol.PrepRunArgs) -> protocol.PrepResult:
    workspace = workspaces.resolve(server, args.workspace, command=protocol.PREP_RUN)
    manifest = None
    if args.manifest is not None:
        manifest = workspaces.confine_manifest(server, args.manifest, workspace, command=protocol.PREP_RUN)
    progress = WorkProgress.start(server, "AutoCode: prep copy", "listing files")

    last = [-5]

    def copied(done: int, total: int) -> None:
        percent = int(done * 100 / total) if total else 100
        # A report per file would flood the client; one per 5% is plenty.
        if percent < last[0] + 5 and done != total:
            return
        last[0] = percent
        progress.report(f"copied {done} of {total}", percent)

    def work() -> dict[str, Any]:
        result: dict[str, Any] = make_prep_copy(workspace, manifest, copied).to_dict()
        return result

    try:
        data = await engine_call(work)
    except BaseException:
        progress.end("failed")
        raise
    progress.end(f"copy ready: {data['copy']}")
    return protocol.PrepResult(
        id=str(data["id"]), workspace=data.get("workspace"), copy=str(data["copy"]),
        head=data.get("head"), inputs=list(data.get("inputs") or []),
        counts=dict(data.get("counts") or {}),
        nested_components=list(data.get("nestedComponents") or []),
        handoff=data.get("handoff"),
    )
