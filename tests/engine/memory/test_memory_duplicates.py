"""Duplicates without loss: the decision calibrated on the labelled set in
fixtures/memory/duplicates.tsv, with the installed static model and with no
model, and the same decision through a real store.

A `distinct` pair must never be merged; a `same` pair is merged when the
decision recognises it, and otherwise saved with `similar_to` naming the first.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from autocode.memory import MemoryContext, MemoryService, rules
from autocode.memory.embeddings import (
    STATIC_MODEL_NAME,
    StaticEmbedder,
    dot,
    static_model_installed,
)

ROOT = Path(__file__).resolve().parents[3]
SET_PATH = ROOT / "fixtures" / "memory" / "duplicates.tsv"
MemoryFactory = Callable[..., MemoryService]

needs_model = pytest.mark.skipif(
    not static_model_installed(), reason="the semantic extra is not installed (pip install 'autocode-lsp[semantic]')"
)


def _pairs() -> list[tuple[str, str, str, str]]:
    rows = []
    for line in SET_PATH.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            label, category, first, second = line.split("\t")
            rows.append((label, category, first, second))
    return rows


PAIRS = _pairs()
SAME = [p for p in PAIRS if p[0] == "same"]
DISTINCT = [p for p in PAIRS if p[0] == "distinct"]


def _verdict(first: str, second: str, cosine: float | None, model: str | None) -> str | None:
    """What saving `second` after `first` decides: exact, terms, meaning or None (saved)."""
    if rules.content_hash(first) == rules.content_hash(second):
        return "exact"
    return rules.duplicate_method(second, rules.terms(second), first, rules.terms(first), cosine, model)


def test_the_labelled_set_is_big_enough_and_covers_every_kind_of_distinct_fact() -> None:
    assert len(SAME) >= 100
    assert len(DISTINCT) >= 300
    kinds = Counter(category for _, category, _, _ in DISTINCT)
    for kind in ("uuid", "digest", "identifier", "version", "url", "number", "quoted", "negation", "swap"):
        assert kinds[kind] >= 20, kind
    assert len({(a, b) for _, _, a, b in PAIRS}) == len(PAIRS)


def test_the_labelled_set_is_what_its_script_writes(tmp_path: Path) -> None:
    script = ROOT / "fixtures" / "memory" / "make_duplicates.py"
    copy = tmp_path / script.name
    copy.write_text(script.read_text(encoding="utf-8"), encoding="utf-8")
    subprocess.run([sys.executable, str(copy)], check=True, cwd=tmp_path)
    assert (tmp_path / "duplicates.tsv").read_text(encoding="utf-8") == SET_PATH.read_text(encoding="utf-8")


def test_every_text_of_the_set_is_a_memory_the_rules_accept() -> None:
    for _, _, first, second in PAIRS:
        for text in (first, second):
            assert rules.check_content(text) is None, text
            assert rules.skill_goal(text) is None, text


def test_calibration_with_no_model_merges_no_distinct_pair() -> None:
    merged_distinct = [(a, b) for _, _, a, b in DISTINCT if _verdict(a, b, None, None)]
    assert merged_distinct == []
    merged_same = [(a, b) for _, _, a, b in SAME if _verdict(a, b, None, None)]
    # Words alone recognise the restatements that add nothing (docs/memory.md has the figure).
    assert len(merged_same) >= 35


@pytest.fixture(scope="module")
def cosines() -> dict[tuple[str, str], float]:
    embedder = StaticEmbedder()
    texts = sorted({t for _, _, a, b in PAIRS for t in (a, b)})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    return {(a, b): dot(vectors[a], vectors[b]) for _, _, a, b in PAIRS}


@needs_model
def test_calibration_with_the_installed_model_merges_no_distinct_pair(
    cosines: dict[tuple[str, str], float],
) -> None:
    assert STATIC_MODEL_NAME in rules.MEANING_DUPLICATE, "the installed model is the calibrated one"
    merged_distinct = [
        (category, a, b, round(cosines[a, b], 3))
        for _, category, a, b in DISTINCT
        if _verdict(a, b, cosines[a, b], STATIC_MODEL_NAME)
    ]
    assert merged_distinct == []
    verdicts = Counter(_verdict(a, b, cosines[a, b], STATIC_MODEL_NAME) for _, _, a, b in SAME)
    assert verdicts["meaning"] >= 35 and verdicts["terms"] >= 35
    assert verdicts["meaning"] + verdicts["terms"] + verdicts["exact"] >= 0.75 * len(SAME)


@needs_model
def test_the_model_alone_would_merge_distinct_facts(cosines: dict[tuple[str, str], float]) -> None:
    """Why the guards exist: by cosine alone the calibrated threshold merges
    many distinct pairs of the set (a UUID, a digest, a version, after/before)."""
    threshold = rules.MEANING_DUPLICATE[STATIC_MODEL_NAME]
    by_cosine = Counter(category for _, category, a, b in DISTINCT if cosines[a, b] >= threshold)
    assert sum(by_cosine.values()) >= 100
    assert {"uuid", "version", "number", "negation", "swap"} <= set(by_cosine)


def test_an_uncalibrated_model_never_merges_by_meaning() -> None:
    first, second = SAME[0][2], SAME[0][3]
    assert rules.duplicate_method(second, rules.terms(second), first, rules.terms(first), 0.999, "openai:x") is None
    assert rules.duplicate_method(second, rules.terms(second), first, rules.terms(first), 0.999, None) is None


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        ("Use Redis for caching", "Redis is used for caching", True),
        ("Use Redis for caching", "Use Memcached for caching", False),
        ("The limit is 100 per minute", "The limit is 1000 per minute", False),
        ("Python 3.11 is required", "The project requires Python 3.11", True),
        ('The flag is "new_checkout"', 'The flag is "old_checkout"', False),
        ("The flag is `beta`", "The flag is beta", True),  # the same text, quoted or not
        ("Branches start with `rel-`", "Branches start with `rel/`", False),
        ("The event is 'user signed in'", "The event is 'user signed out'", False),
        ("Crowdin manages the translations", "Translations are managed in Crowdin", True),
        ("TEST_DATABASE_URL must be set", "Set TEST_DB_URL first", False),
    ],
)
def test_facts_agree(a: str, b: str, agree: bool) -> None:
    assert rules.facts_agree(a, b) is agree
    assert rules.facts_agree(b, a) is agree


# --- through a real store ---------------------------------------------------------


@needs_model
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_every_pair_through_the_service(make_memory: MemoryFactory) -> None:
    memory = make_memory(embedding_provider="static")
    outcomes: Counter[str] = Counter()
    for index, (label, category, first, second) in enumerate(PAIRS):
        ctx = MemoryContext(f"pair{index}", None)  # one bucket per pair
        kept = memory.save(ctx, first)
        assert kept.saved, first
        again = memory.save(ctx, second)
        if label == "distinct":
            assert again.saved, (category, first, second, again.to_dict())
            outcomes["distinct saved"] += 1
            outcomes["distinct named similar"] += again.similar_to == kept.id
        elif again.saved:
            outcomes["same saved"] += 1
            outcomes["same named similar"] += again.similar_to == kept.id
        else:
            assert again.duplicate_of == kept.id
            outcomes[f"same merged by {again.duplicate_method}"] += 1
    assert outcomes["distinct saved"] == len(DISTINCT)
    assert outcomes["same saved"] <= 0.25 * len(SAME)
    # A restatement that is kept is named as similar to what it restates.
    assert outcomes["same named similar"] >= 0.8 * outcomes["same saved"]
    assert outcomes["distinct named similar"] >= 0.8 * len(DISTINCT)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
@pytest.mark.parametrize("provider", [pytest.param("static", marks=needs_model), "none"])
def test_what_issue_13_lost_is_kept_and_named(make_memory: MemoryFactory, provider: str) -> None:
    memory = make_memory(embedding_provider=provider)
    ctx = MemoryContext("implementer", None)
    pairs = [
        ("The deploy key id is 3f2b8c1e-5d4a-4b2b-9c3d-0123456789ab",
         "The deploy key id is 9a7d6e5f-2222-4b3c-8d4e-fedcba987654"),
        ("The base image is python@sha256:" + "3a" * 32, "The base image is python@sha256:" + "c7" * 32),
        ("The API client is pinned to version 2.14.1", "The API client is pinned to version 2.15.0"),
        ("The vendored archive has sha256 " + "0f1e" * 16, "The vendored archive has sha256 " + "9d8c" * 16),
    ]
    for first, second in pairs:
        kept = memory.save(ctx, first)
        again = memory.save(ctx, second)
        assert kept.saved and again.saved
        assert again.similar_to == kept.id and again.to_dict()["similar_to"] == kept.id
    # 36 facts from one template, differing only in their value: all kept.
    for port in range(8000, 8036):
        assert memory.save(ctx, f"The preview server for branch builds listens on port {port}").saved
    assert memory.store.count_memories() == 8 + 36
