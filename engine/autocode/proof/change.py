"""`autocode verify`: the same proof for a change AutoCode did not make.

The change is the work tree against HEAD (uncommitted and untracked files included), a commit
range `A..B`, or a branch (against its merge base with HEAD). The candidate is a fresh copy,
never the person's work tree: a prep copy for the work tree, or the commit's tree written out
from git's objects (no filters, no attributes, no hooks) for a range or a branch. The evidence
goes to `.autocode/runs/verify-<time>/`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autocode import gitsafe
from autocode.errors import UsageError
from autocode.remedy import Advice, Remedy, RemedyKind

Progress = Callable[[str], None]
_LINK, _GITLINK, _EXEC = "120000", "160000", "100755"


def _blob(root: Path, rev: str, path: str) -> bytes | None:
    proc = gitsafe.run(["cat-file", "blob", f"{rev}:{path}"], root, check=False)
    return proc.stdout if proc.returncode == 0 else None


def _rev(root: Path, name: str) -> str:
    proc = gitsafe.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"], root, check=False)
    sha = proc.stdout.decode("ascii", "replace").strip()
    if proc.returncode != 0 or not sha:
        raise UsageError(f"{name!r} is not a commit in this repository; give a commit, a branch or A..B")
    return sha


def _changed(root: Path, base: str, other: str | None) -> list[str]:
    """Paths that differ between `base` and `other` (None: the work tree, untracked included)."""
    args = ["diff", "--no-renames", "--no-ext-diff", "--no-textconv", "--name-only", "-z", base]
    if other is not None:
        args.append(other)
    found = [p.decode("utf-8", "surrogateescape") for p in gitsafe.split_z(gitsafe.run([*args, "--"], root).stdout) if p]
    if other is None:
        found += [p for p in gitsafe.untracked_files(root, exclude=["/.autocode/"]) if not p.endswith("/")]
    return sorted(dict.fromkeys(found))


def _write_tree(root: Path, rev: str, dest: Path) -> None:
    """The commit's files, straight from git's objects."""
    listing = gitsafe.run(["ls-tree", "-r", "-z", "--full-tree", rev], root).stdout
    for raw in gitsafe.split_z(listing):
        if not raw:
            continue
        meta, _, name = raw.partition(b"\t")
        mode, _kind, sha = meta.decode("ascii").split()
        rel = name.decode("utf-8", "surrogateescape")
        if mode == _GITLINK or rel.startswith("/") or ".." in Path(rel).parts:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = gitsafe.run(["cat-file", "blob", sha], root).stdout
        if mode == _LINK:
            os.symlink(os.fsdecode(data), target)
        else:
            target.write_bytes(data)
            if mode == _EXEC:
                target.chmod(0o755)


def verify_change(
    workspace: Path | str,
    *,
    revisions: str | None = None,
    branch: str | None = None,
    test_command: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Prove a change with the project's tests in a fresh copy; the verdict with its evidence."""
    # lazy: settings, prep and the runner are needed only once a verification starts
    from autocode.atomic import write_atomically
    from autocode.proof.run import prove
    from autocode.settings import resolve_settings
    from autocode.workspace import root as workspace_root

    root = workspace_root(workspace)
    if revisions and branch:
        raise UsageError("give either a commit range or a branch, not both")
    settings = resolve_settings(root, flags={"test_command": test_command} if test_command else None)
    command = settings.value("test_command")
    if not command:
        raise UsageError(Advice("no test command is known for this repository; ", Remedy(RemedyKind.SET_TEST_COMMAND)))
    say = progress or (lambda _message: None)
    made: Path | None = None
    prep: Any = None
    if revisions or branch:
        if revisions:
            left, sep, right = revisions.partition("..")
            if not sep or not left or not right or right.startswith("."):
                raise UsageError(f"{revisions!r} is not a range; write it as A..B")
            base, candidate = _rev(root, left), _rev(root, right)
        else:
            candidate = _rev(root, str(branch))
            head = _rev(root, "HEAD")
            base = gitsafe.output(["merge-base", head, candidate], root).strip()
        paths = _changed(root, base, candidate)
        made = Path(tempfile.mkdtemp(prefix="autocode-verify-"))
        copy = made / "source"
        copy.mkdir()
        say(f"writing {candidate[:12]} into a fresh copy")
        _write_tree(root, candidate, copy)
        described = f"{base[:12]}..{candidate[:12]}"
    else:
        # lazy: the prep copier, only for a work-tree verification
        from autocode.prep import make_prep_copy

        base = _rev(root, "HEAD")
        paths = _changed(root, base, None)
        say("making a prep copy of the work tree")
        prep = make_prep_copy(root)
        copy = Path(prep.copy)
        described = f"the work tree against {base[:12]}"
    if not paths:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise UsageError(f"there is no change to verify ({described} changes no file)")
    # lazy: the generated .autocode/.gitignore keeps the runs and the cache out of git
    from autocode.record import ensure_gitignore

    ensure_gitignore(root)
    run_dir = root / ".autocode" / "runs" / time.strftime("verify-%Y%m%d-%H%M%S", time.gmtime())
    run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        proof = prove(
            str(command),
            copy=copy,
            workspace=root,
            base_files={p: _blob(root, base, p) for p in paths},
            framework=settings.value("framework"),
            timeout=float(settings.value("test_timeout") or 600),
            output_file=run_dir / "test-output.txt",
            cache_dir=root / ".autocode" / "cache" / "baseline",
            progress=say,
        )
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        elif prep is not None:
            # lazy: housekeeping of the prep copy made above
            from autocode.prep.retention import release_task_copy

            release_task_copy(root, prep.copy, run_dir, 0)
    data = {"change": described, "files": paths, "evidence": str(run_dir), **proof.to_dict()}
    write_atomically(run_dir / "proof.json", json.dumps(data, indent=2).encode())
    write_atomically(run_dir / "tests.json", json.dumps(proof.results()).encode())
    return data
