"""`make demo`: two tasks on a fresh sample repository, end to end, on embedded defaults.

1. Builds the unittest sample from fixtures/samples/ in a new folder.
2. Task one asks the test naming convention question, shows the plan for
   approval, implements the declared patch in a prep copy, runs the tests,
   shows the diff for completion approval, applies it; the change is then
   committed as a person would.
3. Task two (the next declared patch) is not asked the question again: the
   answer comes from the learned record as project data.
4. Prints `autocode doctor` with the learned convention.

In a terminal it asks you; without one (CI) it takes its answers from
fixtures/samples/demo-answers.json (or --answers FILE) and says so.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ANSWERS = ROOT / "fixtures" / "samples" / "demo-answers.json"


def _build_sample(dest: Path) -> None:
    spec = importlib.util.spec_from_file_location("autocode_samples_build", ROOT / "fixtures" / "samples" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build("unittest", dest)


def _autocode(*args: str, interactive: bool) -> int:
    cmd = [sys.executable, "-m", "autocode", *args]
    print("$ autocode " + " ".join(args), flush=True)
    stdin = None if interactive else subprocess.DEVNULL
    return subprocess.run(cmd, stdin=stdin, check=False).returncode


def _git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": os.environ.get("GIT_AUTHOR_NAME", "AutoCode Demo"),
        "GIT_AUTHOR_EMAIL": os.environ.get("GIT_AUTHOR_EMAIL", "demo@example.invalid"),
        "GIT_COMMITTER_NAME": os.environ.get("GIT_COMMITTER_NAME", "AutoCode Demo"),
        "GIT_COMMITTER_EMAIL": os.environ.get("GIT_COMMITTER_EMAIL", "demo@example.invalid"),
    }
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, env=env, check=True,
                   capture_output=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", help="where to build the sample (must not exist); default: a new temp folder")
    parser.add_argument("--answers", help=f"answers file for runs without a terminal (default {DEFAULT_ANSWERS.name})")
    parser.add_argument("--interactive", action="store_true", help="ask in the terminal even if unsure it is one")
    args = parser.parse_args(argv)

    interactive = args.interactive or (sys.stdin.isatty() and sys.stdout.isatty() and not args.answers)
    answers = Path(args.answers) if args.answers else DEFAULT_ANSWERS
    if args.workspace:
        workspace = Path(args.workspace).resolve()
        if workspace.exists():
            sys.stderr.write(f"demo: {workspace} already exists; pick a new folder or remove it\n")
            return 2
    else:
        workspace = Path(tempfile.mkdtemp(prefix="autocode-demo-")) / "textkit"
    _build_sample(workspace)
    print(f"== sample repository: {workspace}")
    if interactive:
        print("== interactive: answer the question and approvals below")
        mode: list[str] = ["--interactive"]
    else:
        print(f"== no terminal: answers and approvals come from {answers}")
        mode = ["--answers", str(answers)]

    print("\n== task 1: asks the convention question, plans, implements in a copy, tests, applies")
    code = _autocode("task", "start", "--workspace", str(workspace), *mode,
                     "--brief", "Add longest_word to textkit.words with a test. Patch: patches/add-longest-word.patch",
                     interactive=interactive)
    if code != 0:
        sys.stderr.write(f"demo: task 1 ended with exit code {code}\n")
        return code
    _git(workspace, "add", "textkit", "tests")
    _git(workspace, "commit", "-q", "-m", "Add longest_word (made by AutoCode task 1)")

    print("\n== task 2: the convention is known now, so it is not asked again")
    code = _autocode("task", "start", "--workspace", str(workspace), *mode,
                     "--brief", "Add shortest_word with a test. Patch: patches/add-shortest-word.patch",
                     interactive=interactive)
    if code != 0:
        sys.stderr.write(f"demo: task 2 ended with exit code {code}\n")
        return code

    print("\n== doctor: settings origins and the learned convention")
    code = _autocode("doctor", "--workspace", str(workspace), interactive=False)
    print(f"\n== done; the sample and its runs are in {workspace}")
    return code


if __name__ == "__main__":
    sys.exit(main())
