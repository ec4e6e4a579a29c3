"""The portable key of a repository: the normalised origin URL without credentials, else the root commit.

Clones and worktrees of one repository get the same key; a path of this
machine never becomes part of a key (a local-path origin falls back to the
root commit).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from autocode import gitsafe
from autocode.workspace import WorkspaceInvalid
from autocode.workspace import resolve as resolve_workspace

_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>[A-Za-z0-9.\-]+):(?P<path>(?!//).+)$")
_NETWORK_SCHEMES = frozenset({"http", "https", "ssh", "git", "git+ssh", "ssh+git", "ftp", "ftps"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ssh": 22, "git": 9418, "git+ssh": 22, "ssh+git": 22}


NotARepository = WorkspaceInvalid
"""The old name of a folder that is no repository: now the one `workspaceInvalid` of any workspace."""


_KEY = re.compile(r"^(?:origin:[^\s/]+/\S+|root:[0-9a-f]{40,64})$")


def is_repository_key(text: str) -> bool:
    """True for a key `repository_key` makes (so callers may pass a key instead of a folder)."""
    return bool(_KEY.match(text))


def normalise_origin(url: str) -> str | None:
    """`host/path` of a network remote with user, password, port defaults and `.git` removed.

    Returns None for local paths and `file://` remotes: they name a place on
    one machine, not a repository other clones could share.
    """
    text = url.strip()
    if not text:
        return None
    host: str | None
    path: str
    if "://" in text:
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in _NETWORK_SCHEMES or not parts.hostname:
            return None
        host = parts.hostname.lower()
        try:
            port = parts.port
        except ValueError:
            port = None
        if port and port != _DEFAULT_PORTS.get(scheme):
            host = f"{host}:{port}"
        path = parts.path
    else:
        match = _SCP_LIKE.match(text)
        if not match or text.startswith(("/", ".", "~")) or re.match(r"^[A-Za-z]:[\\/]", text):
            return None
        host = match.group("host").lower()
        path = match.group("path")
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    path = re.sub(r"/{2,}", "/", path).strip("/")
    if not path:
        return None
    if host in ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org"):
        path = path.lower()
    return f"{host}/{path}"


def repository_key(path: Path) -> str:
    """The key project-scoped memories of the repository containing `path` are filed under.

    Raises `WorkspaceInvalid` when `path` is no workspace (`autocode.workspace`), or when
    the repository has neither a network origin nor a commit to identify it by.
    """
    top = resolve_workspace(path).root
    origin = gitsafe.origin_url(top)
    if origin:
        normal = normalise_origin(origin)
        if normal:
            return f"origin:{normal}"
    roots = gitsafe.root_commits(top)
    if roots:
        return f"root:{roots[0]}"
    raise WorkspaceInvalid(
        f"the repository at {top} has no commit and no network origin to identify it by; "
        "make a first commit (or add an origin remote) before saving project memories"
    )
