"""`autocode trust`: show the destinations a repository's files name, and record the person's yes.

A repository's `.autocode/config.toml` and `[tool.autocode]` may name endpoints, key variables
and memory stores; AutoCode uses them only once the person trusted exactly those values. This
command shows them in words, asks on a terminal (or takes `--yes` from a person scripting it),
and records the trust in the person's state folder. `--revoke` forgets it. Trusting is a
person's act: it refuses to run under `autocode unattended`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from autocode.cli._common import add_json_flag, emit
from autocode.cli.unattended import refuse_if_unattended


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default=".", metavar="PATH", help="the repository (default: .)")
    parser.add_argument("--yes", action="store_true",
                        help="trust the values shown without asking (you reviewed them already)")
    parser.add_argument("--revoke", action="store_true",
                        help="forget your trust in this repository; its destination values are ignored again")
    add_json_flag(parser)


def _render(data: dict[str, Any]) -> str:
    if data.get("revoked") is not None:
        return ("Trust revoked: the repository's destination values are ignored again."
                if data["revoked"] else "This repository was not trusted; nothing to revoke.")
    if data["status"] == "nothing-asked":
        return "This repository's files name no destination; there is nothing to trust."
    lines = [_shown(data)]
    if data["status"] == "trusted":
        lines.append("Trusted: these values apply." if data.get("recorded") else
                     "Already trusted: these values apply.")
    return "\n".join(lines)


def _shown(data: dict[str, Any]) -> str:
    lines = [f"The repository {data['workspace']} asks to:"]
    lines += [f"  - {sentence}" for sentence in data["says"]]
    lines.append("with these values:")
    for ask in data["asks"]:
        lines.append(f"  {ask['name']} = {ask['value']!r}  ({ask['source']})")
    if data["status"] == "changed":
        lines.append("(its values changed since you last trusted it)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.settings import repository_trust, revoke_trust, trust_repository

    if args.revoke:
        removed = revoke_trust(args.workspace)  # narrowing what applies is fine unattended
        emit(args, {"revoked": removed}, _render)
        return 0
    refuse_if_unattended("trust")
    trust = repository_trust(args.workspace)
    data = {"workspace": str(trust.workspace), **trust.to_dict(), "recorded": False}
    if trust.status in ("nothing-asked", "trusted"):
        emit(args, data, _render)
        return 0
    if not args.yes:
        if not (sys.stdin.isatty() and sys.stderr.isatty()) or args.json:
            emit(args, data, _shown)
            sys.stderr.write(
                "autocode: nothing was trusted. Review the values above, then run "
                f"`{trust.command} --yes`, or run `{trust.command}` on a terminal to be asked\n"
            )
            return 1
        sys.stderr.write(_shown(data) + "\n")
        sys.stderr.write("Trust exactly these values for this repository? [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            sys.stderr.write("autocode: not trusted; the repository's destination values stay ignored\n")
            return 1
    trusted = trust_repository(args.workspace, digest=trust.digest)
    emit(args, {"workspace": str(trusted.workspace), **trusted.to_dict(), "recorded": True}, _render)
    return 0
