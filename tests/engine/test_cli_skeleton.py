import subprocess
import sys


def test_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "autocode", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for name in ("doctor", "trust", "forget", "prep", "pilot-prep", "task", "memory", "unattended"):
        assert name in out


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys; from autocode.cli import build_parser; build_parser();"
        "heavy = [m for m in ('pydantic', 'git', 'lsprotocol', 'pygls', 'psycopg', 'platformdirs') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
