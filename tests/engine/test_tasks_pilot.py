"""The pilot coordinator (`autocode pilot-prep`): success, an ignored input, a mismatched input."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from autocode.tasks import TaskRun
from support import git, serve_http, trust
from support.tasks import autocode, build_sample, run_dirs

PROOF = "pilot-public/PUBLIC-PROOF.md"


@pytest.fixture(scope="module")
def counting_server() -> Iterator[tuple[list[str], str]]:
    """A stand-in model endpoint on 127.0.0.1 that only counts requests (none are expected)."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            hits.append(self.path)
            self.send_response(500)
            self.end_headers()

    with serve_http(Handler) as url:
        yield hits, url


def _entry(root: Path, rel: str) -> dict[str, Any]:
    data = (root / rel).read_bytes()
    return {"path": rel, "type": "file", "mode": "0644", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _setup(tmp_path: Path) -> tuple[Path, str, Path, Path]:
    repo, patch = build_sample("unittest", tmp_path / "textkit")
    (repo / "pilot-public").mkdir()
    (repo / PROOF).write_text("Public proof that the change is wanted.\n")
    (repo / PROOF).chmod(0o644)
    brief = tmp_path / "brief.txt"
    brief.write_text(f"Add longest_word. Evidence: {PROOF}. Patch: {patch}\n")
    return repo, patch, brief, tmp_path / "manifest.json"


def _pilot(repo: Path, manifest: Path, brief: Path, report: Path, *extra: str) -> Any:
    return autocode("pilot-prep", "--workspace", str(repo), "--manifest", str(manifest), "--brief", str(brief),
                    "--report", str(report), *extra)


def test_success_starts_the_task_and_stops_at_plan_approval(tmp_path: Path) -> None:
    repo, _patch, brief, manifest = _setup(tmp_path)
    manifest.write_text(json.dumps({"inputs": [_entry(repo, PROOF)]}))
    report_path = repo / ".autocode" / "prep-report.json"
    # No --scenario: the coordinator's own default must reach plan approval.
    proc = _pilot(repo, manifest, brief, report_path, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(report_path.read_text())
    assert json.loads(proc.stdout) == report
    assert report["task"]["needs"] == {"kind": "approve_plan"} and report["task"]["done"] is False
    assert report["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert [i["path"] for i in report["inputs"]] == [PROOF]
    copy = Path(report["copy"])
    assert (copy / PROOF).read_text() == (repo / PROOF).read_text()
    [run_dir] = run_dirs(repo)
    assert str(run_dir) == report["task"]["run_dir"]
    # The task works in the coordinator's checked copy: no second copy was made.
    assert len([p for p in (repo / ".autocode" / "prep").iterdir() if p.is_dir()]) == 1
    launch = json.loads((run_dir / "launch.json").read_text())
    assert launch["prep"]["copy"] == str(copy)
    # Nothing was answered or approved on the person's behalf.
    snap = TaskRun.load(repo, run_dir.name).snapshot().wire()
    assert snap["needs"]["kind"] == "approve_plan" and snap["humanPauseStates"] == []
    assert json.loads((run_dir / "approvals.json").read_text())["approvals"] == []
    # Requirements and plan cite the declared input and the brief; nothing was asked.
    requirements = json.loads((run_dir / "requirements.json").read_text())
    assert requirements["questions"] == []
    assert requirements["citations"][:2] == [PROOF, "brief"]
    assert PROOF in json.loads((run_dir / "plan.json").read_text())["citations"]


def test_an_explicit_scenario_still_overrides_the_coordinators_default(tmp_path: Path) -> None:
    repo, _patch, brief, manifest = _setup(tmp_path)
    manifest.write_text(json.dumps({"inputs": [_entry(repo, PROOF)]}))
    report_path = tmp_path / "report.json"
    proc = _pilot(repo, manifest, brief, report_path, "--scenario", "default", "--json")
    assert proc.returncode == 0, proc.stderr
    task = json.loads(report_path.read_text())["task"]
    assert task["needs"] == {"kind": "answer_questions"} and task["done"] is False


def _openai_config(repo: Path, url: str) -> None:
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text(
        f'provider = "openai"\nbase_url = "{url}"\nmodel = "counting"\n'
    )
    trust(repo)


def test_an_ignored_input_exits_2_with_no_provider_call_and_no_run_directory(
    tmp_path: Path, counting_server: tuple[list[str], str]
) -> None:
    hits, url = counting_server
    repo, _patch, brief, manifest = _setup(tmp_path)
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "private/\n")
    (repo / "private").mkdir()
    (repo / "private" / "proof.md").write_text("ignored\n")
    (repo / "private" / "proof.md").chmod(0o644)
    _openai_config(repo, url)
    manifest.write_text(json.dumps({"inputs": [_entry(repo, "private/proof.md")]}))
    report = tmp_path / "report.json"
    proc = _pilot(repo, manifest, brief, report)
    assert proc.returncode == 2, proc.stderr
    assert "git ignores it" in proc.stderr
    assert hits == []
    assert run_dirs(repo) == []
    assert not report.exists()


def test_a_mismatched_input_exits_2_with_no_provider_call_and_no_run_directory(
    tmp_path: Path, counting_server: tuple[list[str], str]
) -> None:
    hits, url = counting_server
    repo, _patch, brief, manifest = _setup(tmp_path)
    _openai_config(repo, url)
    entry = _entry(repo, PROOF)
    entry["sha256"] = "0" * 64
    manifest.write_text(json.dumps({"inputs": [entry]}))
    report = tmp_path / "report.json"
    proc = _pilot(repo, manifest, brief, report, "--json")
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["kind"] in ("preflightFailed", "manifestInvalid")
    assert hits == []
    assert run_dirs(repo) == []
    assert not report.exists()


def test_missing_arguments_are_usage_errors(tmp_path: Path) -> None:
    repo, _patch, brief, _manifest = _setup(tmp_path)
    proc = _pilot(repo, tmp_path / "nope.json", brief, tmp_path / "r.json")
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    assert run_dirs(repo) == []
