"""Credentials a person types into a brief or an answer never leave and are never kept:
no model request, `launch.json`, `events.jsonl`, run file or memory holds one (issue 31).

A real task runs against the scripted OpenAI-compatible endpoint with every
credential of the scrub corpus (secrets stated in sentences included) in its
brief and some in an answer; every request body the endpoint received is read.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autocode.memory import rules
from autocode.tasks import Source, TaskOptions, TaskRun
from support.agent import (
    TEST_COMMAND,
    ScriptedEndpoint,
    build_calc,
    call,
    json_answer,
    last_message,
    review,
    serve,
    text,
)
from support.scrub import load_corpus

CORPUS = load_corpus()
CREDENTIALS = CORPUS["credentials"]
PROSE = [item for item in CREDENTIALS if item["kind"] == "secret_in_prose"]
PROSE_LOOKALIKES = CORPUS["lookalikes"][-24:]
CLI = Source("cli", "tester")


def strings(value: Any) -> str:
    """Every string inside a JSON value, joined: a secret is looked for as text, not as JSON escapes."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(strings(k) + "\n" + strings(v) for k, v in value.items())
    if isinstance(value, list):
        return "\n".join(strings(v) for v in value)
    return ""


def leaked(text: str) -> list[str]:
    """The notes (never the values) of the corpus credentials found in `text`."""
    return [f"{item['kind']}: {item['note']}" for item in CREDENTIALS if item["secret"] in text]


def file_text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".json":
        try:
            return raw + "\n" + strings(json.loads(raw))
        except ValueError:
            return raw
    if path.suffix == ".jsonl":
        decoded = []
        for line in raw.splitlines():
            with contextlib.suppress(ValueError):  # a line a crash cut short
                decoded.append(strings(json.loads(line)))
        return raw + "\n" + "\n".join(decoded)
    return raw


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ScriptedEndpoint]:
    with serve() as state:
        yield state


