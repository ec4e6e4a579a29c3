"""A sparse file is copied sparse: the holes of a 2 GB file take no disk in the prep copy (issue 31)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autocode.prep import make_prep_copy
from support import make_repo

SIZE = 2 * 1024**3


def _sparse(path: Path, data_at: dict[int, bytes]) -> None:
    with open(path, "wb") as handle:
        for offset, data in data_at.items():
            handle.seek(offset)
            handle.write(data)
        handle.truncate(SIZE)


def test_a_2_gb_sparse_file_is_copied_with_its_holes_and_its_bytes(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    head, middle, tail = b"HEAD" * 1024, b"MIDDLE" * 4096, b"TAIL" * 1024
    data_at = {0: head, SIZE // 2: middle, SIZE - len(tail): tail}
    big = ws / "disk.img"
    _sparse(big, data_at)
    if big.stat().st_blocks * 512 >= SIZE // 2:
        pytest.skip("this file system does not keep holes (the source itself is not sparse)")
    result = make_prep_copy(ws)
    copied = result.copy / "disk.img"
    info = copied.stat()
    assert info.st_size == SIZE
    # A few data blocks, not 2 GB: allow generously for block rounding of the three segments.
    assert info.st_blocks * 512 <= 4 * 1024 * 1024, info.st_blocks * 512
    with open(copied, "rb") as handle:
        for offset, data in data_at.items():
            handle.seek(offset)
            assert handle.read(len(data)) == data, offset
        handle.seek(SIZE // 4)
        assert handle.read(4096) == b"\0" * 4096
    # A copy made twice from one source stays sparse too (nothing cached a filled one).
    again = make_prep_copy(ws).copy / "disk.img"
    assert os.stat(again).st_blocks * 512 <= 4 * 1024 * 1024
