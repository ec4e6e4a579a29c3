"""Setting values made read-only for a snapshot, made plain again for JSON, and masked for display."""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Any


def freeze(value: Any) -> Any:
    """Mappings become read-only views and lists tuples, all the way down."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


_URL_PASSWORD = re.compile(r"(?<=://)([^:/@\s]*):[^@/\s]+@")


def thaw(value: Any, *, mask: bool = False) -> Any:
    """Plain dicts and lists again; with `mask`, a password inside a URL is shown as ***."""
    if isinstance(value, Mapping):
        return {k: thaw(v, mask=mask) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v, mask=mask) for v in value]
    if mask and isinstance(value, str):
        return _URL_PASSWORD.sub(r"\1:***@", value)
    return value


def mask(value: Any) -> Any:
    """`value` made plain, with any password inside a URL replaced by ***."""
    return thaw(value, mask=True)
