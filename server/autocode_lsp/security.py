"""Who may drive a listening server: tokens, private folders and files, address rules.

A listening socket that can start a task runs commands as this user, so every
network transport needs a token, binds to loopback unless told twice, and a
unix socket lives in a folder only its owner can enter. See docs/security.md.

Standard library only, and what only a listener needs is imported inside the
function that needs it, so a stdio server pays nothing for it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from autocode.atomic import write_atomically
from autocode.private import private_folder

TOKEN_BYTES = 32
"""256 random bits per start (the issue asks for at least 128)."""
MIN_TOKEN_CHARS = 22
"""A token read from --token-file must carry at least 128 bits in base64-ish text."""
TOKEN_HEADER = "X-AutoCode-Token"
"""The WebSocket handshake header that carries the token (a browser page cannot set it)."""
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})


class SecurityError(Exception):
    """A start-up refusal: the message says what to change."""


@dataclass(frozen=True)
class Access:
    """What a connection must show, and what a network client may do, for one listening process."""

    transport: str
    """"stdio", "tcp", "ws" or "socket"."""
    token: str | None = None
    """None: no token is asked (stdio, or --no-token on loopback/unix)."""
    allow_client_overrides: bool = False
    """Whether a network client may name commands (testCommand, provider base URLs)."""
    bound_hosts: frozenset[str] = frozenset()
    """Hosts a WebSocket `Host` header may name besides the loopback names."""
    allowed_origins: frozenset[str] = frozenset()
    owner_uid: int = -1

    @property
    def network(self) -> bool:
        return self.transport != "stdio"

    def token_ok(self, given: object) -> bool:
        return self.token is None or token_matches(self.token, given)


STDIO = Access(transport="stdio", allow_client_overrides=True)


def token_matches(expected: str, given: object) -> bool:
    """Constant-time comparison; anything but a string is a mismatch."""
    # lazy: not needed by the server's `initialize`, which imports this module
    import hmac

    if not isinstance(given, str):
        return False
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8", "surrogatepass"))


def new_token() -> str:
    # lazy: not needed by the server's `initialize`, which imports this module
    import secrets

    return secrets.token_urlsafe(TOKEN_BYTES)


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "autocode"


def runtime_dir() -> Path:
    """`$XDG_RUNTIME_DIR/autocode` when the runtime folder is ours, else `<state dir>/run`."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base:
        try:
            info = os.stat(base)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            return Path(base) / "autocode"
    return state_dir() / "run"


