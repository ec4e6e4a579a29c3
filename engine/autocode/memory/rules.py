"""What may become a memory: refusals of task-anchored content, duplicates, and routing know-how to skills.

A memory must stay true after the task that wrote it has ended. Content
anchored to one task (its key, a PR or issue number, a commit, a column move,
talk of "this task") belongs in that task's own notes; the refusal says so and,
when a durable fact is left once the anchor is taken out, offers that version.
Reusable procedures ("to do X, run Y", ordered steps) are skills, not memories.

Kept whole: these are the rules a memory is judged by (refusals, duplicates,
routing to skills); they share the normalisation and term functions, and
docs/memory.md follows the same order.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from autocode.memory.model import Refusal
from autocode.scrub import contains_machine_path, find_secrets

TASK_NOTES = (
    "the task's own notes (its run log and comments), which already record what happened on that one task"
)

# Standards, encodings, algorithms and products whose names look like task keys.
_KEY_LOOKALIKE_PREFIXES = frozenset(
    {
        "HTTP", "HTTPS", "UTF", "UCS", "ISO", "IEC", "IEEE", "SHA", "MD", "RFC", "CVE", "CWE",
        "PEP", "ECMA", "ES", "AES", "RSA", "ECDSA", "TLS", "SSL", "IPV", "X", "H", "P", "GPT",
        "CRC", "ANSI", "ASCII", "WCAG", "OWASP", "NIST", "FIPS", "PKCS", "BASE", "LATIN", "CP",
        "WINDOWS", "KOI", "ARM", "AVX", "SSE", "USB", "DDR", "PCI", "PG", "JDK", "JSR", "DSM",
        "TIS", "SOC", "SCSI", "MP", "F", "B", "A", "S", "Z", "ID", "Q", "K", "V", "W", "E",
    }
)
_TASK_KEY = re.compile(r"(?<![\w\-./])([A-Z][A-Z0-9]{0,9})-(\d{1,6})(?![\w\-]|\.\d)")
_PR_OR_ISSUE = re.compile(
    r"(?:(?<![\w&/])#\d{1,6}\b)"
    r"|(?:\b(?:PR|MR|pr|mr)\s*[#!]?\s*\d+\b)"
    r"|(?:\b[Pp]ull\s+[Rr]equest\s*#?\s*\d+\b)"
    r"|(?:\b[Mm]erge\s+[Rr]equest\s*[#!]?\s*\d+\b)"
    r"|(?:\b[Ii]ssue\s*#?\s*\d+\b)"
    r"|(?:\b(?:pull|pulls|issues|merge_requests)/\d+\b)"
)
_HEX_COLOUR = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})\b")
_SHA = re.compile(r"(?<![\w\-./#])(?:0x)?([0-9a-f]{7,40})(?![\w\-])")
_SHA_WORDED = re.compile(r"\b(?:commit|sha|revision|rev)\s+([0-9a-f]{7,40})\b", re.IGNORECASE)

_COLUMNS = (
    "backlog", "todo", "to_do", "to do", "ready", "in_progress", "in progress", "doing", "wip",
    "code_review", "code review", "review", "in_review", "in review", "ready_for_review",
    "ready_for_qa", "ready for qa", "qa", "in_qa", "testing", "done", "blocked", "triage",
    "ready_for_deploy", "deployed", "closed", "merged", "needs_info", "icebox", "accepted",
)
_COLUMN_ALT = "|".join(sorted((re.escape(c).replace(r"\ ", r"[ _]") for c in _COLUMNS), key=len, reverse=True))
_COLUMN_ARROW = re.compile(
    rf"\b(?:{_COLUMN_ALT})\s*(?:->|→|=>|⇒|>)\s*(?:{_COLUMN_ALT})\b", re.IGNORECASE
)
_COLUMN_MOVED = re.compile(
    rf"\b(?:moved|moving|move|moves|dragged|transitioned|pushed|sent)\b[\w\s'-]{{0,30}}?\b(?:to|into|back\s+to)\s+(?:the\s+)?(?:{_COLUMN_ALT})\b",
    re.IGNORECASE,
)
_THIS_TASK = re.compile(
    r"\b(?:this|the\s+current|the\s+present|today'?s)\s+"
    r"(?:task|run|pr|pull\s+request|merge\s+request|ticket|card|issue|sprint|session|branch|story)\b(?:'s)?",
    re.IGNORECASE,
)

# Vendor token prefixes are refused at any length here, on top of scrub's exact formats:
# memories are read back into every later run, so a near-miss costs more than in a log.
_TOKEN_PREFIXED = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{16,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}|AKIA[0-9A-Z]{16})"
)
_PATH_REASON = (
    "it names a path on this machine (a home folder or this checkout's absolute location); "
    "memories are read on other machines, where that path does not exist"
)
_PATH_BELONGS = (
    "a setting or your own notes; in a memory, say it relative to the repository root or by its role"
)
_SECRET_REASON = "it looks like a credential (a token, key or password); memories are read back into every later run"
# Named apart: the person wrote the secret as a sentence and may not see it as a credential.
_PROSE_SECRET_REASON = (
    "it states a secret's value in words (a password, passphrase, key or token given after "
    "\"is\", \":\" or \"=\"); memories are read back into every later run, so the value would be too"
)
_SECRET_BELONGS = "a secret manager or an environment variable the tools read at run time, never a memory or a note"


@dataclass(frozen=True)
class Anchor:
    kind: str
    text: str
    start: int
    end: int


_REASONS = {
    "task_key": "it names a task key ({text}); a memory must stay true after that task is finished",
    "pr_or_issue": "it names a pull request or issue ({text}); that reference stops mattering once it is merged or closed",
    "commit_sha": "it names a commit ({text}); a memory should say what is true of the code, not which commit did it",
    "column_move": "it reports a board column move ({text}); that is the task's history, not durable know-how",
    "this_task": "it talks about \"{text}\"; a note that stops being true when the current task ends is not a memory",
}


def find_anchors(content: str) -> list[Anchor]:
    """Every task anchor in `content`, in order of position (look-alikes excluded)."""
    found: list[Anchor] = []
    for m in _TASK_KEY.finditer(content):
        if m.group(1) in _KEY_LOOKALIKE_PREFIXES:
            continue
        found.append(Anchor("task_key", m.group(0), m.start(), m.end()))
    colours = [m.span() for m in _HEX_COLOUR.finditer(content)]
    for m in _PR_OR_ISSUE.finditer(content):
        if m.group(0).startswith("#") and any(s <= m.start() < e for s, e in colours) and len(m.group(0)) != 4:
            continue
        found.append(Anchor("pr_or_issue", m.group(0).strip(), m.start(), m.end()))
    for m in _SHA_WORDED.finditer(content):
        found.append(Anchor("commit_sha", m.group(1), m.start(1), m.end(1)))
    for m in _SHA.finditer(content):
        token = m.group(1)
        if m.group(0).startswith("0x") or not re.search(r"\d", token) or not re.search(r"[a-f]", token):
            continue
        if any(a.start == m.start(1) for a in found):
            continue
        found.append(Anchor("commit_sha", token, m.start(1), m.end(1)))
    for m in _COLUMN_ARROW.finditer(content):
        found.append(Anchor("column_move", m.group(0), m.start(), m.end()))
    for m in _COLUMN_MOVED.finditer(content):
        found.append(Anchor("column_move", m.group(0), m.start(), m.end()))
    for m in _THIS_TASK.finditer(content):
        found.append(Anchor("this_task", m.group(0), m.start(), m.end()))
    found.sort(key=lambda a: (a.start, a.kind))
    return found


def check_content(content: str, workspace: str | None = None) -> Refusal | None:
    """The refusal for `content`, or None when it may be saved as a memory.

    `workspace` (a folder) lets paths inside this machine's checkout be recognised too.
    """
    found = find_secrets(content)
    if found or _TOKEN_PREFIXED.search(content):
        prose = bool(found) and all(f.kind == "secret_in_prose" for f in found)
        return Refusal("credential", _PROSE_SECRET_REASON if prose else _SECRET_REASON, _SECRET_BELONGS, None)
    if contains_machine_path(content, workspace):
        return Refusal("machine_path", _PATH_REASON, _PATH_BELONGS, None)
    anchors = find_anchors(content)
    if not anchors:
        return None
    first = anchors[0]
    reason = _REASONS[first.kind].format(text=first.text)
    others = sorted({a.kind for a in anchors} - {first.kind})
    if others:
        reason += f" (also: {', '.join(k.replace('_', ' ') for k in others)})"
    return Refusal(first.kind, reason, TASK_NOTES, suggest_durable(content, anchors))


# Anchor phrases removed together with the words that only tie them into the sentence.
_STRIP_AROUND = (
    r"(?:\b(?:in|on|for|from|of|by|via|during|while|after|before|see|per|at)\s+)?(?:the\s+)?{anchor}(?:'s)?"
    r"(?:\s*\(\s*\))?"
)
_LEADIN = re.compile(
    r"^(?:\s*(?:while|when|during|after|before|on|in|for)\b[^,;:]*?,\s*)", re.IGNORECASE
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'_-]*")
_NARRATION = re.compile(
    r"^(?:i|we)\s+(?:moved|fixed|merged|pushed|opened|closed|reverted|updated|finished|did|started)\b",
    re.IGNORECASE,
)


def suggest_durable(content: str, anchors: Iterable[Anchor] | None = None) -> str | None:
    """`content` with its task anchors taken out, or None when nothing durable is left.

    Column moves and first-person narration leave nothing worth keeping; a fact
    stated around a task key or PR number usually does.
    """
    items = list(anchors if anchors is not None else find_anchors(content))
    if any(a.kind == "column_move" for a in items):
        return None
    text = content
    for anchor in sorted(items, key=lambda a: a.start, reverse=True):
        pattern = _STRIP_AROUND.format(anchor=re.escape(anchor.text))
        window_start = max(0, anchor.start - 40)
        head, tail = text[:window_start], text[window_start:]
        tail = re.sub(pattern, " ", tail, count=1, flags=re.IGNORECASE)
        text = head + tail
    text = re.sub(r"\(\s*[,;]?\s*\)", " ", text)
    text = re.sub(r"\s+([,.;:!?])", r"\1", text)
    text = re.sub(r"([,;:])\1+", r"\1", text)
    text = re.sub(r"\s{2,}", " ", text).strip(" ,;:-")
    text = _LEADIN.sub("", text) if len(_WORD.findall(_LEADIN.sub("", text))) >= 5 else text
    text = text.strip(" ,;:-")
    if not text or _NARRATION.match(text):
        return None
    words = _WORD.findall(text)
    if len([w for w in words if w.lower() not in STOPWORDS]) < 4:
        return None
    if text[0].islower():
        text = text[0].upper() + text[1:]
    if text[-1] not in ".!?":
        text += "."
    return text


STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        """a an the and or but if then else of to in on at by for with from as is are was were be been being
    it its this that these those there here we you they he she i me my our your their them us do does did
    doing have has had having so than too very can could should would will shall may might must
    just also into over under about after before again further once only own same such both each few more
    most other some any all when where why how what which who whom while up down out off s t""",
    )
)
_TOKEN = re.compile(r"[a-z0-9][a-z0-9_+#.]*[a-z0-9+#]|[a-z0-9]")


def normalise(content: str) -> str:
    """The text duplicates are compared on: NFKC, case-folded, one space, no trailing punctuation."""
    text = unicodedata.normalize("NFKC", content).casefold()
    text = re.sub(r"[\"'`“”‘’]", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.rstrip(" .!;:")


def content_hash(content: str) -> str:
    return hashlib.sha256(normalise(content).encode("utf-8")).hexdigest()


def _stem(word: str) -> str:
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + keep
    return word


def terms(content: str) -> list[str]:
    """Search terms of `content`: lower-case words, stop words dropped, light suffix stemming.

    Both stores index these same terms, so keyword matching gives one answer
    whichever store is behind it.
    """
    text = unicodedata.normalize("NFKC", content).casefold()
    out: list[str] = []
    for raw in _TOKEN.findall(text):
        for part in re.split(r"[._]", raw) if ("." in raw or "_" in raw) and not raw[0].isdigit() else [raw]:
            if not part or part in STOPWORDS:
                continue
            out.append(_stem(part) if part.isalpha() else part)
    return out


def term_similarity(a: Iterable[str], b: Iterable[str]) -> float:
    """Jaccard similarity of two term sets."""
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


# A procedure: a purpose clause followed by an instruction, or ordered steps.
_PURPOSE_THEN_DO = re.compile(
    r"^\s*(?:to|in\s+order\s+to|how\s+to)\s+(?P<goal>[^,:;]{3,80}?)\s*[,:;-]+\s*(?:first\s+|just\s+|always\s+)?"
    r"(?:run|use|call|execute|invoke|type|open|set|add|install|start|stop|restart|delete|remove|"
    r"create|edit|pass|export|build|rebuild|clear|reset|drop|apply|copy|checkout|check\s+out|"
    r"regenerate|update|bump|tag|push|deploy)\b",
    re.IGNORECASE,
)
_STEP_MARKERS = re.compile(r"(?:^|\n|\s)(?:\d+[.)]|step\s+\d+:?|-\s|\*\s)\s*\S", re.IGNORECASE)
_SEQUENCE_WORDS = re.compile(r"\bfirst\b.*\bthen\b.*\b(?:then|finally|and\s+then|last)\b", re.IGNORECASE | re.DOTALL)
_HOW_TO = re.compile(r"^\s*how\s+to\s+(?P<goal>[^:,.;]{3,80})", re.IGNORECASE)


def skill_goal(content: str) -> str | None:
    """The goal of a reusable procedure in `content`, or None when it is not one."""
    match = _PURPOSE_THEN_DO.match(content)
    if match:
        return match.group("goal")
    how = _HOW_TO.match(content)
    steps = len(_STEP_MARKERS.findall(content))
    if steps >= 3 or _SEQUENCE_WORDS.search(content):
        if how:
            return how.group("goal")
        lead = re.split(r"(?::\s|\n|\s\d+[.)]\s)", content.strip(), maxsplit=1)[0]
        lead = re.sub(r"^(?:\d+[.)]|step\s+\d+:?|[-*])\s*", "", lead, flags=re.IGNORECASE)
        return re.sub(r"\b(?:first|then|finally|and)\b", " ", lead, flags=re.IGNORECASE).strip() or "procedure"
    return None


def skill_name(goal: str) -> str:
    """A short kebab-case skill name made from a goal phrase."""
    words = [w for w in re.findall(r"[a-z0-9]+", goal.casefold()) if w not in STOPWORDS]
    name = "-".join(words[:6]) or "procedure"
    return name[:60].strip("-")


_NEGATIONS = frozenset({"not", "no", "never", "nor", "don", "doesn", "isn", "aren", "won", "cannot", "avoid"})


def is_near_duplicate(a: Iterable[str], b: Iterable[str], threshold: float) -> bool:
    """Two term lists say the same thing: similar enough, and negated the same way."""
    sa, sb = set(a), set(b)
    return same_polarity(sa, sb) and term_similarity(sa, sb) >= threshold


def same_polarity(a: Iterable[str], b: Iterable[str]) -> bool:
    """Both term lists carry the same negations ("use X" and "do not use X" differ)."""
    return set(a) & _NEGATIONS == set(b) & _NEGATIONS



# ---------------------------------------------------------------------------
# Duplicates without loss
#
# A second save is merged into an earlier memory only when nothing it says
# would be lost: the same normalised text, or the same negations, every
# number, identifier and quoted token of each found in the other, and words
# or meaning close enough by thresholds calibrated on the labelled set in
# fixtures/memory/duplicates.tsv (tests/engine/memory/test_memory_duplicates.py
# and docs/memory.md give the figures). Otherwise the memory is saved and the
# closest one is named as `similar_to`.

# Term overlap (Jaccard of `terms`) at which two texts say the same thing.
TERMS_DUPLICATE = 0.75
# Cosine at which two texts mean the same thing, per embedding model: only a
# model calibrated on the labelled set merges by meaning. Any other model (an
# OpenAI-compatible endpoint, a newer static model) merges by words alone
# until it is calibrated and added here.
MEANING_DUPLICATE: dict[str, float] = {"static:tokenlearn-static-model-0.1.1": 0.85}
# A sentence that differs from another only by a few words in one place says
# something else ("after processing" / "before processing", "hourly" / "daily"),
# however close the embeddings are: meaning never merges it.
SWAP_WORDS = 3
# Below these, no earlier memory is close enough to be named as similar
# (`shape_similarity`, cosine).
SIMILAR_SHAPE = 0.5
SIMILAR_MEANING = 0.8

_FACT_WORD = re.compile(r"[^\W_](?:[\w.\-/:@+#%~]*[^\W_])?|_\w+")
_QUOTED = re.compile(r"\"([^\"\n]{1,120})\"|(?<!\w)'([^'\n]{1,120})'(?!\w)|`([^`\n]{1,120})`|“([^”\n]{1,120})”")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|\n)$")


def fact_tokens(content: str) -> frozenset[str]:
    """The words of `content` that carry a fact another sentence must repeat to
    say the same thing: anything with a digit (numbers, versions, ports, ids,
    digests), identifiers (`snake_case`, `dotted.names`, paths, URLs,
    `kebab-case`, `camelCase`, `ALLCAPS`), names capitalised inside a sentence
    (`Redis`, `Tuesday`), and quoted text. Case-folded.
    """
    text = unicodedata.normalize("NFKC", content)
    found: set[str] = set()
    for match in _FACT_WORD.finditer(text):
        word = match.group()
        if (
            any(ch.isdigit() for ch in word)
            or any(ch in "_./:@+#%~-" for ch in word)
            or any(ch.isupper() for ch in word[1:])
            or (word[0].isupper() and not _SENTENCE_START.search(text, 0, match.start()))
        ):
            found.add(word.casefold())
    for match in _QUOTED.finditer(text):
        quoted = next(g for g in match.groups() if g is not None)
        found.add("\x00" + " ".join(quoted.split()).casefold())
    return frozenset(found)


def _fact_words(content: str) -> frozenset[str]:
    text = unicodedata.normalize("NFKC", content).casefold()
    return frozenset(m.group() for m in _FACT_WORD.finditer(text))


def facts_agree(a: str, b: str) -> bool:
    """Every number, identifier and quoted token of each text appears in the other."""
    words_a, words_b = _fact_words(a), _fact_words(b)
    folded_a, folded_b = " ".join(a.casefold().split()), " ".join(b.casefold().split())
    for facts, words, folded in ((fact_tokens(a), words_b, folded_b), (fact_tokens(b), words_a, folded_a)):
        for fact in facts:
            if fact.startswith("\x00"):
                if fact[1:] not in folded:
                    return False
            elif fact not in words:
                return False
    return True


# Words that only hold a sentence together; every other word is content.
_FILLER = frozenset(
    re.findall(
        r"\w+",
        """a an the is are was were be been being it its this that these those there and or of to in on at
    by for with from as so also just every each all any our their we you they has have had do does""",
    )
)


def _content_sequence(content: str) -> list[str]:
    text = unicodedata.normalize("NFKC", content).casefold()
    return [_stem(w) if w.isalpha() else w for w in _TOKEN.findall(text) if w not in _FILLER]


def _content_words(content: str) -> frozenset[str]:
    return frozenset(_content_sequence(content))


def is_word_swap(a: str, b: str) -> bool:
    """`a` and `b` are the same sentence but for up to SWAP_WORDS content words in one place."""
    x, y = _content_sequence(a), _content_sequence(b)
    shortest = min(len(x), len(y))
    head = 0
    while head < shortest and x[head] == y[head]:
        head += 1
    tail = 0
    while tail < shortest - head and x[-1 - tail] == y[-1 - tail]:
        tail += 1
    only_a, only_b = x[head : len(x) - tail], y[head : len(y) - tail]
    return 0 < len(only_a) <= SWAP_WORDS and 0 < len(only_b) <= SWAP_WORDS


def meaning_threshold(model: str | None) -> float | None:
    """The calibrated cosine for `model`, or None when it may not merge by meaning."""
    return MEANING_DUPLICATE.get(model) if model else None


def duplicate_method(
    new_text: str,
    new_terms: Iterable[str],
    old_text: str,
    old_terms: Iterable[str],
    cosine: float | None = None,
    model: str | None = None,
) -> str | None:
    """How `new_text` duplicates `old_text` ("terms" or "meaning"), or None when it
    says something the earlier memory does not (exact matches are found by hash)."""
    ta, tb = set(new_terms), set(old_terms)
    if not same_polarity(ta, tb) or not facts_agree(new_text, old_text):
        return None
    # By words, the new text may only repeat the old one: a word it adds (even
    # a stop word, as in "rounds half up" against "rounds half to even") is news.
    if term_similarity(ta, tb) >= TERMS_DUPLICATE and _content_words(new_text) <= _content_words(old_text):
        return "terms"
    threshold = meaning_threshold(model)
    if cosine is not None and threshold is not None and cosine >= threshold and not is_word_swap(new_text, old_text):
        return "meaning"
    return None


@functools.lru_cache(maxsize=512)
def _shape(text: str) -> frozenset[str]:
    # Cached: a save compares its own text with each of its ~20 candidates, and a busy bucket's
    # candidates recur from save to save.
    return frozenset("#" if any(ch.isdigit() for ch in w) else w for w in _content_sequence(text))


def shape_similarity(a: str, b: str) -> float:
    """Jaccard of the content words with every word holding a digit read as one
    placeholder: "port 8001" and "port 8002", or two sentences around different
    UUIDs, have the same shape."""
    return term_similarity(_shape(a), _shape(b))


def is_similar(shape: float, cosine: float | None) -> bool:
    """Close enough to name as `similar_to` when a save is kept beside it."""
    return shape >= SIMILAR_SHAPE or (cosine is not None and cosine >= SIMILAR_MEANING)
