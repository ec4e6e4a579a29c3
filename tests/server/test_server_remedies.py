"""The remedy in an engine error is typed data each face phrases (`autocode.remedy`,
`autocode_lsp.remedies`): the CLI names flags and `autocode` commands, a VS Code client the
setting or palette command, any other LSP client the config key or LSP command.

The end-to-end tests run the real server process over stdio and the real CLI in a subprocess.
"""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

from autocode import workspace
from autocode.errors import AutoCodeError, UsageError
from autocode.providers import ProviderConfig, check_config
from autocode.remedy import ARGUMENTS, SETTING_KEYS, TERMINAL, Advice, Face, Remedy, RemedyKind
from autocode.tasks.models import TaskRemedy
from autocode.tasks.run import TaskRun
from autocode_lsp import protocol
from autocode_lsp.remedies import FACES, LSP, VSCODE
from autocode_mcp.replies import MCP_WORDS
from support import make_repo
from support.agent import build_calc
from support.lsp import close, connect, initialize
from support.tasks import autocode

ALL_FACES: dict[str, Face] = {"cli": TERMINAL, "mcp": MCP_WORDS, **FACES}

REMEDIES = [
    Remedy(RemedyKind.SET_SETTINGS, keys=("base_url", "model")),
    Remedy(RemedyKind.SET_SETTINGS, keys=("model",)),
    Remedy(RemedyKind.SET_TEST_COMMAND),
    Remedy(RemedyKind.TURN_OFF_SANDBOX),
    Remedy(RemedyKind.USE_REAL_MODEL),
    Remedy(RemedyKind.RESUME_TASK),
    Remedy(RemedyKind.RESUME_TASK, task_id="t-1"),
    Remedy(RemedyKind.GIVE_WORKSPACE),
    Remedy(RemedyKind.LIST_TASKS),
    Remedy(RemedyKind.LIST_TASKS, workspace="/w/repo"),
    Remedy(RemedyKind.LIST_MEMORIES),
    Remedy(RemedyKind.TRUST_REPOSITORY, workspace="/w/repo"),
    *(Remedy(RemedyKind.NAME_ARGUMENT, argument=a) for a in ARGUMENTS),
]


def test_every_remedy_kind_has_words_in_every_face() -> None:
    assert {r.kind for r in REMEDIES} == set(RemedyKind)
    for remedy in REMEDIES:
        for name, face in ALL_FACES.items():
            words = face.phrase(remedy)
            assert isinstance(words, str), (name, remedy)
            if name not in ("cli", "mcp"):
                # an editor's person has no `autocode` command to run nor flags to pass (an MCP agent's
                # person started autocode-mcp from a config file and has a terminal)
                assert "--" not in words and "`autocode " not in words, (name, remedy, words)
    assert {k: f.phrase(Remedy(RemedyKind.SET_SETTINGS, keys=(k,))) for k in SETTING_KEYS for f in ALL_FACES.values()}
    with pytest.raises(ValueError, match="no face knows how to name"):
        Remedy(RemedyKind.SET_SETTINGS, keys=("api_key_env",))
    with pytest.raises(ValueError, match="no face knows how to name"):
        Remedy(RemedyKind.NAME_ARGUMENT, argument="revision")
    with pytest.raises(ValueError, match="names an argument"):
        Remedy(RemedyKind.NAME_ARGUMENT)
    with pytest.raises(ValueError, match="names an argument"):
        Remedy(RemedyKind.LIST_TASKS, argument="brief")


def test_the_wire_names_every_remedy_kind() -> None:
    literal = typing.get_args(TaskRemedy.model_fields["kind"].annotation)
    assert set(literal) == {k.value for k in RemedyKind}
    for remedy in REMEDIES:
        advice = Advice("before ", remedy, " after")
        wire = TaskRemedy.model_validate(advice.to_dict()).model_dump(by_alias=True)
        assert Advice.from_dict(wire) == advice


SANDBOX = Advice('set sandbox = "off" in your user config (~/.config/autocode/config.toml)',
                 Remedy(RemedyKind.TURN_OFF_SANDBOX), ".")
OPENAI = Advice("role planner uses the openai provider but base_url or model is not set; ",
                Remedy(RemedyKind.SET_SETTINGS, keys=("base_url", "model")))
ANTHROPIC = Advice("role planner uses the anthropic provider but model is not set; ",
                   Remedy(RemedyKind.SET_SETTINGS, keys=("model",)), " (e.g. the Claude model your account uses)")
FIXTURE = Advice("the fixture provider has nothing to implement: name a .patch file that exists in the "
                 "repository in the brief, ", Remedy(RemedyKind.USE_REAL_MODEL))
