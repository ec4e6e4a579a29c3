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

from autocode import scrub
from autocode.tasks.store import StoredModel

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


class DecidedBy(StoredModel):
    """Who gave an answer or approval, and when (`state.Source.decided`)."""

    channel: str
    actor: str | None = None
    time: str | None = None


class LedgerQuestion(StoredModel):
    """A question the task issued: asked of a person, or decided by the model without asking."""

    id: str
    text: str
    category: str | None = "other"
    convention: str | None = None
    """Set when the answer may be learned as a project convention."""
    default: str | None = None
    asked: bool
    issued_at: str | None = None


class LedgerAnswer(StoredModel):
    """An answer as given, credentials redacted."""

    question_id: str
    text: str
    kind: str
    """human, proposed_default, delegated or machine."""
    how: str | None = None
    """typed, chosen, acceptedDefault, delegated or machine (ledgers from before it: see `answer_how`)."""
    source: DecidedBy | None = None
    redacted: list[str] | None = None
    """The kinds of credential taken out of the text (only when there were any)."""


class Ledger(StoredModel):
    """Every question issued and every answer given, in order."""

    questions: list[LedgerQuestion]
    answers: list[LedgerAnswer]


def empty_ledger() -> Ledger:
    return Ledger(questions=[], answers=[])


def issue_question(
    ledger: Ledger,
    question_id: str,
    text: str,
    *,
    category: str | None,
    convention: str | None,
    default: str | None = None,
    asked: bool,
    at: str,
) -> None:
    """Record a question; `asked` is False for a choice the model made without asking."""
    ledger.questions.append(
        LedgerQuestion(id=question_id, text=text, category=category or "other", convention=convention,
                       default=default, asked=asked, issued_at=at)
    )


def record_answer(
    ledger: Ledger, question_id: str, text: str, kind: str, source: DecidedBy, how: str | None = None
) -> None:
    kept, redacted = scrub.redact_secrets(text)
    entry = LedgerAnswer(question_id=question_id, text=kept, kind=kind, how=how or HOW_OF_KIND.get(kind, kind),
                         source=source)
    if redacted:
        entry.redacted = redacted
    ledger.answers.append(entry)


def answer_how(answer: LedgerAnswer) -> str:
    """How an answer was given (ledgers written before `how` existed: from its kind)."""
    return answer.how or HOW_OF_KIND.get(answer.kind, "typed")


def find_question(ledger: Ledger, question_id: str) -> LedgerQuestion | None:
    for question in ledger.questions:
        if question.id == question_id:
            return question
    return None


def pending_questions(ledger: Ledger) -> list[LedgerQuestion]:
    """Asked questions with no answer yet, in the order they were issued."""
    answered = {a.question_id for a in ledger.answers}
    return [q for q in ledger.questions if q.asked and q.id not in answered]


def answers_for_context(ledger: Ledger) -> list[dict[str, str]]:
    """This task's answers as the roles see them (question id, question, answer, kind)."""
    texts = {q.id: q.text for q in ledger.questions}
    return [
        {
            "question_id": a.question_id,
            "question": texts.get(a.question_id, ""),
            "text": a.text,
            "kind": a.kind,
            "how": answer_how(a),
        }
        for a in ledger.answers
    ]


def eligible_conventions(ledger: Ledger) -> list[dict[str, str]]:
    """Question and answer pairs that may be learned, joined to the issued question and its source."""
    out: list[dict[str, str]] = []
    for question in ledger.questions:
        if not question.asked or not question.convention:
            continue
        if question.category in EXCLUDED_CATEGORIES or question.category != "other":
            continue
        human = [
            a
            for a in ledger.answers
            if a.question_id == question.id
            and a.kind == "human"
            and answer_how(a) in LEARNABLE_HOWS
            and a.source is not None
            and a.source.channel
        ]
        if human:
            last = human[-1]
            out.append(
                {
                    "question_id": question.id,
                    "convention": question.convention,
                    "question": question.text,
                    "answer": last.text,
                    # An answer that held a credential was kept redacted: it is dropped whole, never learned.
                    **({"redacted": ",".join(last.redacted)} if last.redacted else {}),
                }
            )
    return out
