"""Watches: events flow from the store (any thread) to each open watch's stream on the server's event loop.

A watch replays what it missed since its resourceVersion, then streams live events, translated through
its selectors as the API server does (an object leaving the selection is DELETED for that watch), and ends
after ``timeoutSeconds`` with an optional BOOKMARK carrying the newest resourceVersion.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from autoscaler_dev.kube_emulator.resources import Obj, ResourceType
from autoscaler_dev.kube_emulator.tables import table, wants_table

if TYPE_CHECKING:
    from autoscaler_dev.kube_emulator.store import Store

DEFAULT_WATCH_SECONDS = 1800  # a real server picks 30-60 minutes; clients re-watch either way
ABORT = "abort"


@dataclass(frozen=True)
class WatchEvent:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    obj: Obj
    old: Obj | None = None


class Watcher:
    """One open watch: events are handed to its event loop from whichever thread wrote them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[WatchEvent | str | None] = asyncio.Queue()

    def push(self, event: WatchEvent | str | None) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is listening any more
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)

    def close(self, abort: bool = False) -> None:
        """End the watch: an orderly end of the stream, or (``abort``) a connection dropped mid-stream."""
        self.push(ABORT if abort else None)


class _Translator:
    """Turns store events into this watch's lines: namespace and selectors applied, Tables when asked for."""

    def __init__(
        self,
        store: Store,
        resource: ResourceType,
        namespace: str,
        selects: Callable[[Obj], bool] | None,
        request: web.BaseRequest,
    ) -> None:
        self.store, self.resource, self.namespace, self.selects = store, resource, namespace, selects
        self.as_table = wants_table(request)
        self.include = request.query.get("includeObject", "Metadata")
        self.first = True

    def _matches(self, obj: Obj | None) -> bool:
        if obj is None or (self.namespace and obj["metadata"].get("namespace") != self.namespace):
            return False
        return self.selects is None or self.selects(obj)

    def line(self, kind: str, obj: Obj) -> bytes:
        if self.as_table:  # column definitions travel with the first event only
            obj = table(
                self.resource, [obj], now=self.store.clock(), include_object=self.include, with_definitions=self.first
            )
        self.first = False
        return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"

    def __call__(self, event: WatchEvent) -> bytes | None:
        now = self._matches(event.obj)
        if event.type != "MODIFIED":
            return self.line(event.type, event.obj) if now else None
        before = self._matches(event.old)
        if now:
            return self.line("MODIFIED" if before else "ADDED", event.obj)
        return self.line("DELETED", event.obj) if before else None


async def serve_watch(
    request: web.BaseRequest,
    store: Store,
    resource: ResourceType,
    namespace: str,
    selects: Callable[[Obj], bool] | None,
) -> web.StreamResponse:
    query = request.query
    timeout = min(float(query.get("timeoutSeconds") or DEFAULT_WATCH_SECONDS), DEFAULT_WATCH_SECONDS)
    loop = asyncio.get_running_loop()
    watcher, backlog = store.watch(resource, query.get("resourceVersion", ""), loop)
    translate = _Translator(store, resource, namespace, selects, request)
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    try:
        await response.prepare(request)
        chunk = b"".join(filter(None, map(translate, backlog)))
        if chunk:
            await response.write(chunk)
        deadline = loop.time() + timeout
        while True:
            try:
                event = await asyncio.wait_for(watcher.queue.get(), max(deadline - loop.time(), 0))
            except TimeoutError:
                if query.get("allowWatchBookmarks") in ("true", "1"):
                    bookmark = {
                        "kind": resource.kind,
                        "apiVersion": resource.api_version,
                        "metadata": {"resourceVersion": store.resource_version},
                    }
                    await response.write(translate.line("BOOKMARK", bookmark))
                break
            if event is None:
                break
            if event == ABORT:
                if request.transport is not None:
                    request.transport.close()  # a dropped connection, not an orderly end
                return response
            assert isinstance(event, WatchEvent)
            data = translate(event)
            if data:
                await response.write(data)
        await response.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):
        pass  # the client went away
    finally:
        store.unwatch(resource, watcher)
    return response
