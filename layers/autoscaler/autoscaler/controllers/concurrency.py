"""Independent API calls made a few at a time. Pure (standard library threads).

A pass writes thousands of NodeClaims one request each; against a real API server every request is a round
trip of several milliseconds, so a pass that made them one after another would spend most of its time
waiting. Calls on different objects do not depend on each other: ``each`` runs them ``WORKERS`` at a time and
gives the outcomes back in order. The clients underneath (urllib3 pools, boto3 clients) are thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")
WORKERS = 8


def each(call: Callable[[Item], Result], items: Sequence[Item], workers: int | None = None) -> list[Result | Exception]:
    """``call(item)`` for every item, ``workers`` (default ``WORKERS``) at a time; answer i is item i's result or
    the exception it raised (an Exception; anything else, such as a dying invocation, propagates)."""
    workers = WORKERS if workers is None else workers
    if len(items) <= 1 or workers <= 1:
        return [_outcome(call, item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(lambda item: _outcome(call, item), items))


def _outcome(call: Callable[[Item], Result], item: Item) -> Result | Exception:
    try:
        return call(item)
    except Exception as error:
        return error
