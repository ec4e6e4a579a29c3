"""Prep copies built from real repositories: what is copied, what never is, and races."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from autocode import gitsafe
from autocode.errors import SetupError
from autocode.prep import (
    citations,
    copier,
    core,
    inventory,
    make_investigator_copy,
    make_prep_copy,
)
from support import git, make_repo, write_files
from support.audit import only_inside

SECRET = b"SECRET-VALUE-never-copied\n"
ODD_NAMES = ["new\nline.txt", "with space.txt", "-rf", "--help.md"]
NON_UTF8 = os.fsdecode(b"caf\xe9.bin")


def files_under(root: Path) -> dict[str, bytes | str]:
    """Relative path -> bytes (files), "->target" (links), "/" (folders)."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = "->" + os.readlink(path)
            elif os.path.isdir(path):
                out[rel] = "/"
            else:
                out[rel] = Path(path).read_bytes()
    return out


def prep_dirs(ws: Path) -> list[str]:
    prep = ws / ".autocode" / "prep"
    return sorted(p.name for p in prep.iterdir() if p.name != ".gitignore") if prep.exists() else []


@pytest.fixture(scope="module")
def kitchen(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A workspace with every kind of content; returns (workspace, copy, marker folder)."""
    base = tmp_path_factory.mktemp("kitchen")
    markers = base / "markers"
    markers.mkdir()
    sub_src = make_repo(base / "subsrc", {"lib.py": "v1\n", ".gitignore": "*.tmp\n"})
    ws = make_repo(
        base / "ws",
        {
            "src/app.py": "print('app')\n",
            "docs/guide.md": "guide\n",
            "empty.txt": b"",
            "tool.sh": "#!/bin/sh\necho tool\n",
            "suid.sh": "#!/bin/sh\n",
            ".gitignore": "node_modules/\n.venv/\nbuild/\n.env\n*.env\n",
            ".gitattributes": "hidden.txt export-ignore\nsubst.txt export-subst\n*.txt filter=marker\n",
            "hidden.txt": "export-ignored but in the work tree\n",
            "subst.txt": "$Format:%H$\n",
            "became-fifo": "tracked, then replaced by a FIFO\n",
            **{name: f"odd {i}\n" for i, name in enumerate(ODD_NAMES)},
        },
        commit=False,
    )
    (ws / NON_UTF8).write_bytes(b"latin-1 name\n")
    os.chmod(ws / "tool.sh", 0o755)
    os.chmod(ws / "suid.sh", 0o6755)
    write_files(ws, {"config/.env": "FORCE_TRACKED=1\n"})
    git(ws, "add", "-A")
    git(ws, "add", "-f", "config/.env")
    git(ws, "submodule", "add", "-q", str(sub_src), "libs/sub")
    git(ws, "commit", "-q", "-m", "initial")
    # Ignored content of every flavour, and a file ignored only through .git/info/exclude.
    write_files(
        ws,
        {
            "node_modules/dep/index.js": SECRET,
            ".venv/lib/site.py": SECRET,
            "build/out.o": SECRET,
            ".env": SECRET,
            "secret.env": SECRET,
            "local-only.txt": SECRET,
        },
    )
    (ws / ".git" / "info" / "exclude").write_text("local-only.txt\n")
    # Dirty and untracked source.
    (ws / "src" / "app.py").write_text("print('dirty')\n")
    write_files(ws, {"src/new_module.py": "new\n", "untracked with space.md": "u\n"})
    # A dirty submodule: modified, untracked and (its own) ignored files.
    (ws / "libs/sub/lib.py").write_text("v2 dirty\n")
    write_files(ws, {"libs/sub/extra.py": "extra\n", "libs/sub/cache.tmp": SECRET})
    # An untracked nested repository with its own ignore rules and an fsmonitor hook.
    nested = make_repo(ws / "tools" / "nested", {"tool.py": "tool\n", ".gitignore": "*.secret\n"})
    write_files(nested, {"x.secret": SECRET, "fresh.py": "fresh\n"})
    # Links: kept in-tree file and folder links; outside, dangling and looping links left out.
    os.symlink("src/app.py", ws / "app-link.py")
    os.symlink("docs", ws / "docs-link")
    os.symlink(str(ws / "docs" / "guide.md"), ws / "abs-guide.md")
    os.symlink("/etc/passwd", ws / "passwd-link")
    os.symlink("../../etc", ws / "etc-up")
    os.symlink("loop-b", ws / "loop-a")
    os.symlink("loop-a", ws / "loop-b")
    os.symlink("nowhere.txt", ws / "dangling")
    os.mkfifo(ws / "a-fifo")
    (ws / "became-fifo").unlink()
    os.mkfifo(ws / "became-fifo")
    # Configuration that would run commands if git were asked the wrong things.
    hook = markers / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {markers}/$(basename $0)-ran\ncat\n")
    hook.chmod(0o755)
    hooks = ws / ".git" / "hooks"
    for name in ("post-checkout", "pre-commit", "post-index-change", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {markers}/hook-{name}\n")
        (hooks / name).chmod(0o755)
    for repo in (ws, nested):
        git(repo, "config", "core.fsmonitor", str(hook))
    git(ws, "config", "filter.marker.clean", f"sh -c 'touch {markers}/clean-ran; cat'")
    git(ws, "config", "filter.marker.smudge", f"sh -c 'touch {markers}/smudge-ran; cat'")
    git(ws, "config", "diff.external", str(hook))
    (ws / "hidden.txt").write_text("export-ignored, dirty\n")

    with only_inside(ws) as events:
        result = make_prep_copy(ws)
    assert any(e[0] == "open" for e in events) and any(e[0] == "subprocess.Popen" for e in events)
    return ws, result.copy, markers


def test_copy_location_and_staging(kitchen: tuple[Path, Path, Path]) -> None:
    ws, copy, _ = kitchen
    assert copy.parent.parent == ws / ".autocode" / "prep"
    assert copy.name == "source"
    assert sorted(p.name for p in copy.parent.iterdir()) == ["source"]


@pytest.mark.parametrize(
    "rel",
    [
        "src/app.py", "docs/guide.md", "empty.txt", "config/.env", "hidden.txt", "subst.txt",
        "src/new_module.py", "untracked with space.md", "libs/sub/lib.py", "libs/sub/extra.py",
        "libs/sub/.gitignore", "tools/nested/tool.py", "tools/nested/fresh.py",
        *ODD_NAMES, NON_UTF8,
    ],
)
def test_source_is_copied_byte_for_byte(kitchen: tuple[Path, Path, Path], rel: str) -> None:
    ws, copy, _ = kitchen
    assert (copy / rel).read_bytes() == (ws / rel).read_bytes()
    assert not (copy / rel).is_symlink()


@pytest.mark.parametrize(
    "rel",
    [
        "node_modules", ".venv", "build", ".env", "secret.env", "local-only.txt",
        "libs/sub/cache.tmp", "tools/nested/x.secret", ".git", "libs/sub/.git",
        "tools/nested/.git", ".autocode", "passwd-link", "etc-up", "loop-a", "loop-b",
        "dangling", "a-fifo", "became-fifo",
    ],
)
def test_excluded_content_is_absent(kitchen: tuple[Path, Path, Path], rel: str) -> None:
    _, copy, _ = kitchen
    assert not os.path.lexists(copy / rel)


def test_no_secret_bytes_anywhere(kitchen: tuple[Path, Path, Path]) -> None:
    _, copy, _ = kitchen
    for rel, data in files_under(copy).items():
        assert not (isinstance(data, bytes) and SECRET in data), rel


def test_no_hook_filter_or_fsmonitor_ran(kitchen: tuple[Path, Path, Path]) -> None:
    _, _, markers = kitchen
    assert sorted(p.name for p in markers.iterdir()) == ["hook.sh"]


def test_links(kitchen: tuple[Path, Path, Path]) -> None:
    _, copy, _ = kitchen
    assert os.readlink(copy / "app-link.py") == "src/app.py"
    assert os.readlink(copy / "docs-link") == "docs"
    assert (copy / "docs-link" / "guide.md").read_text() == "guide\n"
    # An absolute link into the workspace is rewritten to stay inside the copy.
    assert os.readlink(copy / "abs-guide.md") == "docs/guide.md"


def test_modes(kitchen: tuple[Path, Path, Path]) -> None:
    ws, copy, _ = kitchen
    assert stat.S_IMODE(os.stat(ws / "suid.sh").st_mode) & 0o6000 == 0o6000
    assert stat.S_IMODE(os.stat(copy / "tool.sh").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(copy / "suid.sh").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(copy / "empty.txt").st_mode) == 0o644


def test_counts(kitchen: tuple[Path, Path, Path]) -> None:
    ws, _, _ = kitchen
    inv = inventory(ws)
    assert sorted(inv.components) == ["libs/sub", "tools/nested"]
    assert inv.excluded["specialFile"] == 1  # the tracked path now a FIFO; git never lists new FIFOs
    assert "a-fifo" not in inv.paths()
    assert inv.excluded["ignored"] >= 6


def test_every_invocation_gets_a_new_copy(kitchen: tuple[Path, Path, Path]) -> None:
    ws, copy, _ = kitchen
    before = prep_dirs(ws)
    again = make_prep_copy(ws)
    assert again.copy != copy and again.id not in before
    assert prep_dirs(ws) == sorted([*before, again.id])
    # The earlier copy is untouched, and the new one did not copy it.
    assert (copy / "src" / "app.py").exists()
    assert not (again.copy / ".autocode").exists()


def test_uninitialized_submodule_is_an_empty_folder(kitchen: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ws, _, _ = kitchen
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws), str(clone))
    assert (clone / "libs" / "sub").is_dir() and not (clone / "libs" / "sub" / ".git").exists()
    result = make_prep_copy(clone)
    assert (result.copy / "libs" / "sub").is_dir()
    assert list((result.copy / "libs" / "sub").iterdir()) == []
    assert result.counts["emptyFolders"] == 1


def test_investigator_copy_handoff(kitchen: tuple[Path, Path, Path]) -> None:
    ws, _, _ = kitchen
    result = make_investigator_copy(ws)
    assert result.handoff is not None
    assert result.handoff.checks_dir == result.copy
    assert result.handoff.role == "investigator"
    assert (result.handoff.checks_dir / "src" / "app.py").read_text() == "print('dirty')\n"
    assert (result.handoff.checks_dir / "libs" / "sub" / "lib.py").read_text() == "v2 dirty\n"
    assert (result.handoff.checks_dir / "tools" / "nested" / "fresh.py").exists()
    data = result.to_dict()
    assert data["handoff"]["checksDir"] == str(result.copy)
    assert data["head"] == git(ws, "rev-parse", "HEAD").strip()
    json.dumps(data)


# --- refusals: nothing half-made stays ------------------------------------------------------


@pytest.mark.parametrize(
    ("links", "fragment"),
    [
        ({"alias": "secret.env"}, "'alias': the link alias -> secret.env"),
        ({"a": "b", "b": "secret.env"}, "'a': the link a -> b -> secret.env"),
        ({"deps": "node_modules"}, "ignored by git (.gitignore:1: node_modules/)"),
        ({"deep": "node_modules/dep/index.js"}, "ignored by git"),
        ({"cfg": ".git/config"}, "inside .git or .autocode"),
    ],
    ids=["alias", "chain", "folder", "into-folder", "git-dir"],
)
def test_alias_to_ignored_content_is_refused(tmp_path: Path, links: dict[str, str], fragment: str) -> None:
    ws = make_repo(tmp_path / "ws", {"src/a.py": "a\n", ".gitignore": "node_modules/\n*.env\n"})
    write_files(ws, {"secret.env": SECRET, "node_modules/dep/index.js": SECRET})
    for name, target in links.items():
        os.symlink(target, ws / name)
    os.symlink("/etc/passwd", ws / "passwd-link")
    os.symlink("../../etc", ws / "etc-up")
    before = files_under(ws / "src")
    with pytest.raises(SetupError) as info, only_inside(ws):
        make_prep_copy(ws)
    assert files_under(ws / "src") == before
    assert info.value.kind == "aliasToIgnored"
    assert fragment in info.value.message
    assert "Remedy" in info.value.message and "Do not turn off git isolation" in info.value.message
    assert not (ws / ".autocode").exists()


@pytest.mark.parametrize("plant", [".autocode", ".autocode/prep"])
def test_planted_link_at_destination(tmp_path: Path, plant: str) -> None:
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / plant).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, ws / plant)
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws)
    assert info.value.kind == "destinationUnsafe"
    assert "symbolic link" in info.value.message and "Remedy" in info.value.message
    assert list(elsewhere.iterdir()) == []


def test_planted_link_at_copy_id_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / ".autocode" / "prep").mkdir(parents=True)
    os.symlink(elsewhere, ws / ".autocode" / "prep" / "planted")
    ids = iter(["planted", "fresh"])
    monkeypatch.setattr(core, "new_prep_id", lambda: next(ids))
    result = make_prep_copy(ws)
    assert result.id == "fresh"
    assert (result.copy / "a.py").read_text() == "a\n"
    assert list(elsewhere.iterdir()) == []


def slow_first_walks(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Make the first untracked and ignored walks wait 30 s before git starts.

    They stand in for walks that went through a folder swapped for a link to `/`
    and are listing the whole machine (a race git loses when it read the folder's
    parent before the swap and opens the folder after it). Returns the commands
    of the walks that were slowed.
    """
    slowed: list[list[str]] = []
    real = gitsafe.command

    def command(args: Sequence[str]) -> list[str]:
        full = real(args)
        if list(args[:2]) == ["ls-files", "-z"] and "-o" in args and len(slowed) < 2:
            slowed.append(full)
            sleeper = "import os, sys, time; time.sleep(30); os.execvp(sys.argv[1], sys.argv[1:])"
            return [sys.executable, "-c", sleeper, *full]
        return full

    monkeypatch.setattr(gitsafe, "command", command)
    return slowed


def swap_pkg_for_link_to_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: tuple[str, str],
                              seen: list[str] | None = None) -> Path:
    """A workspace whose folder `pkg` is moved out and replaced by a link to `/` when the copy
    reports the (event, path) `when`; every path the copy reports goes to `seen`."""
    ws = make_repo(tmp_path / "ws", {"pkg/a.py": "a\n", "pkg/passwd": "mine\n", "z.py": "z\n"})

    def swap(event: str, path: str) -> None:
        if seen is not None:
            seen.append(path)
        if (event, path) == when:
            os.rename(ws / "pkg", tmp_path / "pkg-moved")
            os.symlink("/", ws / "pkg")

    monkeypatch.setattr(copier, "_test_hook", swap)
    return ws


