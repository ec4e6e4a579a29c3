"""Detection of credentials and machine-specific paths in text that may be shared.

This module owns the single answer to "may this text leave the machine?". The
learned record, memories and reports ask it before writing anything a teammate
could read. It only finds spans; callers decide what to do with them (the
record drops a whole field, a log line may use `redact`).

A `Finding` carries a kind and a span, never the matched text, so findings can
be logged and reported safely. What is detected and what is deliberately kept
is described in docs/scrub.md.

A leaf: standard library only.

Kept whole: a leaf with one question to answer; the detectors share the
placeholder and value-shape helpers, and docs/scrub.md follows the module's
order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "PATH_KINDS",
    "SECRET_KINDS",
    "Finding",
    "contains_machine_path",
    "contains_secret",
    "find_machine_paths",
    "find_secrets",
    "is_shareable",
    "redact",
    "redact_secrets",
    "redact_values",
]

Workspace = str | os.PathLike[str] | None


@dataclass(frozen=True, slots=True)
class Finding:
    """A span of text that must not be shared. Holds no copy of the text itself."""

    kind: str
    start: int
    end: int

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "start": self.start, "end": self.end}


# Kinds found by a recognisable shape of their own; they win over the generic
# kinds below when both cover the same span.
_SHAPED_SECRET_KINDS = (
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "gitlab_token",
    "openai_key",
    "anthropic_key",
    "slack_token",
    "slack_webhook",
    "stripe_key",
    "google_api_key",
    "google_service_account",
    "azure_key",
    "huggingface_token",
    "npm_token",
    "pypi_token",
    "discord_token",
    "telegram_bot_token",
    "twilio_key",
    "sendgrid_key",
    "mailgun_key",
    "digitalocean_token",
    "shopify_token",
    "atlassian_token",
    "databricks_token",
    "vault_token",
    "postman_key",
    "grafana_token",
    "sentry_token",
    "supabase_key",
    "linear_key",
    "doppler_token",
    "jwt",
    "private_key",
    "url_password",
)
_GENERIC_SECRET_KINDS = ("secret_assignment", "secret_in_prose", "authorization_header", "env_value")
SECRET_KINDS: frozenset[str] = frozenset(_SHAPED_SECRET_KINDS + _GENERIC_SECRET_KINDS)
PATH_KINDS: frozenset[str] = frozenset(
    {"workspace_path", "home_path", "temp_path", "env_path", "host_path"}
)

_PRIORITY = {kind: i for i, kind in enumerate(_SHAPED_SECRET_KINDS + _GENERIC_SECRET_KINDS)}
_PRIORITY.update({"workspace_path": 0, "home_path": 1, "temp_path": 1, "env_path": 2, "host_path": 3})


class _Lazy:
    """A regex compiled on first use: the large ones cost milliseconds each, and
    importing this module must stay cheap for commands that never scrub."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def re(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled


# ---------------------------------------------------------------------------
# Credentials with a shape of their own

_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
_NOT_ALNUM_AFTER = r"(?![A-Za-z0-9])"
_B = _NOT_ALNUM_BEFORE
_A = _NOT_ALNUM_AFTER
_END = r"(?![\w\-])"  # for shapes whose body may hold `_` and `-`

