"""Neovim installed as the docs say: shipped help tags, `~` in `command`, one server for three
repositories within the memory goal, a missing server said once with the install command,
and the build step that installs the server next to the plugin."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("nvim_plugin_helpers", Path(__file__).with_name("test_nvim_plugin.py"))
assert _spec is not None and _spec.loader is not None
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
BIN, PLUGIN, ROOT = _helpers.BIN, _helpers.PLUGIN, _helpers.ROOT
find_nvim, run_nvim, sample_repo = _helpers.find_nvim, _helpers.run_nvim, _helpers.sample_repo

pytestmark = pytest.mark.editor


def test_shipped_help_tags_are_current(tmp_path: Path) -> None:
    """doc/tags must be what :helptags makes from doc/autocode.txt (regenerate: see the message)."""
    doc = tmp_path / "doc"
    shutil.copytree(PLUGIN / "doc", doc)
    (doc / "tags").unlink()
    subprocess.run(
        [find_nvim(), "--headless", "--clean", "-c", f"helptags {doc}", "-c", "qall!"],
        check=True, capture_output=True, timeout=60,
    )
    fresh = (doc / "tags").read_text(encoding="utf-8")
    shipped = (PLUGIN / "doc" / "tags").read_text(encoding="utf-8")
    assert shipped == fresh, (
        "editors/nvim/doc/tags is out of date: run "
        "`nvim --headless --clean -c 'helptags editors/nvim/doc' -c q` and commit it"
    )


def _home_with_server(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "autocode-lsp").symlink_to(BIN / "autocode-lsp")
    return home


def test_three_repositories_one_server_help_and_health_in_a_clean_home(tmp_path: Path) -> None:
    home = _home_with_server(tmp_path)
    repos = [sample_repo(tmp_path / f"r{i}") for i in range(3)]
    result = run_nvim(
        "e2e_install.lua", tmp_path, cwd=repos[0], timeout=180,
        env={"HOME": str(home), "REPOS": ":".join(map(str, repos)), "PATH": "/usr/bin:/bin"},
    )
    for step in ("ok help", "ok one server", "ok flow in three repositories", "ok checkhealth"):
        assert f"{step}\n" in result.stdout
    footprint = next(line for line in result.stdout.splitlines() if line.startswith("footprint:"))
    print(footprint)


def test_a_missing_server_is_said_once_with_the_install_command(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    repos = [sample_repo(tmp_path / f"r{i}") for i in range(2)]
    result = run_nvim(
        "e2e_missing.lua", tmp_path, cwd=repos[0],
        env={"HOME": str(home), "REPOS": ":".join(map(str, repos)), "PATH": "/usr/bin:/bin"},
    )
    assert "ok said once\nok checkhealth\n" in result.stdout
    assert not (home / "nowhere").exists()


@pytest.mark.skipif(os.environ.get("AUTOCODE_SKIP_BUILD_STEP") == "1", reason="AUTOCODE_SKIP_BUILD_STEP=1")
def test_the_build_step_installs_the_server_next_to_the_plugin(tmp_path: Path) -> None:
    """A clone as a plugin manager makes it; its build step; then the plugin finds that server by itself."""
    clone = tmp_path / "autocode"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(clone)], check=True, timeout=120)
    # the working tree's plugin and build files (a clone holds only what is committed)
    shutil.rmtree(clone / "editors" / "nvim")
    shutil.copytree(PLUGIN, clone / "editors" / "nvim", ignore=shutil.ignore_patterns("server"))
    env = {**os.environ, "AUTOCODE_EXTRAS": "", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(
        ["sh", str(clone / "editors" / "nvim" / "build.sh")],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    server = clone / "editors" / "nvim" / "server" / "bin" / "autocode-lsp"
    assert server.is_file() and "autocode-lsp" in done.stdout
    code = (
        f"vim.opt.rtp:append({str(clone / 'editors' / 'nvim')!r}); "
        "require('autocode').setup({}); "
        "io.stdout:write(require('autocode.config').cmd()[1] .. '\\n'); "
        "io.stdout:write(vim.fn.exists(':AutoCode') .. '\\n')"
    )
    out = subprocess.run(
        [find_nvim(), "--headless", "--clean", "-c", f"lua {code}", "-c", "qall!"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": "/usr/bin:/bin"},
    )
    lines = (out.stdout + out.stderr).split()
    assert str(server) in lines, out
    assert "2" in lines, out  # :AutoCode defined by setup{} alone
    assert sys.executable  # the test's own Python is not what the plugin runs
