"""doctor shows where memories live and which search mode is active, without creating the store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support import make_repo, trust


def _doctor(workspace: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autocode", "doctor", "--workspace", str(workspace), *extra],
        capture_output=True, text=True, check=False, env=env,
    )


def test_memory_section_reports_store_and_mode_without_creating_it(tmp_path: Path) -> None:
    import os

    ws = make_repo(tmp_path / "ws", {"a.py": "x = 1\n"})
    store = tmp_path / "mem" / "memory.sqlite3"
    (ws / ".autocode").mkdir()
    (ws / ".autocode" / "config.toml").write_text(
        f'memory_path = "{store.as_posix()}"\nembedding_provider = "none"\n', encoding="utf-8"
    )
    trust(ws)
    proc = _doctor(ws, "--json", env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    memory = json.loads(proc.stdout)["memory"]
    assert memory["store"] == "sqlite"
    assert memory["location"] == str(store)
    assert memory["search_mode"] == "keyword"
    assert not store.exists(), "doctor must not create the memory store"

    text = _doctor(ws, env=dict(os.environ)).stdout
    assert f"Memory: sqlite at {store}" in text
    assert "search: keyword" in text