# Each shape is written from the format its vendor documents (gitleaks' default
# rules list the same families); docs/scrub.md has the table.
_SHAPES: tuple[tuple[str, str], ...] = (
    ("aws_access_key", r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])"),
    (
        "github_token",
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,251})" + _A,
    ),
    (
        "gitlab_token",
        _B
        + r"(?:gl(?:pat|dt|rt|cbt|ptt|ft|imt|agent|oas|soat)-[A-Za-z0-9_\-]{20,200}"
        + r"|GR1348941[A-Za-z0-9_\-]{20,100})" + _END,
    ),
    # Anthropic keys start with sk- too; no OpenAI shape matches their `ant-`.
    ("anthropic_key", _B + r"sk-ant-[A-Za-z0-9_\-]{20,300}" + _END),
    (
        "openai_key",
        _B
        + r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,300}" + _END
        + r"|[A-Za-z0-9]{20,200}" + _A + ")",
    ),
    (
        "slack_token",
        _B + r"(?:xoxe\.)?(?:xox[abeoprs]|xapp)-[A-Za-z0-9\-]{10,250}" + _END,
    ),
    (
        "slack_webhook",
        r"hooks\.slack\.com/(?:services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}"
        r"|(?:workflows|triggers)/T[A-Z0-9]{6,}/[A-Za-z0-9/]{20,})",
    ),
    (
        "stripe_key",
        _B + r"(?:(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,250}|whsec_[A-Za-z0-9]{24,250})" + _A,
    ),
    ("google_api_key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _END),
    (
        "azure_key",
        r"(?<=AccountKey=)[A-Za-z0-9+/]{86}=="
        r"|(?<=SharedAccessKey=)[A-Za-z0-9+/]{42,43}="
        r"|(?<=[?&;]sig=)[A-Za-z0-9%+/]{40,120}(?:%3D|=)"
        r"|(?<![\w~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![\w~.\-])",
    ),
    (
        "huggingface_token",
        _B + r"(?:hf_[A-Za-z0-9]{30,60}|api_org_[A-Za-z0-9]{30,40})" + _A,
    ),
    ("npm_token", _B + r"npm_[A-Za-z0-9]{36}" + _A),
    ("pypi_token", _B + r"pypi-AgE[A-Za-z0-9_\-]{40,}"),
    (
        "discord_token",
        r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_\-]{60,80}"
        r"|(?<![\w\-.])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}(?![\w\-.])",
    ),
    ("telegram_bot_token", r"(?:(?<=bot)|(?<![\w:]))[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}" + _END),
    ("twilio_key", _B + r"SK[0-9a-fA-F]{32}" + _A),
    ("sendgrid_key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _END),
    ("mailgun_key", r"(?<![\w\-])key-[0-9a-f]{32}" + _END),
    ("digitalocean_token", _B + r"do[opr]_v1_[a-f0-9]{64}" + _A),
    ("shopify_token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _A),
    ("atlassian_token", _B + r"ATATT3[A-Za-z0-9_\-=]{150,250}" + r"(?![\w\-=])"),
    ("databricks_token", _B + r"dapi[a-f0-9]{32}(?:-[0-9])?" + _A),
    ("vault_token", _B + r"hv[sbr]\.[A-Za-z0-9_\-]{24,300}" + _END),
    ("postman_key", _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _A),
    (
        "grafana_token",
        _B
        + r"(?:glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
        + r"|eyJrIjoi[A-Za-z0-9]{60,400}={0,2})" + r"(?![A-Za-z0-9+/=])",
    ),
    (
        "sentry_token",
        _B + r"(?:sntrys_eyJ[A-Za-z0-9+/=_\-]{40,500}|sntryu_[a-f0-9]{64})" + r"(?![\w\-+/=])",
    ),
    ("supabase_key", _B + r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,100})" + _END),
    ("linear_key", _B + r"(?:lin_api_[A-Za-z0-9]{40}|lin_oauth_[a-f0-9]{64})" + _A),
    (
        "doppler_token",
        _B + r"dp\.(?:pt|st|ct|sa|scim|audit)\.(?:[a-z0-9_\-]{2,35}\.)?[A-Za-z0-9]{40,44}" + _A,
    ),
    ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}"),
)
# Text holding none of a shape's literals cannot match it.
_SHAPE_LITERALS: dict[str, tuple[str, ...]] = {
    "aws_access_key": ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": (
        "glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-",
        "GR1348941",
    ),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "slack_token": ("xox", "xapp-"),
    "slack_webhook": ("hooks.slack",),
    "stripe_key": ("_live_", "_test_", "_prod_", "whsec_"),
    "google_api_key": ("AIza",),
    "azure_key": ("AccountKey=", "SharedAccessKey=", "sig=", "Q~"),
    "huggingface_token": ("hf_", "api_org_"),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-",),
    "discord_token": ("discord", "."),
    "telegram_bot_token": (":AA",),
    "twilio_key": ("SK",),
    "sendgrid_key": ("SG.",),
    "mailgun_key": ("key-",),
    "digitalocean_token": ("_v1_",),
    "shopify_token": ("shpat_", "shpca_", "shppa_", "shpss_"),
    "atlassian_token": ("ATATT3",),
    "databricks_token": ("dapi",),
    "vault_token": ("hvs.", "hvb.", "hvr."),
    "postman_key": ("PMAK-",),
    "grafana_token": ("glc_", "glsa_", "eyJrIjoi"),
    "sentry_token": ("sntry",),
    "supabase_key": ("sbp_", "sb_secret_"),
    "linear_key": ("lin_api_", "lin_oauth_"),
    "doppler_token": ("dp.pt.", "dp.st.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."),
    "jwt": ("eyJ",),
}
# Ordinary text is searched with one alternation of every shape, after one
# cheap look for their literals. On long text an alternation tries every
# shape at every position (seconds for 200 kB of `key-key-…`), so there each
# shape whose literal is present is searched on its own.
_SHAPED = _Lazy("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _SHAPES))
_SHAPED_ONE_BY_ONE: tuple[tuple[str, _Lazy], ...] = tuple((kind, _Lazy(pattern)) for kind, pattern in _SHAPES)
_LONG_TEXT = 4096
_LITERALS = sorted({lit for lits in _SHAPE_LITERALS.values() for lit in lits}, key=len, reverse=True)
_SHAPED_HINT = re.compile(
    "|".join(map(re.escape, (lit for lit in _LITERALS if lit != ".")))
    + r"|[MNO][\w\-]{23,27}\.[\w\-]{6}\."  # a Discord bot token has no literal
)


def _shaped_matches(text: str) -> Iterator[tuple[str, re.Match[str]]]:
    if len(text) <= _LONG_TEXT:
        if _SHAPED_HINT.search(text):
            for match in _SHAPED.re.finditer(text):
                if match.lastgroup is not None:
                    yield match.lastgroup, match
        return
    for kind, pattern in _SHAPED_ONE_BY_ONE:
        if any(literal in text for literal in _SHAPE_LITERALS[kind]):
            for match in pattern.re.finditer(text):
                yield kind, match


_AWS_SECRET = _Lazy(
    r"(?i)(?:aws[\w\-]{0,24}?secret[\w\-]{0,24}|secret_?access_?key)[\"']?\s*(?::=|=>|=|:)\s*"
    r"[\"']?(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)

_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# The header must be followed by key material (or PEM headers): a bare mention
# of the header line in prose is not a key.
_PEM_BODY = re.compile(r"(?:\s|\\[nr])*(?:Proc-Type:|[A-Za-z0-9+/=]{16})")  # also inside JSON
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")

_URL_USERINFO = re.compile(
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s/?#@:\"'<>]*:(?P<value>[^\s/?#@\"'<>]+)@"
)

# ---------------------------------------------------------------------------
# Secrets assigned to secret-named variables, flags and headers

# Secret names are found from these words (in lower case), then read whole.
_NAME_HINTS = "pass|pwd|secret|token|key|credential|auth|pat"
_NAME_HINT = re.compile(_NAME_HINTS)
_NAME_HINT_ANY_CASE = re.compile("(?i)" + _NAME_HINTS)
_VALUE = r"(?P<value>\"[^\"\n]{0,400}\"|'[^'\n]{0,400}'|[^\s\"'`,;&|<>]+)"
_AFTER_NAME = _Lazy(r"[\"']?[ \t]*(?P<op>:=|=>|=|:)[ \t]*" + _VALUE)
# `password: HiddenText | None = None`, `f(shrink_pass: ShrinkPass, ...)`: a type, not a value.
_ANNOTATION = re.compile(r"(?:[A-Z][A-Za-z.]*|str|bytes)[ \t]*[,)|=\]]")
_AFTER_FLAG = _Lazy(r"(?:=|[ \t]+)(?!-)" + _VALUE)
_TERNARY = re.compile(r"\?[ \t]*[\"']$")
_NETRC = re.compile(r"(?i)\blogin[ \t]+\S+[ \t]+password[ \t]+(?P<value>\S+)")
_AUTHORIZATION = _Lazy(
    r"(?i)(?:\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?:bearer|basic|token|bot)[ \t]+)?"
    r"|\bbearer[ \t]+)(?P<value>[A-Za-z0-9._~+/\-]+=*)"
)

_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "passcode", "pw"})
_KEY_WORDS = frozenset({"token", "secret", "secrets", "credential", "credentials", "apikey", "auth"})
# In code `pat` is far more often a pattern than a personal access token: after
# that name only an opaque run of key characters counts.
_OPAQUE_WORDS = frozenset({"pat"})
_OPAQUE_VALUE = re.compile(r"[A-Za-z0-9+/=_\-.~]+")
_PASSWORD_ENDINGS = ("password", "passwd", "passphrase")
_KEY_ENDINGS = ("token", "secret", "apikey", "accesskey", "secretkey", "privatekey", "credentials")
# A name ending in one of these holds something about the secret (where it is,
# how long it lives), not the secret itself.
_DESCRIPTIVE_SUFFIXES = frozenset(
    {
        "url", "uri", "endpoint", "host", "file", "filename", "path", "dir", "type", "name",
        "names", "env", "var", "length", "len", "count", "limit", "max", "min", "ttl",
        "expiry", "expires", "expiration", "header", "prefix", "suffix", "field", "mode",
        "format", "hash", "policy", "rotation", "regex", "pattern", "provider", "source",
        "kind", "label", "help", "description", "prompt", "hint", "location", "store",
        "backend", "command", "cmd", "script", "scope", "scopes", "usage", "used", "budget",
        "required", "enabled", "strength", "manager", "helper", "sock", "socket", "size",
        "version", "method", "schema", "reset", "rules", "counter", "class", "id_env",
        "range", "start", "end", "offset", "index", "idx", "pos", "position", "list", "map",
        "dict", "queue", "buffer", "stream", "types",
    }
)
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# The shell's working folders (`PWD=/work/app`): "print working directory", not a password.
_SHELL_FOLDER_NAMES = frozenset({"PWD", "OLDPWD"})


