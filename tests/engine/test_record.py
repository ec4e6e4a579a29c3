"""The learned record: five load statuses, merge rules, scrubbing before writes, bounds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autocode.record import (
    STATUSES,
    Convention,
    ObservedFacts,
    Route,
    load_record,
    merge_record,
)
from autocode.record.merge import portable_test_command
from autocode.record.schema import (
    MAX_ANSWER,
    MAX_CONVENTIONS,
    MAX_FILE_BYTES,
    MAX_PAUSE_STATES,
    MAX_ROUTES,
)
from support import write_files

VALID = {
    "version": 1,
    "framework": "unittest",
    "test_command": "python3 -m unittest discover -s tests -t .",
    "conventions": [
        {
            "question": "Which naming convention should future repository tests follow?",
            "answer": "Use descriptive behavior-based unittest test method names.",
        }
    ],
    "routes": [],
    "human_pause_states": ["WAITING_FOR_USER"],
}


def _write(root: Path, content: bytes | str) -> Path:
    path = root / ".autocode" / "project.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_the_spec_example_is_valid(tmp_path: Path) -> None:
    _write(tmp_path, json.dumps(VALID))
    loaded = load_record(tmp_path)
    assert loaded.status == "valid" and loaded.problems == ()
    assert loaded.record is not None
    assert loaded.record.to_json_dict() == VALID
    assert loaded.to_dict()["data"] == VALID


def test_missing(tmp_path: Path) -> None:
    assert load_record(tmp_path).status == "missing"
    (tmp_path / ".autocode").write_text("a file where the folder should be")
    assert load_record(tmp_path).status == "missing"


def test_unavailable_directory_and_unreadable(tmp_path: Path) -> None:
    (tmp_path / ".autocode" / "project.json").mkdir(parents=True)
    loaded = load_record(tmp_path)
    assert loaded.status == "unavailable" and "directory" in loaded.problems[0]

    other = tmp_path / "other"
    path = _write(other, json.dumps(VALID))
    os.mkfifo(other / "fifo")
    path.unlink()
    path.symlink_to(other / "fifo")
    assert load_record(other).status == "unavailable"  # never blocks on a FIFO


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unavailable_permission(tmp_path: Path) -> None:
    path = _write(tmp_path, json.dumps(VALID))
    path.chmod(0)
    assert load_record(tmp_path).status == "unavailable"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"\xff\xfe{}", "not UTF-8"),
        (b'{"version": 1,', "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"framework": "pytest"}', "version: the field is missing"),
        (b'{"version": "1"}', "must be the integer 1"),
        (b'{"version": true}', "must be the integer 1"),
        (b'{"version": 1, "version": 1}', "more than once"),
        (b'{"version": 1, "framework": NaN}', "not valid JSON"),
        (b'{"version": 1, "extra": 1}', "extra: Extra inputs are not permitted"),
        (b'{"version": 1, "framework": 7}', "framework: Input should be a valid string"),
        (b'{"version": 1, "framework": ""}', "framework: String should have at least 1 character"),
        (b'{"version": 1, "conventions": [{"question": "q"}]}', "conventions[0].answer: Field required"),
        (b'{"version": 1, "conventions": [{"question": "q", "answer": "a", "by": "x"}]}', "conventions[0].by"),
        (b'{"version": 1, "routes": [{"role": "r", "provider": "p"}]}', "routes[0].model"),
        (b'{"version": 1, "human_pause_states": "WAITING"}', "human_pause_states"),
        (("[" * 100000 + "]" * 100000).encode(), "not valid JSON"),
    ],
)
def test_each_invalid_kind_is_reported(tmp_path: Path, content: bytes, fragment: str) -> None:
    _write(tmp_path, content)
    loaded = load_record(tmp_path)
    assert loaded.status == "invalid"
    assert loaded.record is None
    assert any(fragment in p for p in loaded.problems), loaded.problems


def test_out_of_bounds_is_invalid(tmp_path: Path) -> None:
    too_many = {"version": 1, "conventions": [{"question": f"q{i}", "answer": "a"} for i in range(MAX_CONVENTIONS + 1)]}
    _write(tmp_path, json.dumps(too_many))
    loaded = load_record(tmp_path)
    assert loaded.status == "invalid" and "conventions" in loaded.problems[0]
    _write(tmp_path, json.dumps({"version": 1, "conventions": [{"question": "q", "answer": "a" * (MAX_ANSWER + 1)}]}))
    assert load_record(tmp_path).problems == (f"conventions[0].answer: String should have at most {MAX_ANSWER} characters",)
    _write(tmp_path, b" " * (MAX_FILE_BYTES + 1))
    assert "limit" in load_record(tmp_path).problems[0]


@pytest.mark.parametrize("version", [0, 2, 99])
def test_other_versions_are_unsupported(tmp_path: Path, version: int) -> None:
    _write(tmp_path, json.dumps({**VALID, "version": version, "new_field": {}}))
    loaded = load_record(tmp_path)
    assert loaded.status == "unsupported"
    assert f"version {version}" in loaded.problems[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_any_bytes_give_one_of_five_statuses(tmp_path: Path, raw: bytes) -> None:
    _write(tmp_path, raw)
    loaded = load_record(tmp_path)
    assert loaded.status in STATUSES
    assert (loaded.record is not None) == (loaded.status == "valid")
    json.dumps(loaded.to_dict())


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
_record_like = st.fixed_dictionaries(
    {"version": st.sampled_from([1, 1, 1, 2, "1", None])},
    optional={
        "framework": _json,
        "test_command": _json,
        "conventions": st.lists(
            st.fixed_dictionaries({"question": st.text(max_size=4), "answer": _json}), max_size=3
        ),
        "routes": _json,
        "human_pause_states": st.lists(st.text(max_size=3), max_size=3) | _json,
        "other": _json,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_record_like)
def test_any_json_gives_one_of_five_statuses(tmp_path: Path, data: object) -> None:
    _write(tmp_path, json.dumps(data))
    loaded = load_record(tmp_path)
    assert loaded.status in ("valid", "invalid", "unsupported")
    assert (loaded.record is not None) == (loaded.status == "valid")


# ---- merge ---------------------------------------------------------------


def _load(root: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((root / ".autocode" / "project.json").read_text())
    return data


def test_first_merge_writes_the_record_and_the_gitignore(tmp_path: Path) -> None:
    result = merge_record(
        tmp_path,
        ObservedFacts("unittest", "python3 -m unittest discover -s tests -t .", [], ["WAITING_FOR_USER"]),
        [Convention(VALID["conventions"][0]["question"], VALID["conventions"][0]["answer"])],  # type: ignore[index]
    )
    assert result.written and result.errors == () and result.omitted == ()
    assert _load(tmp_path) == VALID
    assert (tmp_path / ".autocode" / ".gitignore").is_file()


def test_new_answer_replaces_the_same_question_and_keeps_the_others(tmp_path: Path) -> None:
    merge_record(tmp_path, ObservedFacts(), [Convention("Q1?", "old"), Convention("Q2?", "two")])
    merge_record(tmp_path, ObservedFacts(), [Convention("Q1?", "new"), Convention("Q3?", "three")])
    assert _load(tmp_path)["conventions"] == [
        {"question": "Q1?", "answer": "new"},
        {"question": "Q2?", "answer": "two"},
        {"question": "Q3?", "answer": "three"},
    ]


def test_unknown_facts_do_not_erase_learned_ones(tmp_path: Path) -> None:
    routes = [Route("planner", "fixture", "m1")]
    merge_record(tmp_path, ObservedFacts("pytest", "python3 -m pytest", routes, ["WAITING_FOR_USER"]), [])
    merge_record(tmp_path, ObservedFacts(routes=[Route("planner", "openai", "m2"), "coder=fixture:c"]), [])
    data = _load(tmp_path)
    assert (data["framework"], data["test_command"]) == ("pytest", "python3 -m pytest")
    assert data["routes"] == [
        {"role": "planner", "provider": "openai", "model": "m2"},
        {"role": "coder", "provider": "fixture", "model": "c"},
    ]
    assert data["human_pause_states"] == ["WAITING_FOR_USER"]


def test_package_run_saves_no_framework_or_command_but_saves_the_rest(tmp_path: Path) -> None:
    merge_record(tmp_path, ObservedFacts("pytest", "python3 -m pytest"), [])
    result = merge_record(
        tmp_path,
        ObservedFacts("jest", "npm test", [Route("planner", "fixture", "m")], ["NEEDS_APPROVAL"]),
        [Convention("Q?", "A")],
        package=True,
    )
    assert result.written
    data = _load(tmp_path)
    assert (data["framework"], data["test_command"]) == ("pytest", "python3 -m pytest")
    assert data["conventions"] == [{"question": "Q?", "answer": "A"}]
    assert data["human_pause_states"] == ["NEEDS_APPROVAL"]
    assert len(data["routes"]) == 1  # type: ignore[arg-type]


def test_merging_what_is_already_there_writes_nothing(tmp_path: Path) -> None:
    merge_record(tmp_path, ObservedFacts("pytest"), [Convention("Q?", "A")])
    path = tmp_path / ".autocode" / "project.json"
    before = (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino)
    loaded = load_record(tmp_path).record
    assert loaded is not None
    # Giving the loaded snapshot back changes nothing: it is not a new answer.
    result = merge_record(tmp_path, ObservedFacts(framework=loaded.framework), list(loaded.conventions))
    assert not result.written and result.errors == ()
    assert (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino) == before


@pytest.mark.parametrize(
    "content", [b"{broken", json.dumps({"version": 2}).encode(), json.dumps({"version": 1, "x": 1}).encode()]
)
def test_a_broken_or_newer_record_is_never_overwritten(tmp_path: Path, content: bytes) -> None:
    path = _write(tmp_path, content)
    result = merge_record(tmp_path, ObservedFacts("pytest"), [Convention("Q?", "A")])
    assert not result.written
    assert "left untouched" in result.errors[0] and "autocode forget" in result.errors[0]
    assert path.read_bytes() == content


def test_merge_never_raises_on_bad_input(tmp_path: Path) -> None:
    odd = [
        Convention("", "empty question"),
        Convention("Q?", "a" * (MAX_ANSWER + 1)),
        {"question": "from a dict?", "answer": "fine"},
        42,
        Convention(None, None),  # type: ignore[arg-type]
    ]
    result = merge_record(
        tmp_path,
        ObservedFacts(framework=3, test_command="x" * 5000, routes=[Route("", "p", "m")], human_pause_states=[7]),  # type: ignore[arg-type]
        odd,  # type: ignore[arg-type]
    )
    assert result.errors == () and result.written
    assert _load(tmp_path)["conventions"] == [{"question": "from a dict?", "answer": "fine"}]
    assert _load(tmp_path)["framework"] is None
    fields = " ".join(result.omitted)
    for name in ("conventions[0]", "conventions[1]", "conventions[3]", "framework", "test_command", "routes[0]"):
        assert name in fields

    missing = merge_record(tmp_path / "nowhere", ObservedFacts(), [])
    assert not missing.written and "not a directory" in missing.errors[0]
    file_ws = tmp_path / "file"
    file_ws.write_text("x")
    assert merge_record(file_ws, ObservedFacts(), []).errors


def test_too_many_conventions_drop_the_oldest(tmp_path: Path) -> None:
    answers = [Convention(f"q{i}?", "a") for i in range(MAX_CONVENTIONS + 5)]
    result = merge_record(tmp_path, ObservedFacts(), answers)
    assert result.written
    conventions = _load(tmp_path)["conventions"]
    assert len(conventions) == MAX_CONVENTIONS  # type: ignore[arg-type]
    assert conventions[0]["question"] == "q5?"  # type: ignore[index]
    assert any("5 oldest entries dropped" in o for o in result.omitted)


@pytest.mark.parametrize(
    ("given_command", "stored"),
    [
        ("/opt/venvs/app/bin/python3.11 -m pytest -q", "python3 -m pytest -q"),
        (".venv/bin/python -m unittest discover -s tests -t .", "python3 -m unittest discover -s tests -t ."),
        ("python -m pytest", "python3 -m pytest"),
        ("python3 -m pytest", "python3 -m pytest"),
        ("make test", "make test"),
        ("/opt/tools/python -m mypkg.tests", "/opt/tools/python -m mypkg.tests"),
    ],
)
def test_known_python_suites_get_the_portable_launcher(given_command: str, stored: str) -> None:
    assert portable_test_command(given_command) == stored


def test_interpreter_path_is_made_portable_through_merge(tmp_path: Path) -> None:
    merge_record(tmp_path, ObservedFacts("pytest", "/home/alice/.venv/bin/python -m pytest -x"), [])
    assert _load(tmp_path)["test_command"] == "python3 -m pytest -x"


def test_docs_example_round_trips_through_merge(tmp_path: Path) -> None:
    write_files(tmp_path, {".autocode/project.json": json.dumps(VALID, indent=2) + "\n"})
    result = merge_record(tmp_path, ObservedFacts(), [])
    assert not result.written


_question = st.sampled_from(["Q1?", "Q2?", "Q3?", "Q4?"])
_answer = st.text(alphabet="abc xyz.", min_size=1, max_size=8).filter(str.strip)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(_question, _answer), max_size=4), min_size=1, max_size=4))
def test_merges_keep_the_latest_answer_per_question_property(batches: list[list[tuple[str, str]]]) -> None:
    import tempfile

    expected: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as folder:
        for batch in batches:
            result = merge_record(folder, ObservedFacts(), [Convention(q, a) for q, a in batch], env={})
            assert result.errors == ()
            for question, answer in batch:
                expected[question] = answer
        loaded = load_record(folder)
        if not expected:
            assert loaded.status in ("missing", "valid")
            return
        assert loaded.record is not None
        assert {c.question: c.answer for c in loaded.record.conventions} == expected
        assert [c.question for c in loaded.record.conventions] == list(expected)


def test_nothing_learned_creates_no_file(tmp_path: Path) -> None:
    result = merge_record(tmp_path, ObservedFacts(), [Convention("Q?", "see /home/alice/notes.txt")], env={})
    assert not result.written and result.errors == () and result.omitted
    assert not (tmp_path / ".autocode" / "project.json").exists()


def test_routes_and_pause_states_stay_within_their_bounds(tmp_path: Path) -> None:
    routes = [Route(f"role{i}", "fixture", "m") for i in range(MAX_ROUTES + 3)]
    states = [f"STATE_{i}" for i in range(MAX_PAUSE_STATES + 2)]
    result = merge_record(tmp_path, ObservedFacts(routes=routes, human_pause_states=states), [])
    assert result.written and result.errors == ()
    data = _load(tmp_path)
    assert [r["role"] for r in data["routes"]] == [f"role{i}" for i in range(3, MAX_ROUTES + 3)]  # type: ignore[union-attr,index]
    assert data["human_pause_states"] == states[:MAX_PAUSE_STATES]
    assert f"routes: 3 oldest entries dropped (limit {MAX_ROUTES})" in result.omitted
    assert sum("limit of" in o for o in result.omitted) == 2
    assert load_record(tmp_path).status == "valid"
