"""SQS visibility timeouts in virtual time: what a delivery leaves unacknowledged comes back when its queue's
visibility timeout (``routing.Redelivery``) is over on the simulation's clock, not at once and not on moto's.

The world receives with a visibility far longer than any run (moto's timeout runs on the wall clock) and keeps the
receipt handles of what it did not delete; once a message's virtual timeout is over, it sets its visibility to 0,
and the next receive takes it (counting towards ``maxReceiveCount``, after which SQS moves it to the dead-letter
queue). A handler that makes a record visible again itself (``ChangeMessageVisibility`` to 0, as the functions do
for poison messages) is not held back: its new receipt makes the world's old one stale, which SQS refuses and the
world ignores.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import ClientError

HOLD_SECONDS = 12 * 3600  # SQS's longest visibility timeout: longer than any simulated run takes on the wall


class VirtualVisibility:
    """Messages received and not acknowledged, each with the virtual second it becomes visible again."""

    def __init__(self) -> None:
        self._held: list[tuple[float, int, str, str]] = []  # (visible at, order, queue url, receipt handle)
        self._order = 0

    def hold(self, queue_url: str, messages: Iterable[Mapping[str, Any]], until: float) -> None:
        """``messages`` (as received) come back at virtual second ``until``."""
        for message in messages:
            self._order += 1
            heapq.heappush(self._held, (until, self._order, queue_url, str(message["ReceiptHandle"])))

    def release_due(self, sqs: Any, now: float) -> int:
        """Make visible what is due by ``now``; how many were."""
        released = 0
        while self._held and self._held[0][0] <= now:
            _, _, url, receipt = heapq.heappop(self._held)
            released += release(sqs, url, [receipt])
        return released

    def next_due(self) -> float | None:
        """The virtual second the next held message comes back, None when nothing is held."""
        return self._held[0][0] if self._held else None


def release(sqs: Any, queue_url: str, receipts: Iterable[str]) -> int:
    """Visible again at once; a stale receipt (received since, or moved to the DLQ) is skipped."""
    released = 0
    for receipt in receipts:
        try:
            sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=receipt, VisibilityTimeout=0)
            released += 1
        except ClientError:  # ReceiptHandleIsInvalid / MessageNotInflight: someone else has it now
            continue
    return released