def _name_segments(name: str) -> list[str]:
    return [s.lower() for s in _CAMEL.findall(name)]


@lru_cache(maxsize=4096)
def _secret_name_strength(name: str) -> str | None:
    """'password', 'key' or 'opaque' when `name` names a secret, else None.

    Only the last dotted part counts: `db.password` names a password,
    `changePassword.restype` does not.
    """
    last = name.rsplit(".", 1)[-1]
    if last in _SHELL_FOLDER_NAMES:
        return None
    segments = _name_segments(last)
    if not segments or segments[-1] in _DESCRIPTIVE_SUFFIXES or "public" in segments:
        return None
    # Lower-case run-together names ("dbpassword", "apikey") are one segment.
    if any(s in _PASSWORD_WORDS or s.endswith(_PASSWORD_ENDINGS) for s in segments):
        return "password"
    if any(s in _KEY_WORDS or s.endswith(_KEY_ENDINGS) for s in segments):
        return "key"
    if len(segments) > 1 and segments[-1] in ("key", "keys"):
        return "key"
    if any(s in _OPAQUE_WORDS for s in segments):
        return "opaque"
    return None


# ---------------------------------------------------------------------------
# What a value must look like to count as a secret

# Long enough that a random key contains one by chance about once in 10^8.
_PLACEHOLDER_MARKERS = (
    "example", "placeholder", "changeme", "change_me", "change-me", "redacted", "undefined",
    "xxxxxx", "******", "...", "<", ">", "${", "{{", "{}", "%(", "$(",
)
# Short words: counted only in values without digits, which real keys almost always have.
_PLACEHOLDER_WORDS = (
    "your", "here", "dummy", "sample", "fake", "xxxx", "***", "todo", "insert", "replace",
    "none", "null", "secret", "token", "password",
)
# Keys their vendors publish on purpose (browser-side keys): public after any name.
_PUBLIC_KEY_VALUE = re.compile(r"(?:pk_(?:live|test)_|sb_publishable_|pubkey-)[A-Za-z0-9_\-]+$")
_ENV_REFERENCE = re.compile(r"^(?:\$[A-Za-z_{(]|%[A-Za-z_]+%$|\$env:)")
# Unquoted `self.token`, `get_token()`, `os.environ["TOKEN"]`, `Optional[str]`: code, not a value.
_CODE_REFERENCE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|[(\[{]")


def _is_placeholder(value: str) -> bool:
    lowered = value.lower()
    if any(marker in lowered for marker in _PLACEHOLDER_MARKERS):
        return True
    if not any(ch.isdigit() for ch in value) and any(w in lowered for w in _PLACEHOLDER_WORDS):
        return True
    if _ENV_REFERENCE.match(value):
        return True
    return len(set(lowered)) <= 3


def _char_classes(value: str) -> tuple[bool, bool, bool, bool]:
    lower = upper = digit = symbol = False
    for ch in value:
        if ch.islower():
            lower = True
        elif ch.isupper():
            upper = True
        elif ch.isdigit():
            digit = True
        elif ch not in "_-.":
            symbol = True
    return lower, upper, digit, symbol


_NUMBER = re.compile(r"[+\-]?[0-9]+(?:[.,:][0-9]+)*%?")


def _is_password_value(value: str) -> bool:
    """A password is kept when it is made of plain words (docs' `password=secret`,
    a type such as `HiddenText`) or too short."""
    if len(value) < 6 or any(ch.isspace() for ch in value) or _NUMBER.fullmatch(value):
        return False  # numbers are counts and rates far more often than PINs (`pass: 1204`)
    lower, upper, digit, symbol = _char_classes(value)
    if digit or symbol:
        return True
    return lower and upper and len(value) >= 8 and not _is_wordy(value)


def _is_key_value(value: str, min_length: int = 12) -> bool:
    """A token or key: long enough, one run of mixed characters, not made of words."""
    if len(value) < min_length or any(ch.isspace() for ch in value) or "://" in value:
        return False
    if sum(_char_classes(value)) < 2:
        return False
    return len(set(value)) >= 5 and not _is_wordy(value)


_SEPARATORS = re.compile(r"[-_.:/@+]+")
_SMALL_NUMBER = re.compile(r"[A-Za-z]?[0-9]{1,6}")  # 123, v1
_WORD_AND_NUMBER = re.compile(r"([A-Za-z]{2,})[0-9]{1,3}")  # base64, auth0, py311
_HUMPS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_VOWELS = frozenset("aeiouyAEIOUY")


def _is_wordy(value: str) -> bool:
    """Made of words and small numbers joined by separators, like `user:123:profile`,
    `bert-base-uncased` or `getUserToken`. A random key almost never is (see docs/scrub.md).
    """
    for piece in _SEPARATORS.split(value):
        if not piece or _SMALL_NUMBER.fullmatch(piece):
            continue
        word_and_number = _WORD_AND_NUMBER.fullmatch(piece)
        if word_and_number:
            piece = word_and_number[1]
        if not piece.isascii() or not piece.isalpha():
            return False
        humps = _HUMPS.findall(piece)
        if "".join(humps) != piece or not all(_is_wordlike(hump) for hump in humps):
            return False
        # Joined words are long; random mixed case makes many short humps (aBcD).
        if len(humps) > 1 and len(piece) < 3 * len(humps):
            return False
    return True


def _is_wordlike(run: str) -> bool:
    """Pronounceable, or a short acronym: about as many vowels as words have."""
    vowels = sum(ch in _VOWELS for ch in run)
    if len(run) <= 3:
        return vowels >= 1 or run.isupper() or len(run) <= 2
    return 4 * vowels >= len(run)


def _strip_value(raw: str, start: int) -> tuple[str, int]:
    """The value without its quotes or trailing punctuation, and where it starts."""
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1], start + 1
    trimmed = raw.rstrip(".,:;")
    # A closing bracket ends the value only when the value did not open it: f(token=abc),
    # or JSON's {"pass":false}.
    while trimmed and trimmed[-1] in ")]}" and trimmed.count(trimmed[-1]) > trimmed.count(
        {")": "(", "]": "[", "}": "{"}[trimmed[-1]]
    ):
        trimmed = trimmed[:-1].rstrip(".,:;")
    return trimmed, start


# ---------------------------------------------------------------------------
# Secrets


def find_secrets(text: str, env: Mapping[str, str] | None = None) -> list[Finding]:
    """Spans of credential-shaped values and of the environment's credential values.

    `env` defaults to `os.environ`; pass `{}` to look at the text alone.
    """
    found: list[Finding] = []
    # Guards use a lower-cased copy; it keeps offsets only for ASCII text.
    lowered = text.lower() if text.isascii() else None
    for kind, match in _shaped_matches(text):
        if not _shaped_is_placeholder(kind, match.group()):
            found.append(Finding(kind, match.start(), match.end()))
    if lowered is None or "secret" in lowered:
        for match in _AWS_SECRET.re.finditer(text):
            if not _is_placeholder(match["value"]):
                found.append(Finding("aws_secret_key", match.start("value"), match.end("value")))
    if "PRIVATE KEY" in text:
        found.extend(_private_keys(text))
    if "service_account" in text:
        found.extend(_service_account_keys(text))
    if "://" in text and "@" in text:
        for match in _URL_USERINFO.finditer(text):
            value = match["value"]
            if not _is_placeholder(value) and _is_password_value(value):
                found.append(Finding("url_password", match.start("value"), match.end("value")))
    found.extend(_assigned_secrets(text, lowered))
    if lowered is None or _PROSE_HINT.search(lowered):
        found.extend(_prose_secrets(text))
    found.extend(_env_values(text, os.environ if env is None else env))
    return _dedupe(found)


# A value with a vendor's prefix is a placeholder only when it says so: a run of
# x, X, * or 0, the word example (AWS's documented key ends in EXAMPLE), "your …
# here", angle brackets, or one character repeated. Low variety alone proves
# nothing: `ghp_` and a repeated three-character pattern is still a token.
_SAYS_PLACEHOLDER = re.compile(
    r"(?i)example|placeholder|redacted|changeme|your.{0,60}?here|[<>]|x{6}|\*{6}|0{6}"
)
_BODY_SEPARATORS = re.compile(r"[_\-.:~]")


def _shaped_is_placeholder(kind: str, token: str) -> bool:
    if kind == "jwt":
        return False
    if _SAYS_PLACEHOLDER.search(token):
        return True
    body = max(_BODY_SEPARATORS.split(token), key=len)
    if len(set(body)) == 1:
        return True
    # Three dotted parts starting with M, N or O are a Discord bot token only
    # when the first part is not a name made of words (`Module.method.name`).
    return kind == "discord_token" and "/" not in token and _is_wordy(token.split(".", 1)[0])


_SERVICE_ACCOUNT = re.compile(r'"type"\s*:\s*"service_account"')
_SERVICE_ACCOUNT_KEY_ID = re.compile(r'"private_key_id"\s*:\s*"(?P<value>[0-9a-f]{40})"')


def _service_account_keys(text: str) -> Iterator[Finding]:
    """The key id of a Google service-account key file (its private key is found as one)."""
    if _SERVICE_ACCOUNT.search(text) is None:
        return
    for match in _SERVICE_ACCOUNT_KEY_ID.finditer(text):
        if not _shaped_is_placeholder("google_service_account", match["value"]):
            yield Finding("google_service_account", match.start("value"), match.end("value"))


def _private_keys(text: str) -> Iterator[Finding]:
    for begin in _PEM_BEGIN.finditer(text):
        if not _PEM_BODY.match(text, begin.end()):
            continue
        end = _PEM_END.search(text, begin.end())
        yield Finding("private_key", begin.start(), end.end() if end else len(text))


def _secret_names(text: str, lowered: str | None) -> Iterator[tuple[int, int]]:
    """Spans of whole names (runs of word characters, `.` and `-`) holding a hint word."""
    # lower() may change the length of non-ASCII text: that is searched as it is.
    hits = (_NAME_HINT.finditer(lowered) if lowered is not None
            else _NAME_HINT_ANY_CASE.finditer(text))
    last_end = -1
    for hit in hits:
        at = hit.start()
        if at < last_end:
            continue  # inside the name just read
        start = at
        while start > 0 and _is_name_char(text[start - 1]):
            start -= 1
        end = at
        while end < len(text) and _is_name_char(text[end]):
            end += 1
        last_end = end
        yield start, end


def _is_name_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_.-"


def _assigned_secrets(text: str, lowered: str | None) -> Iterator[Finding]:
    read_until = 0  # like a regex scan, a value once read is not searched for names again
    for start, end in _secret_names(text, lowered):
        if start < read_until:
            continue
        name = text[start:end]
        if name.startswith("--"):
            if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
                continue
            name = name[2:]
            if not name[:1].isalpha():
                continue
            match = _AFTER_FLAG.re.match(text, end)
        else:
            if not (name[:1].isascii() and (name[:1].isalpha() or name[:1] == "_")):
                continue
            if start > 0 and text[start - 1] in "$/\\":
                continue  # `$TOKEN` is a reference, `etc/passwd` a file
            if text.endswith("://", 0, start):
                continue  # a URL's user name: its password is found as a URL password
            if _TERNARY.search(text, max(0, start - 8), start):
                continue  # `done ? 'pass' : 'fail'` chooses between strings
            match = _AFTER_NAME.re.match(text, end)
        if match is None:
            continue
        strength = _secret_name_strength(name)
        if strength is None:
            continue  # what follows another name may itself hold an assignment
        read_until = match.end()
        raw = match["value"]
        if strength == "opaque" and not _OPAQUE_VALUE.fullmatch(raw.strip("\"'")):
            continue
        if match.groupdict().get("op") == ":" and _ANNOTATION.match(text, match.start("value")):
            continue
        value, value_start = _strip_value(raw, match.start("value"))
        if _is_placeholder(value) or (raw[0] not in "\"'" and _CODE_REFERENCE.search(value)):
            continue
        if _PUBLIC_KEY_VALUE.match(value):
            continue
        if _is_password_value(value) if strength == "password" else _is_key_value(value):
            yield Finding("secret_assignment", value_start, value_start + len(value))
    if lowered is None or "password" in lowered:
        for match in _NETRC.finditer(text):
            value, value_start = _strip_value(match["value"], match.start("value"))
            if not _is_placeholder(value) and _is_password_value(value):
                yield Finding("secret_assignment", value_start, value_start + len(value))
    if lowered is None or "authorization" in lowered or "bearer" in lowered:
        for match in _AUTHORIZATION.re.finditer(text):
            value = match["value"]
            if text.startswith("(", match.end()):
                continue  # `authorization = decode(authorization)` is code
            if not _is_placeholder(value) and _is_key_value(value, min_length=8):
                yield Finding("authorization_header", match.start("value"), match.end("value"))


# ---------------------------------------------------------------------------
# Secrets stated in a sentence

# "The staging database password is n#PD4…", "the api key for staging is …",
# "passphrase: …": a secret word, at most four more words, then `is`, `:` or
# `=` and one run that looks random. Prose about secrets ("the password reset
# flow is documented", "rotate the API key monthly") never has such a run
# right after its verb (the corpus's look-alikes hold the cases).
_PROSE_HINT = re.compile(r"pass|secret|token|key|cred|pwd")
_PROSE_SECRET = _Lazy(
    r"(?i)\b(?:pass(?:word|phrase|code|wd)?|pwd|secrets?|tokens?|api[ _\-]?keys?|access[ _\-]keys?"
    r"|secret[ _\-]keys?|private[ _\-]keys?|credentials?|creds)\b"
    r"(?P<words>(?:[ \t]+[A-Za-z][\w\-]{0,30}){0,4}?)"
    r"[ \t]*(?:[ \t](?:is|are|was|reads|equals)(?:[ \t]+(?:now|still|set[ \t]+to))?[ \t]+"
    r"|(?P<op>:|(?<![=!<>])=(?!=))[ \t]*)"
    r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|[^\s\"'`]{1,200})"
)


def _prose_secrets(text: str) -> Iterator[Finding]:
    for match in _PROSE_SECRET.re.finditer(text):
        if match["op"] and not match["words"] and " " not in match.group().split(match["op"], 1)[0].strip():
            continue  # `password=…`, `token:…`: an assignment, judged by the rules for those
        raw = match["value"]
        start = match.start("value")
        if len(raw) >= 2 and raw[0] == raw[-1] == "`":
            raw, start = raw[1:-1], start + 1
        value, value_start = _strip_value(raw, start)
        if _looks_random(value):
            yield Finding("secret_in_prose", value_start, value_start + len(value))


def _looks_random(value: str) -> bool:
    """At least 8 characters of mixed classes, varied, not words, a number or a reference."""
    if len(value) < 8 or any(ch.isspace() for ch in value) or "://" in value:
        return False
    if _is_placeholder(value) or _CODE_REFERENCE.search(value) or _NUMBER.fullmatch(value):
        return False
    if sum(_char_classes(value)) < 2 or _is_wordy(value):
        return False
    # A date, a version or a count of units repeats few characters; a key rarely does.
    return len(set(value)) >= max(6, len(value) // 2)


_TRIVIAL_ENV_VALUES = frozenset(
    {"true", "false", "yes", "no", "none", "null", "on", "off", "enabled", "disabled"}
)


@lru_cache(maxsize=1024)
def _env_name_is_secret(name: str) -> bool:
    segments = [s for s in re.split(r"[^a-z0-9]+", name.lower()) if s]
    if not segments or segments[-1] in _DESCRIPTIVE_SUFFIXES:
        return False
    if segments[-1] in ("key", "keys"):
        return True
    return any(
        s in _PASSWORD_WORDS
        or s in ("token", "secret", "credential", "credentials", "pat", "apikey")
        or s.endswith(_PASSWORD_ENDINGS + _KEY_ENDINGS)
        for s in segments
    )


def env_name_is_secret(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential (`*_API_KEY`, `*_TOKEN`...)."""
    return _env_name_is_secret(name)


def _env_secret_values(env: Mapping[str, str]) -> list[str]:
    values = []
    for name, value in env.items():
        if len(value) < 8 or not _env_name_is_secret(name):
            continue
        if value.lower() in _TRIVIAL_ENV_VALUES or value.isdigit():
            continue
        # A short plain word (PGPASSWORD=postgres) would flag every mention of the word.
        if len(value) <= 12 and value.isalpha() and (value.islower() or value.isupper()):
            continue
        values.append(value)
    return values


def _env_values(text: str, env: Mapping[str, str]) -> Iterator[Finding]:
    for value in _env_secret_values(env):
        at = text.find(value)
        while at != -1:
            yield Finding("env_value", at, at + len(value))
            at = text.find(value, at + len(value))


# ---------------------------------------------------------------------------
# Machine paths

_PATH_CHARS = r"[^\s\"'`<>|:;,()\[\]{}*?]"
_WIN_PATH_CHARS = r"[^\s\"'`<>|:;,*?]"
_SEP = r"(?:\\\\|\\|/)"
# A POSIX path starts at a boundary: not inside a word, a relative path or a
# URL (file:// URLs do point at this machine), nor after a variable (`${root}/x`).
_POSIX_START = r"(?:(?<=file://)|(?<![\w.~/\\\-$%})]))"
_COMPONENT = r"[^\s\"'`<>|:;,()\[\]{}*?/\\]+"

_MACHINE_PATHS = _Lazy(
    "|".join(
        f"(?P<{kind}>{pattern})"
        for kind, pattern in (
            (
                "home_path",
                _POSIX_START
                + r"(?:/(?:home|Users)/[\w.\-@+]+|/root(?=/|[\s\"'`<>|:;,()\[\]{}*?]|$)"
                + r"|/mnt/[a-zA-Z]/Users/[\w.\-@+]+)" + _PATH_CHARS + "*"
                + r"|(?<![\w$%~\\/])~[\w.\-]*/" + _PATH_CHARS + "+"
                + r"|(?:\$HOME|\$\{HOME\})/" + _PATH_CHARS + "+"
                + r"|(?<![\w\\/])[A-Za-z]:" + _SEP + r"(?i:users|documents and settings)"
                + _SEP + r"[^\\/\s\"'`<>|:;,*?]+" + _WIN_PATH_CHARS + "*"
                + r"|(?:%(?i:userprofile|homepath|appdata|localappdata)%|\$env:(?i:userprofile|appdata|localappdata))"
                + _SEP + _WIN_PATH_CHARS + "*",
            ),
            (
                "temp_path",
                _POSIX_START
                + r"(?:/private)?(?:/tmp|/var/tmp|/var/folders|/dev/shm)/" + _PATH_CHARS + "+"
                + "|" + _POSIX_START + r"/run/user/\d+" + _PATH_CHARS + "*"
                + r"|(?:\$TMPDIR|\$\{TMPDIR\})/" + _PATH_CHARS + "*"
                + r"|(?<![\w\\/])[A-Za-z]:" + _SEP + r"(?i:windows)" + _SEP + r"(?i:temp)\b"
                + _WIN_PATH_CHARS + "*"
                + r"|(?:%(?i:temp|tmp)%|\$env:(?i:temp|tmp))" + _SEP + _WIN_PATH_CHARS + "*",
            ),
            (
                "env_path",
                r"(?:" + _POSIX_START + r"/|(?<![\w\\/])[A-Za-z]:" + _SEP + r")"
                + r"(?:[^\s\"'`<>|:;,()\[\]{}*?\\/]+" + _SEP + r")*?"
                + r"(?:\.?venvs?|\.?virtualenvs?|site-packages|dist-packages|\.?pyenv[\\/]versions"
                + r"|\.pyenv|\.nvm|\.rbenv|\.cargo|\.rustup|\.tox|\.nox|\.conda"
                + r"|(?:mini|ana)conda3?|miniforge3?|mambaforge|micromamba"
                # `envs` is conda's folder of environments only when one is inside
                # it; an API route such as /api/envs/42 has no bin or lib.
                + r"|envs(?=[\\/][^\s\"'`<>|:;,()\[\]{}*?\\/]+[\\/](?:bin|lib|Lib|Scripts|include|conda-meta)"
                + r"(?:[\\/]|[\s\"'`<>|:;,()\[\]{}*?]|$))"
                + r"|nix[\\/]store(?=[\\/][0-9a-z]{32}-))"
                + r"(?=[\\/]|[\s\"'`<>|:;,()\[\]{}*?]|$)" + _WIN_PATH_CHARS + "*",
            ),
            (
                # Folders where a machine keeps its own installs, builds and data:
                # two components deep is this machine's layout (`/srv/data` alone
                # is kept: it reads like an API route).
                "host_path",
                _POSIX_START
                + r"/(?:srv|opt|mnt|data|var/lib|Volumes)" + (r"/" + _COMPONENT) * 2 + _PATH_CHARS + "*"
                + r"|(?<![\w\\/])[A-Za-z]:" + _SEP + r"[^\\/\s\"'`<>|:;,*?]{2,}" + _WIN_PATH_CHARS + "*"
                # UNC, also JSON-escaped (`\\\\host\\share`).
                + r"|(?<![\w\\/:])\\\\(?:\\\\)?[A-Za-z0-9][\w.\-$]*\\\\?[^\\\s\"'`<>|:;,*?]+"
                + _WIN_PATH_CHARS + "*",
            ),
        )
    )
)
_MACHINE_PATH_HINT = re.compile(
    r"/home/|/Users/|/root|/mnt/|~|\$HOME|\$\{HOME|:[\\/]|%|\$env:|/tmp/|/var/|/dev/shm/|/run/user/|"
    r"\$TMPDIR|\$\{TMPDIR|venv|packages|pyenv|\.nvm|\.rbenv|\.cargo|\.rustup|\.tox|\.nox|conda|"
    r"miniforge|mambaforge|micromamba|envs|/nix/|/srv/|/opt/|/data/|/Volumes/|\\\\"
)


def find_machine_paths(text: str, workspace: Workspace = None) -> list[Finding]:
    """Spans of paths private to this machine or person: homes, temp dirs,
    virtual environments, and `workspace`'s own absolute path.

    Project-relative paths, URL paths and system paths like /usr/bin/env are kept.
    """
    found: list[Finding] = []
    if _MACHINE_PATH_HINT.search(text):
        for match in _MACHINE_PATHS.re.finditer(text):
            kind = match.lastgroup
            if kind is not None and not _inside_url(text, match.start()):
                found.append(Finding(kind, match.start(), _trim_path_end(text, match)))
    if workspace is not None:
        folded = None
        for form, pattern, any_case in _workspace_patterns(os.fspath(workspace)):
            if any_case:
                folded = text.lower() if folded is None else folded
                if form.lower() not in folded:
                    continue
            elif form not in text:
                continue
            for match in pattern.finditer(text):
                if not _inside_url(text, match.start()):
                    found.append(Finding("workspace_path", match.start(), _trim_path_end(text, match)))
    return _dedupe(found)


def _trim_path_end(text: str, match: re.Match[str]) -> int:
    end = match.end()
    while end > match.start() + 1 and text[end - 1] == ".":
        end -= 1
    return end


def _inside_url(text: str, start: int) -> bool:
    """True when `start` lies in the path of a URL other than file://."""
    window = max(0, start - 2048)  # bounded, so many paths in one long word stay linear
    token_start = max(window - 1, *(text.rfind(ch, window, start) for ch in " \t\n\r\"'")) + 1
    token = text[token_start:start]
    return "://" in token and not token.startswith("file://")


@lru_cache(maxsize=64)
def _workspace_patterns(workspace: str) -> tuple[tuple[str, re.Pattern[str], bool], ...]:
    """Each spelling of the workspace's absolute path with the pattern that finds it."""
    forms = {workspace}
    if os.path.isabs(workspace):
        forms.add(os.path.normpath(workspace))
        forms.add(os.path.realpath(workspace))
    windows = re.match(r"^[A-Za-z]:[\\/]", workspace) is not None
    if windows:
        forms |= {workspace.replace("\\", "/"), workspace.replace("\\", "\\\\")}
    patterns = []
    for form in sorted(forms, key=len, reverse=True):
        form = form.rstrip("/\\")
        if len(form) < 2 or not (form.startswith("/") or windows):
            continue
        start = r"(?<![\w.\-\\])" if windows else _POSIX_START
        flags = re.IGNORECASE if windows else 0
        pattern = start + re.escape(form) + r"(?![\w.\-])" + _WIN_PATH_CHARS + "*"
        patterns.append((form, re.compile(pattern, flags), windows))
    return tuple(patterns)


# ---------------------------------------------------------------------------
# Combined answers


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """Sorted findings without those lying inside a kept one (the more specific kind wins)."""
    findings.sort(key=lambda f: (f.start, -f.end, _PRIORITY.get(f.kind, 99)))
    kept: list[Finding] = []
    reach = -1  # every kept finding starts at or before the current one
    for finding in findings:
        if finding.end <= reach:
            continue
        kept.append(finding)
        reach = finding.end
    return kept


def contains_secret(text: str, env: Mapping[str, str] | None = None) -> bool:
    return bool(find_secrets(text, env))


def contains_machine_path(text: str, workspace: Workspace = None) -> bool:
    return bool(find_machine_paths(text, workspace))


def is_shareable(
    text: str, workspace: Workspace = None, env: Mapping[str, str] | None = None
) -> bool:
    """True when the text holds neither a secret nor a machine-specific path."""
    return not find_secrets(text, env) and not find_machine_paths(text, workspace)


def redact(
    text: str,
    workspace: Workspace = None,
    env: Mapping[str, str] | None = None,
    *,
    secrets: bool = True,
    paths: bool = True,
) -> str:
    """`text` with each finding replaced by `[redacted:<kind>]`, for logs and reports.

    Stored answers are never rewritten this way: callers that keep data drop it whole.
    """
    findings: list[Finding] = []
    if secrets:
        findings += find_secrets(text, env)
    if paths:
        findings += find_machine_paths(text, workspace)
    if not findings:
        return text
    findings.sort(key=lambda f: (f.start, -f.end))
    parts: list[str] = []
    at = 0
    for finding in findings:
        if finding.end <= at:
            continue
        if finding.start >= at:
            parts.append(text[at : finding.start])
            parts.append(f"[redacted:{finding.kind}]")
        at = max(at, finding.end)
    parts.append(text[at:])
    return "".join(parts)



def redact_secrets(text: str, env: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """`text` with its credentials redacted (paths kept), and the kinds taken out.

    For text a person gave that is kept and sent on (a brief, an answer): the
    kinds let the record say something was removed without holding it.
    """
    findings = find_secrets(text, env)
    if not findings:
        return text, []
    return redact(text, env=env, paths=False), sorted({f.kind for f in findings})


def redact_values(value: object, env: Mapping[str, str] | None = None) -> object:
    """`value` (JSON-like: dicts, lists, strings) with credentials redacted in every string.

    Strings are redacted one by one, so a finding never spans JSON structure.
    Machine paths are kept: they are what a run did, not secrets.
    """
    if isinstance(value, str):
        return redact(value, env=env, paths=False)
    if isinstance(value, dict):
        return {key: redact_values(item, env) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_values(item, env) for item in value]
    return value
