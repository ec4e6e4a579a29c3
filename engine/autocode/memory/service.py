"""MemoryService: the rules of saving, seeing, finding, recalling, evicting, reflecting and promoting.

One service sits on one store (SQLite or PostgreSQL) and, when configured, one
embedder. Every public method takes a MemoryContext saying who is asking and
which repository (if any) is in context; visibility follows from it:
the caller's own memories plus the team's, global ones always, project ones
only for the repository in context.

Kept whole: one policy over one store; each public method is a short path
through the same judgement (visibility, duplicates, eviction), which split
over files would be read in pieces.
"""

from __future__ import annotations

import builtins
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from autocode.errors import UsageError
from autocode.memory import rules
from autocode.memory.embeddings import EmbedderChoice, EmbeddingUnavailable, dot, pack, unpack
from autocode.memory.model import (
    DEFAULT_ROLES,
    OWNER_FILTERS,
    RECALL_PER_SECTION,
    SCOPE_FILTERS,
    Eviction,
    Hit,
    Memory,
    MemoryContext,
    MemoryNotFound,
    MemoryStoreError,
    NoRepositoryInContext,
    PromotionCandidate,
    PromotionPlan,
    PromotionResult,
    RecallReceipt,
    ReflectionProposal,
    ReflectionResult,
    Refusal,
    SaveResult,
    SearchResult,
    Skill,
)
from autocode.memory.repokey import is_repository_key, repository_key
from autocode.memory.store import (
    Candidate,
    NewMemory,
    NewSkill,
    Scored,
    Store,
    Visibility,
    eviction_detail,
    excerpt,
    new_id,
    now_text,
)
from autocode.remedy import Advice, Remedy, RemedyKind

log = logging.getLogger("autocode.memory")

MAX_CONTENT = 2000
MAX_LIMIT = 100
HYBRID_KEYWORD_WEIGHT = 0.5
SEMANTIC_FLOOR = 0.3
BACKFILL_BATCH = 1000
SEARCH_MODES: tuple[str, ...] = ("auto", "keyword", "recent", "semantic", "hybrid")
_AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

SAVE_DESCRIPTION = (
    "Save a durable fact for future runs. Test first: if the note stops being true once the current "
    "task is finished, it is not a memory (it belongs in the task's own notes). Reusable know-how, "
    "a procedure worth following again (ordered steps, 'to do X, run Y'), is a skill: such content is "
    "routed to the skill catalog and the answer names the skill. Task keys, PR or issue numbers, "
    "commit SHAs, column moves and credentials are refused."
)


_excerpt = excerpt


DUPLICATE_CANDIDATES = 20
"""Keyword matches of a bucket a new memory is compared with (the best by the search's ranking)."""
FRESH_LIMIT = 200
"""Memories added by other writers between a save's lock-free checks and its insert that are checked
one by one; beyond this the checks run again under the lock."""


def _eviction(old: Memory) -> Eviction:
    return Eviction(old.id, old.owner, old.repo_key, old.created_at, _excerpt(old.content))


@dataclass(frozen=True)
class _Judgement:
    duplicate: str | None = None
    method: str | None = None
    similar: str | None = None
    similar_shape: float = -1.0

    def merge(self, other: _Judgement) -> _Judgement:
        return self if self.similar_shape >= other.similar_shape else other


def _closest(candidates: Sequence[Candidate], vector: Sequence[float] | None, model: str | None) -> Candidate | None:
    """The candidate closest in meaning to `vector` among those embedded by `model`, with its cosine."""
    if vector is None or model is None:
        return None
    best: Candidate | None = None
    for cand in candidates:
        if cand.embedding is not None and cand.embedding_model == model:
            cosine = dot(vector, unpack(cand.embedding))
            if best is None or (best.cosine is not None and cosine > best.cosine):
                best = replace(cand, cosine=cosine)
    return best


