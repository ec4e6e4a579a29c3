"""A command is declared once: its spec in `protocol/spec.py` names it, types its arguments and
result, documents it and puts it in a feature area. Its Python name constant
(`protocol/command_names.py`), the editors' name tables and types, the JSON Schema and
docs/protocol.md are generated from that spec by `scripts/gen_protocol_types.py`.

The walkthrough adds a command to a copy of the server as a contributor would (the spec with its
argument and result classes, the handler, a test), runs the generator, counts the files git sees
changed, hand-written and generated apart, and calls the new command on the real server process
started from the copy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from autocode_lsp import protocol
from autocode_lsp.protocol import schema
from support import git, make_repo
from support.lsp import child_env, close, connect, initialize

ROOT = Path(__file__).resolve().parents[2]
NAME = "autocode.session.echo"

SPEC_CLASSES = '''
@dataclass(kw_only=True, eq=False, repr=False)
class EchoArgs:
    text: str
    """What to say back."""


@dataclass(kw_only=True, eq=False, repr=False)
class Echo:
    said: str
    """The text, as it came."""


'''
SPEC_ENTRY = f'''
    CommandSpec("{NAME}", EchoArgs, Echo, "Says the text back.", "session"),'''
HANDLER = '''

@command(protocol.SESSION_ECHO)
async def echo(server: AutoCodeServer, args: protocol.EchoArgs) -> protocol.Echo:
    return protocol.Echo(said=args.text)
'''
TEST = '''async def test_echo_says_the_text_back(session) -> None:
    assert (await session.command("autocode.session.echo", {"text": "hi"}))["said"] == "hi"
'''


def _copy_of_the_protocol(where: Path) -> Path:
    """The server package, the generator and every generated file, committed in a new repository."""
    files: dict[str, str] = {}
    for path in (ROOT / "server" / "autocode_lsp").rglob("*.py"):
        files[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    for rel in ("scripts/gen_protocol_types.py", *schema.generated()):
        files[rel] = (ROOT / rel).read_text(encoding="utf-8")
    return make_repo(where, files)


def _add_the_command(copy: Path) -> None:
    spec = copy / "server/autocode_lsp/protocol/spec.py"
    text = spec.read_text(encoding="utf-8")
    opening = "COMMANDS: tuple[CommandSpec, ...] = ("
    assert text.count(opening) == 1
    spec.write_text(text.replace(opening, SPEC_CLASSES + opening + SPEC_ENTRY), encoding="utf-8")
    handlers = copy / "server/autocode_lsp/features/session.py"
    handlers.write_text(handlers.read_text(encoding="utf-8") + HANDLER, encoding="utf-8")
    (copy / "tests/server").mkdir(parents=True)
    (copy / "tests/server/test_session_echo.py").write_text(TEST, encoding="utf-8")


def _env(copy: Path) -> dict[str, str]:
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(copy / "server"), str(ROOT / "engine")])
    return env


def test_the_generated_names_are_the_specs() -> None:
    assert list(protocol.COMMAND_FEATURES) == [c.name for c in protocol.COMMANDS]
    for spec in protocol.COMMANDS:
        assert getattr(protocol, schema.python_constant(spec.name)) == spec.name
        assert protocol.COMMAND_FEATURES[spec.name] == spec.feature
    for method in protocol.METHODS:
        assert getattr(protocol, schema.python_constant(method.name)) == method.name
    assert schema.python_constant("autocode.task.approvePlan") == "TASK_APPROVE_PLAN"
    assert schema.python_constant("autocode/task/didChange") == "TASK_DID_CHANGE"


async def test_adding_a_command_touches_its_spec_handler_and_test(tmp_path: Path) -> None:
    copy = _copy_of_the_protocol(tmp_path / "copy")
    _add_the_command(copy)
    hand = set(git(copy, "status", "--porcelain", "--untracked-files=all").split("\n"))
    hand = {line[3:] for line in hand if line}
    assert hand == {"server/autocode_lsp/protocol/spec.py", "server/autocode_lsp/features/session.py",
                    "tests/server/test_session_echo.py"}

    gen = subprocess.run([sys.executable, str(copy / "scripts/gen_protocol_types.py")], env=_env(copy),
                         capture_output=True, text=True, timeout=120)
    assert gen.returncode == 0, gen.stderr
    changed = {line[3:] for line in git(copy, "status", "--porcelain", "--untracked-files=all").split("\n") if line}
    generated = changed - hand
    assert generated <= set(schema.generated()), generated
    assert len(hand) <= 5
    # The name, its types and its docs reach both editors and the reference from the one spec.
    assert f'SESSION_ECHO = "{NAME}"' in (copy / schema.PYTHON_NAMES_PATH).read_text(encoding="utf-8")
    assert f'"{NAME}": {{ arguments: EchoArgs; result: Echo }}' in (copy / schema.TYPESCRIPT_PATH).read_text()
    assert f"'{NAME}'" in (copy / schema.LUA_NAMES_PATH).read_text(encoding="utf-8")
    assert "Says the text back." in (copy / schema.DOC_PATH).read_text(encoding="utf-8")
    check = subprocess.run([sys.executable, str(copy / "scripts/gen_protocol_types.py"), "--check"],
                           env=_env(copy), capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr

    session = await connect("stdio", log_file=tmp_path / "lsp.log", env=_env(copy))
    try:
        started = await initialize(session, preset="neovim", folders=[copy])
        assert started.capabilities.execute_command_provider is not None
        assert NAME in started.capabilities.execute_command_provider.commands
        assert await session.command(NAME, {"text": "hello"}) == {"said": "hello"}
        bad = await session.command_error(NAME, {})
        assert bad.code == protocol.INVALID_PARAMS and "text" in bad.message
    finally:
        await close(session)
