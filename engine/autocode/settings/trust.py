"""Trust: which destination values a repository sets, whether its person trusted exactly those,
and the words that say what they would do.

A repository's `.autocode/config.toml` and `[tool.autocode]` may name where data or secrets go
(the `destination` settings of `schema`). Those values apply only once the person trusted
them: `trust_repository` writes a record in the person's state folder (never in the
repository), keyed by the workspace's real path and holding a digest of exactly the values
the repository sets. A changed value has another digest, so it needs trust again.

Like direnv's `allow` and mise's `trust`: the record is the person's act, made by the
`autocode trust` command or an editor's prompt, and nothing else writes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from autocode.errors import RefusedError, SetupError
from autocode.settings.schema import OFFLINE_PROVIDERS
from autocode.settings.values import mask, thaw

TrustStatus = Literal["nothing-asked", "trusted", "not-trusted", "changed"]
RECORD_VERSION = 1
APP = "autocode"


def user_config_path() -> Path:
    """The person's own settings file: `$XDG_CONFIG_HOME/autocode/config.toml` on Linux."""
    # lazy: not needed by `autocode --help`, which imports the settings package
    import platformdirs

    return Path(platformdirs.user_config_dir(APP, appauthor=False)) / "config.toml"


def trust_folder() -> Path:
    """Where trust records live: `$XDG_STATE_HOME/autocode/trust` on Linux."""
    # lazy: not needed by `autocode --help`, which imports the settings package
    import platformdirs

    return Path(platformdirs.user_state_dir(APP, appauthor=False)) / "trust"


def trust_command(workspace: Path) -> str:
    return f"autocode trust --workspace {workspace}"


@dataclass(frozen=True)
class AskedValue:
    """One destination value a repository file sets."""

    name: str
    value: Any
    origin: str  # "config" or "pyproject"
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": mask(self.value), "origin": self.origin, "source": self.source}


@dataclass(frozen=True)
class IgnoredValue:
    """A value a layer sets that AutoCode does not use, and why."""

    name: str
    value: Any
    origin: str
    source: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "value": mask(self.value), "origin": self.origin,
            "source": self.source, "reason": self.reason,
        }


@dataclass(frozen=True)
class RepositoryTrust:
    """What a repository asks for, whether its person trusted it, and what it would do in words."""

    workspace: Path
    asks: tuple[AskedValue, ...]
    digest: str
    status: TrustStatus
    says: tuple[str, ...]
    """`describe_requests` of the asks: one sentence per place data or a secret would go."""

    @property
    def trusted(self) -> bool:
        """True when the repository's destination values apply (trusted, or it sets none)."""
        return self.status in ("nothing-asked", "trusted")

    @property
    def command(self) -> str:
        return trust_command(self.workspace)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "trusted": self.trusted,
            "digest": self.digest,
            "asks": [a.to_dict() for a in self.asks],
            "says": list(self.says),
            "command": self.command,
            "record": str(record_path(self.workspace)),
        }


class TrustRequired(RefusedError):
    """A command would use destination values of a repository its person has not trusted (exit 3)."""

    kind = "trustRequired"


class TrustChanged(SetupError):
    """The repository's values changed between showing them and the person's yes (exit 2)."""

    kind = "trustChanged"


def trust_required(trust: RepositoryTrust, command: str) -> TrustRequired:
    """The error `command` raises before using values of an untrusted repository."""
    changed = " changed since you trusted it and" if trust.status == "changed" else ""
    says = "; ".join(trust.says)
    # lazy: a leaf, needed only once a repository asks for trust
    from autocode.remedy import Advice, Remedy, RemedyKind

    return TrustRequired(
        Advice(f"{command}: this repository{changed} asks to {says}. Nothing was started. If you trust these "
               "values, ", Remedy(RemedyKind.TRUST_REPOSITORY, workspace=str(trust.workspace)),
               ", then run the command again"),
        data={
            "workspace": str(trust.workspace), "digest": trust.digest, "says": list(trust.says),
            "asks": [a.to_dict() for a in trust.asks], "command": trust.command, "status": trust.status,
        },
    )


# ------------------------------------------------------------------ the words