@pytest.mark.timeout(20)
def test_folder_swapped_for_link_before_it_is_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy finds a tracked folder is a link now: git's walks, which may be following
    it, are stopped and started again, and what was below the folder is left out."""
    ws = swap_pkg_for_link_to_root(tmp_path, monkeypatch, ("dir", "pkg"))
    slowed = slow_first_walks(monkeypatch)
    with only_inside(ws):
        result = make_prep_copy(ws)
    assert len(slowed) == 2  # both walks were slowed, and the copy did not wait for them
    assert not os.path.lexists(result.copy / "pkg")
    assert (result.copy / "z.py").read_text() == "z\n"
    assert result.counts["excluded"]["belowSymlinkOrFile"] == 2
    assert prep_dirs(ws) == [result.id]


@pytest.mark.timeout(20)
def test_folder_swapped_for_link_while_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder was open (and is read through its descriptor, never through the link):
    on leaving it the copy sees its name leads elsewhere now, stops git's walks and fails."""
    opened: list[str] = []
    ws = swap_pkg_for_link_to_root(tmp_path, monkeypatch, ("file", "pkg/a.py"), opened)
    slow_first_walks(monkeypatch)
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws)
    assert info.value.kind == "changedDuringCopy"
    assert "'pkg'" in info.value.message and "replaced" in info.value.message
    assert "pkg/passwd" in opened  # read through the folder's descriptor before the check
    assert prep_dirs(ws) == []


