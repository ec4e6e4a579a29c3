"""Write the protocol's JSON Schema, the extension's TypeScript types and the Neovim plugin's
LuaLS annotations from the protocol module (autocode_lsp.protocol.schema).

    .venv/bin/python scripts/gen_protocol_types.py           # write the generated files
    .venv/bin/python scripts/gen_protocol_types.py --check   # exit 1 when one is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    from autocode_lsp.protocol.schema import generated

    stale = []
    for rel, text in generated().items():
        path = ROOT / rel
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(rel)
        if "--check" not in argv:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if "--check" in argv and stale:
        print("stale: " + ", ".join(stale) + " (run scripts/gen_protocol_types.py)", file=sys.stderr)
        return 1
    for rel in stale:
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