def _judge(
    text: str,
    term_list: Sequence[str],
    candidates: Sequence[Candidate],
    nearest: Candidate | None,
    model: str | None,
) -> _Judgement:
    """Whether `text` duplicates a candidate (the rules decide, rules.duplicate_method; the store only
    proposes candidates). A candidate that is close but not a duplicate is named as similar_to, so
    nothing distinct is dropped silently."""
    similar: tuple[str, float] | None = None
    mine = set(term_list)
    for cand in candidates:
        # Without a cosine only the words can make a duplicate: below their threshold the
        # rules' fuller checks cannot say yes, so they are skipped.
        words = cand.terms.split()
        if rules.term_similarity(mine, words) >= rules.TERMS_DUPLICATE:
            found = rules.duplicate_method(text, term_list, cand.content, words)
            if found is not None:
                return _Judgement(cand.id, found)
        shape = rules.shape_similarity(text, cand.content)
        if rules.is_similar(shape, None) and (similar is None or shape > similar[1]):
            similar = (cand.id, shape)
    if nearest is not None and nearest.cosine is not None:
        found = rules.duplicate_method(text, term_list, nearest.content, nearest.terms.split(), nearest.cosine, model)
        if found is not None:
            return _Judgement(nearest.id, found)
        shape = rules.shape_similarity(text, nearest.content)
        # The nearest by meaning is named unless another memory has more
        # words in common: with opaque values embeddings are a poor guide.
        if rules.is_similar(shape, nearest.cosine) and (similar is None or shape >= similar[1]):
            similar = (nearest.id, shape)
    return _Judgement(similar=similar[0] if similar else None, similar_shape=similar[1] if similar else -1.0)


