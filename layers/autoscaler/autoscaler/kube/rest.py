"""JSON to the API server with the official client's configuration and auth: bodies as plain dicts (no model
(de)serialisation: the port speaks JSON and it is several times faster), encoded and decoded by orjson (about
five times the standard library's speed on the lists and writes of a pass), requests and answers over the lean
transport (``transport``; the client's own stack for watches and proxies), transient failures retried with
backoff, and HTTP failures mapped to the port's typed errors."""

from __future__ import annotations

import builtins
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import orjson
import urllib3

from autoscaler.kube.objects import Body
from autoscaler.kube.port import (
    ClusterError,
    ConflictError,
    ForbiddenError,
    KubeObject,
    NotFoundError,
    RejectedError,
    TransientClusterError,
)
from autoscaler.kube.resources import Kind
from autoscaler.kube.transport import Transport, lean_for

logger = logging.getLogger(__name__)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
Query = Sequence[tuple[str, str | int]]
Accept = Callable[[int, KubeObject], bool]
PIPELINE_DEPTH = 32  # requests in flight on one connection: the server stops reading while its answers wait


class ExpiredError(ClusterError):
    """410 Gone: the resourceVersion (of a watch or a list continuation) is too old; list again."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter for throttling, server errors and timeouts; Retry-After wins."""

    attempts: int = 5
    base_delay: float = 0.2
    max_delay: float = 5.0

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.max_delay)
            except ValueError:
                pass
        return float(min(self.base_delay * 2**attempt, self.max_delay) * random.uniform(0.5, 1.0))


_TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, OSError)  # OSError: sockets, TLS, resolution, timeouts