def private_dir(path: Path) -> Path:
    """Create `path` (and parents) so that the last folder is 0700 and ours; refuse otherwise.

    Parents that do not exist yet are created 0700 too, whatever the umask.
    """
    private_folder(path)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise SecurityError(f"{path} is not a folder (a symbolic link or a file is in its place)")
    if info.st_uid != os.getuid():
        raise SecurityError(
            f"{path} belongs to another user (uid {info.st_uid}); choose a folder of your own"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def write_private(path: Path, text: str) -> None:
    """Write `text` to a file only the owner can read (0600 whatever the umask), atomically."""
    private_dir(path.parent)
    write_atomically(path, text.encode("utf-8"), durable=False, mode=0o600)


def read_token_file(path: Path) -> str:
    """The token a person keeps in a file; refused when others could read it or it is too short."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise SecurityError(f"cannot read the token file {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid():
            raise SecurityError(f"the token file {path} belongs to another user")
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise SecurityError(
                f"the token file {path} can be read by other users; run: chmod 600 {path}"
            )
        text = os.read(fd, 4096).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)
    if len(text) < MIN_TOKEN_CHARS or any(c.isspace() for c in text):
        raise SecurityError(
            f"the token file {path} must hold one token of at least {MIN_TOKEN_CHARS} characters "
            "without spaces (for example from: python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return text


def issue_token(token_file: Path | None, transport: str) -> tuple[str, Path]:
    """The token for this start and the file that holds it (made fresh unless one was given)."""
    if token_file is not None:
        return read_token_file(token_file), token_file
    token = new_token()
    folder = private_dir(runtime_dir())
    remove_stale_tokens(folder)
    path = folder / f"lsp-{transport}-{os.getpid()}.token"
    write_private(path, token + "\n")
    return token, path


_TOKEN_NAME = re.compile(r"lsp-(?:tcp|ws|socket)-([0-9]{1,10})\.token")


def remove_stale_tokens(folder: Path) -> list[Path]:
    """Remove the token files of servers that are gone (killed before they could clean up).

    A file counts as stale when its name carries a process id no process has; a file of a
    server still running, or anything that is not our own regular file, stays.
    """
    removed: list[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = _TOKEN_NAME.fullmatch(name)
        if match is None or _alive(int(match.group(1))):
            continue
        path = folder / name
        try:
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid():
                os.unlink(path)
                removed.append(path)
        except OSError:
            continue
    return removed


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # a process of someone else has that id: not ours to judge
    return True


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0]).is_loopback
    except ValueError:
        return False


def host_header_ok(value: str | None, bound: frozenset[str]) -> bool:
    """A WebSocket `Host` must name a loopback host or the address the server is bound to."""
    if not value:
        return False
    host = value.strip()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return is_loopback(host) or host.lower() in bound


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a unix socket (Linux SO_PEERCRED)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)


def prepare_socket_path(path: Path) -> None:
    """Make the socket's folder private and clear a stale socket of ours; refuse anything else."""
    folder = path.parent
    if os.path.lexists(folder):
        info = os.lstat(folder)
        if info.st_uid != os.getuid():
            raise SecurityError(
                f"the folder {folder} belongs to another user (uid {info.st_uid}); "
                "put the socket in a folder of your own"
            )
        if not stat.S_ISDIR(info.st_mode):
            raise SecurityError(f"{folder} is not a folder (a symbolic link or a file is in its place)")
        if stat.S_IMODE(info.st_mode) & 0o077:
            # Never loosen or tighten a folder we did not make (it may be the home folder).
            raise SecurityError(
                f"the folder {folder} can be entered by other users; put the socket in a folder "
                f"only you can enter (chmod 700 {folder}, or a new folder: it is made 0700)"
            )
    else:
        private_dir(folder)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if info.st_uid != os.getuid():
        raise SecurityError(f"{path} exists and belongs to another user (uid {info.st_uid})")
    if not stat.S_ISSOCK(info.st_mode):
        raise SecurityError(f"{path} exists and is not a socket; choose another path")

    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        os.unlink(path)  # a socket left by a server that is gone
        return
    finally:
        probe.close()
    raise SecurityError(f"another server is already listening on {path}")


_DIAG: list[socket.socket] = []
"""One netlink socket, kept: a listener asks for every connection (from its event loop only)."""


def _diag_socket(netlink: int) -> socket.socket:
    if not _DIAG:
        diag = socket.socket(netlink, socket.SOCK_DGRAM, 4)  # NETLINK_SOCK_DIAG
        diag.settimeout(0.05)  # the kernel answers within the send; never hold the loop long
        _DIAG.append(diag)
    return _DIAG[0]


def loopback_peer_uid(local: object, peer: object) -> int | None:
    """The uid that owns the other end of a TCP connection on this machine (Linux sock_diag),
    or None when it cannot be told (not loopback, another system, an error)."""
    if not (isinstance(local, tuple) and isinstance(peer, tuple) and len(local) >= 2 and len(peer) >= 2):
        return None
    if not is_loopback(str(peer[0])):
        return None
    family = socket.AF_INET6 if ":" in str(peer[0]) else socket.AF_INET
    netlink = getattr(socket, "AF_NETLINK", None)
    if netlink is None:
        return None

    def address(host: str) -> bytes:
        packed = socket.inet_pton(family, host.split("%")[0])
        return packed.ljust(16, b"\0")

    try:
        # inet_diag_sockid of the peer's socket: its source is our peer, its destination is us.
        sockid = struct.pack(
            "!HH16s16s", int(peer[1]), int(local[1]), address(str(peer[0])), address(str(local[0]))
        ) + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)
        request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
        header = struct.pack("=IHHII", 16 + len(request), 20, 1, 1, 0)  # SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST
        diag = _diag_socket(netlink)
        diag.sendto(header + request, (0, 0))
        reply = diag.recv(8192)
    except (OSError, ValueError, OverflowError):
        while _DIAG:
            _DIAG.pop().close()
        return None
    if len(reply) < 16 + 72:
        return None
    _length, kind = struct.unpack_from("=IH", reply)
    if kind != 20:  # NLMSG_ERROR (2) or anything else: not found
        return None
    (uid,) = struct.unpack_from("=I", reply, 16 + 64)
    return int(uid)