class MemoryService:
    """The memory API every face (CLI, language server, tasks) calls."""

    def __init__(
        self,
        store: Store,
        embedder: EmbedderChoice,
        *,
        max_count: int = 200,
        roles: Sequence[str] = DEFAULT_ROLES,
    ) -> None:
        if max_count < 1:
            raise UsageError(f"memory_max_count must be at least 1 (got {max_count})")
        self.store = store
        self.choice = embedder
        self.max_count = max_count
        self.roles = tuple(dict.fromkeys(roles))
        self._keys: dict[Path, str] = {}
        self._present: set[tuple[tuple[str, str], ...]] = set()
        """Bucket sets a search of this process found holding memories (the model is loaded by then):
        later searches of them send the state check and the ranking together."""

    # Context and visibility.

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def search_mode(self) -> str:
        return "hybrid" if self.choice.embedder is not None else "keyword"

    def repo_key(self, ctx: MemoryContext) -> str | None:
        """The repository key of the context, or None when no repository is in context."""
        if ctx.repository is None:
            return None
        if isinstance(ctx.repository, str) and is_repository_key(ctx.repository):
            return ctx.repository
        path = Path(ctx.repository).resolve()
        if path not in self._keys:
            self._keys[path] = repository_key(path)
        return self._keys[path]

    @staticmethod
    def _agent(ctx: MemoryContext) -> str:
        if ctx.agent is None:
            return ""
        if not isinstance(ctx.agent, str) or not _AGENT_NAME.match(ctx.agent):
            raise UsageError(
                f"agent name {ctx.agent!r} is not usable: use letters, digits, '.', '_' or '-' (at most 64)"
            )
        return ctx.agent

    def visibility(self, ctx: MemoryContext, scope: str = "all", owner: str = "all") -> Visibility:
        """What `ctx` may see, narrowed by scope (all|project|global) and owner (all|self|team)."""
        if scope not in SCOPE_FILTERS:
            raise UsageError(f"scope must be one of {', '.join(SCOPE_FILTERS)} (got {scope!r})")
        if owner not in OWNER_FILTERS:
            raise UsageError(f"owner must be one of {', '.join(OWNER_FILTERS)} (got {owner!r})")
        agent = self._agent(ctx)
        key = self.repo_key(ctx)
        if scope == "project" and key is None:
            raise NoRepositoryInContext(
                Advice("scope=project needs a repository in context; ", Remedy(RemedyKind.GIVE_WORKSPACE),
                       ", or use scope=global")
            )
        if owner == "self" and not agent:
            raise UsageError(Advice("owner=self needs an agent: pass ", Remedy(RemedyKind.NAME_ARGUMENT, argument="agent")))
        owners = {"all": (agent, "") if agent else ("",), "self": (agent,), "team": ("",)}[owner]
        repos: tuple[str, ...]
        if scope == "global":
            repos = ("",)
        elif scope == "project":
            repos = (key or "",)
        else:
            repos = ("", key) if key else ("",)
        return Visibility(owners=owners, repo_keys=repos)

    # Saving.

    def save(
        self,
        ctx: MemoryContext,
        content: str,
        category: str | None = None,
        scope: str | None = None,
        shared: bool = False,
    ) -> SaveResult:
        """Save one memory, or answer why not (refused, a duplicate, or routed to a skill)."""
        text = self._check_content(content)
        category = self._check_category(category)
        if scope not in (None, "project", "global"):
            raise UsageError(f"scope must be project or global, or left unset (got {scope!r})")
        agent = self._agent(ctx)
        key = self.repo_key(ctx)
        if scope == "project" and key is None:
            raise NoRepositoryInContext(
                Advice("scope=project needs a repository in context, and none is: nothing was saved. To save it "
                       "there, ", Remedy(RemedyKind.GIVE_WORKSPACE), "; or save with scope=global")
            )
        effective = scope or ("project" if key else "global")
        repo = key if effective == "project" and key else ""
        owner = "" if shared or not agent else agent
        where_scope, where_repo = effective, repo or None

        folder = str(ctx.repository) if isinstance(ctx.repository, Path) else None
        refusal = rules.check_content(text, folder)
        if refusal is not None:
            return SaveResult(saved=False, refused=refusal, scope=where_scope, repository=where_repo)

        goal = rules.skill_goal(text)
        if goal is not None:
            name = self._route_to_skill(text, goal, category, owner, repo, effective)
            return SaveResult(saved=False, skill=name, scope=where_scope, repository=where_repo)

        norm_hash = rules.content_hash(text)
        term_list = rules.terms(text)
        vector = self._embed_one(text)
        model = self.choice.embedder.model if self.choice.embedder and vector is not None else None
        memory_id = new_id("mem")
        evicted: builtins.list[Eviction] = []

        def duplicate_answer(found: str, method: str) -> SaveResult:
            return SaveResult(saved=False, duplicate_of=found, duplicate_method=method, scope=where_scope, repository=where_repo)

        judged = _Judgement()
        seen = 0
        if not self.store.CHECKS_UNDER_LOCK:
            # The checks read the store without any lock; only the insert below holds it, after a
            # look at what other writers added meanwhile (see Store.CHECKS_UNDER_LOCK).
            checks = self.store.save_checks(owner, repo, norm_hash, term_list, vector, model, DUPLICATE_CANDIDATES)
            if checks.exact is not None:
                return duplicate_answer(checks.exact, "exact")
            judged = _judge(text, term_list, checks.keyword, checks.nearest, model)
            if judged.duplicate is not None:
                return duplicate_answer(judged.duplicate, judged.method or "terms")
            seen = checks.seen
        row = NewMemory(
            id=memory_id,
            content=text,
            norm_hash=norm_hash,
            terms=" ".join(term_list),
            category=category,
            scope=effective,
            repo_key=repo,
            owner=owner,
            created_at=now_text(),
            run_id=ctx.run_id,
            embedding=pack(vector) if vector is not None else None,
            embedding_model=model,
        )
        with self.store.write(lock_key=f"{owner}|{repo}") as w:
            fresh = None if self.store.CHECKS_UNDER_LOCK else w.added_since(owner, repo, seen, FRESH_LIMIT + 1)
            if fresh is None or len(fresh) > FRESH_LIMIT:
                # The whole check under the lock: always where the store says so, and when many
                # saves landed since the lock-free checks.
                checks = w.save_checks(owner, repo, norm_hash, term_list, vector, model, DUPLICATE_CANDIDATES)
                exact, candidates, nearest = checks.exact, checks.keyword, checks.nearest
            else:
                exact, candidates, nearest = w.find_exact(owner, repo, norm_hash), fresh, _closest(fresh, vector, model)
            if exact is not None:
                return duplicate_answer(exact, "exact")
            late = _judge(text, term_list, candidates, nearest, model)
            if late.duplicate is not None:
                return duplicate_answer(late.duplicate, late.method or "terms")
            judged = judged.merge(late)
            w.insert_memory(row)
            if owner:
                for old in w.bucket_overflow(owner, repo, self.max_count):
                    w.delete_memory(old.id)
                    w.log_event("evicted", old.id, owner, repo, eviction_detail(owner, repo, self.max_count, old.content))
                    evicted.append(_eviction(old))
        similar = judged.similar
        for item in evicted:
            log.warning(
                "memory %s evicted: agent %s, %s, over the cap of %d",
                item.id, item.owner, item.repo_key or "global", self.max_count,
            )
        return SaveResult(
            saved=True, id=memory_id, evicted=evicted, scope=where_scope, repository=where_repo, similar_to=similar
        )

    def _check_content(self, content: object) -> str:
        if not isinstance(content, str) or not content.strip():
            raise UsageError("memory content is empty: say the fact to remember")
        text = content.strip()
        if len(text) > MAX_CONTENT:
            raise UsageError(
                f"memory content is {len(text)} characters, more than {MAX_CONTENT}: keep one durable fact per memory"
            )
        if "\x00" in text:
            raise UsageError("memory content contains a NUL character; save plain text")
        return text

    @staticmethod
    def _check_category(category: object) -> str | None:
        if category is None or category == "":
            return None
        if not isinstance(category, str) or len(category) > 40 or not category.strip() or "\n" in category:
            raise UsageError("category must be a short single-line label (at most 40 characters)")
        return category.strip()

    def _embed_one(self, text: str) -> builtins.list[float] | None:
        if self.choice.embedder is None:
            return None
        # lazy: the scrubber, only for a search that embeds its query
        from autocode.scrub import redact_secrets

        # A query may go to an embedding endpoint: its credentials never do.
        try:
            return self.choice.embedder.embed([redact_secrets(text)[0]])[0]
        except EmbeddingUnavailable as exc:
            log.warning("embedding failed, falling back to keywords: %s", exc)
            return None

    def _route_to_skill(
        self, text: str, goal: str, category: str | None, owner: str, repo: str, scope: str
    ) -> str:
        base = rules.skill_name(goal)
        norm_hash = rules.content_hash(text)
        with self.store.write(lock_key=f"skill|{owner}|{repo}") as w:
            existing = w.find_skill_by_hash(owner, repo, norm_hash)
            if existing:
                return existing
            name = base
            suffix = 2
            while w.find_skill(owner, repo, name) is not None:
                name = f"{base}-{suffix}"
                suffix += 1
            w.insert_skill(
                NewSkill(
                    id=new_id("skill"),
                    name=name,
                    owner=owner,
                    description=_excerpt(f"How to {goal.strip()}" if not goal[:1].isupper() else goal, 120),
                    category=category,
                    content=text,
                    norm_hash=norm_hash,
                    scope=scope,
                    repo_key=repo,
                    origin="save_memory",
                    source_memory_id=None,
                    created_at=now_text(),
                )
            )
            w.log_event("skill_created", None, owner, repo, f"routed to skill {name!r}: {_excerpt(text)}")
        return name

    # Reading.

    def list(
        self, ctx: MemoryContext, scope: str = "all", owner: str = "all", limit: int | None = None
    ) -> builtins.list[Memory]:
        """Visible memories, newest first."""
        if limit is not None:
            self._check_limit(limit)
        return self.store.list_memories(self.visibility(ctx, scope, owner), limit)

    def get(self, ctx: MemoryContext, memory_id: str) -> Memory:
        memory = self.store.get_memories([memory_id]).get(memory_id)
        vis = self.visibility(ctx)
        if memory is None or (memory.owner or "") not in vis.owners or (memory.repo_key or "") not in vis.repo_keys:
            raise MemoryNotFound(
                Advice(f"no memory {memory_id!r} visible here; ", Remedy(RemedyKind.LIST_MEMORIES),
                       " the ids you can see")
            )
        return memory

    def delete(self, ctx: MemoryContext, memory_id: str) -> Memory:
        """Delete one memory the caller can see; returns what was removed."""
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise UsageError(Advice("delete needs a memory id; ", Remedy(RemedyKind.LIST_MEMORIES), " them"))
        memory = self.get(ctx, memory_id.strip())
        with self.store.write() as w:
            if w.delete_memory(memory.id) == 0:
                raise MemoryNotFound(f"memory {memory.id!r} was already deleted")
            w.log_event("deleted", memory.id, memory.owner or "", memory.repo_key or "", _excerpt(memory.content))
        return memory

    def skills(self, ctx: MemoryContext) -> builtins.list[Skill]:
        """Skills visible to the caller: its own and the team's, global and this repository's."""
        return self.store.list_skills(self.visibility(ctx))

    @staticmethod
    def _check_limit(limit: object) -> int:
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"limit must be a whole number from 1 to {MAX_LIMIT} (got {limit!r})")
        return limit

    def search(
        self,
        ctx: MemoryContext,
        query: str,
        scope: str = "all",
        owner: str = "all",
        limit: int = 10,
        mode: str = "auto",
    ) -> SearchResult:
        """Visible memories for `query`: by meaning and keywords with embeddings, else keyword matches, newest first."""
        if not isinstance(query, str) or not query.strip():
            raise UsageError("search needs a query: say what you are looking for")
        self._check_limit(limit)
        if mode not in SEARCH_MODES:
            raise UsageError(f"mode must be one of {', '.join(SEARCH_MODES)} (got {mode!r})")
        vis = self.visibility(ctx, scope, owner)
        return self.rank(vis, query.strip(), limit, mode, floor=SEMANTIC_FLOOR)

    def rank(
        self,
        vis: Visibility,
        query: str,
        limit: int,
        mode: str = "auto",
        floor: float | None = None,
        vector: Sequence[float] | None = None,
    ) -> SearchResult:
        """Rank visible memories for `query` with one method (see SEARCH_MODES).

        With `floor`, a memory ranked by meaning is kept only when it shares a
        term with the query or its cosine reaches the floor (search wants
        matches; recall wants the best few whatever they are).
        """
        if mode == "auto":
            mode = "hybrid" if self.choice.embedder is not None else "recent"
        buckets = [(o, r) for o in vis.owners for r in vis.repo_keys]
        query_terms = sorted(set(rules.terms(query)))
        if mode in ("semantic", "hybrid") and self.choice.embedder is not None:
            model = self.choice.embedder.model
            seen = tuple(buckets)
            if seen in self._present:
                # Searched before, so embedding costs nothing to load: the state check and the
                # ranking go together (one round trip on PostgreSQL); the ranking is used only
                # when nothing is missing, else the search goes on as below.
                if vector is None:
                    vector = self._embed_query(query)
                if vector is not None:
                    present, missing, top = self.store.rank_with_state(
                        buckets, query_terms, vector, model, mode, limit, HYBRID_KEYWORD_WEIGHT, floor, BACKFILL_BATCH
                    )
                    if not present:
                        self._present.discard(seen)
                        return self._result(query, mode, [])
                    if not missing:
                        return self._result(query, mode, top)
            present, missing = self.store.search_state(buckets, model, BACKFILL_BATCH)
            if not present:  # nothing to compare: the model stays unloaded
                return self._result(query, mode, [])
            if len(self._present) >= 1000:
                self._present.clear()
            self._present.add(seen)
            if vector is None:
                vector = self._embed_query(query)
            if vector is not None:
                if missing:
                    self._backfill(buckets, model)
                top = self.store.rank(buckets, query_terms, vector, model, mode, limit, HYBRID_KEYWORD_WEIGHT, floor)
                return self._result(query, mode, top)
        if mode in ("semantic", "hybrid"):
            mode = "recent"
        # Keyword matching in the store's full-text index, BM25 or newest first.
        top = self.store.rank(buckets, query_terms, None, None, mode, limit, 0.0, None)
        return self._result(query, "keyword" if mode == "keyword" else "keyword-recent", top)

    def _result(self, query: str, method: str, top: builtins.list[Scored]) -> SearchResult:
        found = {t.id: t.memory for t in top if t.memory is not None}
        if len(found) < len(top):
            found.update(self.store.get_memories([t.id for t in top if t.memory is None]))
        return SearchResult.of(query, method, [Hit(found[t.id], t.score) for t in top if t.id in found])

    def _embed_query(self, text: str) -> builtins.list[float] | None:
        if self.choice.embedder is None:
            return None
        # lazy: the scrubber, only for a search that embeds its query
        from autocode.scrub import redact_secrets

        # A query may go to an embedding endpoint: its credentials never do.
        try:
            return self.choice.embedder.embed([redact_secrets(text)[0]])[0]
        except EmbeddingUnavailable as exc:
            log.warning("embedding failed, falling back to keywords: %s", exc)
            return None

    def _backfill(self, buckets: builtins.list[tuple[str, str]], model: str) -> None:
        """Embed memories of `buckets` saved without an embedding of `model` (e.g. by a keyword-only process)."""
        embedder = self.choice.embedder
        if embedder is None:
            return
        while True:
            ids = self.store.missing_embeddings(buckets, model, BACKFILL_BATCH)
            if not ids:
                return
            contents = self.store.get_memories(ids)
            todo = [i for i in ids if i in contents]
            try:
                vectors = embedder.embed([contents[i].content for i in todo])
            except EmbeddingUnavailable as exc:
                log.warning("could not embed older memories, they rank by keywords only: %s", exc)
                return
            self.store.set_embeddings(list(zip(todo, vectors, strict=True)), model)
            if len(ids) < BACKFILL_BATCH:
                return

    def recall(self, ctx: MemoryContext, brief: str = "") -> RecallReceipt:
        """Up to 8 project and 8 global memories for a run or session starting on `brief`."""
        agent = self._agent(ctx)
        key = self.repo_key(ctx)
        owners = (agent, "") if agent else ("",)
        sections: dict[str, builtins.list[Hit]] = {"project": [], "global": []}
        use_meaning = self.choice.embedder is not None and bool(brief and brief.strip())
        method = "hybrid" if use_meaning else "recency"
        reason = self.choice.reason if self.choice.embedder is None else (
            "the brief is empty: ranked by recency" if not use_meaning else self.choice.reason
        )
        for section, repos in (("project", (key,) if key else ()), ("global", ("",))):
            if not repos:
                continue
            vis = Visibility(owners=owners, repo_keys=tuple(r for r in repos if r is not None))
            if use_meaning:  # the brief is embedded only when a section has memories to compare
                result = self.rank(vis, brief.strip(), RECALL_PER_SECTION, "hybrid")
                if result.method != "hybrid":
                    method, reason = "recency", "embedding failed: ranked by recency"
                    sections[section] = self._recent_hits(vis)
                else:
                    sections[section] = result.hits
            else:
                sections[section] = self._recent_hits(vis)
        return RecallReceipt(
            project=sections["project"],
            global_=sections["global"],
            method=method,
            repository=key,
            agent=agent or None,
            run_id=ctx.run_id,
            reason=reason,
        )

    def _recent_hits(self, vis: Visibility) -> builtins.list[Hit]:
        memories = self.store.list_memories(vis, RECALL_PER_SECTION)
        return [Hit(m, 1.0 - i / (2 * RECALL_PER_SECTION)) for i, m in enumerate(memories)]

    # Promotion: team memories that are know-how become skills on the agents that need them.

    _ADVICE = re.compile(
        r"^\s*(?:always|never|prefer|avoid|use|run|do\s+not|don't|before|after|when)\b", re.IGNORECASE
    )
    _ROLE_HINTS: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("requirements", ("requirement", "acceptance", "spec", "user stor", "ask the")),
        ("planner", ("plan", "estimate", "scope", "migration order", "break down", "design")),
        ("implementer", ("run", "test", "build", "lint", "format", "install", "migrat", "code", "commit", "import")),
        ("investigator", ("debug", "log", "trace", "reproduc", "profil", "investigat", "flak", "stack")),
        ("reviewer", ("review", "test", "lint", "security", "style", "convention", "coverage")),
    )

    def _candidate(self, memory: Memory) -> PromotionCandidate | None:
        goal = rules.skill_goal(memory.content)
        if goal is None and not self._ADVICE.match(memory.content):
            return None
        lead = goal or re.split(r"[.;:]\s", memory.content, maxsplit=1)[0]
        name = rules.skill_name(lead)
        lower = memory.content.casefold()
        agents = [role for role, hints in self._ROLE_HINTS if role in self.roles and any(h in lower for h in hints)]
        agents += [r for r in self.roles if r not in dict(self._ROLE_HINTS) and r in lower]
        if not agents:
            agents = list(self.roles)
        return PromotionCandidate(
            memory_id=memory.id,
            name=name,
            description=_excerpt(lead, 120),
            category=memory.category,
            content=memory.content,
            agents=agents,
            scope=memory.scope,
            repository=memory.repo_key,
        )

    def plan_promotion(self, ctx: MemoryContext) -> PromotionPlan:
        """Team memories worth turning into skills, with the skill each would become. Writes nothing."""
        memories = self.store.list_memories(self.visibility(ctx, "all", "team"))
        candidates = [c for c in (self._candidate(m) for m in memories) if c is not None]
        return PromotionPlan(candidates=candidates, scanned=len(memories))

    def apply_promotion(self, ctx: MemoryContext, ids: Sequence[str]) -> PromotionResult:
        """Turn the chosen candidates into skills and remove their memories: all of them, or none."""
        chosen = list(dict.fromkeys(i.strip() for i in ids if isinstance(i, str) and i.strip()))
        if not chosen:
            raise UsageError("apply-promotion needs the ids of the candidates to apply (see plan-promotion)")
        plan = {c.memory_id: c for c in self.plan_promotion(ctx).candidates}
        unknown = [i for i in chosen if i not in plan]
        if unknown:
            raise UsageError(
                f"not promotion candidates here: {', '.join(unknown)}; nothing was applied. "
                "Run plan-promotion to see the candidates"
            )
        created: builtins.list[Skill] = []
        with self.store.write(lock_key="promotion") as w:
            for memory_id in chosen:
                cand = plan[memory_id]
                repo = cand.repository or ""
                norm_hash = rules.content_hash(cand.content)
                for agent in cand.agents:
                    existing = w.find_skill(agent, repo, cand.name)
                    if existing is not None:
                        if existing[1] == norm_hash:
                            continue
                        raise MemoryStoreError(
                            f"agent {agent!r} already has a different skill named {cand.name!r}; rename or "
                            "delete it and apply again. Nothing was applied",
                            kind="skillConflict",
                        )
                    skill = NewSkill(
                        id=new_id("skill"), name=cand.name, owner=agent, description=cand.description,
                        category=cand.category, content=cand.content, norm_hash=norm_hash, scope=cand.scope,
                        repo_key=repo, origin="promotion", source_memory_id=memory_id, created_at=now_text(),
                    )
                    w.insert_skill(skill)
                    created.append(
                        Skill(skill.id, skill.name, agent, skill.description, skill.category, skill.content,
                              skill.scope, cand.repository, skill.origin, memory_id, skill.created_at)
                    )
                if w.delete_memory(memory_id) == 0:
                    raise MemoryNotFound(
                        f"memory {memory_id!r} was deleted while promoting; nothing was applied. Plan again"
                    )
                w.log_event(
                    "promoted", memory_id, "", repo,
                    f"promoted to skill {cand.name!r} on {', '.join(cand.agents)}",
                )
        return PromotionResult(skills=created, removed=chosen)

    # Reflection: lessons from completed runs, proposed as global memories, applied on a person's approval.

    def record_lessons(
        self, ctx: MemoryContext, lessons: Sequence[str], category: str | None = None
    ) -> builtins.list[str]:
        """Queue lessons a completed run drew, for `reflect` to propose. Returns their ids."""
        if not ctx.run_id:
            raise UsageError("lessons come from a completed run: the context needs its run_id")
        agent = self._agent(ctx)
        key = self.repo_key(ctx) or ""
        category = self._check_category(category)
        texts = [self._check_content(t) for t in lessons]
        ids = []
        with self.store.write() as w:
            for text in texts:
                lesson_id = new_id("lesson")
                w.add_lesson(lesson_id, text, category, agent, ctx.run_id, key)
                ids.append(lesson_id)
        return ids

    def _proposal(self, row: Sequence[Any]) -> ReflectionProposal:
        lesson_id, content, category, owner, run_id, repo_key = row[:6]
        refusal: Refusal | None = rules.check_content(content)
        duplicate = None
        verdict = "proposed"
        if refusal is not None:
            verdict = "refused"
        elif rules.skill_goal(content) is not None:
            verdict = "skill"
        else:
            duplicate = self.store.find_exact(owner, "", rules.content_hash(content))
            if duplicate:
                verdict = "duplicate"
        return ReflectionProposal(
            id=lesson_id,
            content=content,
            category=category,
            source_run=run_id,
            source_repository=repo_key or None,
            verdict=verdict,
            refused=refusal,
            duplicate_of=duplicate,
        )

    def reflect(
        self,
        ctx: MemoryContext,
        approve: Sequence[str] | None = None,
        reject: Sequence[str] | None = None,
        approved_by: str | None = None,
    ) -> ReflectionResult:
        """Propose global memories from completed runs' lessons; apply only those a person approves."""
        rows = self.store.pending_lessons()
        proposals = {row[0]: self._proposal(row) for row in rows}
        owners = {row[0]: row[3] for row in rows}
        approve = list(approve or [])
        reject = list(reject or [])
        unknown = [i for i in [*approve, *reject] if i not in proposals]
        if unknown:
            raise UsageError(f"no pending reflection proposal {', '.join(unknown)}; run reflect to list them")
        if approve and not (approved_by and approved_by.strip()):
            raise UsageError("reflection proposals are applied only with a person's approval: name the approver")
        applied: builtins.list[SaveResult] = []
        for lesson_id in approve:
            proposal = proposals[lesson_id]
            # Reflection spans every repository, so what it writes is global, whatever run it came from.
            result = self.save(
                MemoryContext(agent=owners[lesson_id] or None, repository=None, run_id=proposal.source_run),
                proposal.content,
                category=proposal.category,
                scope="global",
                shared=not owners[lesson_id],
            )
            applied.append(result)
            with self.store.write() as w:
                w.set_lesson_status(
                    lesson_id, "applied" if result.saved else result_status(result), result.id or result.duplicate_of
                )
                w.log_event(
                    "reflected", result.id, owners[lesson_id], "",
                    f"approved by {approved_by}: {_excerpt(proposal.content)}",
                )
        if reject:
            with self.store.write() as w:
                for lesson_id in reject:
                    w.set_lesson_status(lesson_id, "rejected")
        remaining = [p for i, p in proposals.items() if i not in approve and i not in reject]
        return ReflectionResult(proposals=remaining, applied=applied)

    # Health.

    def doctor(self) -> dict[str, Any]:
        return {
            "store": self.store.kind,
            "location": self.store.location,
            "schema_version": self.store.schema_version(),
            "memories": self.store.count_memories(),
            "search_mode": self.search_mode,
            "embedding_provider": self.choice.provider,
            "embedding_model": self.choice.embedder.model if self.choice.embedder else None,
            "why": self.choice.reason,
            "vectors": self.store.vector_support,
            "index": self.store.index_state(),
            "max_count": self.max_count,
        }

    def events(self, kind: str | None = None) -> builtins.list[dict[str, Any]]:
        return self.store.events(kind)


def result_status(result: SaveResult) -> str:
    if result.refused is not None:
        return "refused"
    if result.skill is not None:
        return "skill"
    return "duplicate"
