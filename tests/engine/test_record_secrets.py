"""Secrets and machine paths never reach the learned record, whatever field carries them.

Driven by the scrub corpus (fixtures/scrub/corpus.json through support.scrub),
always through the public merge API, with `env={}` so the corpus is judged on
its text alone (one test sets a credential variable on purpose).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autocode.record import Convention, ObservedFacts, Route, load_record, merge_record
from support.scrub import load_corpus

CORPUS = load_corpus()
CREDENTIALS: list[dict[str, Any]] = CORPUS["credentials"]
PATHS = [p for p in CORPUS["paths"] if "workspace" not in p]
SHAREABLE = [item["text"] for item in CORPUS["lookalikes"]] + [
    item["text"] for item in CORPUS["path_lookalikes"] if "workspace" not in item
]


def _stored(root: Path) -> str:
    return (root / ".autocode" / "project.json").read_text(encoding="utf-8")


def _assert_absent(root: Path, secrets: list[str], result: Any) -> None:
    raw, reported = _stored(root), json.dumps(result.to_dict())
    for secret in secrets:
        assert secret not in raw
        assert secret not in reported


def test_corpus_is_big_enough() -> None:
    assert len(CREDENTIALS) >= 40 and len(CORPUS["lookalikes"]) >= 25 and len(CORPUS["paths"]) >= 15


@pytest.mark.parametrize("field", ["question", "answer"])
def test_credentials_in_answers_drop_the_whole_convention(tmp_path: Path, field: str) -> None:
    answers = [Convention("Which style?", "Black, line length 100.")]
    for index, item in enumerate(CREDENTIALS):
        text = item["text"]
        answers.append(Convention(text, "yes") if field == "question" else Convention(f"Secret {index}?", text))
    result = merge_record(tmp_path, ObservedFacts(), answers, env={})
    assert result.written and result.errors == ()
    _assert_absent(tmp_path, [c["secret"] for c in CREDENTIALS], result)
    record = load_record(tmp_path).record
    assert record is not None
    assert [c.question for c in record.conventions] == ["Which style?"]
    assert len(result.omitted) == len(CREDENTIALS)
    assert all(f".{field}: credential-shaped value" in o for o in result.omitted)


@pytest.mark.parametrize("item", CREDENTIALS, ids=[c["kind"] for c in CREDENTIALS])
def test_each_credential_nulls_a_fact_field(tmp_path: Path, item: dict[str, Any]) -> None:
    result = merge_record(
        tmp_path,
        ObservedFacts(
            framework="pytest",
            test_command=item["text"],
            routes=[Route("planner", "openai", item["text"][:200]), Route("coder", "fixture", "small")],
        ),
        [],
        env={},
    )
    data = json.loads(_stored(tmp_path))
    assert data["test_command"] is None and data["framework"] == "pytest"
    _assert_absent(tmp_path, [item["secret"]], result)


def test_values_of_credential_environment_variables_are_omitted(tmp_path: Path) -> None:
    value = "plain" + "looking" + "-but-" + "private-42"
    env = {"DEPLOY_TOKEN": value, "PATH": "/usr/bin"}
    result = merge_record(
        tmp_path,
        ObservedFacts(test_command=f"./run-tests --auth {value}", human_pause_states=[f"WAIT_{value}"]),
        [Convention("What is the deploy key?", f"It is {value}"), Convention("Deploy how?", "With make deploy.")],
        env=env,
    )
    assert result.written
    _assert_absent(tmp_path, [value], result)
    data = json.loads(_stored(tmp_path))
    assert data["test_command"] is None and data["human_pause_states"] == []
    assert [c["question"] for c in data["conventions"]] == ["Deploy how?"]


def test_machine_paths_are_omitted_whole(tmp_path: Path) -> None:
    texts = [p["text"] for p in PATHS] + [f"see {tmp_path}/src/app.py"]
    answers = [Convention(f"Where is q{i}?", text) for i, text in enumerate(texts)]
    answers.append(Convention("Where do fixtures live?", "In tests/fixtures, relative to the repository."))
    result = merge_record(tmp_path, ObservedFacts(test_command=f"pytest {tmp_path}/tests"), answers, env={})
    assert result.written
    data = json.loads(_stored(tmp_path))
    assert data["conventions"] == [
        {"question": "Where do fixtures live?", "answer": "In tests/fixtures, relative to the repository."}
    ]
    assert data["test_command"] is None
    assert str(tmp_path) not in _stored(tmp_path)
    assert all("machine-specific path" in o for o in result.omitted)
    assert len(result.omitted) == len(texts) + 1


def test_look_alikes_are_kept_verbatim(tmp_path: Path) -> None:
    answers = [Convention(f"Look-alike {i}?", text) for i, text in enumerate(SHAREABLE)]
    result = merge_record(tmp_path, ObservedFacts(), answers, env={})
    assert result.omitted == ()
    data = json.loads(_stored(tmp_path))
    assert [c["answer"] for c in data["conventions"]] == SHAREABLE


SAFE_COMMANDS = [
    "python3 -m pytest -q tests/unit",
    "./ci/run-tests.sh --fast",
    "tox -e py311 -- -k 'not slow'",
    "make test 2>/dev/null",
    "/usr/bin/env python3 -m pytest",
    "npm test -- --base-url http://127.0.0.1:8000/api",
    "${ROOT}/scripts/test",
    "pytest -p no:cacheprovider --cov-report=html:coverage",
]
UNSAFE_COMMANDS = [
    "bash -c 'cd /srv/build/app && make test'",
    "pytest --rootdir=/srv/x",
    "/opt/ci/bin/run-tests",
    "D:\\tools\\run-tests.bat",
    "\\\\buildhost\\share\\run-tests.bat",
    "pytest --cov-report=html:/srv/coverage",
    "pytest --report-url file:///srv/reports/index.html",
]


@pytest.mark.parametrize("command", SAFE_COMMANDS)
def test_custom_test_commands_safe_to_share_are_kept(tmp_path: Path, command: str) -> None:
    result = merge_record(tmp_path, ObservedFacts("custom", command), [], env={})
    assert result.written and result.omitted == ()
    assert json.loads(_stored(tmp_path))["test_command"] == command


@pytest.mark.parametrize("command", UNSAFE_COMMANDS)
def test_custom_test_commands_naming_this_machines_folders_are_omitted(tmp_path: Path, command: str) -> None:
    merge_record(tmp_path, ObservedFacts("pytest", "python3 -m pytest"), [], env={})
    result = merge_record(tmp_path, ObservedFacts("custom", command), [], env={})
    assert result.written and result.errors == ()
    # Host folders (/srv/…, D:\…, UNC) are machine paths for every field; the rest
    # are caught by the stricter rule for commands.
    assert result.omitted in (
        ("test_command: absolute path outside the repository",),
        ("test_command: machine-specific path",),
    )
    data = json.loads(_stored(tmp_path))
    assert (data["framework"], data["test_command"]) == ("custom", None)
    assert command not in _stored(tmp_path) and command not in json.dumps(result.to_dict())
