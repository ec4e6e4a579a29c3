"""Refusals, look-alikes, suggestions, normalisation and skill classification (no store needed)."""

from __future__ import annotations

import pytest

from autocode.memory import rules
from autocode.memory.repokey import normalise_origin

REFUSED = [
    ("task_key", "T-28's checks failed on billing because the org's Actions billing is blocked"),
    ("task_key", "ABC-123 needs the migration applied before the seed script"),
    ("task_key", "Fixed the flaky login test for PROJ-9"),
    ("pr_or_issue", "Fixed in #123: the YAML loader rejects tabs in front matter"),
    ("pr_or_issue", "PR 45 changed the retry policy: the HTTP client retries three times with backoff"),
    ("pr_or_issue", "See pull/45 for why the cache is disabled"),
    ("pr_or_issue", "issue 77 is about the slow dashboard query"),
    ("pr_or_issue", "pull request #9 bumped the parser"),
    ("commit_sha", "commit 3f9a2c1 broke the release build"),
    ("commit_sha", "the regression came from a1b2c3d4e5f6 in the parser"),
    ("column_move", "moved the card code_review -> ready_for_qa"),
    ("column_move", "in_progress → done after the checks passed"),
    ("column_move", "Moved to QA after the fix landed"),
    ("this_task", "In this task the integration tests were flaky"),
    ("this_task", "this run hit the model provider's rate limit twice"),
    ("this_task", "This PR renames the settings module"),
    ("this_task", "the current ticket needs a design review"),
]

ALLOWED = [
    "Services talk HTTP-2 between each other and every file is UTF-8 encoded",
    "Timestamps are ISO-8601 in UTC; file digests use SHA-256",
    "The project needs Python 3.11; Django 4.2.7 is pinned and libfoo 1.2.3 is vendored",
    "The brand colour is #333333 with an accent of #fff",
    "Signatures like str -> int are enforced by mypy --strict",
    "This repository's tests require TEST_DATABASE_URL to be set",
    "Legacy exports are ISO-8859-1, the API follows RFC-7231 and GPT-4 plans the work",
    "The cache key prefix is 0xdeadbeef12 on every shard",
    "Release branches are named release/2024.10 and deleted after merge",
    "Lint with ruff, not flake8; the review column is for humans only",
]


@pytest.mark.parametrize(("kind", "content"), REFUSED)
def test_each_anchor_kind_is_refused_with_reason_and_place(kind: str, content: str) -> None:
    refusal = rules.check_content(content)
    assert refusal is not None, content
    assert refusal.kind == kind
    assert refusal.reason
    assert "task's own notes" in refusal.belongs


@pytest.mark.parametrize("content", ALLOWED)
def test_look_alikes_are_not_refused(content: str) -> None:
    assert rules.check_content(content) is None, rules.find_anchors(content)


def test_suggestion_keeps_the_durable_fact_without_the_anchor() -> None:
    refusal = rules.check_content(
        "T-28's checks failed because GitHub Actions billing for this org is blocked, "
        "so CI check runs fail within seconds"
    )
    assert refusal is not None and refusal.suggestion is not None
    assert "T-28" not in refusal.suggestion
    assert refusal.suggestion.startswith("Checks failed because GitHub Actions billing")
    assert refusal.suggestion.endswith(".")
    assert rules.check_content(refusal.suggestion) is None


def test_suggestion_for_pr_number() -> None:
    refusal = rules.check_content("PR 45 changed the retry policy: the HTTP client retries three times with backoff")
    assert refusal is not None
    assert refusal.suggestion == "Changed the retry policy: the HTTP client retries three times with backoff."


@pytest.mark.parametrize(
    "content",
    ["moved the card code_review -> ready_for_qa", "In this task the tests were flaky", "see pull/45 for details"],
)
def test_no_suggestion_when_nothing_durable_is_left(content: str) -> None:
    refusal = rules.check_content(content)
    assert refusal is not None and refusal.suggestion is None


def test_credentials_are_refused_without_suggestion() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    refusal = rules.check_content(f"the deploy bot authenticates with {token}")
    assert refusal is not None
    assert refusal.kind == "credential"
    assert refusal.suggestion is None
    assert token not in refusal.reason + refusal.belongs


