"""`autocode-mcp`: the MCP server over stdio, for the repository it is started in.

    autocode-mcp [--workspace PATH] [--agent NAME] [--log-file FILE] [--log-level LEVEL]

The workspace is fixed here, once: `--workspace` or the folder the client starts the
server in, which must be inside a git work tree (its top folder is used). Every tool
works on it; no tool takes another. Nothing but MCP messages is written to stdout: the
log goes to a private file (`$XDG_STATE_HOME/autocode/mcp.log` by default), scrubbed of
credentials like the language server's. The MCP SDK loads only here, so `autocode
--help` and the language server's `initialize` never pay for it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from autocode import __version__

EXIT_BAD_START = 2


def default_log_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "autocode" / "mcp.log"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autocode-mcp",
        description="AutoCode's MCP server (stdio): memory and task tools for the repository it starts in.",
    )
    parser.add_argument("--version", action="version", version=f"autocode-mcp {__version__}")
    parser.add_argument(
        "--workspace", metavar="PATH",
        help="the repository every tool works on (default: the current folder; it must be in a git work tree)",
    )
    parser.add_argument(
        "--agent", metavar="NAME",
        help="whose own memories save_memory and search_memory use (default: the MCP client's name)",
    )
    parser.add_argument("--log-file", metavar="FILE", help=f"where to log (default: {default_log_file()})")
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"autocode-mcp: {message}\n")
    return EXIT_BAD_START


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # lazy: the engine's workspace check runs git; not needed by --help or --version
    from autocode.errors import AutoCodeError
    from autocode.workspace import resolve

    try:
        root = resolve(args.workspace or os.getcwd()).root
    except AutoCodeError as exc:
        if exc.advice is not None:  # its remedy in the CLI's words: autocode-mcp takes --workspace as well
            return _fail(exc.message)
        return _fail(f"{exc.message}. Start autocode-mcp in your repository, or pass --workspace PATH.")
    if args.agent is not None:
        # lazy: the app module loads the MCP SDK; not needed by --help or --version
        from autocode_mcp.app import agent_name

        if agent_name(args.agent) != args.agent:
            return _fail(
                f"--agent {args.agent!r} is not usable as an agent name: use letters, digits, '.', '_' or '-' "
                "(at most 64, starting with a letter or digit)"
            )
    try:
        import mcp  # noqa: F401  (the SDK is an extra: say how to get it)
    except ModuleNotFoundError:
        return _fail("the MCP SDK is not installed; install it with: pip install 'autocode-lsp[mcp]'")
    # lazy: the SDK is known to be installed only from here on
    from autocode_lsp.logfile import setup_logging
    from autocode_mcp.app import Face, build

    server = build(Face(root=root, agent=args.agent))
    # After the SDK configured its own handlers: ours replace them (scrubbed, never stdout).
    setup_logging(args.log_file or str(default_log_file()), args.log_level)
    import logging  # lazy: only the one line that says the server is serving uses it

    logging.getLogger("autocode_mcp").info("autocode-mcp %s serving %s", __version__, root)
    server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
