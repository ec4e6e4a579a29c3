"""`autocode-lsp` / `python -m autocode_lsp`: command line and transports, nothing else.

stdio is the default. `--socket PATH`, `--tcp HOST:PORT` and `--ws HOST:PORT` keep
listening after a client disconnects, so a client in a remote container can
reconnect without anything being restarted; each connection gets a fresh session.
Each of them asks for a token (see docs/security.md).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

DEFAULT_HOST = "127.0.0.1"


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = DEFAULT_HOST, text
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT or PORT (for example {DEFAULT_HOST}:8765), got {text!r}"
        ) from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 0 and 65535, got {number}")
    return (host.strip("[]") or DEFAULT_HOST), number


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.1 <= value <= 600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0.1 and 600, got {text[:20]!r}")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 100_000:
        raise argparse.ArgumentTypeError(f"expected a whole number between 1 and 100000, got {text[:20]!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autocode-lsp",
        description="AutoCode's language server (see docs/protocol.md).",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (default)")
    mode.add_argument(
        "--tcp", type=_address, metavar="HOST:PORT",
        help=f"listen for LSP over TCP (host defaults to {DEFAULT_HOST}; port 0 picks a free one)",
    )
    mode.add_argument(
        "--ws", type=_address, metavar="HOST:PORT",
        help=f"listen for LSP over WebSocket (host defaults to {DEFAULT_HOST})",
    )
    mode.add_argument(
        "--socket", metavar="PATH",
        help="listen for LSP on a unix-domain socket (0600, in a 0700 folder of yours)",
    )
    mode.add_argument(
        "--print-protocol-doc", action="store_true",
        help="print docs/protocol.md as generated from the protocol module and exit",
    )
    parser.add_argument(
        "--log-file", metavar="PATH",
        help="where to write the server log (default: $XDG_STATE_HOME/autocode/lsp.log)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"],
        help="how much to log to the file and to window/logMessage (default: info)",
    )
    guard = parser.add_argument_group("who may connect (see docs/security.md)")
    guard.add_argument(
        "--token-file", metavar="FILE",
        help="read the token from FILE (yours, mode 0600) instead of making a new one per start",
    )
    guard.add_argument(
        "--no-token", action="store_true",
        help="ask no token (only with a loopback or unix-socket address; prints a warning)",
    )
    guard.add_argument(
        "--allow-remote", action="store_true",
        help="allow a bind beyond loopback (then a token is required)",
    )
    guard.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN",
        help="a WebSocket Origin to accept (repeatable; default: none, only clients without Origin)",
    )
    guard.add_argument(
        "--auth-timeout", type=_seconds, metavar="SECONDS",
        help="how long a new connection may take to send initialize with the token (default: 5)",
    )
    guard.add_argument(
        "--max-unauthenticated", type=_count, metavar="N",
        help="connections that may wait for their initialize at once; a newer one drops the "
        "oldest (default: 64, at most a quarter of the open-file limit)",
    )
    guard.add_argument(
        "--allow-client-overrides", action="store_true",
        help="let network clients name commands (testCommand, provider base URLs)",
    )
    parser.add_argument(
        "--manifest-folder", action="append", default=[], metavar="DIR",
        help="a folder besides the workspace that a client's `manifest` argument may name "
        "(repeatable; default: only the workspace)",
    )
    parser.add_argument(
        "--path-map", action="append", default=[], metavar="CLIENT_PREFIX=SERVER_PREFIX",
        help="the editor names the server's folder SERVER_PREFIX as CLIENT_PREFIX (a container "
        "bind mount); repeatable. Every path in and out is translated.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.version:
        # `--version` and `--print-protocol-doc` answer without loading the server
        from autocode_lsp import __version__

        sys.stdout.write(f"autocode-lsp {__version__}\n")
        return 0
    if args.print_protocol_doc:
        # (as above: no server, no pygls)
        from autocode_lsp.protocol import render_markdown

        sys.stdout.write(render_markdown())
        return 0

    # serving starts here: everything above answers without loading the server
    from autocode_lsp import logfile, pathmap, transport
    from autocode_lsp.security import SecurityError
    from autocode_lsp.server import close_memory_services

    listening = args.tcp is not None or args.ws is not None or args.socket is not None
    if not listening and (args.token_file or args.no_token or args.allow_remote or args.allow_origin
                          or args.allow_client_overrides or args.auth_timeout is not None
                          or args.max_unauthenticated is not None):
        build_parser().error("the token and access options apply to --tcp, --ws and --socket only")
    try:
        pathmap.DEFAULT = pathmap.PathMap.parse(args.path_map)
    except pathmap.PathMapError as exc:
        build_parser().error(str(exc))
    log_file = logfile.setup_logging(args.log_file, args.log_level)
    if args.manifest_folder:
        # lazy: only a server told of manifest folders needs the workspace rules before initialize
        from autocode_lsp import workspaces

        workspaces.MANIFEST_FOLDERS[:] = [Path(d).expanduser().absolute() for d in args.manifest_folder]
    if pathmap.DEFAULT:
        logging.getLogger("autocode_lsp").info("path map: %s", pathmap.DEFAULT.describe())
    try:
        if not listening:
            _leave(transport.serve_stdio(log_file=log_file))
        return _listen(args)
    except SecurityError as exc:
        sys.stderr.write(f"autocode-lsp: {exc}\n")
        return 2
    finally:
        close_memory_services()


def _listen(args: argparse.Namespace) -> int:
    """Check the address and the token options, issue the token, then serve."""
    from autocode_lsp import gate, security, transport  # only when serving (see main)
    from autocode_lsp.logscrub import ScrubbingFormatter

    kind = "tcp" if args.tcp is not None else "ws" if args.ws is not None else "socket"
    host, port = args.tcp or args.ws or ("", 0)
    if args.no_token and args.token_file:
        build_parser().error("--no-token and --token-file contradict each other")
    if kind != "socket" and not security.is_loopback(host):
        if not args.allow_remote:
            build_parser().error(
                f"{host} is not a loopback address: anyone who can reach it could drive this "
                "server. Bind 127.0.0.1 (and forward the port, e.g. ssh -L), or add "
                "--allow-remote if you mean it"
            )
        if args.no_token:
            build_parser().error("--allow-remote needs a token; drop --no-token")
    token: str | None = None
    token_file: Path | None = None
    if not args.no_token:
        given = Path(args.token_file).expanduser() if args.token_file else None
        token, token_file = security.issue_token(given, kind)
        ScrubbingFormatter.literals.add(token)
    access = security.Access(
        transport=kind, token=token, allow_client_overrides=args.allow_client_overrides,
        bound_hosts=frozenset({host.lower()}) if host else frozenset(),
        allowed_origins=frozenset(args.allow_origin), owner_uid=os.getuid(),
    )
    where = f"{host}:{port}" if kind != "socket" else args.socket
    if args.no_token:
        transport.warn(
            f"--no-token: any process on this machine that can reach {where} can run "
            "commands as this user"
        )
    if kind != "socket" and not security.is_loopback(host):
        transport.warn(
            f"listening beyond loopback on {where}: anyone with the token can run commands as "
            f"this user (uid {os.getuid()})"
        )
    def leave_now() -> None:
        # What the unwinding would have removed, then out.
        for made in (token_file if not args.token_file else None,
                     Path(args.socket).expanduser().absolute() if kind == "socket" else None):
            if made is not None:
                with contextlib.suppress(OSError):
                    made.unlink()
        os._exit(143)

    def stop(signum: int, frame: object) -> None:
        # An interrupt that lands while the event loop is logging an exception is swallowed
        # there ("Exception ignored in ..."), and the server would go on listening: if the
        # unwinding has not ended the process within 5 s, end it anyway.
        fallback = threading.Timer(5.0, leave_now)
        fallback.daemon = True
        fallback.start()
        raise KeyboardInterrupt  # unwinds like Ctrl-C, so the token file and socket are removed

    signal.signal(signal.SIGTERM, stop)
    gate.raise_open_file_limit()
    defaults = gate.Limits()
    limits = gate.Limits(
        auth_timeout_s=args.auth_timeout if args.auth_timeout is not None else defaults.auth_timeout_s,
        max_waiting=args.max_unauthenticated if args.max_unauthenticated is not None else defaults.max_waiting,
    )
    try:
        if kind == "tcp":
            return transport.serve_tcp(host, port, access=access, token_file=token_file, limits=limits)
        if kind == "ws":
            return transport.serve_ws(host, port, access=access, token_file=token_file, limits=limits)
        return transport.serve_socket(
            Path(args.socket).expanduser().absolute(), access=access, token_file=token_file,
            limits=limits,
        )
    finally:
        if token_file is not None and not args.token_file:
            with contextlib.suppress(OSError):
                token_file.unlink()


def _leave(code: int) -> NoReturn:
    """End the stdio server without the interpreter's finalisation.

    The warm-up is a daemon thread that may still be inside a native extension
    (pydantic-core, numpy) when a broken frame or `exit` ends the session; the
    finalisation then cancels it mid-call and glibc aborts the process
    ("FATAL: exception not rethrown", SIGABRT) instead of the exit status the
    editor reads. What a normal exit would do first still runs: the atexit
    handlers (the memory stores are closed, the logs flushed), then the streams.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
