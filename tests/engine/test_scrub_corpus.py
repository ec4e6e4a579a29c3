"""The scrub corpus decides: every credential and machine path found with its
kind, no look-alike flagged, and the figures docs/scrub.md reports hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autocode.scrub import (
    PATH_KINDS,
    SECRET_KINDS,
    contains_machine_path,
    contains_secret,
    find_machine_paths,
    find_secrets,
    is_shareable,
    redact,
)
from support.scrub import load_corpus

CORPUS = load_corpus()
ROOT = Path(__file__).resolve().parents[2]


def _ids(items: list[dict[str, object]], key: str) -> list[str]:
    return [f"{i}-{item[key]}" for i, item in enumerate(items)]


def test_corpus_is_big_enough_and_covers_every_format() -> None:
    assert len(CORPUS["credentials"]) >= 40
    assert len(CORPUS["lookalikes"]) >= 25
    assert len(CORPUS["paths"]) >= 15
    assert len(CORPUS["path_lookalikes"]) >= 15
    # Every credential kind but env_value (which needs an environment) has items.
    assert {item["kind"] for item in CORPUS["credentials"]} == SECRET_KINDS - {"env_value"}
    assert {item["kind"] for item in CORPUS["paths"]} == PATH_KINDS
    for item in CORPUS["credentials"]:
        assert item["secret"] and item["secret"] in item["text"]


@pytest.mark.parametrize("item", CORPUS["credentials"], ids=_ids(CORPUS["credentials"], "kind"))
def test_each_credential_is_found_with_its_kind_and_redacted(item: dict[str, str]) -> None:
    findings = find_secrets(item["text"], env={})
    assert item["kind"] in {f.kind for f in findings}
    assert any(f.start <= item["text"].index(item["secret"]) < f.end for f in findings)
    assert contains_secret(item["text"], env={})
    assert not is_shareable(item["text"], env={})
    redacted = redact(item["text"], env={})
    assert item["secret"] not in redacted
    assert f"[redacted:{item['kind']}]" in redacted


@pytest.mark.parametrize("item", CORPUS["lookalikes"], ids=_ids(CORPUS["lookalikes"], "why"))
def test_each_lookalike_is_shareable(item: dict[str, str]) -> None:
    assert find_secrets(item["text"], env={}) == []
    assert find_machine_paths(item["text"]) == []
    assert is_shareable(item["text"], env={})
    assert redact(item["text"], env={}) == item["text"]


@pytest.mark.parametrize("item", CORPUS["paths"], ids=_ids(CORPUS["paths"], "kind"))
def test_each_machine_path_is_found_with_its_kind(item: dict[str, str]) -> None:
    findings = find_machine_paths(item["text"], item.get("workspace"))
    assert item["kind"] in {f.kind for f in findings}
    assert contains_machine_path(item["text"], item.get("workspace"))
    assert not is_shareable(item["text"], item.get("workspace"), env={})
    assert find_secrets(item["text"], env={}) == []


@pytest.mark.parametrize("item", CORPUS["path_lookalikes"], ids=_ids(CORPUS["path_lookalikes"], "why"))
def test_each_path_lookalike_is_shareable(item: dict[str, str]) -> None:
    assert find_machine_paths(item["text"], item.get("workspace")) == []
    assert is_shareable(item["text"], item.get("workspace"), env={})


def _precision_recall(positives: list[bool], negatives: list[bool]) -> tuple[float, float]:
    true_pos = sum(positives)
    false_pos = sum(negatives)
    return true_pos / max(1, true_pos + false_pos), true_pos / len(positives)


def test_precision_and_recall_on_the_corpus() -> None:
    secrets = _precision_recall(
        [contains_secret(i["text"], env={}) for i in CORPUS["credentials"]],
        [contains_secret(i["text"], env={}) for i in CORPUS["lookalikes"]],
    )
    paths = _precision_recall(
        [contains_machine_path(i["text"], i.get("workspace")) for i in CORPUS["paths"]],
        [contains_machine_path(i["text"], i.get("workspace")) for i in CORPUS["path_lookalikes"]],
    )
    assert secrets == (1.0, 1.0)
    assert paths == (1.0, 1.0)


def test_corpus_generator_reproduces_the_committed_corpus(tmp_path: Path) -> None:
    script = ROOT / "fixtures" / "scrub" / "make_corpus.py"
    copy = tmp_path / "make_corpus.py"
    copy.write_text(script.read_text(encoding="utf-8"), encoding="utf-8")
    subprocess.run([sys.executable, str(copy)], check=True, cwd=tmp_path)
    committed = (ROOT / "fixtures" / "scrub" / "corpus.json").read_text(encoding="utf-8")
    assert (tmp_path / "corpus.json").read_text(encoding="utf-8") == committed


SCRUB_FILES = [
    "engine/autocode/scrub.py",
    "fixtures/scrub/corpus.json",
    "fixtures/scrub/make_corpus.py",
    "tests/support/scrub.py",
    "tests/engine/test_scrub_corpus.py",
    "tests/engine/test_scrub_rules.py",
    "tests/engine/test_scrub_properties.py",
    "tests/bench/bench_scrub.py",
    "docs/scrub.md",
]


@pytest.mark.parametrize("relative", SCRUB_FILES)
def test_no_whole_credential_is_stored_in_scrub_files(relative: str) -> None:
    text = (ROOT / relative).read_text(encoding="utf-8")
    assert find_secrets(text, env={}) == [], f"{relative} holds a credential-shaped string"