@pytest.mark.timeout(20)
def test_a_walk_that_does_not_end_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    slow_first_walks(monkeypatch)
    monkeypatch.setattr(gitsafe, "LISTING_TIMEOUT", 1.0)
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws)
    assert info.value.kind == "gitError"
    assert "more than 1 s" in info.value.message and "remove the link" in info.value.message
    assert prep_dirs(ws) == []


def test_file_appended_during_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_repo(tmp_path / "ws", {"data.txt": "x" * 5000, "other.py": "o\n"})

    def append(event: str, path: str) -> None:
        if event == "file" and path == "data.txt":
            with open(ws / "data.txt", "a") as f:
                f.write("more")

    monkeypatch.setattr(copier, "_test_hook", append)
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws)
    assert info.value.kind == "changedDuringCopy"
    assert "'data.txt' changed" in info.value.message
    assert prep_dirs(ws) == []


def test_file_replaced_after_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_repo(tmp_path / "ws", {"pkg/a.py": "a\n"})
    (tmp_path / "other").write_text("other\n")

    def replace(event: str, path: str) -> None:
        # Between the lstat that lists the file and the open that copies it.
        if event == "listed" and path == "pkg/a.py":
            os.replace(tmp_path / "other", ws / "pkg" / "a.py")

    monkeypatch.setattr(copier, "_test_hook", replace)
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws)
    assert "'pkg/a.py' was replaced" in info.value.message
    assert prep_dirs(ws) == []


