"""A stock third-party client: Emacs with eglot (Debian's packages), in `--batch`, drives a
whole task from menus only — code actions, the server's prompt, files it names and saves.

editors/emacs/tests/autocode-flow.el is the person; this module builds the repository,
starts Emacs with the real server and checks what the repository holds afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import GREET_SOURCES, git, make_repo

pytestmark = pytest.mark.editor

ROOT = Path(__file__).resolve().parents[2]
FLOW = ROOT / "editors" / "emacs" / "tests" / "autocode-flow.el"
BRIEF = "Make greet() say goodbye too: apply change.patch"
ANSWER = "Use descriptive behaviour-based unittest method names."
TEST_COMMAND = "python3 -m unittest discover -s tests -t ."


def emacs() -> str:
    found = shutil.which("emacs")
    if found is None:
        pytest.fail("Emacs is not installed: run `bash scripts/editors-setup.sh` (it installs emacs-nox and elpa-eglot)")
    return found


def build_repo(root: Path) -> Path:
    make_repo(root, {**GREET_SOURCES, ".autocode/config.toml": f'test_command = "{TEST_COMMAND}"\n'})
    (root / "greet.py").write_text("def greet():\n    return 'hello and goodbye'\n", encoding="utf-8")
    # The change brings the test that proves it (it fails before the change): a verified change.
    (root / "tests" / "test_greet.py").write_text(
        GREET_SOURCES["tests/test_greet.py"]
        + "\n    def test_greet_says_goodbye_too(self):\n        self.assertIn('goodbye', greet())\n",
        encoding="utf-8",
    )
    patch = git(root, "diff")
    git(root, "checkout", "--", "greet.py", "tests/test_greet.py")
    (root / "change.patch").write_text(patch, encoding="utf-8")
    git(root, "add", "change.patch")
    git(root, "commit", "-q", "-m", "add the patch")
    return root


def run_flow(repo: Path, home: Path, contact: object, *, extra_env: dict[str, str] | None = None) -> str:
    env = {
        **os.environ,
        "HOME": str(home),
        "AUTOCODE_REPO": str(repo),
        "AUTOCODE_CONTACT": json.dumps(contact),
        "AUTOCODE_BRIEF": BRIEF,
        "AUTOCODE_ANSWER": ANSWER,
        **(extra_env or {}),
    }
    proc = subprocess.run(
        [emacs(), "--batch", "--no-init-file", "-l", str(FLOW)],
        cwd=repo, env=env, capture_output=True, text=True, timeout=240,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "AUTOCODE-FLOW-OK" in out, out[-6000:]
    return out


def test_eglot_runs_a_whole_task_from_menus_over_stdio(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    out = run_flow(repo, tmp_path / "home", [sys.executable, "-m", "autocode_lsp"])
    # Every step was a menu pick or a saved file; none was a typed command or id.
    for entry in ("AutoCode: start a task…", "Answer in a file…", "AutoCode: approve plan r1",
                  "AutoCode: apply the changes"):
        assert f"picked: {entry}" in out
    assert "goodbye" in (repo / "greet.py").read_text(encoding="utf-8")
    record = json.loads((repo / ".autocode" / "project.json").read_text(encoding="utf-8"))
    assert ANSWER in json.dumps(record)  # typed in the file: the person's answer, learned verbatim
    runs = [p for p in (repo / ".autocode" / "runs").iterdir() if p.is_dir()]
    assert len(runs) == 1 and (runs[0] / "answers.md").is_file() and (runs[0] / "changes.diff").is_file()
    assert (repo / ".autocode" / "runs" / "doctor.md").is_file()
    # eglot 1.9 sends no clientInfo: the answer is recorded under the program at the other end.
    ledger = json.loads((runs[0] / "ledger.json").read_text(encoding="utf-8"))
    assert [a["source"]["actor"] for a in ledger["answers"]] == ["emacs over stdio"]


def test_eglot_with_a_path_map_between_two_folder_names(tmp_path: Path) -> None:
    """The editor knows the repository as `editor-view/project`, the server as
    `server-side/project` (a symlink stands in for a container's bind mount)."""
    real = build_repo(tmp_path / "server-side" / "project")
    (tmp_path / "editor-view").mkdir()
    seen = tmp_path / "editor-view" / "project"
    seen.symlink_to(real)
    out = run_flow(
        real, tmp_path / "home",
        [sys.executable, "-m", "autocode_lsp", "--path-map", f"{seen}={real}"],
        extra_env={"AUTOCODE_CLIENT_REPO": str(seen)},
    )
    # Every file the server named was named the editor's way.
    named = [line for line in out.splitlines() if line.startswith("message:") and " open /" in line]
    assert len(named) >= 5 and all(f" open {seen}/" in line for line in named), named
    assert "goodbye" in (real / "greet.py").read_text(encoding="utf-8")


def _listen(kind: str, address: str, tmp_path: Path, *flags: str) -> tuple[subprocess.Popen[bytes], str, str]:
    """Start a listening server; its address and the token from the file it names."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "XDG_STATE_HOME": str(tmp_path / "state")}
    process = subprocess.Popen(
        [sys.executable, "-m", "autocode_lsp", "--log-file", str(tmp_path / "lsp.log"),
         f"--{kind}", address, *flags],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )
    assert process.stderr is not None
    seen = []
    for raw in process.stderr:
        line = raw.decode()
        seen.append(line)
        match = re.search(rf"listening on {kind} (\S+) \(token file: (.+)\)", line)
        if match:
            return process, match.group(1), Path(match.group(2)).read_text(encoding="utf-8").strip()
    process.wait()
    raise AssertionError(f"the server did not start listening: {''.join(seen)}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_eglot_over_tcp_with_the_token_and_a_path_map(tmp_path: Path) -> None:
    real = build_repo(tmp_path / "server-side" / "project")
    (tmp_path / "editor-view").mkdir()
    seen = tmp_path / "editor-view" / "project"
    seen.symlink_to(real)
    process, address, token = _listen("tcp", "127.0.0.1:0", tmp_path, "--path-map", f"{seen}={real}")
    try:
        port = int(address.rpartition(":")[2])
        out = run_flow(
            real, tmp_path / "home", {"tcp": ["127.0.0.1", port]},
            extra_env={"AUTOCODE_CLIENT_REPO": str(seen),
                       "AUTOCODE_INIT": json.dumps({"autocode": {"token": token}})},
        )
    finally:
        _stop(process)
    named = [line for line in out.splitlines() if line.startswith("message:") and " open /" in line]
    assert len(named) >= 5 and all(f" open {seen}/" in line for line in named), named
    assert "goodbye" in (real / "greet.py").read_text(encoding="utf-8")


def test_eglot_over_the_unix_socket_with_the_token(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    sockets = tmp_path / "sock"
    sockets.mkdir(mode=0o700)
    process, address, token = _listen("socket", str(sockets / "autocode.sock"), tmp_path)
    try:
        run_flow(repo, tmp_path / "home", {"socket": address},
                 extra_env={"AUTOCODE_INIT": json.dumps({"autocode": {"token": token}})})
    finally:
        _stop(process)
    assert "goodbye" in (repo / "greet.py").read_text(encoding="utf-8")


def test_eglot_without_the_token_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    repo = build_repo(tmp_path / "project")
    process, address, _ = _listen("tcp", "127.0.0.1:0", tmp_path)
    try:
        port = int(address.rpartition(":")[2])
        env = {**os.environ, "HOME": str(tmp_path / "home"), "AUTOCODE_REPO": str(repo),
               "AUTOCODE_CONTACT": json.dumps({"tcp": ["127.0.0.1", port]}),
               "AUTOCODE_BRIEF": BRIEF, "AUTOCODE_ANSWER": ANSWER}
        proc = subprocess.run([emacs(), "--batch", "--no-init-file", "-l", str(FLOW)],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    finally:
        _stop(process)
    assert proc.returncode != 0 and "AUTOCODE-FLOW-OK" not in proc.stdout + proc.stderr
    assert not (repo / ".autocode" / "runs").exists()


RECIPE = ROOT / "editors" / "emacs" / "tests" / "autocode-remote-recipe.el"


def documented_recipe() -> str:
    """The Lisp of docs/editors.md's eglot remote recipe, exactly as a person would copy it."""
    text = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    block = text.split("<!-- eglot-remote-recipe:", 1)[1].split("<!-- /eglot-remote-recipe -->", 1)[0]
    return block.split("```elisp\n", 1)[1].split("```", 1)[0]


def test_the_documented_remote_recipe_works_as_written(tmp_path: Path) -> None:
    """The recipe's own paths (`~/autocode-sock/…`) under a fresh HOME, the server started as the
    docs say (a socket and a token the person keeps, `--token-file`)."""
    repo = build_repo(tmp_path / "project")
    (repo / "notes.txt").write_text("notes\n", encoding="utf-8")
    home = tmp_path / "home"
    sockets = home / "autocode-sock"
    sockets.mkdir(parents=True, mode=0o700)
    token_file = sockets / "lsp.token"
    token_file.write_text("a-token-the-person-keeps-0123456789\n", encoding="utf-8")
    token_file.chmod(0o600)
    process, _address, token = _listen(
        "socket", str(sockets / "autocode.sock"), tmp_path, "--token-file", str(token_file),
    )
    recipe = tmp_path / "recipe.el"
    recipe.write_text(documented_recipe(), encoding="utf-8")
    try:
        assert token == "a-token-the-person-keeps-0123456789"
        env = {**os.environ, "HOME": str(home), "AUTOCODE_REPO": str(repo), "AUTOCODE_RECIPE": str(recipe)}
        proc = subprocess.run([emacs(), "--batch", "--no-init-file", "-l", str(RECIPE)],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    finally:
        _stop(process)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "AUTOCODE-RECIPE-OK" in out, out[-4000:]
    assert "action: AutoCode: start a task…" in out, out[-4000:]
