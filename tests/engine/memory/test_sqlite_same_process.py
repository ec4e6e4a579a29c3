"""A second store opened on the same SQLite file in one process keeps the first one's locks.

POSIX record locks belong to the process and the file: closing any descriptor of the
file drops all of them. Opening a store must therefore never open and close the file
itself once it exists, or a write in progress on another connection loses its lock and
another process can write under it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from autocode.memory.sqlite_store import SqliteStore

OTHER_READER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=5)
conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
conn.close()  # the last connection of all checkpoints and removes the -wal and -shm files
print("closed")
"""


def test_opening_a_second_store_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    wal = path.with_name(path.name + "-wal")
    first = SqliteStore(path)
    first.conn.execute("CREATE TABLE IF NOT EXISTS probe (x INTEGER)")
    first.conn.execute("INSERT INTO probe VALUES (1)")
    first.conn.commit()
    assert wal.exists()
    second = SqliteStore(path)  # e.g. doctor looking at the store the pool has open
    # Another process opens and closes the database. It must still see this process's
    # shared lock, so it does not take itself for the last user and remove the WAL
    # under connections that are open.
    done = subprocess.run([sys.executable, "-c", OTHER_READER, str(path)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "closed", done.stderr
    assert wal.exists(), "another process removed the WAL of open connections"
    first.conn.execute("INSERT INTO probe VALUES (2)")
    first.conn.commit()
    assert second.conn.execute("SELECT count(*) FROM probe").fetchone() == (2,)
    for store in (first, second):
        store.conn.close()
        store.reader.close()


def test_a_new_store_file_is_still_made_private(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "memory.sqlite3"
    store = SqliteStore(path)
    assert path.stat().st_mode & 0o777 == 0o600
    store.conn.close()
    store.reader.close()
