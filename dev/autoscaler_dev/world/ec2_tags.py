"""EC2 tags that readers can iterate while another thread writes them, as EC2's tags are consistent per call.

moto keeps each resource's tags in one dict and changes it in place. Its server answers every request on its own
thread, so a DescribeTags or DescribeInstances walking an instance's tags while a CreateTags (the launcher tags
its instances in the background) adds one fails with ``dictionary changed size during iteration``: a 500 that EC2
never returns, and a flaky test. Here writes are copy-on-write: moto's own CreateTags / DeleteTags logic (limits,
validation) runs on copies, under one lock for writers, and each resource's new dict replaces the old one in a
single assignment, so a reader holds either the whole old set or the whole new one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from moto.ec2.models.tags import TagBackend

_writing = threading.Lock()
_installed = threading.Lock()
_WRITES = ("create_tags", "delete_tags", "delete_tag_keys")


def install() -> None:
    """Make moto's EC2 tag writes copy-on-write in this process (idempotent)."""
    with _installed:
        if getattr(TagBackend, "_copy_on_write", False):
            return
        for name in _WRITES:
            setattr(TagBackend, name, _copy_on_write(getattr(TagBackend, name)))
        TagBackend._copy_on_write = True  # type: ignore[attr-defined]


def _copy_on_write(write: Callable[..., bool]) -> Callable[..., bool]:
    def guarded(self: TagBackend, resource_ids: list[str], tags: Any) -> bool:
        with _writing:
            scratch = TagBackend()
            scratch.tags.update({r: dict(self.tags[r]) for r in resource_ids if r in self.tags})
            result = write(scratch, resource_ids, tags)  # raises (a limit, a null value) before anything changes
            for resource_id in resource_ids:
                self.tags[resource_id] = scratch.tags[resource_id]
            return result

    return guarded