def test_several_anchors_are_all_named() -> None:
    refusal = rules.check_content("T-5: commit 3f9a2c1 moved to QA")
    assert refusal is not None and refusal.kind == "task_key"
    assert "commit sha" in refusal.reason and "column move" in refusal.reason


@pytest.mark.parametrize(
    ("content", "name"),
    [
        ("To regenerate the API client, run make openapi and commit the result", "regenerate-api-client"),
        ("How to rotate the logs: 1) stop the service 2) move the files 3) start it", "rotate-logs"),
        ("1. build the image 2. run the smoke tests 3. push the tag", "build-image"),
        ("First run make deps, then make build, and finally make test", None),
    ],
)
def test_procedures_are_know_how(content: str, name: str | None) -> None:
    goal = rules.skill_goal(content)
    assert goal is not None
    if name:
        assert rules.skill_name(goal) == name


@pytest.mark.parametrize(
    "content",
    [
        "This repository's tests require TEST_DATABASE_URL to be set",
        "The staging database is reset every night at 02:00 UTC",
        "Use ruff for linting; flake8 config is stale",
    ],
)
def test_facts_are_not_know_how(content: str) -> None:
    assert rules.skill_goal(content) is None


def test_normalisation_ignores_case_space_quotes_and_final_stop() -> None:
    assert rules.normalise("  The  `make test` target  is slow. ") == rules.normalise("the make test target is slow")
    assert rules.content_hash("Ａ fact") == rules.content_hash("a fact")


def test_terms_keep_versions_and_split_identifiers() -> None:
    assert rules.terms("TEST_DATABASE_URL must be set for Python 3.11") == [
        "test", "database", "url", "set", "python", "3.11",
    ]
    assert "not" in rules.terms("do not use the cache")


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://github.com/Example/Alpha.git", "github.com/example/alpha"),
        ("git@github.com:example/alpha", "github.com/example/alpha"),
        ("ssh://git@github.com:22/example/alpha.git/", "github.com/example/alpha"),
        # The password is joined at run time so the repository holds no credential-shaped URL.
        ("https://someone:" + "hunter2" * 2 + "@gitlab.example.com:8443/Team/Repo.git", "gitlab.example.com:8443/Team/Repo"),
        ("https://x-access-token:abc@github.com/o/r", "github.com/o/r"),
        ("/srv/git/alpha.git", None),
        ("file:///srv/git/alpha.git", None),
        ("../alpha", None),
        ("C:\\src\\alpha", None),
    ],
)
def test_origin_normalisation_strips_credentials_and_local_paths(url: str, key: str | None) -> None:
    assert normalise_origin(url) == key


@pytest.mark.parametrize(
    "token",
    [
        "ghp" + "_" + "Zq3Rt7Kp9Lm2Xv5Nb8Wc4Yd6Hf1Gj0Sa3Te",
        "sk-" + "proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2",
        "xoxb-" + "1234567890-abcdefghij",
    ],
)
def test_vendor_tokens_are_refused_even_in_unusual_lengths(token: str) -> None:
    refusal = rules.check_content(f"The bot logs in with {token} on staging")
    assert refusal is not None and refusal.kind == "credential"


@pytest.mark.parametrize(
    "content",
    ["The sk-learn pipeline is pinned", "Use the gh_pages branch for docs", "Tasks run in the xox queue"],
)
def test_token_look_alikes_are_kept(content: str) -> None:
    assert rules.check_content(content) is None


def test_save_description_states_the_test_and_the_line_to_skills() -> None:
    from autocode.memory import SAVE_DESCRIPTION

    assert "stops being true once the current task is finished" in SAVE_DESCRIPTION
    assert "skill" in SAVE_DESCRIPTION


def test_paths_of_this_machine_are_refused_but_repository_paths_are_kept() -> None:
    home = "/home/" + "alice/projects/shop/.venv"
    refusal = rules.check_content(f"The virtualenv lives at {home}")
    assert refusal is not None and refusal.kind == "machine_path" and refusal.suggestion is None
    assert "relative to the repository root" in refusal.belongs
    for fine in ("Fixtures are in tests/fixtures/invoices", "Shebangs use /usr/bin/env python3", "Logs go to /var/log/shop.log"):
        assert rules.check_content(fine) is None, fine