def test_deleted_tracked_file_is_skipped(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"keep.py": "k\n", "gone.py": "g\n"})
    (ws / "gone.py").unlink()
    result = make_prep_copy(ws)
    assert not (result.copy / "gone.py").exists()
    assert result.counts["excluded"]["deletedFromWorkTree"] == 1
    again = make_prep_copy(ws)  # the first copy is not counted as ignored content
    assert "ignored" not in again.counts["excluded"]


def test_tracked_path_below_a_folder_now_a_link(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"lib/x.py": "mine\n", "a.py": "a\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_bytes(SECRET)
    (ws / "lib" / "x.py").unlink()
    (ws / "lib").rmdir()
    os.symlink(outside, ws / "lib")
    result = make_prep_copy(ws)
    assert not (result.copy / "lib" / "x.py").exists()
    assert result.counts["excluded"]["belowSymlinkOrFile"] == 1
    assert result.counts["excluded"]["linkOutsideWorkspace"] == 1


def test_merge_conflict_paths_are_listed_once(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"c.txt": "base\n"})
    git(ws, "checkout", "-q", "-b", "other")
    (ws / "c.txt").write_text("other\n")
    git(ws, "commit", "-qam", "other")
    git(ws, "checkout", "-q", "main")
    (ws / "c.txt").write_text("main\n")
    git(ws, "commit", "-qam", "main")
    git(ws, "merge", "-q", "other", check=False)
    assert inventory(ws).paths().count("c.txt") == 1
    result = make_prep_copy(ws)
    assert b"<<<<<<<" in (result.copy / "c.txt").read_bytes()


