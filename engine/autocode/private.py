"""Folders only their owner can enter, whatever the umask.

`mkdir -p` (and `Path.mkdir(parents=True)`) gives the folders it adds above the last one the
default mode, which under a umask of 000 is 0777. What AutoCode keeps for its owner alone (a
run's state and evidence, the memory database) is made here instead, one level at a time.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def private_folder(path: Path) -> None:
    """Make `path` and every missing folder above it 0700; folders that exist are left as they are."""
    missing: list[Path] = []
    while not os.path.lexists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            os.mkdir(folder, 0o700)
