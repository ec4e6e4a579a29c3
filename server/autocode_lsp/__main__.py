"""`autocode-lsp` / `python -m autocode_lsp`: placeholder until the server issue lands."""

from __future__ import annotations

import sys


def main() -> int:
    sys.stderr.write("autocode-lsp: not built yet\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