@pytest.mark.parametrize(
    ("setup", "kind"),
    [("missing", "workspaceInvalid"), ("plain", "workspaceInvalid"), ("subdir", "workspaceInvalid")],
)
def test_bad_workspace(tmp_path: Path, setup: str, kind: str) -> None:
    if setup == "missing":
        ws = tmp_path / "nope"
    elif setup == "plain":
        ws = tmp_path / "plain"
        ws.mkdir()
    else:
        ws = make_repo(tmp_path / "repo", {"sub/a.py": "a\n"}) / "sub"
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws)
    assert info.value.kind == kind
    assert "pass" in info.value.message or "git init" in info.value.message
    assert not (ws / ".autocode").exists()


# --- citations ---------------------------------------------------------------------------


def test_citations(tmp_path: Path) -> None:
    ws = make_repo(
        tmp_path / "ws",
        {"src/main.py": "m\n", "README.md": "r\n", ".gitignore": "*.env\nnode_modules/\n"},
    )
    # 30 cache files that sort before the sources: excluded before the limit applies.
    write_files(ws, {f".cache/a{i:02}.txt": "c\n" for i in range(30)})
    write_files(ws, {"__pycache__/m.cpython-311.pyc": b"\0", "notes.md": "n\n", "secret.env": SECRET})
    write_files(ws, {"node_modules/x.js": SECRET})
    os.symlink("src/main.py", ws / "alias.py")
    os.symlink("secret.env", ws / "to-secret.md")
    os.symlink("missing.py", ws / "dangling.py")
    os.symlink("/etc/passwd", ws / "outside.txt")
    os.symlink(".cache/a00.txt", ws / "to-cache.txt")
    got = citations(ws, limit=20)
    assert got == [".gitignore", "README.md", "src/main.py", "alias.py", "notes.md"]
    assert citations(ws, limit=2) == [".gitignore", "README.md"]