def test_no_credential_of_the_corpus_reaches_a_request_a_run_file_or_a_memory(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    repo = build_calc(tmp_path / "calc")
    # The first line goes into the `started` event: it holds a credential too.
    brief = "add(2, 3) gives -1; fix it. " + PROSE[3]["text"] + "\n\nWhat I was told to use:\n" + "\n".join(i["text"] for i in CREDENTIALS)
    answer = "Use these: " + "; ".join(i["text"] for i in PROSE[:6]) + "; " + CREDENTIALS[6]["text"]
    question = {"id": "q1", "text": "Which credentials may the fix use?", "category": "other", "convention": None, "default": None}
    said_secret = PROSE[0]["text"]

    def tool_answer(body: dict[str, Any]) -> None:
        message = last_message(body)
        assert message["role"] == "tool" and "states a secret's value in words" in message["content"], message

    endpoint.load(
        json_answer({"citations": ["README.md"]}),
        json_answer({"summary": "Fix add.", "questions": [question], "acceptance_criteria": ["tests pass"], "citations": [], "machine_decisions": []}),
        json_answer({"summary": "Fix add.", "steps": ["Fix add"], "citations": [], "acceptance_criteria": []}),
        # The model tries to keep a secret it was (not) shown as a memory: refused with the reason.
        call("save_memory", {"text": said_secret}),
        call("edit_file", {"path": "calc/ops.py", "old_text": "return a - b", "new_text": "return a + b"}, check=tool_answer),
        text("add adds now."),
        review(),
    )
    options = TaskOptions(provider="openai", base_url=endpoint.url, model="scripted", test_command=TEST_COMMAND)
    run = TaskRun.start(repo, brief, options)
    assert run.snapshot().wire()["needs"]["kind"] == "answer_questions"
    run.answer("q1", answer, CLI)
    snap = run.approve_plan(1, CLI).wire()
    assert snap["needs"]["kind"] == "approve_completion", snap["error"]
    snap = run.approve_completion(CLI).wire()
    assert snap["state"] == "COMPLETED", snap["error"]
    endpoint.assert_clean()

    bodies = endpoint.bodies()
    assert len(bodies) == 7
    for number, body in enumerate(bodies, 1):
        assert leaked(strings(body)) == [], f"request {number} carried credentials"
    # What the model saw says something was taken out, and the task still made sense to it.
    first = strings(bodies[1])
    assert "add(2, 3) gives -1; fix it." in first and "[redacted:secret_in_prose]" in first
    assert "[redacted:github_token]" in first
    later = strings(bodies[2])
    assert "Answers to this task's questions" in later and "[redacted:secret_in_prose]" in later

    launch = json.loads((run.run_dir / "launch.json").read_text(encoding="utf-8"))
    assert "secret_in_prose" in launch["brief_redacted"] and "aws_access_key" in launch["brief_redacted"]
    assert launch["brief"].startswith("add(2, 3) gives -1; fix it.")
    # Every file of the run (launch.json, events.jsonl, state.json, plans, transcripts, evidence).
    files = [p for p in run.run_dir.rglob("*") if p.is_file()]
    assert {"launch.json", "events.jsonl", "state.json"} <= {p.name for p in files}
    for path in files:
        assert leaked(file_text(path)) == [], f"{path.relative_to(run.run_dir)} holds credentials"
    state = json.loads((run.run_dir / "state.json").read_text(encoding="utf-8"))
    kept = state["ledger"]["answers"][0]
    assert kept["text"].startswith("Use these: ") and "secret_in_prose" in kept["redacted"]
    assert snap["brief"] == launch["brief"] and snap["answers"][0]["text"] == kept["text"]
    # No memory holds one: the store file itself (tables, full-text index) is read.
    db = Path(os.environ["XDG_DATA_HOME"]) / "autocode" / "memory.sqlite3"
    if db.exists():
        with sqlite3.connect(db) as conn:
            dump = "\n".join(conn.iterdump())
        assert leaked(dump) == []
        assert said_secret not in dump


@pytest.mark.parametrize("item", PROSE, ids=[i["note"] for i in PROSE])
def test_a_secret_stated_in_a_sentence_is_refused_as_a_memory_with_the_reason(item: dict[str, str]) -> None:
    refusal = rules.check_content(item["text"])
    assert refusal is not None and refusal.kind == "credential"
    assert "states a secret's value in words" in refusal.reason
    assert item["secret"] not in refusal.reason + refusal.belongs
    assert refusal.suggestion is None


@pytest.mark.parametrize("item", PROSE_LOOKALIKES, ids=[i["why"] for i in PROSE_LOOKALIKES])
def test_a_sentence_about_secrets_without_a_value_may_be_a_memory(item: dict[str, str]) -> None:
    assert rules.check_content(item["text"]) is None


def test_the_shaped_credentials_keep_their_own_reason() -> None:
    refusal = rules.check_content("the deploy bot uses " + next(i["text"] for i in CREDENTIALS if i["kind"] == "github_token"))
    assert refusal is not None and "looks like a credential" in refusal.reason


def test_memory_save_refuses_a_secret_in_a_sentence_and_stores_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("AUTOCODE_UNATTENDED", None)
    sentence = PROSE[1]["text"]
    proc = subprocess.run(
        [sys.executable, "-m", "autocode", "memory", "save", sentence, "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
    )
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    answer = json.loads(proc.stdout)
    assert answer["saved"] is False and answer["refused"]["kind"] == "credential"
    assert "states a secret's value in words" in answer["refused"]["reason"]
    assert PROSE[1]["secret"] not in proc.stdout + proc.stderr
    db = tmp_path / "data" / "autocode" / "memory.sqlite3"
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert PROSE[1]["secret"] not in "\n".join(conn.iterdump())
    # A look-alike is still saved the ordinary way.
    kept = subprocess.run(
        [sys.executable, "-m", "autocode", "memory", "save", "rotate the API key monthly", "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
    )
    assert kept.returncode == 0 and json.loads(kept.stdout)["saved"] is True, kept.stdout + kept.stderr
