"""`autocode-lsp` / `python -m autocode_lsp`: command line and transports, nothing else.

stdio is the default. `--tcp HOST:PORT` and `--ws HOST:PORT` keep listening after
a client disconnects, so a client in a remote container can reconnect without
anything being restarted; each connection gets a fresh session.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

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
        from autocode_lsp import __version__

        sys.stdout.write(f"autocode-lsp {__version__}\n")
        return 0
    if args.print_protocol_doc:
        from autocode_lsp.protocol import render_markdown

        sys.stdout.write(render_markdown())
        return 0

    from autocode_lsp import pathmap, transport
    from autocode_lsp.server import close_memory_services

    try:
        pathmap.DEFAULT = pathmap.PathMap.parse(args.path_map)
    except pathmap.PathMapError as exc:
        build_parser().error(str(exc))
    log_file = transport.setup_logging(args.log_file, args.log_level)
    if pathmap.DEFAULT:
        import logging

        logging.getLogger("autocode_lsp").info("path map: %s", pathmap.DEFAULT.describe())
    try:
        if args.tcp is not None:
            return transport.serve_tcp(*args.tcp, log_file=log_file)
        if args.ws is not None:
            return transport.serve_ws(*args.ws, log_file=log_file)
        return transport.serve_stdio(log_file=log_file)
    finally:
        close_memory_services()


if __name__ == "__main__":
    sys.exit(main())