def test_citations_of_empty_workspace_give_the_fallback(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", commit=False)
    assert citations(ws, fallback=["(no source files yet)"]) == ["(no source files yet)"]
    assert citations(ws) == []


# --- the command ------------------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autocode", "prep", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_report(tmp_path: Path) -> None:
    import hashlib

    data = b"proof\n"
    ws = make_repo(
        tmp_path / "ws",
        {"pilot-public/PROOF.md": data, "src/a.py": "a\n", "gone.py": "g\n", ".gitignore": "*.env\n"},
    )
    (ws / "gone.py").unlink()
    write_files(ws, {"secret.env": SECRET, "new.py": "n\n"})
    os.symlink("/etc/passwd", ws / "passwd-link")
    os.symlink("src/a.py", ws / "alias.py")
    manifest = tmp_path / "m.json"
    digest = hashlib.sha256(data).hexdigest()
    manifest.write_text(
        json.dumps({"inputs": [{"path": "pilot-public/PROOF.md", "type": "file", "mode": "0644", "size": 6, "sha256": digest}]})
    )
    report = ws / ".autocode" / "prep-report.json"
    proc = run_cli("--workspace", str(ws), "--manifest", str(manifest), "--report", str(report), "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # not a terminal: no progress bar
    out = json.loads(proc.stdout)
    saved = json.loads(report.read_text())
    assert out["report"] == str(report)
    assert out["copy"] == saved["copy"] and Path(saved["copy"]).is_dir()
    assert Path(saved["copy"]).parent.parent == ws / ".autocode" / "prep"
    assert saved["workspace"] == str(ws.resolve())
    assert saved["inputs"] == [
        {"path": "pilot-public/PROOF.md", "type": "file", "mode": "0644", "size": 6, "sha256": digest,
         "verified": ["workspace", "copy"]}
    ]
    assert saved["head"] == git(ws, "rev-parse", "HEAD").strip()
    counts = saved["counts"]
    assert (counts["files"], counts["symlinks"], counts["emptyFolders"]) == (4, 1, 0)
    assert counts["bytes"] == sum(len(x) for x in (data, b"a\n", b"n\n", b"*.env\n"))
    assert counts["excluded"] == {"deletedFromWorkTree": 1, "ignored": 1, "linkOutsideWorkspace": 1}
    assert saved["handoff"]["checksDir"] == saved["copy"]
    text = run_cli("--workspace", str(ws), "--manifest", str(manifest))
    assert text.returncode == 0, text.stderr
    assert "Input verified in workspace and copy: pilot-public/PROOF.md" in text.stdout
    assert f"HEAD: {saved['head']}" in text.stdout
    assert "Left out: deletedFromWorkTree 1, ignored 1, linkOutsideWorkspace 1" in text.stdout


@pytest.mark.timeout(120)
def test_cli_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    import pty

    ws = make_repo(tmp_path / "ws", {f"d{i % 7}/f{i}.txt": f"{i}\n" for i in range(600)})
    code = (
        "import sys; from autocode.cli import main, prep; prep.ProgressBar.DELAY = 0; "
        "sys.exit(main(sys.argv[1:]))"
    )
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, "prep", "--workspace", str(ws), "--json"],
            stdout=subprocess.PIPE, stderr=follower, timeout=110,
        )
        os.close(follower)
        follower = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["counts"]["files"] == 600  # the bar never mixes into stdout
    assert b"\rcopying [" in drawn and b"250/600 entries" in drawn
    assert drawn.rstrip().endswith(b"600/600 entries")


