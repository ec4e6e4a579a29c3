"""Declared inputs: every manifest rejection names the entry, the reason and the remedy,
and nothing is written anywhere (no .autocode, no half-made copy)."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autocode.errors import SetupError
from autocode.prep import copier, load_manifest, make_prep_copy, validate_manifest
from support import git, make_repo
from support.audit import only_inside

PROOF = b"public proof\n"

def entry(path: str, data: bytes = PROOF, mode: str = "0644", **over: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "path": path,
        "type": "file",
        "mode": mode,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    item.update(over)
    return item


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every path under `root` (links by their text), to prove nothing changed."""
    result: dict[str, tuple[int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if os.path.islink(path):
                data = os.readlink(path).encode()
            elif os.path.isfile(path) and not name.startswith("pipe"):
                data = Path(path).read_bytes()
            else:
                data = b""
            result[os.path.relpath(path, root)] = (st.st_mode, data)
    return result


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("manifest")
    outside = base / "outside"
    outside.mkdir()
    (outside / "PROOF.md").write_bytes(PROOF)
    ws = make_repo(
        base / "ws",
        {
            "pilot-public/PROOF.md": PROOF,
            "notes.txt": "notes\n",
            ".gitignore": "secret/\n",
            unicodedata.normalize("NFC", "café.md"): PROOF,
        },
    )
    (ws / "secret").mkdir()
    (ws / "secret" / "PROOF.md").write_bytes(PROOF)
    (ws / "untracked.md").write_bytes(PROOF)
    os.symlink("/etc/passwd", ws / "link-out")
    os.symlink("notes.txt", ws / "link-in")
    os.symlink("/etc", ws / "etc-link")
    os.symlink(str(outside), ws / "outside-link")
    os.symlink("pilot-public", ws / "dir-link")
    os.mkfifo(ws / "pipe")
    return ws


def write_manifest(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def expect_rejection(ws: Path, manifest: Path, kind: str, *fragments: str) -> SetupError:
    before = snapshot(ws)
    with pytest.raises(SetupError) as info, only_inside(ws, manifest.parent):
        make_prep_copy(ws, manifest)
    err = info.value
    assert err.kind == kind, err.message
    assert err.exit_code == 2
    for fragment in fragments:
        assert fragment in err.message, (fragment, err.message)
    assert snapshot(ws) == before
    assert not (ws / ".autocode").exists()
    return err


LEXICAL = [
    ("../x", "'..'"),
    ("/etc/passwd", "absolute"),
    ("a/../../b", "'..'"),
    ("a/../b", "'..'"),
    ("./a", "'.' as a part"),
    ("a//b", "empty part"),
    ("", "empty"),
    (".", "'.' as a part"),
    ("dir/", "ends with '/'"),
    ("a\x00b", "NUL"),
    ("a\nb", "control character"),
    ("a\\..\\b", "backslash"),
    ("C:\\x", "backslash"),
    ("C:/x", "drive letter"),
    (".git/config", ".git folder"),
    (".GIT/x", ".git folder"),
    ("sub/.git/x", ".git folder"),
    (".autocode/prep/x", "inside .autocode"),
    ("x" * 300, "longer than 255 bytes"),
]


@pytest.mark.parametrize(("path", "reason"), LEXICAL, ids=[repr(p)[:24] for p, _ in LEXICAL])
def test_path_rules(workspace: Path, tmp_path: Path, path: str, reason: str) -> None:
    manifest = write_manifest(tmp_path, {"inputs": [entry("pilot-public/PROOF.md"), entry(path)]})
    err = expect_rejection(workspace, manifest, "manifestInvalid", json.dumps(path), reason, "Remedy")
    assert "inputs[1]" in err.message
    assert "inputs[0]" not in err.message


IN_WORKSPACE = [
    ("link-out", "symbolic link"),
    ("link-in", "symbolic link"),
    ("etc-link/passwd", 'through the symbolic link "etc-link"'),
    ("outside-link/PROOF.md", 'through the symbolic link "outside-link"'),
    ("dir-link/PROOF.md", 'through the symbolic link "dir-link"'),
    ("pipe", "FIFO"),
    ("pilot-public", "a folder"),
]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("path", "reason"), IN_WORKSPACE, ids=[p for p, _ in IN_WORKSPACE])
def test_file_type_rules(workspace: Path, tmp_path: Path, path: str, reason: str) -> None:
    # The outside file's bytes match the entry exactly: they still never qualify it.
    manifest = write_manifest(tmp_path, {"inputs": [entry(path)]})
    expect_rejection(workspace, manifest, "manifestInvalid", json.dumps(path), reason, "Remedy")


def test_names_are_byte_exact(workspace: Path, tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "café.md")
    manifest = write_manifest(tmp_path, {"inputs": [entry(nfd)]})
    expect_rejection(workspace, manifest, "preflightFailed", json.dumps(nfd), "is missing", "byte for byte", "Remedy")
    nfc = unicodedata.normalize("NFC", "café.md")
    ok = write_manifest(tmp_path, {"inputs": [entry(nfc)]})
    assert [i.path for i in validate_manifest(workspace, ok)] == [nfc]


@pytest.mark.parametrize(
    ("paths", "reason"),
    [
        (["notes.md", "notes.md"], "declared twice"),
        (["Notes.md", "notes.md"], "only by letter case"),
    ],
)
def test_duplicates(workspace: Path, tmp_path: Path, paths: list[str], reason: str) -> None:
    manifest = write_manifest(tmp_path, {"inputs": [entry(p) for p in paths]})
    expect_rejection(workspace, manifest, "manifestInvalid", "inputs[1]", reason, "Remedy")


SCHEMA = [
    ("negative size", {"inputs": [entry("pilot-public/PROOF.md", size=-1)]}, "size -1"),
    ("float size", {"inputs": [entry("pilot-public/PROOF.md", size=13.0)]}, "size 13.0"),
    ("fraction size", {"inputs": [entry("pilot-public/PROOF.md", size=1.5)]}, "size 1.5"),
    ("bool size", {"inputs": [entry("pilot-public/PROOF.md", size=True)]}, "size true"),
    ("bad digest", {"inputs": [entry("pilot-public/PROOF.md", sha256="xyz")]}, "sha256 is malformed"),
    ("upper digest", {"inputs": [entry("pilot-public/PROOF.md", sha256="A" * 64)]}, "sha256 is malformed"),
    ("bad mode", {"inputs": [entry("pilot-public/PROOF.md", mode="644")]}, 'mode "644"'),
    ("setuid mode", {"inputs": [entry("pilot-public/PROOF.md", mode="4755")]}, 'mode "4755"'),
    ("int mode", {"inputs": [entry("pilot-public/PROOF.md", mode=420)]}, "mode 420"),
    ("dir type", {"inputs": [entry("pilot-public", type="dir")]}, 'type "dir"'),
    ("unknown key", {"inputs": [entry("pilot-public/PROOF.md", owner="me")]}, "unknown key(s) 'owner'"),
    ("missing key", {"inputs": [{"path": "pilot-public/PROOF.md", "type": "file"}]}, "missing key(s)"),
    ("not an object", {"inputs": ["pilot-public/PROOF.md"]}, "is not an object"),
    ("top-level list", [entry("pilot-public/PROOF.md")], 'exactly one key, "inputs"'),
    ("extra top key", {"inputs": [], "extra": 1}, 'exactly one key, "inputs"'),
]


@pytest.mark.parametrize(("doc", "reason"), [c[1:] for c in SCHEMA], ids=[c[0] for c in SCHEMA])
def test_schema(workspace: Path, tmp_path: Path, doc: object, reason: str) -> None:
    manifest = write_manifest(tmp_path, doc)
    expect_rejection(workspace, manifest, "manifestInvalid", reason)


def test_duplicate_json_keys(workspace: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "dup.json"
    manifest.write_text('{"inputs": [{"path": "a", "path": "b", "type": "file"}]}', encoding="utf-8")
    expect_rejection(workspace, manifest, "manifestInvalid", "'path' appears twice", "keep one")


@pytest.mark.parametrize("text", ['{"inputs": [', '{"inputs": [NaN]}', "\xff"])
def test_not_json(workspace: Path, tmp_path: Path, text: str) -> None:
    manifest = tmp_path / "bad.json"
    manifest.write_bytes(text.encode("latin-1"))
    err = expect_rejection(workspace, manifest, "manifestInvalid", str(manifest))
    assert "JSON" in err.message or "UTF-8" in err.message


def test_huge_manifest_is_not_read(workspace: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "huge.json"
    with open(manifest, "wb") as f:
        f.truncate(50 * 1024 * 1024)
    expect_rejection(workspace, manifest, "manifestInvalid", "52428800 bytes", "limit")


@pytest.mark.parametrize("target", ["inside", "outside"])
def test_symlinked_manifest(workspace: Path, tmp_path: Path, target: str) -> None:
    real = write_manifest(tmp_path, {"inputs": [entry("pilot-public/PROOF.md")]})
    link = (workspace / "m.json") if target == "inside" else (tmp_path / "link.json")
    os.symlink(real, link)
    try:
        expect_rejection(workspace, link, "manifestInvalid", "symbolic link", "pass the real file")
    finally:
        link.unlink()


@pytest.mark.timeout(30)
def test_fifo_manifest_does_not_hang(workspace: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "manifest.json"
    os.mkfifo(fifo)
    expect_rejection(workspace, fifo, "manifestInvalid", "not a regular file")


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"size": len(PROOF) + 1}, f"size is {len(PROOF)}, the manifest says {len(PROOF) + 1}"),
        ({"mode": "0755"}, "mode is 0644, the manifest says 0755"),
        ({"sha256": "0" * 64}, "the manifest says " + "0" * 64),
    ],
    ids=["size", "mode", "sha256"],
)
def test_mismatch_in_workspace(workspace: Path, tmp_path: Path, over: dict[str, Any], reason: str) -> None:
    manifest = write_manifest(tmp_path, {"inputs": [entry("pilot-public/PROOF.md", **over)]})
    expect_rejection(
        workspace, manifest, "preflightFailed", '"pilot-public/PROOF.md" in the workspace', reason, "Remedy"
    )


def test_missing_input(workspace: Path, tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, {"inputs": [entry("pilot-public/GONE.md")]})
    expect_rejection(workspace, manifest, "preflightFailed", '"pilot-public/GONE.md"', "is missing", "Remedy")


def test_ignored_input(workspace: Path, tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, {"inputs": [entry("secret/PROOF.md")]})
    err = expect_rejection(
        workspace,
        manifest,
        "inputIgnored",
        '"secret/PROOF.md"',
        "git ignores it (.gitignore:1: secret/)",
        "move only this public file",
        "update the manifest and the task brief",
        "Do not turn off git isolation",
    )
    assert err.to_dict()["kind"] == "inputIgnored"


def test_valid_inputs_are_returned_without_writing(workspace: Path, tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path, {"inputs": [entry("pilot-public/PROOF.md"), entry("untracked.md")]}
    )
    before = snapshot(workspace)
    items = validate_manifest(workspace, manifest)
    assert [i.to_dict()["path"] for i in items] == ["pilot-public/PROOF.md", "untracked.md"]
    assert items[0].to_dict()["mode"] == "0644"
    assert snapshot(workspace) == before
    assert load_manifest(manifest) == items


@pytest.mark.parametrize("change", ["size", "sha256", "mode"])
def test_mismatch_in_copy_keeps_the_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    ws = make_repo(tmp_path / "ws", {"pilot-public/PROOF.md": PROOF})
    manifest = write_manifest(tmp_path, {"inputs": [entry("pilot-public/PROOF.md")]})

    def tamper(event: str, path: str) -> None:
        if event == "file" and path == "pilot-public/PROOF.md":
            (staged,) = (ws / ".autocode" / "prep").glob("*/.staging/pilot-public/PROOF.md")
            if change == "size":
                staged.write_bytes(b"tampered\n")
            elif change == "sha256":
                staged.write_bytes(PROOF.upper())
            else:
                staged.chmod(0o600)

    monkeypatch.setattr(copier, "_test_hook", tamper)
    with pytest.raises(SetupError) as info:
        make_prep_copy(ws, manifest)
    err = info.value
    assert err.kind == "preflightFailed" and err.exit_code == 2
    assert '"pilot-public/PROOF.md" in the copy' in err.message
    assert f"{'mode' if change == 'mode' else change} is" in err.message
    assert "left there for inspection" in err.message
    copy = Path(err.data["copy"])
    assert copy.is_dir() and (copy / "pilot-public" / "PROOF.md").exists()
    assert (ws / "pilot-public" / "PROOF.md").read_bytes() == PROOF
    assert git(ws, "status", "--porcelain") == ""


def test_ignored_input_inside_a_nested_repository(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.py": "a\n"})
    nested = make_repo(ws / "vendor" / "tool", {".gitignore": "*.secret\n", "t.py": "t\n"})
    (nested / "proof.secret").write_bytes(PROOF)
    (nested / "public.md").write_bytes(PROOF)
    manifest = write_manifest(
        tmp_path,
        {"inputs": [entry("vendor/tool/proof.secret", size=1), entry("vendor/tool/public.md")]},
    )
    err = expect_rejection(
        ws, manifest, "inputIgnored",
        '"vendor/tool/proof.secret": git ignores it (vendor/tool/.gitignore:1: *.secret)',
    )
    assert "public.md" not in err.message
    ok = write_manifest(tmp_path, {"inputs": [entry("vendor/tool/public.md")]})
    result = make_prep_copy(ws, ok)
    assert (result.copy / "vendor/tool/public.md").read_bytes() == PROOF
    assert not (result.copy / "vendor/tool/proof.secret").exists()


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab./\\:-_ \n\x00éC")), max_size=24))
def test_every_accepted_path_names_a_plain_file_inside(path: str) -> None:
    from autocode.prep.manifest import path_problem

    problem = path_problem(path)
    if problem is None:
        assert posixpath.normpath(path) == path
        assert not path.startswith(("/", "../")) and path not in ("", ".", "..")
        assert all(part not in ("", ".", "..") and part.lower() != ".git" for part in path.split("/"))
        assert not any(c in path for c in "\\\n\x00")
    else:
        assert "Remedy" in problem


def test_the_read_recorder_can_fail(workspace: Path) -> None:
    """The proof above is not vacuous: a read outside, or git run elsewhere, is caught."""
    with pytest.raises(AssertionError), only_inside(workspace):
        os.close(os.open("/etc/hostname", os.O_RDONLY))
    with pytest.raises(AssertionError), only_inside(workspace):
        os.close(os.open(workspace / ".." / "outside" / "PROOF.md", os.O_RDONLY))
    with pytest.raises(AssertionError), only_inside(workspace):
        git(workspace.parent, "--version")
    with only_inside(workspace):
        os.close(os.open(workspace / "notes.txt", os.O_RDONLY))


@pytest.mark.parametrize("where", ["manifest folder", "workspace parent"])
def test_matching_bytes_outside_never_qualify(workspace: Path, tmp_path: Path, where: str) -> None:
    base = tmp_path if where == "manifest folder" else workspace.parent
    decoy = base / "pilot-public" / "ONLY-OUTSIDE.md"
    decoy.parent.mkdir(exist_ok=True)
    decoy.write_bytes(PROOF)
    try:
        manifest = write_manifest(tmp_path, {"inputs": [entry("pilot-public/ONLY-OUTSIDE.md")]})
        expect_rejection(
            workspace, manifest, "preflightFailed", '"pilot-public/ONLY-OUTSIDE.md" in the workspace is missing', "Remedy"
        )
    finally:
        decoy.unlink()