def describe_requests(asks: Sequence[AskedValue], effective: Mapping[str, Any]) -> list[str]:
    """What the asked values would do, in words a person can judge, one sentence per destination.

    `effective` holds the destination settings as they would be once trusted (a repository may
    name only a key variable and leave the endpoint to the person's own settings). The editors'
    one prompt and `autocode trust` both show these sentences.
    """
    asked = {a.name for a in asks}
    out: list[str] = []
    provider = str(effective.get("provider") or "fixture")
    endpoint = _endpoint(effective.get("base_url"))
    if asked & {"provider", "base_url"}:
        if provider in OFFLINE_PROVIDERS:
            out.append(f"set the model endpoint to {endpoint} (unused while the provider is {provider})")
        else:
            where = f"the {provider} provider" + (f" at {endpoint}" if endpoint else "")
            out.append(f"send task briefs, answers and code to {where}")
        for ask in asks:
            if ask.name == "routes":  # only the routes that name a provider with an endpoint
                for role, target in sorted(dict(ask.value).items()):
                    place = f" at {endpoint}" if endpoint else ""
                    out.append(f"send the {role} role's requests to {target}{place}")
    if "api_key_env" in asked and effective.get("api_key_env"):
        out.append(f"send the variable {effective['api_key_env']} to {endpoint or 'the provider endpoint'}")
    embed = _endpoint(effective.get("embedding_base_url"))
    if "embedding_base_url" in asked and embed:
        out.append(f"send memory texts to {embed} to be embedded")
    if "embedding_api_key_env" in asked and effective.get("embedding_api_key_env"):
        out.append(
            f"send the variable {effective['embedding_api_key_env']} to {embed or 'the embedding endpoint'}"
        )
    url = effective.get("database_url")
    if "database_url" in asked and url:
        out.append(_database_words(str(url)))
    if "memory_path" in asked and effective.get("memory_path") and not effective.get("database_url"):
        out.append(f"write memories to {effective['memory_path']}")
    for a in asks:  # a destination setting added later and not worded above still gets a sentence
        if a.name not in _WORDED:
            out.append(f"use {a.name} = {json.dumps(mask(a.value))} from {a.source}")
    return out


_WORDED = frozenset({
    "provider", "base_url", "routes", "api_key_env", "embedding_base_url", "embedding_api_key_env",
    "database_url", "memory_path",
})


def _endpoint(url: Any) -> str | None:
    return mask(str(url)) if url else None


def _database_words(url: str) -> str:
    if url.startswith("sqlite://"):
        return f"write memories to {url[len('sqlite://'):]}"
    if "://" not in url:
        return f"open a PostgreSQL connection with the connection string {mask(url)!r}"
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    user = f"{parts.username}@" if parts.username else ""
    return f"open a PostgreSQL connection to {user}{host}{port}{parts.path or ''} (memories are kept there)"


# ----------------------------------------------------------------- the records


def digest_of(workspace: Path, asks: Sequence[AskedValue]) -> str:
    """The digest trust is recorded against: the workspace's real path and every asked value."""
    items = sorted([a.origin, a.source, a.name, thaw(a.value)] for a in asks)
    text = json.dumps({"workspace": str(workspace), "values": items}, sort_keys=True, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_path(workspace: Path) -> Path:
    key = hashlib.sha256(str(_real(workspace)).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return trust_folder() / f"{key}.json"


def _real(workspace: Path) -> Path:
    try:
        return workspace.resolve()
    except OSError:
        return workspace.absolute()


def trusted_digest(workspace: Path) -> str | None:
    """The digest the person trusted for `workspace`, or None (no record, or one AutoCode cannot read)."""
    try:
        data = json.loads(record_path(workspace).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != RECORD_VERSION:
        return None
    if data.get("workspace") != str(_real(workspace)):
        return None
    digest = data.get("digest")
    return digest if isinstance(digest, str) else None


def status_of(workspace: Path, asks: Sequence[AskedValue], digest: str) -> TrustStatus:
    if not asks:
        return "nothing-asked"
    recorded = trusted_digest(workspace)
    if recorded == digest:
        return "trusted"
    return "changed" if recorded is not None else "not-trusted"


def write_record(trust: RepositoryTrust) -> Path:
    """Record the person's trust in exactly `trust.asks` (atomically, in their state folder)."""
    # lazy: the atomic writer and the private folder rule are needed only here
    from autocode.atomic import write_atomically
    from autocode.private import private_folder

    path = record_path(trust.workspace)
    private_folder(path.parent)
    data = {
        "version": RECORD_VERSION,
        "workspace": str(_real(trust.workspace)),
        "digest": trust.digest,
        "values": [a.to_dict() for a in trust.asks],
        "says": list(trust.says),
        "trusted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_atomically(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)
    return path


def remove_record(workspace: Path) -> bool:
    """Forget the person's trust in `workspace`; False when there was none."""
    try:
        record_path(workspace).unlink()
    except FileNotFoundError:
        return False
    return True
