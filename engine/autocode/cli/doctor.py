"""`autocode doctor`: every setting with its origin, the learned record's health, git;
with `--check-provider`, one tiny request to the model endpoint."""

from __future__ import annotations

import argparse

from autocode.cli._common import add_json_flag, add_workspace_flag, emit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_flag(parser, required=False)
    add_json_flag(parser)
    parser.add_argument("--test-command", metavar="CMD", help="the test command flag, as a task would get it")
    parser.add_argument("--package", metavar="PATH", help="a package folder inside the workspace (monorepo)")
    parser.add_argument(
        "--check-provider", action="store_true",
        help="send one tiny request to the implementer's endpoint: reachable, model, tool support, key variable set",
    )
    parser.add_argument("--provider", help="the provider flag, as a task would get it")
    parser.add_argument("--model", help="the model flag, as a task would get it")
    parser.add_argument("--base-url", help="the endpoint flag, as a task would get it")
    parser.add_argument("--api-key-env", metavar="VAR", help="the key variable flag, as a task would get it")


def run(args: argparse.Namespace) -> int:
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.doctor import doctor_report, render_text

    flags = {
        k: v for k, v in {
            "test_command": args.test_command, "provider": args.provider, "model": args.model,
            "base_url": args.base_url, "api_key_env": args.api_key_env,
        }.items() if v is not None
    }
    report = doctor_report(args.workspace or ".", flags=flags, package=args.package)
    data = report.to_dict()  # --json is the typed report's dump
    if not args.check_provider:
        emit(args, data, render_text)
        return 0
    # lazy: not needed by `autocode --help`, which imports this module
    from autocode.providers.agent.probe import check_workspace_provider, render

    check = check_workspace_provider(args.workspace or ".", flags, args.package)
    data["provider_check"] = check
    emit(args, data, lambda d: render_text(report) + "\n" + "\n".join(render(check)) + "\n")
    return 0 if check.get("result") != "failed" else 1
