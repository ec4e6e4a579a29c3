"""Prep copies: manifest validation, git inventory, checked copies, preflight, citations.

Public entry points (see docs/dev/engine-api.md): `make_prep_copy`,
`make_investigator_copy`, `validate_manifest`, `inventory`, `citations`,
`write_report`.
"""

from __future__ import annotations

from autocode.prep.core import (
    Handoff,
    PrepResult,
    citations,
    make_investigator_copy,
    make_prep_copy,
    write_report,
)
from autocode.prep.entry import Entry
from autocode.prep.inventory import Inventory, inventory
from autocode.prep.manifest import DeclaredInput, load_manifest, validate_manifest

__all__ = [
    "DeclaredInput",
    "Entry",
    "Handoff",
    "Inventory",
    "PrepResult",
    "citations",
    "inventory",
    "load_manifest",
    "make_investigator_copy",
    "make_prep_copy",
    "validate_manifest",
    "write_report",
]