@pytest.mark.timeout(120)
def test_memory_does_not_grow_with_file_size(tmp_path: Path) -> None:
    """A 128 MiB declared input is copied and hashed twice with a flat peak memory."""
    import hashlib

    ws = make_repo(tmp_path / "ws", {"small.txt": "s\n"})
    big = ws / "pilot-public" / "big.bin"
    big.parent.mkdir()
    block = bytes(range(256)) * 4096  # 1 MiB, not all zeros
    digest = hashlib.sha256()
    with open(big, "wb") as f:
        for _ in range(128):
            f.write(block)
            digest.update(block)
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"inputs": [
        {"path": "pilot-public/big.bin", "type": "file", "mode": "0644", "size": 128 << 20, "sha256": digest.hexdigest()}
    ]}))
    code = (
        "import json, resource, sys\n"
        "from autocode.prep import make_prep_copy\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "result = make_prep_copy(sys.argv[1], sys.argv[2])\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps({'grew_kib': after - before, 'bytes': result.counts['bytes']}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(ws), str(manifest)], capture_output=True, timeout=110)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["bytes"] == (128 << 20) + 2
    assert got["grew_kib"] < 24 * 1024, got  # far below the 128 MiB the file holds


def test_cli_setup_error_exits_2(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"inputs": [{"path": "../x", "type": "file"}]}))
    report = tmp_path / "report.json"
    proc = run_cli("--workspace", str(ws), "--manifest", str(manifest), "--report", str(report))
    assert proc.returncode == 2
    assert proc.stderr.startswith("autocode: manifest") and "Remedy" in proc.stderr
    assert not report.exists() and not (ws / ".autocode").exists()
    as_json = run_cli("--workspace", str(ws), "--manifest", str(manifest), "--json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"]["kind"] == "manifestInvalid"


@pytest.mark.parametrize("report", ["missing-dir/r.json", "a-dir", "link.json"])
def test_cli_unusable_report_path_fails_before_copying(tmp_path: Path, report: str) -> None:
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    (tmp_path / "a-dir").mkdir()
    os.symlink(tmp_path / "elsewhere.json", tmp_path / "link.json")
    proc = run_cli("--workspace", str(ws), "--report", str(tmp_path / report))
    assert proc.returncode == 2 and "--report" in proc.stderr
    assert not (ws / ".autocode").exists() and not (tmp_path / "elsewhere.json").exists()


def test_progress_bar_draws_after_a_moment() -> None:
    import io

    from autocode.cli.prep import ProgressBar

    quiet = ProgressBar(io.StringIO(), delay=60)
    quiet(5, 10)
    quiet.close()
    assert quiet.stream.getvalue() == ""  # type: ignore[attr-defined]
    stream = io.StringIO()
    bar = ProgressBar(stream, delay=0)
    bar(5, 10)
    bar(10, 10)
    bar.close()
    assert "5/10" in stream.getvalue() and stream.getvalue().endswith("10/10 entries\n")


def test_progress_callback_is_called(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {f"f{i}.txt": "x\n" for i in range(300)})
    calls: list[tuple[int, int]] = []
    make_prep_copy(ws, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (300, 300) and calls[0] == (250, 300)

