"""docs/protocol.md is generated from the protocol module and must not go stale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from autocode_lsp import protocol

ROOT = Path(__file__).resolve().parents[2]


def test_protocol_doc_is_up_to_date() -> None:
    committed = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    assert committed == protocol.render_markdown(), (
        "docs/protocol.md is stale: run `python -m autocode_lsp --print-protocol-doc "
        "> docs/protocol.md`"
    )


def test_print_protocol_doc_flag_prints_the_same_text() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "autocode_lsp", "--print-protocol-doc"],
        capture_output=True, check=True, text=True,
    )
    assert out.stdout == protocol.render_markdown()


def test_every_command_and_method_and_error_kind_is_documented() -> None:
    text = protocol.render_markdown()
    for spec in protocol.COMMANDS:
        assert f"### `{spec.name}`" in text
    for method in protocol.METHODS:
        assert f"### `{method.name}`" in text
    for kind in protocol.ERROR_KINDS:
        assert f"| `{kind.kind}` |" in text


def test_wire_names_are_camel_case_and_unknown_fields_are_refused() -> None:
    spec = protocol.COMMANDS_BY_NAME[protocol.TASK_APPROVE_PLAN]
    args = protocol.parse_arguments(spec, [{"taskId": "t1", "revision": 2}])
    assert args.task_id == "t1" and args.revision == 2
    for bad in ([{"taskId": "t1"}], [{"taskId": "t1", "revision": "2"}],
                [{"taskId": "t1", "revision": 2, "extra": 1}], ["t1"], [{}, {}],
                [{"taskId": "t1", "revision": True}]):
        try:
            protocol.parse_arguments(spec, bad)
        except protocol.InvalidArguments as exc:
            assert "autocode.task.approvePlan" in str(exc)
        else:
            raise AssertionError(f"accepted {bad!r}")


def test_every_command_has_a_handler_in_its_feature_module() -> None:
    from autocode_lsp.setup import handler_for

    assert [c.name for c in protocol.COMMANDS] == list(protocol.COMMAND_FEATURES)
    for spec in protocol.COMMANDS:
        assert spec.feature == protocol.COMMAND_FEATURES[spec.name]
        assert callable(handler_for(spec.name)), spec.name


def test_starting_a_server_imports_no_engine_heavy_parts() -> None:
    code = (
        "import sys; from autocode_lsp.setup import create_server; create_server();"
        "heavy = [m for m in ('pydantic', 'git', 'psycopg', 'autocode.tasks', 'autocode.memory',"
        " 'autocode_lsp.features.tasks', 'autocode_lsp.protocol.spec') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
