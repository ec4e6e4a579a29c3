"""Starts the AutoCode language server bundled in this extension.

The extension carries the server and its dependencies, installed for one
platform and each supported Python minor version, in bundled/py3XX next to
this file's folder. Run with any Python 3.11+ as `python launch.py [server
arguments]`; it picks the matching folder, puts it first on the import path
and runs `autocode-lsp`. Exit status 3 with a message on stderr when this
Python has no bundled folder.
"""

import os
import sys

here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
bundled = os.path.join(here, "bundled")
tag = "py%d%d" % sys.version_info[:2]
libs = os.path.join(bundled, tag)
if not os.path.isdir(libs):
    have = sorted(d for d in os.listdir(bundled) if d.startswith("py3")) if os.path.isdir(bundled) else []
    versions = ", ".join(f"{d[2]}.{d[3:]}" for d in have) or "none"
    sys.stderr.write(
        f"AutoCode: this extension bundles the server for Python {versions}; {sys.executable} is "
        f"Python {sys.version.split()[0]}. Set autocode.python to one of those, or set "
        "autocode.importStrategy to fromEnvironment and install the server: python -m pip install autocode-lsp\n"
    )
    sys.exit(3)
sys.path.insert(0, libs)
sys.argv[0] = "autocode-lsp"
from autocode_lsp.__main__ import main  # noqa: E402

sys.exit(main())
