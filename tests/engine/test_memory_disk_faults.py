"""A memory store on a full or read-only disk: the real cause, and reads still served (issue 31).

Real disks, made small or read-only with bubblewrap: the store's folder is an 8 MiB tmpfs
filled to the last byte, or the whole file system is bound read-only. `autocode memory save`
says which of the two it is and that nothing was written; `search` and `list` go on working.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FACT = "The CI runners of this organisation have no outbound network access."
OTHER = "Releases are cut from the main branch on Tuesdays after the freeze."
ENGINE = str(Path(__file__).resolve().parents[2] / "engine")


def _bwrap() -> str:
    found = shutil.which("bwrap")
    if found is None:
        pytest.skip("bubblewrap (bwrap) is not installed: it makes the small and read-only disks")
    probe = subprocess.run([found, "--ro-bind", "/", "/", "--dev", "/dev", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"bwrap cannot make a namespace here: {probe.stderr.decode().strip()}")
    return found


def _env(data: Path, tmp_path: Path) -> dict[str, str]:
    # SQLite's own temporary files (index builds) go to TMPDIR: a writable folder of the test.
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": ENGINE, "XDG_DATA_HOME": str(data), "TMPDIR": str(tmp_path / "tmp"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")}


def _memory(*args: str, env: dict[str, str], wrap: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*wrap, sys.executable, "-m", "autocode", "memory", *args],
                          capture_output=True, text=True, timeout=120, env=env, cwd="/")


def test_on_a_full_disk_save_names_the_full_disk_and_search_still_works(tmp_path: Path) -> None:
    bwrap = _bwrap()
    data = tmp_path / "data"
    data.mkdir()
    script = f"""
set -e
{sys.executable} -m autocode memory save {FACT!r} >/dev/null
head -c 20000000 /dev/zero > {data}/filler 2>/dev/null || true
set +e
{sys.executable} -m autocode memory save {OTHER!r}; echo "save-exit=$?"
{sys.executable} -m autocode memory search "outbound network"; echo "search-exit=$?"
"""
    wrap = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", str(tmp_path), str(tmp_path),
            "--size", str(8 * 1024 * 1024), "--tmpfs", str(data), "--die-with-parent"]
    out = subprocess.run([*wrap, "sh", "-c", script], capture_output=True, text=True, timeout=180,
                         env=_env(data, tmp_path), cwd="/")
    text = out.stdout + out.stderr
    assert "save-exit=0" not in text, text
    assert "is full" in text and "Nothing was written" in text, text
    assert "disk I/O error" not in text and "Traceback" not in text, text
    assert "search-exit=0" in text and FACT in text, text


def test_on_a_read_only_disk_save_says_so_and_search_and_list_still_work(tmp_path: Path) -> None:
    bwrap = _bwrap()
    data = tmp_path / "data"
    env = _env(data, tmp_path)
    saved = _memory("save", FACT, env=env, wrap=[])
    assert saved.returncode == 0, saved.stderr
    before = sorted((p.name, p.stat().st_size) for p in (data / "autocode").iterdir())
    wrap = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"]
    refused = _memory("save", OTHER, env=env, wrap=wrap)
    assert refused.returncode != 0
    assert "read-only" in refused.stderr and "Nothing was written" in refused.stderr, refused.stderr
    assert "unable to open database file" not in refused.stderr and "Traceback" not in refused.stderr
    found = _memory("search", "outbound network", env=env, wrap=wrap)
    assert found.returncode == 0 and FACT in found.stdout, found.stdout + found.stderr
    listed = _memory("list", env=env, wrap=wrap)
    assert listed.returncode == 0 and FACT in listed.stdout, listed.stdout + listed.stderr
    assert sorted((p.name, p.stat().st_size) for p in (data / "autocode").iterdir()) == before
