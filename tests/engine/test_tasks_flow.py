"""The whole task flow through the CLI and the public TaskRun interface, on real sample repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autocode.errors import AutoCodeError, UsageError
from autocode.tasks import (
    NotAwaitingInput,
    PlanRevisionMismatch,
    Source,
    TaskNotFound,
    TaskOptions,
    TaskRun,
    list_tasks,
)
from autocode.workspace import WorkspaceInvalid
from support import git
from support.tasks import (
    NAMING_ANSWER,
    answers_file,
    autocode,
    autocode_json,
    build_sample,
    cli_env,
    read_record,
    run_dirs,
    tree_state,
)

CLI = Source("cli", "tester")


@pytest.fixture
def unittest_repo(tmp_path: Path) -> tuple[Path, str]:
    return build_sample("unittest", tmp_path / "textkit")


@pytest.fixture
def pytest_repo(tmp_path: Path) -> tuple[Path, str]:
    return build_sample("pytest", tmp_path / "shop")


def test_whole_flow_through_the_cli_step_by_step_on_the_pytest_sample(pytest_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, patch = pytest_repo
    ws = str(repo)
    rc, snap = autocode_json("task", "start", "--workspace", ws, "--brief", f"Add total_with_tax. Patch: {patch}")
    assert rc == 0, snap
    assert snap["needs"]["kind"] == "answer_questions" and not snap["done"]
    task_id = snap["id"]
    [question] = snap["needs"]["questions"]
    assert question["id"] == "test-naming"

    rc, snap = autocode_json("task", "answer", "--workspace", ws, task_id, "test-naming", NAMING_ANSWER)
    assert rc == 0 and snap["needs"]["kind"] == "approve_plan"
    revision = snap["needs"]["planRevision"]

    rc, snap = autocode_json("task", "approve", "--workspace", ws, task_id, "--revision", str(revision + 1))
    assert rc == 5 and snap["error"]["kind"] == "planRevisionMismatch"

    rc, snap = autocode_json("task", "approve", "--workspace", ws, task_id, "--revision", str(revision))
    assert rc == 0 and snap["needs"]["kind"] == "approve_completion", snap
    assert snap["needs"]["tests"]["exitCode"] == 0
    assert "total_with_tax" in snap["needs"]["diff"]
    assert "total_with_tax" not in (repo / "shop" / "pricing.py").read_text()

    rc, snap = autocode_json("task", "approve-completion", "--workspace", ws, task_id)
    assert rc == 0 and snap["state"] == "COMPLETED" and snap["done"]
    assert snap["result"]["verified"] is True and snap["result"]["apply"]["status"] == "applied"
    assert "total_with_tax" in (repo / "shop" / "pricing.py").read_text()

    record = read_record(repo)
    assert record is not None
    assert record["framework"] == "pytest"
    assert record["conventions"] == [
        {"question": "Which naming convention should future repository tests follow?", "answer": NAMING_ANSWER}
    ]
    assert set(record["human_pause_states"]) >= {"WAITING_FOR_USER", "WAITING_FOR_PLAN_APPROVAL"}

    run_dir = Path(snap["runDir"])
    for name in ("launch.json", "state.json", "ledger.json", "requirements.json", "plan.json", "plan.md",
                 "approvals.json", "checkpoint.json", "events.jsonl", "evidence/changes.diff", "evidence/head.diff",
                 "evidence/tests.json", "evidence/test-output.txt"):
        assert (run_dir / name).is_file(), name
    events = [json.loads(line)["event"] for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[0] == "started" and "completed" in events and events[-1] == "learned"
    head_diff = (run_dir / "evidence" / "head.diff").read_text()
    assert "+def total_with_tax(prices, rate):" in head_diff and "--- a/shop/pricing.py" in head_diff
    ledger = json.loads((run_dir / "ledger.json").read_text())
    assert ledger["answers"][0]["text"] == NAMING_ANSWER
    assert ledger["answers"][0]["kind"] == "human" and ledger["answers"][0]["source"]["channel"] == "cli"

    proc = autocode("task", "status", "--workspace", ws, task_id)
    assert proc.returncode == 0 and "COMPLETED" in proc.stdout
    rc, listed = autocode_json("task", "list", "--workspace", ws)
    assert [t["id"] for t in listed["tasks"]] == [task_id]
    rc, shown = autocode_json("task", "show", "--workspace", ws, task_id)
    assert shown["ledger"]["questions"][0]["id"] == "test-naming"


def test_answers_file_runs_the_whole_flow_and_the_second_task_does_not_ask(unittest_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, patch = unittest_repo
    answers = answers_file(tmp_path / "answers.json")
    first = autocode("task", "start", "--workspace", str(repo), "--brief", f"Add longest_word ({patch})",
                     "--answers", str(answers))
    assert first.returncode == 0, first.stderr
    assert f"taking answers from {answers}" in first.stderr
    assert "COMPLETED" in first.stdout
    assert "longest_word" in (repo / "textkit" / "words.py").read_text()
    git(repo, "commit", "-qam", "take the change")

    rc, snap = autocode_json("task", "start", "--workspace", str(repo), "--brief", f"Again, via {patch}")
    assert rc == 0
    assert snap["needs"]["kind"] == "approve_plan"
    run_dir = Path(snap["runDir"])
    ledger = json.loads((run_dir / "ledger.json").read_text())
    # Project data never enters the new task's ledger, criteria or human citations.
    assert ledger == {"revision": ledger["revision"], "questions": [], "answers": []}
    plan = snap["needs"]["plan"]
    assert NAMING_ANSWER not in json.dumps(plan)
    assert not [c for c in plan["citations"] if c.startswith("answer:")]
    launch = json.loads((run_dir / "launch.json").read_text())
    assert launch["project_conventions"][0]["answer"] == NAMING_ANSWER
    requirements = json.loads((run_dir / "requirements.json").read_text())
    assert requirements["answered_by_project_data"] == ["test-naming"]


def _billing_patch(repo: Path) -> str:
    """A patch to packages/billing that adds a function and the test proving it (committed)."""
    core, test = repo / "packages/billing/billing_core.py", repo / "packages/billing/tests/test_billing.py"
    core.write_text(core.read_text() + "\n\ndef credit_note_number(n):\n    return f\"CN-{n:05d}\"\n")
    test.write_text(
        test.read_text().replace("import invoice_number", "import credit_note_number, invoice_number")
        + "\n\ndef test_credit_note_number_is_zero_padded():\n    assert credit_note_number(3) == 'CN-00003'\n"
    )
    diff = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    (repo / "patches" / "credit-note.patch").write_text(diff)
    git(repo, "add", "patches/credit-note.patch")
    git(repo, "commit", "-q", "-m", "the billing patch")
    return "patches/credit-note.patch"


def test_package_run_uses_the_package_and_saves_no_test_command(pytest_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, _ = pytest_repo
    patch = _billing_patch(repo)  # a change the package's own suite proves
    answers = answers_file(tmp_path / "answers.json")
    proc = autocode("task", "start", "--workspace", str(repo), "--package", "packages/billing",
                    "--test-command", "python3 -m pytest -q tests", "--brief", f"Use {patch}",
                    "--answers", str(answers), "--json")
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    assert snap["state"] == "COMPLETED"
    assert snap["result"]["proof"]["status"] == "verified" and snap["result"]["verified"] is True
    assert any("test_credit_note_number_is_zero_padded" in p for p in snap["result"]["proof"]["proofs"])
    tests = json.loads((Path(snap["runDir"]) / "evidence" / "tests.json").read_text())
    assert tests["cwd"] == "billing" and "2 passed" in (Path(snap["runDir"]) / "evidence" / "test-output.txt").read_text()
    record = read_record(repo)
    assert record is not None
    assert record["test_command"] is None and record["framework"] is None
    assert record["conventions"][0]["answer"] == NAMING_ANSWER


def test_cli_accept_default_and_delegate_are_recorded_but_not_learned(unittest_repo: tuple[Path, str]) -> None:
    repo, patch = unittest_repo
    rc, snap = autocode_json("task", "start", "--workspace", str(repo), "--brief", f"via {patch}",
                             "--scenario", "docstring-convention")
    assert snap["needs"]["kind"] == "answer_questions"
    rc, snap = autocode_json("task", "answer", "--workspace", str(repo), snap["id"], "docstrings", "--accept-default")
    assert rc == 0 and snap["needs"]["kind"] == "approve_plan"
    ledger = json.loads((Path(snap["runDir"]) / "ledger.json").read_text())
    assert ledger["answers"][0]["kind"] == "proposed_default" and ledger["answers"][0]["text"] == "Google style"
    run = TaskRun.load(repo, snap["id"])
    run.approve_plan(1, CLI)
    assert run.approve_completion(CLI).wire()["learning"]["conventions"] == []


def test_reject_then_approve_the_new_revision(unittest_repo: tuple[Path, str]) -> None:
    repo, patch = unittest_repo
    run = TaskRun.start(repo, f"Add longest_word via {patch}", TaskOptions(scenario="no-questions"))
    first = run.snapshot().wire()
    assert first["needs"]["planRevision"] == 1
    snap = run.reject_plan("Also mention the README.", CLI).wire()
    assert snap["needs"]["planRevision"] == 2
    assert "Also mention the README." in snap["needs"]["markdown"]
    with pytest.raises(PlanRevisionMismatch):
        run.approve_plan(1, CLI)
    snap = run.approve_plan(2, CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion"
    assert snap["revision"] > first["revision"]


def test_editing_and_deleting_the_record_mid_run_changes_nothing_in_the_run(unittest_repo: tuple[Path, str]) -> None:
    repo, patch = unittest_repo
    record_path = repo / ".autocode" / "project.json"
    record_path.parent.mkdir()
    question = "Which naming convention should future repository tests follow?"
    record_path.write_text(json.dumps({
        "version": 1,
        "framework": "unittest",
        "test_command": "python3 -m unittest discover -s tests -t .",
        "conventions": [{"question": question, "answer": "Old answer from an earlier task."}],
        "routes": [],
        "human_pause_states": ["WAITING_FOR_USER"],
    }))
    run = TaskRun.start(repo, f"Add longest_word via {patch}")
    snap = run.snapshot().wire()
    assert snap["needs"]["kind"] == "approve_plan"  # the convention was not asked again
    launch_before = (Path(snap["runDir"]) / "launch.json").read_bytes()

    record_path.write_text(json.dumps({"version": 1, "framework": "pytest", "test_command": "false",
                                       "conventions": [], "routes": [], "human_pause_states": []}))
    again = TaskRun.load(repo, snap["id"])
    snap = again.approve_plan(snap["needs"]["planRevision"], CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion"
    assert snap["needs"]["tests"]["command"] == "python3 -m unittest discover -s tests -t ."

    record_path.unlink()
    snap = TaskRun.load(repo, snap["id"]).approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED"
    assert (Path(snap["runDir"]) / "launch.json").read_bytes() == launch_before
    record = read_record(repo)
    assert record is not None
    # The launch snapshot is never written back as if the person had answered again.
    assert record["conventions"] == []


def test_errors_have_kinds_and_write_nothing(unittest_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, patch = unittest_repo
    before = tree_state(repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorkspaceInvalid) as no_repo:
        TaskRun.start(plain, "anything")
    assert no_repo.value.kind == "workspaceInvalid" and not (plain / ".autocode").exists()
    with pytest.raises(UsageError) as empty:
        TaskRun.start(repo, "   ")
    assert empty.value.kind == "invalidArguments"
    with pytest.raises(UsageError):
        TaskRun.start(repo, "x", {"package": "../elsewhere"})
    with pytest.raises(UsageError):
        TaskRun.start(repo, "x", {"not_an_option": 1})
    with pytest.raises(UsageError):
        TaskRun.start(repo, "x", TaskOptions(scenario="no-such-scenario"))
    with pytest.raises(UsageError):
        TaskRun.start(repo, "x", TaskOptions(provider="openai"))
    with pytest.raises(TaskNotFound) as missing:
        TaskRun.load(repo, "t-20990101-000000-abcdef")
    assert missing.value.kind == "taskNotFound"
    with pytest.raises(TaskNotFound):
        TaskRun.load(repo, "../../etc")
    assert run_dirs(repo) == []
    assert tree_state(repo) == before

    run = TaskRun.start(repo, f"Add longest_word via {patch}")
    snap = run.snapshot().wire()
    state_before = (Path(snap["runDir"]) / "state.json").read_bytes()
    with pytest.raises(NotAwaitingInput) as not_waiting:
        run.approve_completion(CLI)
    assert not_waiting.value.kind == "notAwaitingInput"
    with pytest.raises(NotAwaitingInput):
        run.approve_plan(1, CLI)
    with pytest.raises(UsageError):
        run.answer("never-asked", "text", CLI)
    with pytest.raises(UsageError):
        run.answer("test-naming", "", CLI)
    with pytest.raises(UsageError):
        run.answer("test-naming", "x", Source("carrier-pigeon"))
    assert (Path(snap["runDir"]) / "state.json").read_bytes() == state_before
    assert tree_state(repo) == before

    rc, data = autocode_json("task", "status", "--workspace", str(repo), "t-20990101-000000-abcdef")
    assert rc == 4 and data["error"]["kind"] == "taskNotFound"
    rc, data = autocode_json("task", "start", "--workspace", str(plain), "--brief", "x")
    assert rc == 2 and data["error"]["kind"] == "workspaceInvalid"
    proc = autocode("task", "start", "--workspace", str(repo), "--brief", "x", "--answers", str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    garbled = tmp_path / "brief.bin"
    garbled.write_bytes(b"\xff\xfe not text")
    proc = autocode("task", "start", "--workspace", str(repo), "--brief-file", str(garbled))
    assert proc.returncode == 2 and "UTF-8" in proc.stderr
    assert len(run_dirs(repo)) == 1  # only the task started above


def test_a_hand_damaged_state_file_is_a_clear_error(unittest_repo: tuple[Path, str]) -> None:
    repo, patch = unittest_repo
    run = TaskRun.start(repo, f"via {patch}")
    (run.run_dir / "state.json").write_text("{ not json")
    with pytest.raises(AutoCodeError) as damaged:
        TaskRun.load(repo, run.id)
    assert damaged.value.kind == "taskDamaged"
    assert [t.wire() for t in list_tasks(repo)] == []


def test_cancel_ends_the_task_and_list_shows_it(unittest_repo: tuple[Path, str]) -> None:
    repo, patch = unittest_repo
    run = TaskRun.start(repo, f"via {patch}")
    snap = run.cancel().wire()
    assert snap["state"] == "CANCELLED" and snap["done"] and snap["phase"] == "cancelled"
    with pytest.raises(NotAwaitingInput):
        run.cancel()
    assert [t["state"] for t in [t.wire() for t in list_tasks(repo)]] == ["CANCELLED"]


def test_a_cancel_that_finds_the_task_busy_is_not_lost(unittest_repo: tuple[Path, str]) -> None:
    """A cancel arriving while another call holds the task's lock, after that call's last look at
    the request (here: the call is inside its change when the cancel comes), is honoured when the
    lock is let go; the task does not wait at its pause with the request unread."""
    repo, patch = unittest_repo
    run = TaskRun.start(repo, f"via {patch}")
    assert run.snapshot().state == "WAITING_FOR_USER"
    holder = TaskRun.load(repo, run.id)
    with holder._changing():
        other = TaskRun.load(repo, run.id)
        other_snap = other.cancel()
        assert other_snap.state == "WAITING_FOR_USER"  # busy: the request is left for the holder
        assert (run.run_dir / "cancel.request").exists()
    # Honoured as the lock is let go: by the holder's own look, or by the cancel's helper thread
    # (here in the same process), which may take the lock first and commit a moment later.
    _wait_for_state(repo, run.id, "CANCELLED")
    assert not (run.run_dir / "cancel.request").exists()


def _wait_for_state(repo: Path, task_id: str, state: str, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    seen = TaskRun.load(repo, task_id).snapshot().state
    while seen != state and time.monotonic() < deadline:
        time.sleep(0.02)
        seen = TaskRun.load(repo, task_id).snapshot().state
    assert seen == state, f"task {task_id} stayed {seen}"


def test_a_cancel_waits_out_a_short_hold_of_the_lock(unittest_repo: tuple[Path, str]) -> None:
    """A lock held only briefly by a reader (a view refresh takes it without looking at requests):
    the cancel takes the lock itself once it is free and the task ends."""
    import threading
    import time

    from autocode.tasks import store

    repo, patch = unittest_repo
    run = TaskRun.start(repo, f"via {patch}")
    held, written = threading.Event(), run.run_dir / "cancel.request"

    def hold() -> None:
        with store.locked(run.run_dir):
            held.set()
            while not written.exists():
                time.sleep(0.001)

    reader = threading.Thread(target=hold)
    reader.start()
    held.wait(10)
    snap = TaskRun.load(repo, run.id).cancel()
    reader.join(10)
    assert snap.state == "CANCELLED" and not written.exists()


def test_failing_tests_fail_the_task_and_leave_the_workspace_alone(unittest_repo: tuple[Path, str]) -> None:
    repo, patch = unittest_repo
    before = tree_state(repo)
    run = TaskRun.start(repo, f"via {patch}", TaskOptions(scenario="no-questions", test_command="python3 -c 'raise SystemExit(3)'"))
    snap = run.approve_plan(1, CLI).wire()
    assert snap["state"] == "FAILED" and snap["result"]["error"]["kind"] == "testsFailed"
    assert snap["result"]["tests"]["exitCode"] == 3
    assert tree_state(repo) == before
    assert read_record(repo) is None


def test_on_change_sees_every_revision_and_the_interactive_terminal_flow(unittest_repo: tuple[Path, str]) -> None:
    repo, patch = unittest_repo
    seen: list[int] = []
    run = TaskRun.start(repo, f"via {patch}", {"on_change": lambda s: seen.append(s.revision)})
    assert seen == sorted(seen) and seen[-1] == run.snapshot().wire()["revision"]
    proc = __import__("subprocess").run(
        [__import__("sys").executable, "-m", "autocode", "task", "start", "--workspace", str(repo),
         "--brief", f"via {patch}", "--interactive"],
        input="\ny\ny\n", capture_output=True, text=True, env=cli_env(), timeout=120,
    )
    # Without a terminal --interactive is refused with the way out.
    assert proc.returncode == 2 and "--answers" in proc.stderr


def test_an_empty_committed_workspace_cites_the_tasks_fallback(tmp_path: Path) -> None:
    from autocode.tasks.start import NO_SOURCE_FILES
    from support import make_repo

    repo = make_repo(tmp_path / "empty")
    assert git(repo, "ls-files").strip() == ""
    run = TaskRun.start(repo, "Start the project with a README.", TaskOptions(scenario="no-questions"))
    snap = run.snapshot().wire()
    assert snap["needs"]["kind"] == "approve_plan", snap
    [run_dir] = run_dirs(repo)
    requirements = json.loads((run_dir / "requirements.json").read_text())
    plan = json.loads((run_dir / "plan.json").read_text())
    assert requirements["citations"] == [NO_SOURCE_FILES]
    assert plan["citations"] == [NO_SOURCE_FILES]
    assert NO_SOURCE_FILES in (run_dir / "plan.md").read_text()


def test_citations_come_from_the_copys_own_inventory(unittest_repo: tuple[Path, str]) -> None:
    from autocode.prep import make_prep_copy

    repo, _patch = unittest_repo
    prep = make_prep_copy(repo)
    assert prep.inventory is not None and "inventory" not in prep.to_dict()
    # A file that appears after the copy was made is not in the copy, so it is not cited either:
    # the task reads the copy's inventory instead of walking the workspace a second time.
    (repo / "late.py").write_text("LATE = 1\n")
    run = TaskRun.start(repo, "Tidy up.", TaskOptions(scenario="no-questions", prep=prep))
    assert run.snapshot().wire()["needs"]["kind"] == "approve_plan"
    [run_dir] = run_dirs(repo)
    cited = json.loads((run_dir / "launch.json").read_text())["citations"]
    assert cited and "late.py" not in cited
    assert all((prep.copy / c).exists() for c in cited)


def test_the_plan_and_its_approval_name_the_test_command_and_its_origin(unittest_repo: tuple[Path, str]) -> None:
    repo, patch = unittest_repo
    (repo / ".autocode").mkdir(exist_ok=True)
    (repo / ".autocode" / "config.toml").write_text('test_command = "python3 -m unittest -v"\n')
    run = TaskRun.start(repo, f"Add longest_word via {patch}", TaskOptions(scenario="no-questions"))
    snap = run.snapshot().wire()
    tests_section = "## Tests that will run\n\n`python3 -m unittest -v`\n\nfrom the repository's settings (config, " \
        "`.autocode/config.toml`), run in `.` of the copy."
    assert tests_section in snap["needs"]["markdown"]
    run_dir = Path(snap["runDir"])
    assert tests_section in (run_dir / "plan.md").read_text()
    run.approve_plan(1, CLI)
    [approval] = json.loads((run_dir / "approvals.json").read_text())["approvals"]
    assert approval["tests"] == {
        "command": "python3 -m unittest -v", "origin": "config", "source": ".autocode/config.toml", "folder": ".",
    }
    flagged = TaskRun.start(repo, f"Add longest_word via {patch}",
                            TaskOptions(scenario="no-questions", test_command="python3 -m unittest"))
    assert "`python3 -m unittest`\n\nfrom the command line (flag, `--test-command`)" in \
        flagged.snapshot().wire()["needs"]["markdown"]
