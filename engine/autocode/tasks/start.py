"""Launching a task: check the request, resolve its settings, make the prep copy, recall
memories, and write the run folder with its `launch.json`.

`prepare` does everything before the phase machine first runs; `TaskRun.start`
then commits the first state and advances. What is read here is frozen into
`launch.json` (see `launch.py`), so a resumed process sees the same task.
"""

from __future__ import annotations

import concurrent.futures
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autocode import gitsafe, scrub
from autocode import workspace as workspace_mod
from autocode.errors import UsageError
from autocode.providers import LOOP_SETTINGS, ProviderConfig, check_config
from autocode.remedy import Advice, Remedy, RemedyKind
from autocode.settings import require_trust
from autocode.tasks import store
from autocode.tasks.state import RUNS_DIR, TaskOptions


@dataclass
class Prepared:
    """A launched task's folder, ready for its first state."""

    root: Path
    task_id: str
    run_dir: Path
    launch: dict[str, Any]
    recall_error: str | None
    receipt: Any


def checked_runs_root(root: Path, *, create: bool = False) -> Path:
    """`.autocode/runs`, refused (exit 2, with the remedy) when it or `.autocode` is a link or a file."""
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.record.location import checked_folder

    return checked_folder(root, RUNS_DIR.name, create=create)


def workspace_root(workspace: Path | str) -> Path:
    return workspace_mod.root(workspace)  # the one check of a workspace (kind workspaceInvalid)


