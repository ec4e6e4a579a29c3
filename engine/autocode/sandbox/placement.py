"""Where things appear inside the sandbox: the copy at the workspace's own path, the
dependency folders prep leaves out (a `.venv`, `node_modules`, the folder of a python the
test command names) shown read-only from the workspace, and the mount points those need
inside the copy, made before the run and removed after it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

# Folders a suite needs that prep leaves out (they are ignored by git in almost every project).
DEPENDENCY_NAMES = (".venv", "venv", "node_modules")


def inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def shown_at(copy: Path, workspace: Path, path: Path) -> Path:
    """`path` (a host path) as the program sees it when the copy is shown at the workspace."""
    if copy == workspace or not inside(path, copy):
        return path
    return workspace / path.relative_to(copy)


def translate_words(argv: Sequence[str], copy: Path, workspace: Path) -> list[str]:
    """argv with each host path inside the copy written as the program sees it."""
    prefix = str(copy)
    out = []
    for word in argv:
        if word == prefix or word.startswith(prefix + os.sep):
            out.append(str(workspace) + word[len(prefix):])
        elif "=" in word and prefix in word:  # --junitxml=COPY/report.xml
            head, _, tail = word.partition("=")
            out.append(head + "=" + translate_words([tail], copy, workspace)[0])
        else:
            out.append(word)
    return out


def _python_folder(word: str, workspace: Path, cwd_seen: Path) -> Path | None:
    """The folder under the workspace holding a python the command names, relative to it."""
    if "\n" in word or len(word) > 4096:
        return None  # a text argument (an engine's instructions), not a program's path
    if "python" not in os.path.basename(word) and not word.endswith(("/pytest", "/tox", "/nox")):
        return None
    path = Path(word) if os.path.isabs(word) else cwd_seen / word
    path = Path(os.path.normpath(path))
    if not inside(path, workspace) or path == workspace:
        return None
    rel = path.relative_to(workspace)
    # The venv's root: the nearest ancestor with pyvenv.cfg, else the first folder below the workspace.
    for depth in range(len(rel.parts) - 1, 0, -1):
        candidate = Path(*rel.parts[:depth])
        if (workspace / candidate / "pyvenv.cfg").is_file():
            return candidate
    return Path(rel.parts[0]) if len(rel.parts) > 1 else None


def _empty_folder(path: Path) -> bool:
    if path.is_symlink() or not path.is_dir():
        return False
    with os.scandir(path) as entries:
        return next(entries, None) is None


def dependency_folders(copy: Path, workspace: Path, cwd: Path, argv: Sequence[str]) -> list[Path]:
    """Folders of the workspace (relative paths) to show read-only inside the copy: those the
    copy lacks and the workspace has, named `.venv`, `venv` or `node_modules`, or holding a
    python the command names and ignored by git there."""
    if copy == workspace:
        return []
    cwd_seen = shown_at(copy, workspace, cwd)
    candidates: list[Path] = []
    # The package folder the command runs in, then each folder above it up to the workspace.
    rel_cwd = cwd_seen.relative_to(workspace) if inside(cwd_seen, workspace) else Path()
    levels = [Path(*rel_cwd.parts[:n]) for n in range(len(rel_cwd.parts), -1, -1)]
    for level in levels:
        candidates += [level / name for name in DEPENDENCY_NAMES]
    for word in argv:
        folder = _python_folder(word, workspace, cwd_seen)
        if folder is not None:
            candidates.append(folder)
    shown: list[Path] = []
    others: list[Path] = []
    for rel in dict.fromkeys(candidates):
        source = workspace / rel
        if not source.is_dir() or (os.path.lexists(copy / rel) and not _empty_folder(copy / rel)):
            continue  # (an empty folder there is a mount point a killed run left behind)
        # The conventional names are dependency folders; any other folder only when git ignores
        # it (one prep left out for another reason stays out). Asking git costs two processes.
        (shown if rel.name in DEPENDENCY_NAMES else others).append(rel)
    if others:
        # lazy: gitsafe is only needed when a python lives in another left-out folder
        from autocode import gitsafe

        try:
            ignored = gitsafe.ignore_rules(workspace, [str(r) + "/" for r in others])
        except Exception:
            ignored = {}
        shown += [r for r in others if (str(r) + "/") in ignored or str(r) in ignored]
    return shown


@contextlib.contextmanager
def mount_points(folders: Sequence[Path]) -> Iterator[None]:
    """Make each missing folder (and its missing parents) for the run, and remove the ones made
    here afterwards, so the copy holds nothing the sandbox needed only to mount."""
    made: list[Path] = []
    try:
        for folder in folders:
            missing = []
            probe = folder
            while not os.path.lexists(probe):
                missing.append(probe)
                probe = probe.parent
            for path in reversed(missing):
                path.mkdir()
                made.append(path)
        yield
    finally:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir()
