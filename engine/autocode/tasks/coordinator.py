"""The pilot coordinator: a checked prep copy and preflight, then a task started in the workspace.

It never answers a question, approves a plan or declares completion: it
starts the task through the public TaskRun interface and reports where
things are. A manifest that fails validation or preflight stops it before
any provider runs or any run directory exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autocode import gitsafe
from autocode.errors import UsageError
from autocode.prep import make_prep_copy
from autocode.tasks import store
from autocode.tasks.run import TaskRun
from autocode.tasks.start import workspace_root as _workspace_root
from autocode.tasks.state import TaskOptions


def pilot_prep(
    workspace: Path | str,
    manifest: Path | str,
    brief_file: Path | str,
    report: Path | str,
    *,
    options: TaskOptions | None = None,
) -> dict[str, Any]:
    """Run the checked copy and preflight, start the task, write the JSON report; return it."""
    root = _workspace_root(workspace)
    manifest_path = Path(manifest)
    brief_path = Path(brief_file)
    report_path = Path(report)
    for label, path in (("manifest", manifest_path), ("brief", brief_path)):
        if not path.is_file():
            raise UsageError(f"the {label} file {path} does not exist; pass the path of an existing file")
    own_folder = report_path.parent.resolve() == root / ".autocode"
    if not report_path.parent.is_dir() and not own_folder:
        raise UsageError(f"the report's folder {report_path.parent} does not exist; create it or pick another path")
    try:
        brief = brief_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the brief file {brief_path} as UTF-8 text: {exc}") from None
    if not brief.strip():
        raise UsageError(f"the brief file {brief_path} is empty; write the task in it")
    prep = make_prep_copy(root, manifest=manifest_path.resolve())
    opts = options or TaskOptions()
    if opts.scenario is None:
        # The coordinator's own default (for the fixture provider): ask nothing and
        # cite the declared inputs and the brief, so the run stops at plan approval.
        opts.scenario = "pilot"
    opts.prep = prep
    opts.manifest = manifest_path.resolve()
    run = TaskRun.start(root, brief, opts)
    snap = run.snapshot()
    prep_data = prep.to_dict()
    data = {
        "ok": True,
        "workspace": str(root),
        "head": prep_data.get("head") or gitsafe.head(root),
        "copy": prep_data.get("copy"),
        "prep": prep_data,
        "inputs": prep_data.get("inputs"),
        "manifest": str(manifest_path.resolve()),
        "brief": str(brief_path.resolve()),
        "task": {
            "id": snap.id,
            "run_dir": snap.run_dir,
            "state": snap.state,
            "needs": {"kind": snap.needs.kind},
            "done": snap.done,
        },
    }
    store.write_json_atomic(report_path.resolve(), data)  # creates .autocode/ when that is the folder
    return data
