"""The published settings table, record bounds and record JSON Schema match the code.

Regenerate after changing a declaration: `python tests/engine/test_docs_generated.py`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from autocode.record.schema import bounds_table, record_json_schema
from autocode.settings.schema import settings_table

DOCS = Path(__file__).resolve().parents[2] / "docs"
BEGIN = "<!-- generated: {name} (python tests/engine/test_docs_generated.py) -->\n"
END = "<!-- end generated: {name} -->\n"


def _schema_text() -> str:
    return json.dumps(record_json_schema(), indent=2) + "\n"


def _blocks() -> dict[str, tuple[str, str]]:
    return {"settings.md": ("settings", settings_table()), "record.md": ("bounds", bounds_table())}


def _replace_block(text: str, name: str, body: str) -> str:
    begin, end = BEGIN.format(name=name), END.format(name=name)
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.DOTALL)
    assert pattern.search(text), f"markers for {name} are missing"
    return pattern.sub(lambda _: begin + body + end, text)


def test_record_schema_json_is_generated_from_the_model() -> None:
    assert (DOCS / "record.schema.json").read_text() == _schema_text(), "run the regeneration command in this file"


def test_markdown_tables_match_the_declarations() -> None:
    for doc, (name, body) in _blocks().items():
        text = (DOCS / doc).read_text()
        assert _replace_block(text, name, body) == text, f"docs/{doc} is out of date; regenerate it"


def test_schema_bounds_are_in_the_json_schema() -> None:
    schema = record_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["conventions"]["maxItems"] > 0
    assert schema["$defs"]["Convention"]["properties"]["answer"]["maxLength"] > 0


if __name__ == "__main__":
    (DOCS / "record.schema.json").write_text(_schema_text())
    for doc, (name, body) in _blocks().items():
        path = DOCS / doc
        path.write_text(_replace_block(path.read_text(), name, body))
    sys.stdout.write("docs regenerated\n")
