"""`autocode.prep.run` over LSP: a checked copy with declared inputs, progress, and a bad manifest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types

from autocode_lsp import protocol
from support import make_repo
from support.lsp import Session, close, connect, initialize

pytest.importorskip("autocode.prep", reason="the prep engine part is not merged yet")

PROOF = b"public proof\n"


def manifest(repo: Path, sha: str) -> Path:
    # Inside the workspace: a client's manifest may not name a file elsewhere (issue 31).
    path = repo / "manifest.json"
    path.write_text(json.dumps({"inputs": [{
        "path": "pilot-public/PROOF.md", "type": "file", "mode": "0644",
        "size": len(PROOF), "sha256": sha,
    }]}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("prep") / "project",
                     {"src/app.py": "print('hi')\n", **{f"docs/{i}.txt": f"{i}\n" for i in range(40)}})
    proof = root / "pilot-public" / "PROOF.md"
    proof.parent.mkdir()
    proof.write_bytes(PROOF)
    proof.chmod(0o644)
    return root


@pytest_asyncio.fixture(scope="module")
async def session(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    s = await connect("stdio", log_file=tmp_path_factory.mktemp("logs") / "lsp.log")
    await initialize(s, preset="vscode", folders=[repo], progress=True)
    yield s
    await close(s)


async def test_prep_copy_with_a_declared_input_reports_progress(session: Session, repo: Path) -> None:
    before = set(session.client.progress_reports)
    path = manifest(repo, hashlib.sha256(PROOF).hexdigest())
    result = await session.command(protocol.PREP_RUN, {"manifest": str(path)})
    copy = Path(result["copy"])
    assert (copy / "pilot-public" / "PROOF.md").read_bytes() == PROOF
    assert (copy / "src" / "app.py").exists()
    assert [i["path"] for i in result["inputs"]] == ["pilot-public/PROOF.md"]
    new = [v for t, v in session.client.progress_reports.items() if t not in before]
    assert len(new) == 1
    values = new[0]
    assert isinstance(values[0], types.WorkDoneProgressBegin)
    assert any(isinstance(v, types.WorkDoneProgressReport) for v in values)
    assert isinstance(values[-1], types.WorkDoneProgressEnd)


async def test_mismatched_input_is_a_setup_error(session: Session, repo: Path) -> None:
    path = manifest(repo, "0" * 64)
    err = await session.command_error(protocol.PREP_RUN, {"manifest": str(path)})
    assert err.code == -32803
    assert err.data["kind"] == "preflightFailed"
    assert "PROOF.md" in err.message


async def test_no_progress_for_a_client_that_did_not_declare_it(repo: Path, tmp_path: Path) -> None:
    s = await connect("stdio", log_file=tmp_path / "lsp.log")
    await initialize(s, preset="neovim", folders=[repo], progress=False)
    try:
        path = manifest(repo, hashlib.sha256(PROOF).hexdigest())
        result = await s.command(protocol.PREP_RUN, {"manifest": str(path)})
        assert Path(result["copy"]).is_dir()
        # pytest-lsp would also fail the test on a workDoneProgress/create it did not allow.
        assert s.client.progress_reports == {}
    finally:
        await close(s)