TESTS = Advice("no test command is known for this repository; ", Remedy(RemedyKind.SET_TEST_COMMAND))
CRASH = Advice("the codex engine ended with exit code 1: boom. Remedy: read the log, fix what it names, and "
               "resume the task (", Remedy(RemedyKind.RESUME_TASK), ")")


@pytest.mark.parametrize(("advice", "cli", "vscode", "lsp"), [
    (SANDBOX,
     'set sandbox = "off" in your user config (~/.config/autocode/config.toml) or pass --sandbox off.',
     'set sandbox = "off" in your user config (~/.config/autocode/config.toml).',
     'set sandbox = "off" in your user config (~/.config/autocode/config.toml).'),
    (OPENAI,
     OPENAI.before + "set them in .autocode/config.toml or pass --base-url and --model",
     OPENAI.before + "set autocode.baseUrl and autocode.model in VS Code's settings (AutoCode: Open Model "
     "Settings), or base_url and model in .autocode/config.toml",
     OPENAI.before + "set them in .autocode/config.toml"),
    (ANTHROPIC,
     ANTHROPIC.before + "set model in .autocode/config.toml or pass --model (e.g. the Claude model your account uses)",
     ANTHROPIC.before + "set autocode.model in VS Code's settings (AutoCode: Open Model Settings) or model in "
     ".autocode/config.toml (e.g. the Claude model your account uses)",
     ANTHROPIC.before + "set model in .autocode/config.toml (e.g. the Claude model your account uses)"),
    (FIXTURE,
     FIXTURE.before + "or use a scenario with scripted 'edits'",
     FIXTURE.before + "or, for a real model, set autocode.provider, autocode.model and autocode.baseUrl "
     "(AutoCode: Open Model Settings) and run AutoCode: Set API Key",
     FIXTURE.before + "or use a scenario with scripted 'edits'"),
    (TESTS,
     TESTS.before + "pass --test-command, or set test_command in .autocode/config.toml",
     TESTS.before + "set test_command in .autocode/config.toml",
     TESTS.before + "set test_command in .autocode/config.toml"),
    (CRASH,
     CRASH.before + "`autocode task resume`)",
     CRASH.before + "the task's Resume action)",
     CRASH.before + "autocode.task.resume or the task's Resume code action)"),
])
def test_each_face_words_the_engines_remedies(advice: Advice, cli: str, vscode: str, lsp: str) -> None:
    """The CLI and VS Code read what they read before the remedies were typed (the words the
    regular expressions of `advice.py` made); other LSP clients get the config key or LSP command."""
    assert (advice.worded(TERMINAL), advice.worded(VSCODE), advice.worded(LSP)) == (cli, vscode, lsp)


def _raised(fn: typing.Callable[[], object]) -> AutoCodeError:
    with pytest.raises(AutoCodeError) as caught:
        fn()
    return caught.value


def test_the_engines_errors_carry_their_remedy_as_data_for_every_face(tmp_path: Path) -> None:
    """Real engine errors (no regular expression rewrites them later): the CLI's words are the
    message; VS Code and other LSP clients are never told a flag or an `autocode` command; an
    MCP agent is told what its tools and autocode-mcp's start-up take."""
    repo = make_repo(tmp_path / "repo", {"README.md": "r\n"})
    missing = _raised(lambda: workspace.folder(tmp_path / "missing"))
    bad_id = _raised(lambda: TaskRun.load(repo, "../etc"))
    no_task = _raised(lambda: TaskRun.load(repo, "t-20260101-000000-abcdef"))
    for exc in (missing, bad_id, no_task):
        assert exc.advice is not None, exc.message
        assert exc.message == exc.advice.worded(TERMINAL)
        for name in ("vscode", "lsp"):
            words = exc.advice.worded(FACES[name])
            assert "--" not in words and "`autocode " not in words, (name, words)
    assert missing.message.endswith("does not exist; pass the folder of your repository with --workspace")
    assert missing.advice is not None and missing.advice.worded(MCP_WORDS).endswith(
        "does not exist; start autocode-mcp in your repository (or with --workspace PATH)")
    assert no_task.message.endswith(f"`autocode task list --workspace {repo}` shows its tasks")
    assert no_task.advice is not None
    assert no_task.advice.worded(LSP).endswith(f"{protocol.TASK_LIST} (workspace {repo}) shows its tasks")
    assert no_task.advice.worded(VSCODE).endswith("the AutoCode Tasks view lists its tasks")
    assert no_task.advice.worded(MCP_WORDS).endswith("list_tasks shows its tasks")


