"""Turning engine errors and bad arguments into JSON-RPC errors.

Bad arguments are `-32602`; an `AutoCodeError` is `-32803` (RequestFailed) with
`data = {kind, message, ...}` so a client can branch on the stable kind.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from pygls.exceptions import JsonRpcException

from autocode.errors import AutoCodeError, UsageError, fault_error
from autocode.remedy import Advice
from autocode_lsp import warmup
from autocode_lsp.protocol import INVALID_PARAMS, REQUEST_FAILED

R = TypeVar("R")


def invalid_arguments(message: str) -> JsonRpcException:
    return JsonRpcException(
        message=message, code=INVALID_PARAMS, data={"kind": "invalidArguments", "message": message}
    )


def domain_error(kind: str, message: str, **data: Any) -> JsonRpcException:
    return JsonRpcException(
        message=message, code=REQUEST_FAILED, data={"kind": kind, "message": message, **data}
    )


_ADVICE: weakref.WeakKeyDictionary[JsonRpcException, Advice] = weakref.WeakKeyDictionary()


def advice_of(err: JsonRpcException) -> Advice | None:
    """The typed remedy of the engine error `err` was made from (`from_engine`), if it had one."""
    return _ADVICE.get(err)


def from_engine(exc: BaseException) -> JsonRpcException:
    """The JSON-RPC error for an engine `AutoCodeError` (usage errors are bad arguments). An
    error with a typed remedy is worded for any LSP client; `advice.advise_error` words it for
    the client that asked."""
    if not isinstance(exc, AutoCodeError):
        raise TypeError(f"not an engine error: {exc!r}")
    if exc.advice is not None:
        # lazy: the server's words for remedies are needed only once an error has one
        from autocode_lsp.remedies import LSP

        message = exc.advice.worded(LSP)
    else:
        message = exc.message
    if isinstance(exc, UsageError) and exc.kind == UsageError.kind:
        err = invalid_arguments(message)
        err.data = {**exc.data, **(err.data or {})}
    else:
        err = domain_error(exc.kind, message, **exc.data)
    if exc.advice is not None:
        _ADVICE[err] = exc.advice
    return err


async def engine_call(fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """Run blocking engine work in a thread, once the warm-up's imports are done (no two threads
    import engine modules at once); its AutoCodeError becomes a JSON-RPC error. An early
    command's work during the warm-up runs in the warm-up thread (`warmup.engine_work`)."""
    call = functools.partial(fn, *args, **kwargs)
    try:
        handed = warmup.engine_work(call)
        if handed is not None:
            return await asyncio.wrap_future(handed)
        return await asyncio.to_thread(_after_warmup, call)
    except AutoCodeError as exc:
        raise from_engine(exc) from exc
    except (OSError, RecursionError) as exc:
        converted = fault_error(exc)
        if converted is None:
            raise
        raise from_engine(converted) from exc
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("autocode"):
            raise
        raise not_available(exc.name or "autocode") from exc


def _after_warmup(call: Callable[[], R]) -> R:
    warmup.settled(bounded=False)
    return call()


def not_available(module: str) -> JsonRpcException:
    return domain_error(
        "notAvailable",
        f"this AutoCode installation has no {module} yet; install a version that has it",
    )