def _json_default(value: Any) -> Any:
    """What a body may hold besides JSON's types and datetimes (which orjson writes as RFC 3339): dates, times and
    models (their dict)."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "to_dict"):
        return value.to_dict()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def encode_body(body: Any) -> bytes:
    return orjson.dumps(body, default=_json_default)


def _decode(data: bytes) -> KubeObject:
    try:
        body = orjson.loads(data) if data else {}
    except ValueError:
        return {"message": data[:200].decode("utf-8", "replace")}
    return body if isinstance(body, dict) else {"items": body}


def error_for(status: int, body: Mapping[str, Any], what: str) -> ClusterError:
    message = f"{what}: {status} {body.get('reason', '')}: {body.get('message', '')}".rstrip(": ")
    if status == 404:
        return NotFoundError(message)
    if status == 409:
        return ConflictError(message)
    if status in (401, 403):
        return ForbiddenError(message)
    if status == 410:
        return ExpiredError(message)
    if status in (400, 415, 422):
        return RejectedError(message)
    if status == 429 or status >= 500:
        return TransientClusterError(message)
    return ClusterError(message)


class KubeRest:
    def __init__(
        self,
        api_client: Any,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        timeout: tuple[float, float] = (5.0, 30.0),
    ) -> None:
        self.api_client = api_client
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.timeout = timeout
        configuration = api_client.configuration
        self.transport = Transport(configuration, api_client.user_agent) if lean_for(configuration) else None

    def _send(self, method: str, path: str, *, query: Query, body: Any, content_type: str, timeout: Any) -> Any:
        """One HTTP exchange; returns an answer with ``status``, ``headers`` and ``read()``."""
        if self.transport is None:
            return self._client_send(method, path, query=query, body=body, content_type=content_type, timeout=timeout)
        target = f"{path}?{urlencode(list(query), quote_via=quote)}" if query else path
        data = None if body is None else encode_body(body)
        return self.transport.request(method, target, data, content_type, timeout)

    def _client_send(self, method: str, path: str, *, query: Query, body: Any, content_type: str, timeout: Any) -> Any:
        """One HTTP exchange through the client's stack; returns its RESTResponse."""
        serialized = self.api_client.param_serialize(
            method,
            path,
            query_params=list(query),
            header_params={"Accept": JSON, "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
        )
        return self.api_client.call_api(*serialized, _request_timeout=timeout)

    def exchange(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON,
        accept: Accept | None = None,
        answer: bool = True,
    ) -> tuple[int, KubeObject]:
        """Send and decode; 2xx (and whatever ``accept`` admits) is returned, 429 / 5xx / transport failures are
        retried, anything else raises its typed error at once. ``answer=False``: a 2xx answer's body is read but
        not decoded (returned as {}), for the hot writes whose caller never looks at it."""
        last, retry_after = "", None
        for attempt in range(self.retry.attempts):
            if attempt:
                self.sleep(self.retry.delay(attempt - 1, retry_after))
            retry_after = None
            try:
                response = self._send(
                    method, path, query=query, body=body, content_type=content_type, timeout=self.timeout
                )
                data = response.read()
            except _TRANSPORT_ERRORS as error:
                last = f"{type(error).__name__}: {error}"
                continue
            if not answer and 200 <= response.status < 300:
                return response.status, {}
            decoded = _decode(data)
            if 200 <= response.status < 300 or (accept is not None and accept(response.status, decoded)):
                return response.status, decoded
            if response.status == 429 or response.status >= 500:
                last, retry_after = (
                    f"{response.status} {decoded.get('message', '')}",
                    response.headers.get("Retry-After"),
                )
                logger.debug("retrying %s %s after %s", method, path, last)
                continue
            raise error_for(response.status, decoded, f"{method} {path}")
        raise TransientClusterError(f"{method} {path}: {last} (after {self.retry.attempts} attempts)")

    # --- verbs -----------------------------------------------------------------------------------
    def get(self, kind: Kind, name: str, namespace: str | None = None) -> KubeObject:
        return self.exchange("GET", kind.path(namespace, name))[1]

    def list(
        self,
        kind: Kind,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 500,
    ) -> tuple[list[KubeObject], str]:
        """Every matching object, page by page; returns (items, the list's resourceVersion). A continuation that
        expired (410) restarts the list in one request without a limit, as client-go's pager does (its
        FullListIfExpired): paging again could expire again on a large, busy list, and a whole list cannot."""
        try:
            return self._list(kind, namespace, label_selector, field_selector, limit)
        except ExpiredError:
            logger.info("list of %s expired mid-way; listing it whole", kind.plural)
            return self._list(kind, namespace, label_selector, field_selector, 0)

    def _list(
        self, kind: Kind, namespace: str | None, label_selector: str, field_selector: str, limit: int
    ) -> tuple[builtins.list[KubeObject], str]:  # ``list`` is the method's name in this class
        items: builtins.list[KubeObject] = []
        token = ""
        selectors = (("labelSelector", label_selector), ("fieldSelector", field_selector))
        while True:
            query: builtins.list[tuple[str, str | int]] = [("limit", limit)] if limit else []
            query += [(k, v) for k, v in selectors if v]
            if token:
                query.append(("continue", token))
            page = self.exchange("GET", kind.path(namespace), query=query)[1]
            items += page.get("items") or []
            list_meta = Body(page)
            token = str(list_meta.metadata.get("continue") or "")
            if not token:
                return items, list_meta.resource_version

    def create(
        self, kind: Kind, body: Mapping[str, Any], namespace: str | None = None, *, answer: bool = True
    ) -> KubeObject:
        return self.exchange("POST", kind.path(namespace), body=body, answer=answer)[1]

    def create_all(
        self, kind: Kind, bodies: Sequence[Mapping[str, Any]], namespace: str | None = None
    ) -> builtins.list[ClusterError | None]:
        """Create each of ``bodies`` without reading the objects back (events): pipelined on one connection,
        ``PIPELINE_DEPTH`` at a time, where the lean transport serves. Returns each one's failure (None: created).
        One the server throttled, failed with a 5xx or left unanswered is sent again alone, with the retry policy
        (an unanswered one may then exist twice: only for objects where that is harmless)."""
        path = kind.path(namespace)
        outcomes: builtins.list[ClusterError | None] = []
        for start in range(0, len(bodies), PIPELINE_DEPTH):
            chunk = bodies[start : start + PIPELINE_DEPTH]
            answers: builtins.list[Any] = [None] * len(chunk)
            if self.transport is not None:
                requests = [("POST", path, encode_body(body), JSON) for body in chunk]
                with contextlib.suppress(*_TRANSPORT_ERRORS):
                    answers = self.transport.pipeline(requests, self.timeout)
            for body, answer in zip(chunk, answers, strict=True):
                if answer is not None and 200 <= answer.status < 300:
                    outcomes.append(None)
                elif answer is not None and answer.status != 429 and answer.status < 500:
                    outcomes.append(error_for(answer.status, _decode(answer.data), f"POST {path}"))
                else:
                    try:
                        self.create(kind, body, namespace, answer=False)
                        outcomes.append(None)
                    except ClusterError as error:
                        outcomes.append(error)
        return outcomes

    def replace(self, kind: Kind, body: Mapping[str, Any], subresource: str | None = None) -> KubeObject:
        view = Body(body)
        return self.exchange("PUT", kind.path(view.namespace, view.name, subresource), body=body)[1]

    def patch(
        self,
        kind: Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        content_type: str = MERGE_PATCH,
    ) -> KubeObject:
        return self.exchange("PATCH", kind.path(namespace, name, subresource), body=patch, content_type=content_type)[1]

    def delete(
        self,
        kind: Kind,
        name: str,
        namespace: str | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        answer: bool = True,
    ) -> KubeObject:
        body = {"kind": "DeleteOptions", "apiVersion": "v1", **(options or {})}
        return self.exchange("DELETE", kind.path(namespace, name), body=body, answer=answer)[1]

    def watch(
        self,
        kind: Kind,
        resource_version: str,
        *,
        timeout_seconds: int = 300,
        namespace: str | None = None,
        field_selector: str = "",
    ) -> WatchStream:
        """Open a watch from ``resource_version`` (its events end when the server ends the stream)."""
        query: list[tuple[str, str | int]] = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout_seconds),
        ]
        if field_selector:
            query.append(("fieldSelector", field_selector))
        timeout = (self.timeout[0], timeout_seconds + 30)
        response = self._client_send(
            "GET", kind.path(namespace), query=query, body=None, content_type=JSON, timeout=timeout
        )
        if response.status != 200:
            raise error_for(response.status, _decode(response.read()), f"watch {kind.plural}")
        return WatchStream(response.response, kind.plural)


class WatchStream:
    """The events of one watch ({"type", "object"}), read as they arrive. ``close()`` from another thread ends
    the iteration; a 410 (as an ERROR event) raises ExpiredError, other ERROR events their typed error."""

    def __init__(self, response: Any, what: str) -> None:
        self._response = response  # urllib3's HTTPResponse
        self._what = what

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a stream that is already gone is fine
            self._response.shutdown()
        with contextlib.suppress(Exception):
            self._response.release_conn()

    def __iter__(self) -> Iterator[KubeObject]:
        buffer = b""
        try:
            for chunk in self._response.stream(65536, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event: KubeObject = orjson.loads(line)
                    if event.get("type") == "ERROR":
                        status = event.get("object") or {}
                        raise error_for(int(status.get("code", 500)), status, f"watch {self._what}")
                    yield event
        except _TRANSPORT_ERRORS as error:
            raise TransientClusterError(f"watch {self._what} broke: {error}") from error
        finally:
            self.close()
