"""Moved to the engine: the process's memory stores are `autocode.memory.pool`.

Kept so code written against the old name still imports; new code uses the engine's pool.
"""

from __future__ import annotations

from autocode.memory.pool import MAX_OPEN, StorePool, close_all, stats
from autocode.memory.pool import pool as services

MemoryServices = StorePool

__all__ = ["MAX_OPEN", "MemoryServices", "close_all", "services", "stats"]
