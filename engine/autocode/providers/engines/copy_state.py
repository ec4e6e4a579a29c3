"""The prep copy before and after an engine ran: which files it changed, and what they held.

An engine edits the copy with its own tools, so AutoCode cannot record each file before its
first edit as its own loop does. Instead the copy's files go into a throwaway git object store
in the run folder before the run (`git add -A` with a separate git dir and index: the copy's
own ignore rules apply, nothing the copy configures runs, see gitsafe) and again after; the
two trees differ exactly where the engine changed something.
"""

from __future__ import annotations

from pathlib import Path

from autocode import gitsafe


def _git(store: Path, copy: Path, *args: str, check: bool = True) -> bytes:
    env = {"GIT_INDEX_FILE": str(store / "index"), "GIT_CEILING_DIRECTORIES": str(copy.parent)}
    proc = gitsafe.run([f"--git-dir={store}", f"--work-tree={copy}", *args], copy, env=env, check=check)
    return proc.stdout


def capture(copy: Path, store: Path, scratch: tuple[str, ...] = ()) -> str:
    """The copy's files as a tree in `store` (made on first use); returns the tree's id."""
    if not (store / "HEAD").is_file():
        store.parent.mkdir(parents=True, exist_ok=True)
        gitsafe.run(["init", "-q", "--bare", str(store)], store.parent,
                    env={"GIT_CEILING_DIRECTORIES": str(store.parent.parent)})
        # The CLI's own files in its working folder are never part of the change.
        (store / "info").mkdir(exist_ok=True)
        (store / "info" / "exclude").write_text("".join(f"{p}\n" for p in (".git", *scratch)), encoding="utf-8")
    _git(store, copy, "add", "-A", "--", ".")
    return _git(store, copy, "write-tree").decode().strip()


def changes(copy: Path, store: Path, before: str, after: str) -> dict[str, str | None]:
    """Each path the engine changed, with its content before the run (None: it did not exist)."""
    raw = _git(store, copy, "diff-tree", "-r", "-z", "--no-renames", "--name-status", before, after)
    words = [w.decode("utf-8", "surrogateescape") for w in gitsafe.split_z(raw)]
    out: dict[str, str | None] = {}
    for status, rel in zip(words[::2], words[1::2], strict=False):
        if status.startswith("A"):
            out[rel] = None
        else:
            blob = _git(store, copy, "cat-file", "blob", f"{before}:{rel}")
            out[rel] = blob.decode("utf-8", "surrogateescape")
    return out
