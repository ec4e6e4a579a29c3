"""The person's acts about a repository's destination values: trusting them, revoking that
trust, and the check a command makes before it would use them.

`trust_repository` is called by `autocode trust` and the server's `autocode.project.trust`
only after a person said yes to the sentences of `RepositoryTrust.says`; nothing else
records trust.
"""

from __future__ import annotations

from pathlib import Path

from autocode.settings.resolve import SettingsSnapshot, resolve_settings
from autocode.settings.schema import DESTINATION_SETTINGS
from autocode.settings.trust import (
    RepositoryTrust,
    TrustChanged,
    remove_record,
    trust_required,
    write_record,
)


def repository_trust(workspace: Path | str) -> RepositoryTrust:
    """What `workspace`'s files ask for and whether its person trusted exactly that."""
    trust = resolve_settings(workspace, only=DESTINATION_SETTINGS).trust
    assert trust is not None  # resolve_settings always fills it
    return trust


def trust_repository(workspace: Path | str, *, digest: str | None = None) -> RepositoryTrust:
    """Record the person's trust in the destination values `workspace` sets now.

    `digest` is the one the person was shown (`RepositoryTrust.digest`): when the files changed
    since, TrustChanged (exit 2) is raised and nothing is recorded, so a yes never covers values
    the person did not see. A repository that asks for nothing gets no record.
    """
    trust = repository_trust(workspace)
    if digest is not None and digest != trust.digest:
        raise TrustChanged(
            "the repository's values changed since they were shown to you; nothing was trusted. "
            f"Review them again: {trust.command}",
            data={"workspace": str(trust.workspace), "digest": trust.digest, "says": list(trust.says)},
        )
    if not trust.asks:
        return trust
    write_record(trust)
    return repository_trust(workspace)


def revoke_trust(workspace: Path | str) -> bool:
    """Forget the person's trust in `workspace` (its destination values are ignored again).
    True when a record was removed."""
    return remove_record(repository_trust(workspace).workspace)


def require_trust(snapshot: SettingsSnapshot, command: str) -> None:
    """Raise TrustRequired (exit 3, with the command to trust) when `snapshot`'s repository sets
    destination values its person has not trusted: `command` would otherwise run without them."""
    trust = snapshot.trust
    if trust is not None and not trust.trusted:
        raise trust_required(trust, command)
