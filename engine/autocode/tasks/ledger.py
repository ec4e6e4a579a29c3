"""The answer ledger: every question issued and every answer, with its kind and source.

Answers are kept as given except for credentials, which are replaced by
`[redacted:<kind>]` and listed by kind under `redacted`: the ledger is read
back into every later request of the task and into what it learns, and it
lives in the workspace's run folder, so it is not a private place for a key.

Only one thing in here can ever be learned: a person's own answer to a
question this task actually asked, tagged as a convention, in a category that
is not a decision about this one task. `eligible_conventions` is that rule.
"""

from __future__ import annotations

from typing import Any

from autocode import scrub

ANSWER_KINDS: tuple[str, ...] = ("human", "proposed_default", "delegated", "machine")

# How a person gave an answer. Only `typed` and `chosen` are the person's own
# answer (kind `human`, learnable); an accepted default and a delegated answer
# are recorded as such and never learned.
ANSWER_HOWS: tuple[str, ...] = ("typed", "chosen", "acceptedDefault", "delegated")
LEARNABLE_HOWS: frozenset[str] = frozenset({"typed", "chosen"})
KIND_OF_HOW: dict[str, str] = {
    "typed": "human",
    "chosen": "human",
    "acceptedDefault": "proposed_default",
    "delegated": "delegated",
}
HOW_OF_KIND: dict[str, str] = {
    "human": "typed",
    "proposed_default": "acceptedDefault",
    "delegated": "delegated",
    "machine": "machine",
}

# Decisions about this one task; never reusable authorization.
EXCLUDED_CATEGORIES: frozenset[str] = frozenset(
    {"permission", "spending", "quota", "external_side_effect", "task_outcome"}
)


def empty_ledger() -> dict[str, Any]:
    return {"questions": [], "answers": []}


def issue_question(ledger: dict[str, Any], question: dict[str, Any], *, asked: bool, at: str) -> None:
    """Record a question; `asked` is False for a choice the model made without asking."""
    ledger["questions"].append(
        {
            "id": question["id"],
            "text": question["text"],
            "category": question.get("category") or "other",
            "convention": question.get("convention"),
            "default": question.get("default"),
            "asked": asked,
            "issued_at": at,
        }
    )


def record_answer(
    ledger: dict[str, Any],
    question_id: str,
    text: str,
    kind: str,
    source: dict[str, Any],
    how: str | None = None,
) -> None:
    entry: dict[str, Any] = {"question_id": question_id, "text": text, "kind": kind, "how": how or HOW_OF_KIND.get(kind, kind), "source": source}
    entry["text"], redacted = scrub.redact_secrets(text)
    if redacted:
        entry["redacted"] = redacted
    ledger["answers"].append(entry)


def answer_how(answer: dict[str, Any]) -> str:
    """How an answer was given (ledgers written before `how` existed: from its kind)."""
    return str(answer.get("how") or HOW_OF_KIND.get(str(answer.get("kind")), "typed"))


def find_question(ledger: dict[str, Any], question_id: str) -> dict[str, Any] | None:
    for question in ledger["questions"]:
        if question["id"] == question_id:
            return dict(question)
    return None


def pending_questions(ledger: dict[str, Any]) -> list[dict[str, Any]]:
    """Asked questions with no answer yet, in the order they were issued."""
    answered = {a["question_id"] for a in ledger["answers"]}
    return [q for q in ledger["questions"] if q["asked"] and q["id"] not in answered]


def answers_for_context(ledger: dict[str, Any]) -> list[dict[str, str]]:
    """This task's answers as the roles see them (question id, question, answer, kind)."""
    texts = {q["id"]: q["text"] for q in ledger["questions"]}
    return [
        {
            "question_id": a["question_id"],
            "question": texts.get(a["question_id"], ""),
            "text": a["text"],
            "kind": a["kind"],
            "how": answer_how(a),
        }
        for a in ledger["answers"]
    ]


def eligible_conventions(ledger: dict[str, Any]) -> list[dict[str, str]]:
    """Question and answer pairs that may be learned, joined to the issued question and its source."""
    out: list[dict[str, str]] = []
    for question in ledger["questions"]:
        if not question.get("asked") or not question.get("convention"):
            continue
        if question.get("category") in EXCLUDED_CATEGORIES or question.get("category") != "other":
            continue
        human = [
            a
            for a in ledger["answers"]
            if a["question_id"] == question["id"]
            and a["kind"] == "human"
            and answer_how(a) in LEARNABLE_HOWS
            and isinstance(a.get("source"), dict)
            and a["source"].get("channel")
        ]
        if human:
            out.append(
                {
                    "question_id": question["id"],
                    "convention": str(question["convention"]),
                    "question": question["text"],
                    "answer": human[-1]["text"],
                    # An answer that held a credential was kept redacted: it is dropped whole, never learned.
                    **({"redacted": ",".join(human[-1]["redacted"])} if human[-1].get("redacted") else {}),
                }
            )
    return out
