"""Helpers for the tasks tests: sample repositories from fixtures/samples and the CLI in a subprocess."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "fixtures" / "providers"
NAMING_ANSWER = "Use descriptive behavior-based unittest test method names."

# A file where the task and the person removed the same `}` of three (the task also added a
# line): a merge that applies the shared deletion twice leaves one brace; git leaves two.
BRACES_BASE = b"int main() {\n\n}\n}\n}\n\n\n  run();\n"
BRACES_MINE = b"int main() {\n\n}\n}\n\n\n  run();\n"
BRACES_THEIRS = b"int main() {\n\n}\n}\n\n\n  done();\n  run();\n"


def _builder() -> Any:
    spec = importlib.util.spec_from_file_location("autocode_samples_build", REPO / "fixtures" / "samples" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_sample(name: str, dest: Path) -> tuple[Path, str]:
    """A fresh sample repository (`pytest` or `unittest`) and its declared patch path."""
    result: tuple[Path, str] = _builder().build(name, dest)
    return result


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for CLI subprocesses: this interpreter's bin first so `python3` has pytest."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return env


def autocode(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autocode", *args],
        cwd=cwd,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def autocode_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    proc = autocode(*args, "--json", env=env)
    try:
        data = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(f"not JSON (rc {proc.returncode}): {proc.stdout!r} {proc.stderr!r}") from exc
    return proc.returncode, data


def answers_file(
    path: Path, answers: dict[str, str] | None = None, *, plan: bool = True, completion: bool = True,
    confirm: str | None = None,
) -> Path:
    """An answers file for `--answers`; `confirm="unproven"` applies a change nothing proves."""
    data: dict[str, Any] = {"answers": answers if answers is not None else {"test-naming": NAMING_ANSWER},
                            "approve_plan": plan, "approve_completion": completion}
    if confirm is not None:
        data["confirm"] = confirm
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def read_record(workspace: Path) -> dict[str, Any] | None:
    path = workspace / ".autocode" / "project.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def run_dirs(workspace: Path) -> list[Path]:
    base = workspace / ".autocode" / "runs"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def tree_state(workspace: Path) -> dict[str, bytes]:
    """Every file outside .git and .autocode with its bytes (to prove nothing was written)."""
    out: dict[str, bytes] = {}
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace)
        if rel.parts[0] in (".git", ".autocode") or not path.is_file():
            continue
        out[str(rel)] = path.read_bytes()
    return out
