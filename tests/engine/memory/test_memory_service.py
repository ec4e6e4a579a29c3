"""The memory rules on both stores (parametrised): saving, duplicates, skills, scopes, isolation,
eviction, promotion, reflection, search and recall."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from autocode.errors import UsageError
from autocode.memory import (
    MemoryContext,
    MemoryNotFound,
    MemoryService,
    MemoryStoreError,
    NoRepositoryInContext,
)
from autocode.memory.repokey import NotARepository
from support import git, make_repo

MemoryFactory = Callable[..., MemoryService]


def ids(memories: list) -> set[str]:  # type: ignore[type-arg]
    return {m.id for m in memories}


def test_scope_defaults_to_where_the_run_is(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    memory = make_memory()
    in_repo = memory.save(MemoryContext("implementer", repos["a"]), "The API serialises dates as UTC strings")
    nowhere = memory.save(MemoryContext("implementer", None), "Prefer small commits with one reason each")
    assert (in_repo.scope, in_repo.repository) == ("project", "origin:github.com/example/alpha")
    assert (nowhere.scope, nowhere.repository) == ("global", None)
    explicit = memory.save(MemoryContext("implementer", repos["a"]), "Write docs in plain English", scope="global")
    assert explicit.saved and explicit.scope == "global" and explicit.repository is None


def test_project_scope_without_repository_is_an_error_and_writes_nothing(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    with pytest.raises(NoRepositoryInContext, match="scope=project needs a repository"):
        memory.save(MemoryContext("implementer", None), "The billing tests need a stub server", scope="project")
    assert memory.store.count_memories() == 0
    with pytest.raises(NoRepositoryInContext):
        memory.search(MemoryContext("implementer", None), "billing", scope="project")


def test_bad_inputs_are_clear_errors_and_write_nothing(make_memory: MemoryFactory, tmp_path: Path) -> None:
    memory = make_memory()
    ctx = MemoryContext("implementer", None)
    for bad in ("", "   ", "x" * 2001):
        with pytest.raises(UsageError):
            memory.save(ctx, bad)
    with pytest.raises(UsageError, match="scope must be"):
        memory.save(ctx, "A fact", scope="repo")
    with pytest.raises(UsageError, match="agent name"):
        memory.save(MemoryContext("bad name!", None), "A fact")
    with pytest.raises(UsageError, match="limit"):
        memory.search(ctx, "fact", limit=0)
    with pytest.raises(UsageError, match="owner=self needs an agent"):
        memory.list(MemoryContext(None, None), owner="self")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotARepository, match="not inside a git repository"):
        memory.save(MemoryContext("implementer", plain), "A fact")
    empty = make_repo(tmp_path / "empty", commit=False)
    with pytest.raises(NotARepository, match="no commit"):
        memory.save(MemoryContext("implementer", empty), "A fact")
    assert memory.store.count_memories() == 0


def test_exact_and_near_duplicates_answer_with_the_original(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    ctx = MemoryContext("implementer", None)
    first = memory.save(ctx, "The integration tests need Redis running on port 6380")
    exact = memory.save(ctx, "  the integration tests need redis running on port 6380. ")
    near = memory.save(ctx, "Integration tests need Redis running on the port 6380!")
    assert first.saved
    assert exact.to_dict()["saved"] is False and exact.duplicate_of == first.id and exact.duplicate_method == "exact"
    assert near.duplicate_of == first.id and near.duplicate_method == "terms"
    different = memory.save(ctx, "The integration tests must not need Redis on port 6380")
    assert different.saved, "a negation is a different fact"
    other_bucket = memory.save(MemoryContext("reviewer", None), "The integration tests need Redis running on port 6380")
    assert other_bucket.saved, "duplicates are per bucket"
    assert memory.store.count_memories() == 3


def test_duplicate_by_meaning_with_embeddings(make_memory: MemoryFactory) -> None:
    memory = make_memory(embedding_provider="static")
    ctx = MemoryContext("implementer", None)
    first = memory.save(ctx, "The tests need TEST_DATABASE_URL set, otherwise they fail with connection refused")
    again = memory.save(ctx, "Without TEST_DATABASE_URL the test suite fails: connection refused")
    assert again.duplicate_of == first.id and again.duplicate_method == "meaning"
    unrelated = memory.save(ctx, "Prefer pytest fixtures over setUp methods in new tests")
    assert unrelated.saved


def test_refusal_writes_nothing_and_carries_the_suggestion(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    result = memory.save(MemoryContext("implementer", None), "PR 45 changed the retry policy: the HTTP client retries three times")
    data = result.to_dict()
    assert data["saved"] is False and data["id"] is None
    assert data["refused"]["kind"] == "pr_or_issue"
    assert data["refused"]["suggestion"] == "Changed the retry policy: the HTTP client retries three times."
    assert memory.store.count_memories() == 0


def test_know_how_becomes_a_skill_not_a_memory(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    memory = make_memory()
    ctx = MemoryContext("implementer", repos["a"])
    result = memory.save(ctx, "To regenerate the API client, run make openapi and commit the result", category="tooling")
    assert result.to_dict()["saved"] is False
    assert result.skill == "regenerate-api-client"
    assert memory.store.count_memories() == 0
    skills = memory.skills(ctx)
    assert [(s.name, s.owner, s.repo_key, s.category) for s in skills] == [
        ("regenerate-api-client", "implementer", "origin:github.com/example/alpha", "tooling")
    ]
    again = memory.save(ctx, "to regenerate the API client, run make openapi and commit the result")
    assert again.skill == "regenerate-api-client" and len(memory.skills(ctx)) == 1
    other = memory.save(ctx, "To regenerate the API client, run make openapi-v2 then make fmt")
    assert other.skill == "regenerate-api-client-2"
    assert memory.skills(MemoryContext("implementer", repos["b"])) == []


def test_repository_a_is_never_visible_from_b_or_from_nowhere(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    memory = make_memory()
    lesson = "Staging deploys need the VPN profile named corp-staging"
    saved_a = memory.save(MemoryContext("implementer", repos["a"]), lesson)
    team_a = memory.save(MemoryContext("implementer", repos["a"]), "Alpha's fixtures live in tests/data", shared=True)
    global_one = memory.save(MemoryContext("implementer", None), "Keep commit subjects under 72 characters")
    for ctx in (MemoryContext("implementer", repos["b"]), MemoryContext("implementer", None), MemoryContext(None, repos["b"])):
        visible = ids(memory.list(ctx))
        assert saved_a.id not in visible and team_a.id not in visible
        assert memory.search(ctx, "staging deploys VPN profile").hits == []
        assert memory.recall(ctx, "deploy to staging").project == []
    assert ids(memory.list(MemoryContext("implementer", None))) == {global_one.id}
    # Clones and worktrees of A share its key, so they see A's memories.
    for where in ("a", "clone", "worktree"):
        visible = ids(memory.list(MemoryContext("implementer", repos[where])))
        assert {saved_a.id, team_a.id, global_one.id} <= visible, where
    # Another agent sees the team memory of A but not the implementer's own.
    reviewer = ids(memory.list(MemoryContext("reviewer", repos["clone"])))
    assert team_a.id in reviewer and saved_a.id not in reviewer
    with pytest.raises(MemoryNotFound):
        memory.delete(MemoryContext("implementer", repos["b"]), saved_a.id)
    assert memory.store.count_memories() == 3


def test_clones_without_network_origin_share_the_root_commit(make_memory: MemoryFactory, tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "local", {"a.txt": "a\n"})
    clone = tmp_path / "local-clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    memory = make_memory()
    saved = memory.save(MemoryContext("planner", origin), "Migrations are written by hand, never autogenerated")
    assert saved.repository is not None and saved.repository.startswith("root:")
    assert str(tmp_path) not in saved.repository
    assert ids(memory.list(MemoryContext("planner", clone))) == {saved.id}


def test_search_owner_and_scope_filters(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    memory = make_memory()
    ctx = MemoryContext("implementer", repos["a"])
    own_project = memory.save(ctx, "Alpha builds with poetry, not pip")
    team_project = memory.save(ctx, "Alpha's poetry lock is regenerated weekly", shared=True)
    own_global = memory.save(ctx, "poetry install is slow on the shared runners", scope="global")
    memory.save(MemoryContext("reviewer", repos["a"]), "Reviewers check poetry lock diffs by hand")

    def found(**kw: str) -> set[str]:
        return {h.memory.id for h in memory.search(ctx, "poetry", **kw).hits}  # type: ignore[arg-type]

    assert found() == {own_project.id, team_project.id, own_global.id}
    assert found(owner="self") == {own_project.id, own_global.id}
    assert found(owner="team") == {team_project.id}
    assert found(scope="project") == {own_project.id, team_project.id}
    assert found(scope="global") == {own_global.id}
    result = memory.search(ctx, "poetry")
    assert result.method == "keyword-recent"
    assert [h.memory.id for h in result.hits] == [own_global.id, team_project.id, own_project.id]


def test_delete_removes_one_the_caller_can_see(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    ctx = MemoryContext("implementer", None)
    keep = memory.save(ctx, "The docs site builds with mkdocs material")
    gone = memory.save(ctx, "Feature flags live in config/flags.yaml")
    removed = memory.delete(ctx, gone.id or "")
    assert removed.id == gone.id
    assert ids(memory.list(ctx)) == {keep.id}
    with pytest.raises(MemoryNotFound):
        memory.delete(ctx, gone.id or "")
    with pytest.raises(MemoryNotFound):
        memory.delete(MemoryContext("reviewer", None), keep.id or "")
    assert memory.events("deleted")[0]["memory_id"] == gone.id


def test_eviction_at_cap_plus_one(make_memory: MemoryFactory, repos: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    memory = make_memory(memory_max_count=3)
    in_a = MemoryContext("implementer", repos["a"])
    first = memory.save(in_a, "Alpha fact one: the cache warms at start-up")
    later = [memory.save(in_a, f"Alpha fact {n}: module {n} owns the {n} endpoint") for n in ("two", "three")]
    elsewhere = memory.save(MemoryContext("implementer", repos["b"]), "Beta fact: it vendors its protobufs")
    own_global = memory.save(MemoryContext("implementer", None), "Global fact: reviews happen in pairs")
    team = [memory.save(in_a, f"Team fact {n}: rule {n} of the style guide", shared=True) for n in ("alpha", "beta", "gamma", "delta")]
    assert all(r.saved and not r.evicted for r in [first, *later, elsewhere, own_global, *team])
    with caplog.at_level(logging.WARNING, logger="autocode.memory"):
        overflow = memory.save(in_a, "Alpha fact four: logs rotate daily")
    assert overflow.saved
    assert [e.id for e in overflow.evicted] == [first.id]
    assert ids(memory.list(in_a, owner="self", scope="project")) == {later[0].id, later[1].id, overflow.id}
    assert elsewhere.id in ids(memory.list(MemoryContext("implementer", repos["b"])))
    assert own_global.id in ids(memory.list(MemoryContext("implementer", None)))
    assert {t.id for t in team} <= ids(memory.list(in_a, owner="team"))
    events = memory.events("evicted")
    assert [e["memory_id"] for e in events] == [first.id]
    assert "cap 3" in events[0]["detail"]
    assert any(first.id in r.getMessage() for r in caplog.records)


def test_promotion_plan_writes_nothing_and_apply_is_all_or_nothing(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    memory = make_memory()
    ctx = MemoryContext(None, repos["a"])
    how = memory.store.write  # the apply below must go through it in one transaction
    assert how is not None
    know_how = memory.save(ctx, "Always run make lint before pushing; CI rejects unformatted code", category="ci")
    debug = memory.save(ctx, "Never debug the worker with print; use the structured log and trace ids")
    fact = memory.save(ctx, "The staging database is reset every night at 02:00 UTC")
    mine = memory.save(MemoryContext("implementer", repos["a"]), "Always rebase onto main before review")

    def snapshot() -> tuple[object, ...]:
        return (
            sorted(m.to_dict()["id"] for m in memory.list(MemoryContext("implementer", repos["a"]))),
            [s.to_dict() for s in memory.store.list_skills(memory.visibility(MemoryContext("implementer", repos["a"])))],
            memory.store.query("SELECT count(*) FROM skills"),
            memory.store.query("SELECT count(*) FROM memory_events"),
        )

    before = snapshot()
    plan = memory.plan_promotion(ctx)
    assert snapshot() == before
    assert plan.scanned == 3
    by_id = {c.memory_id: c for c in plan.candidates}
    assert set(by_id) == {know_how.id, debug.id}
    assert fact.id not in by_id and mine.id not in by_id
    lint = by_id[know_how.id]
    assert lint.name == "always-run-make-lint-pushing" and lint.category == "ci"
    assert "implementer" in lint.agents and "reviewer" in lint.agents
    assert "investigator" in by_id[debug.id].agents

    with pytest.raises(UsageError, match="nothing was applied"):
        memory.apply_promotion(ctx, [know_how.id or "", fact.id or ""])
    assert snapshot() == before

    # A conflict found halfway (the second candidate) rolls back the first one's skills too.
    with memory.store.write() as w:
        w.execute(
            "INSERT INTO skills (id, name, owner, description, category, content, norm_hash, scope, repo_key, origin, "
            "source_memory_id, created_at) VALUES ('skill_x', ?, 'investigator', 'd', NULL, 'other', 'h', 'project', ?, 'manual', NULL, 't')",
            (by_id[debug.id].name, "origin:github.com/example/alpha"),
        )
    before = snapshot()
    with pytest.raises(MemoryStoreError, match="Nothing was applied") as err:
        memory.apply_promotion(ctx, [know_how.id or "", debug.id or ""])
    assert err.value.kind == "skillConflict"
    assert snapshot() == before

    applied = memory.apply_promotion(ctx, [know_how.id or ""])
    assert applied.removed == [know_how.id]
    assert {s.owner for s in applied.skills} == set(lint.agents)
    assert know_how.id not in ids(memory.list(ctx))
    reviewer_skills = memory.skills(MemoryContext("reviewer", repos["clone"]))
    assert [s.name for s in reviewer_skills] == ["always-run-make-lint-pushing"]
    assert reviewer_skills[0].source_memory_id == know_how.id


def test_reflection_is_global_only_and_needs_approval(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    memory = make_memory()
    run_ctx = MemoryContext("implementer", repos["a"], run_id="run-7")
    with pytest.raises(UsageError, match="run_id"):
        memory.record_lessons(MemoryContext("implementer", repos["a"]), ["x"])
    lesson_ids = memory.record_lessons(
        run_ctx,
        [
            "Flaky network tests pass when the retry budget is raised to five",
            "T-12 was blocked on a missing fixture",
            "To reset the local stack, run make down and make up",
        ],
    )
    proposals = memory.reflect(MemoryContext(None, None)).proposals
    assert [p.verdict for p in proposals] == ["proposed", "refused", "skill"]
    assert all(p.wire()["scope"] == "global" for p in proposals)
    assert proposals[0].source_repository == "origin:github.com/example/alpha"
    assert memory.store.count_memories() == 0, "proposing writes no memory"
    with pytest.raises(UsageError, match="approval"):
        memory.reflect(MemoryContext(None, None), approve=[lesson_ids[0]])
    assert memory.store.count_memories() == 0
    result = memory.reflect(MemoryContext(None, None), approve=[lesson_ids[0]], reject=[lesson_ids[1]], approved_by="alice")
    assert len(result.applied) == 1 and result.applied[0].saved
    assert result.applied[0].scope == "global" and result.applied[0].repository is None
    assert [p.id for p in result.proposals] == [lesson_ids[2]]
    saved_id = result.applied[0].id
    for ctx in (MemoryContext("implementer", repos["b"]), MemoryContext("implementer", None)):
        assert saved_id in ids(memory.list(ctx))
    assert memory.list(MemoryContext("implementer", None))[0].run_id == "run-7"
    assert [p.id for p in memory.reflect(MemoryContext(None, None)).proposals] == [lesson_ids[2]]


def test_recall_gives_two_sections_of_at_most_eight(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    memory = make_memory()
    ctx = MemoryContext("implementer", repos["a"], run_id="run-1")
    project = [memory.save(ctx, f"Alpha area {n}: service {n} has its own schema {n}x") for n in range(10)]
    glob = [memory.save(ctx, f"Global habit {n}: check {n} before each merge {n}y", scope="global") for n in range(3)]
    assert all(r.saved for r in project + glob)
    receipt = memory.recall(ctx, "change the billing schema")
    assert receipt.method == "recency"
    assert len(receipt.project) == 8 and len(receipt.global_) == 3
    assert [h.memory.id for h in receipt.project] == [r.id for r in reversed(project)][:8]
    text = receipt.render()
    assert text.index("## Project memories") < text.index("## Global memories")
    assert "Alpha area 9" in text and "Global habit 0" in text
    record = receipt.receipt()
    assert record["method"] == "recency" and len(record["project"]) == 8
    none = memory.recall(MemoryContext("implementer", None), "x")
    assert none.project == [] and "No repository in context" in none.render()


def test_recall_by_meaning_with_embeddings(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    memory = make_memory(embedding_provider="static")
    ctx = MemoryContext("implementer", repos["a"])
    wanted = memory.save(ctx, "Payments use Stripe webhooks; the signing secret comes from the vault at start-up")
    for text in (
        "The frontend is built with Vite and served by nginx",
        "Log lines are JSON with a trace id field",
        "Docs live in docs/ and are published on merge",
    ):
        memory.save(ctx, text)
    receipt = memory.recall(ctx, "handle a Stripe payment webhook")
    assert receipt.method == "hybrid"
    assert receipt.project[0].memory.id == wanted.id
    assert receipt.project[0].score > receipt.project[1].score


def test_both_backends_give_the_same_answers(make_memory: MemoryFactory, repos: dict[str, Path], backend: str) -> None:
    """Run one script of calls and compare its answers with a golden list valid for either store."""
    memory = make_memory()
    ctx = MemoryContext("implementer", repos["a"])
    answers: list[object] = []
    texts = [
        "The job queue is Celery with Redis as broker",
        "Celery workers must be restarted after settings changes",
        "the job queue is celery with redis as broker",
        "Redis runs on port 6380 in development",
        "T-4 moved Redis to port 6380",
        "To flush the Redis cache, run make flush-cache",
    ]
    for text in texts:
        r = memory.save(ctx, text).to_dict()
        answers.append((r["saved"], r["duplicate_method"], (r["refused"] or {}).get("kind"), r["skill"]))
    for query in ("redis", "celery workers", "port 6380 redis"):
        answers.append([h.memory.content for h in memory.search(ctx, query).hits])
    assert answers == [
        (True, None, None, None),
        (True, None, None, None),
        (False, "exact", None, None),
        (True, None, None, None),
        (False, None, "task_key", None),
        (False, None, None, "flush-redis-cache"),
        ["Redis runs on port 6380 in development", "The job queue is Celery with Redis as broker"],
        ["Celery workers must be restarted after settings changes", "The job queue is Celery with Redis as broker"],
        ["Redis runs on port 6380 in development", "The job queue is Celery with Redis as broker"],
    ], backend


def test_context_accepts_a_repository_key_instead_of_a_folder(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    from autocode.memory import repository_key

    memory = make_memory()
    key = repository_key(repos["worktree"])
    assert key == "origin:github.com/example/alpha"
    saved = memory.save(MemoryContext("implementer", key), "Alpha's API docs are generated on release")
    assert saved.repository == key
    assert ids(memory.list(MemoryContext("implementer", repos["a"]))) == {saved.id}
    with pytest.raises(NotARepository):
        memory.save(MemoryContext("implementer", "not-a-key-or-folder"), "A fact")


def test_ranking_cache_sees_writes_from_another_connection(make_memory: MemoryFactory) -> None:
    reader = make_memory(embedding_provider="static")
    writer = make_memory(embedding_provider="static")
    ctx = MemoryContext("implementer", None)
    first = writer.save(ctx, "The mail catcher listens on port 8025 in development")
    assert [h.memory.id for h in reader.search(ctx, "where do local emails go").hits] == [first.id]
    second = writer.save(ctx, "Outgoing email in development is captured by the mail catcher, nothing is delivered")
    assert second.saved
    assert {h.memory.id for h in reader.search(ctx, "mail catcher").hits} == {first.id, second.id}
    writer.delete(ctx, first.id or "")
    assert [h.memory.id for h in reader.search(ctx, "mail catcher").hits] == [second.id]


def test_a_path_inside_this_checkout_is_refused(make_memory: MemoryFactory, repos: dict[str, Path]) -> None:
    memory = make_memory()
    result = memory.save(MemoryContext("implementer", repos["a"]), f"The entry point is {repos['a'] / 'src' / 'app.py'}")
    assert result.refused is not None and result.refused.kind == "machine_path"
    assert memory.store.count_memories() == 0
    kept = memory.save(MemoryContext("implementer", repos["a"]), "The entry point is src/app.py")
    assert kept.saved