async def _start_error(repo: Path, log: Path, preset: str) -> str:
    session = await connect("stdio", log_file=log)
    try:
        await initialize(session, preset=preset, folders=[repo], opt_in=False, progress=False)
        await session.command(protocol.SESSION_CONFIGURE, {"provider": "openai", "model": "scripted"})
        err = await session.command_error(protocol.TASK_START, {"brief": "fix add", "testCommand": "true"})
        assert isinstance(err.data, dict) and err.data["message"] == err.message, err.data
        return err.message
    finally:
        await close(session)


async def test_vscode_is_told_the_setting_neovim_the_config_key_and_the_cli_the_flag(tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    before = "role requirements uses the openai provider but base_url or model is not set; "
    vscode = await _start_error(repo, tmp_path / "vscode.log", "vscode")
    assert vscode == (before + "set autocode.baseUrl and autocode.model in VS Code's settings (AutoCode: Open "
                      "Model Settings), or base_url and model in .autocode/config.toml"), vscode
    neovim = await _start_error(repo, tmp_path / "neovim.log", "neovim")
    assert neovim == before + "set them in .autocode/config.toml", neovim
    cli = autocode("task", "start", "--workspace", str(repo), "--brief", "fix add", "--provider", "openai",
                   "--model", "scripted", "--no-interactive")
    assert cli.returncode == 2, cli
    assert (before + "set them in .autocode/config.toml or pass --base-url and --model") in cli.stderr, cli.stderr


async def test_a_failed_tasks_snapshot_is_worded_for_each_client_and_kept_in_the_clis_words(tmp_path: Path) -> None:
    repo = build_calc(tmp_path / "calc")
    before = FIXTURE.before
    session = await connect("stdio", log_file=tmp_path / "vscode.log")
    try:
        await initialize(session, preset="vscode", folders=[repo], opt_in=False, progress=False)
        started = await session.command(protocol.TASK_START, {"brief": "fix add", "testCommand": "true"})
        task_id = started["id"]
        await session.command(protocol.TASK_ANSWER, {"taskId": task_id, "questionId": "test-naming",
                                                     "text": "Name tests after the behaviour they check."})
        failed = await session.command(protocol.TASK_APPROVE_PLAN, {"taskId": task_id, "revision": 1})
        assert failed["state"] == "FAILED", failed
        vscode = FIXTURE.worded(VSCODE)
        assert failed["error"]["message"] == vscode and failed["result"]["error"]["message"] == vscode
        assert failed["error"]["remedy"] == {"kind": "useRealModel", "keys": [], "taskId": "", "before": before,
                                             "after": "", "workspace": "", "argument": ""}
        listed = await session.command(protocol.TASK_LIST, {})
        assert [t["error"]["message"] for t in listed["tasks"] if t["id"] == task_id] == [vscode], listed
    finally:
        await close(session)
    session = await connect("stdio", log_file=tmp_path / "neovim.log")
    try:
        await initialize(session, preset="neovim", folders=[repo], opt_in=False, progress=False)
        got = await session.command(protocol.TASK_GET, {"taskId": task_id})
        assert got["error"]["message"] == FIXTURE.worded(LSP), got["error"]
        assert "Open Model Settings" not in got["error"]["message"]
    finally:
        await close(session)
    status = autocode("task", "status", "--workspace", str(repo), task_id)
    assert status.returncode == 1, status  # the exit code of a failed task
    assert before + "or use a scenario with scripted 'edits'" in status.stdout, status.stdout
    assert "Open Model Settings" not in status.stdout


@pytest.mark.parametrize(("provider", "cli", "vscode"), [
    ("openai",
     "role requirements uses the openai provider but base_url or model is not set; set them in "
     ".autocode/config.toml or pass --base-url and --model",
     "role requirements uses the openai provider but base_url or model is not set; set autocode.baseUrl and "
     "autocode.model in VS Code's settings (AutoCode: Open Model Settings), or base_url and model in "
     ".autocode/config.toml"),
    ("anthropic",
     "role requirements uses the anthropic provider but model is not set; set model in .autocode/config.toml "
     "or pass --model (e.g. the Claude model your account uses)",
     "role requirements uses the anthropic provider but model is not set; set autocode.model in VS Code's "
     "settings (AutoCode: Open Model Settings) or model in .autocode/config.toml (e.g. the Claude model your "
     "account uses)"),
])
def test_the_engines_own_errors_carry_the_cli_words_and_their_remedy(provider: str, cli: str, vscode: str) -> None:
    with pytest.raises(UsageError) as raised:
        check_config(ProviderConfig(provider=provider))
    assert raised.value.message == cli and raised.value.advice is not None
    assert raised.value.advice.worded(VSCODE) == vscode