def new_task_id() -> str:
    return time.strftime("t-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(3)


def prepare(workspace: Path | str, brief: str, opts: TaskOptions) -> Prepared:
    """Check the request and make the run folder (nothing is written when a check fails)."""
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.tasks.launch import resolve_launch

    root = workspace_root(workspace)
    if not isinstance(brief, str) or not brief.strip():
        raise UsageError(Advice("the brief is empty; say what the task should do (",
                                Remedy(RemedyKind.NAME_ARGUMENT, argument="brief"), ")"))
    # Before the brief reaches the memory recall (an embedding endpoint), launch.json,
    # events or any model request: its credentials are replaced by `[redacted:<kind>]`.
    brief, brief_redacted = scrub.redact_secrets(brief)
    package = _check_package(root, opts.package)
    manifest = _check_manifest(opts.manifest)
    if opts.test_command is not None and not opts.test_command.strip():
        raise UsageError(Advice("", Remedy(RemedyKind.NAME_ARGUMENT, argument="test_command"),
                                " is empty; give the command that runs the tests"))
    flags = {
        k: v
        for k, v in {
            "test_command": opts.test_command,
            "provider": opts.provider,
            "model": opts.model,
            "base_url": opts.base_url,
            "api_key_env": opts.api_key_env,
            "engine": opts.engine,
            "agent": opts.agent,
        }.items()
        if v is not None
    }
    launch = resolve_launch(root, flags, package)
    if opts.warn:
        for warning in getattr(launch.settings_obj, "warnings", ()):
            opts.warn(str(warning))
    # Before anything is written or sent: the repository's destination values need its person's trust.
    require_trust(launch.settings_obj, "task start")
    values = launch.values
    config = ProviderConfig.from_dict(
        {
            "provider": values.get("provider") or "fixture",
            "model": values.get("model"),
            "base_url": values.get("base_url"),
            "api_key_env": values.get("api_key_env"),
            # A scenario given as a file is kept absolute so a resume from elsewhere finds it.
            "scenario": str(Path(opts.scenario).resolve()) if opts.scenario and Path(opts.scenario).is_file() else opts.scenario,
            "routes": values.get("routes") or {},
            **{name: values[name] for name in LOOP_SETTINGS if values.get(name) is not None},
        }
    )
    check_config(config)
    # A task runs the project's code (tests, baselines, agent commands): refuse before any copy
    # is made when it cannot be confined and the person did not turn the sandbox off.
    from autocode import sandbox  # lazy: not needed by `autocode task list`

    policy = sandbox.policy_from_settings(launch.settings_obj)
    sandbox.require(policy)
    # An engine needs no sandbox_network: in the sandbox it reaches only its endpoint, through
    # AutoCode's egress proxy (sandbox/egress.py).
    if opts.progress:
        opts.progress("requirements", "making the prep copy")
    task_id = new_task_id()
    agent = str(values.get("agent") or "implementer")
    # The copy waits on the file system most of the time; the memory
    # recall and HEAD are read beside it.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        recalled = pool.submit(_recall, launch.settings_obj, root, agent, task_id, brief)
        head = pool.submit(gitsafe.head, root)
        prep = opts.prep if opts.prep is not None else _make_copy(root, manifest, opts.progress)
        recall, head_sha = recalled.result(), head.result()
    cites, map_paths = _citations(root, prep)
    run_dir = checked_runs_root(root, create=True) / task_id
    _ensure_gitignore(root)
    # A run's state (brief, answers, test output) is its owner's alone: 0700 folders
    # and 0600 files (store.py), whatever the umask.
    run_dir.mkdir(mode=0o700)
    (run_dir / "evidence").mkdir(mode=0o700)
    if opts.progress and recall.get("error"):
        opts.progress("requirements", f"memory recall unavailable: {recall['error']}")
    launch_data = {
        "version": 1,
        "task_id": task_id,
        "workspace": str(root),
        "brief": brief,
        # Only the kinds: what was taken out, never the value.
        "brief_redacted": brief_redacted,
        "head": head_sha,
        "options": {
            "test_command": opts.test_command,
            "package": package,
            "manifest": str(manifest) if manifest else None,
            "scenario": opts.scenario,
        },
        "settings": launch.settings,
        # Which repository values the person had trusted when this run started (none asked: nothing-asked).
        "trust": {"status": launch.settings_obj.trust.status, "digest": launch.settings_obj.trust.digest}
        if launch.settings_obj.trust is not None else None,
        "values": values,
        "record": launch.record,
        "project_conventions": launch.conventions,
        "provider": config.to_dict(),
        "sandbox": policy.to_dict(),
        "prep": _prep_dict(prep),
        "citations": cites,
        "map_paths": map_paths,  # the repository map's files (providers.repomap), in inventory order
        "recall": recall,
    }
    store.write_json_atomic(run_dir / "launch.json", launch_data)
    return Prepared(root, task_id, run_dir, launch_data, recall.get("error"), recall.get("receipt"))


_PACKAGE = Remedy(RemedyKind.NAME_ARGUMENT, argument="package")


def _check_package(root: Path, package: str | None) -> str | None:
    if package is None:
        return None
    rel = Path(package)
    if rel.is_absolute():
        try:
            rel = rel.resolve().relative_to(root)
        except ValueError:
            raise UsageError(Advice("", _PACKAGE, f" {package} is outside the workspace {root}")) from None
    if ".." in rel.parts or not (root / rel).is_dir():
        raise UsageError(Advice("", _PACKAGE, f" {package} is not a folder inside the workspace; give its path "
                                f"relative to {root}"))
    return rel.as_posix()


def _check_manifest(manifest: str | Path | None) -> Path | None:
    if manifest is None:
        return None
    path = Path(manifest)
    if not path.is_file():
        raise UsageError(f"the manifest {path} does not exist; pass the path of the JSON manifest")
    return path.resolve()


def _make_copy(root: Path, manifest: Path | None, progress: Callable[[str, str], None] | None) -> Any:
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.prep import make_prep_copy

    if progress is None:
        return make_prep_copy(root, manifest=manifest)
    report = progress

    def copied(done: int, total: int) -> None:
        if done == total or done % 2000 == 0:
            report("requirements", f"prep copy: {done}/{total} entries")

    return make_prep_copy(root, manifest=manifest, progress=copied)


def _recall(settings_obj: Any, root: Path, agent: str, task_id: str, brief: str) -> dict[str, Any]:
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.tasks.launch import recall_memories

    try:
        return recall_memories(settings_obj, root, agent, task_id, brief)
    except Exception as exc:  # memory trouble must not block a task; it is reported
        return {"error": f"{type(exc).__name__}: {exc}", "project": [], "global": []}


NO_SOURCE_FILES = "(no source files yet: the workspace has nothing to cite)"


def citation_fallback(prep: Any) -> list[str]:
    """What a task cites when the workspace has no eligible file: its declared inputs, or a stated entry."""
    inputs = prep.get("inputs") if isinstance(prep, dict) else getattr(prep, "inputs", None)
    declared = [str(i.get("path") if isinstance(i, dict) else getattr(i, "path", "")) for i in inputs or []]
    return [p for p in declared if p] or [NO_SOURCE_FILES]


def _citations(root: Path, prep: Any) -> tuple[list[str], list[str]]:
    """(the first 20 citable paths, the first MAP_FILES of them for the repository map)."""
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.prep import citations
    from autocode.providers.repomap import MAP_FILES

    # The copy's own inventory when it has one: no second walk of the git listing.
    inv = getattr(prep, "inventory", None)
    paths = list(citations(root, limit=MAP_FILES, fallback=citation_fallback(prep), inv=inv))
    return paths[:20], paths


def _prep_dict(prep: Any) -> dict[str, Any]:
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.tasks.launch import _plain

    data = _plain(prep)
    if not isinstance(data, dict) or not data.get("copy"):
        raise UsageError("the prep result has no copy path")
    return data


def _ensure_gitignore(root: Path) -> None:
    # lazy: not needed by `autocode task list`, which imports this module
    from autocode.record import ensure_gitignore

    ensure_gitignore(root)

