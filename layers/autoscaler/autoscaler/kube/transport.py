"""A lean HTTP/1.1 transport to the API server for KubeRest's request/answer exchanges.

The official client costs about 0.35 ms of CPU per request before the server sees it (parameter
sanitising, urllib3's pool and URL parsing, http.client's header parser, headers and body in two
packets): four times what the interruption handler's own work per request is. This transport sends each
request as one write on a kept-alive connection and reads the answer with a minimal parser
(Content-Length, chunked, or read-to-close) over one receive buffer: the head is found and split in one go
(an answer usually arrives in one ``recv``), about 30 µs per request. It takes everything else from the
client's ``Configuration``: host, TLS (CA, client certificate, verification, server name), the bearer
token and its refresh hook (the EKS token provider), the user agent. Watches still go through the client
(they are long-lived streams, not a per-request cost); so does anything behind a proxy (``lean_for``).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

MAX_HEADER_LINE = 65536
MAX_HEAD = 1 << 20  # status line and headers together
RECEIVE_SIZE = 65536
Request = tuple[str, str, bytes | None, str]  # method, target, body, content type
MAX_IDLE = 32  # kept-alive connections; the interruption handler's workers use 16


class ProtocolError(ConnectionError):
    """The server's answer is not HTTP/1.x as we read it (the exchange retries it as a transport failure)."""


class Headers:
    """Response headers, looked up case-insensitively (the last value of a repeated header wins)."""

    def __init__(self, lowered: Mapping[str, str]) -> None:
        self._pairs = lowered  # names already lower-cased by the parser

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._pairs.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self._pairs[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._pairs


@dataclass
class Response:
    """What KubeRest reads of an answer (the same three things as the client's RESTResponse)."""

    status: int
    headers: Headers
    data: bytes

    def read(self) -> bytes:
        return self.data


class _Reader:
    """What was received on a connection and not read yet: an answer usually arrives in one ``recv``, so the head
    is found and split in one go instead of read line by line through a buffered file."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._pending = b""

    def _receive(self, size: int = RECEIVE_SIZE) -> bytes:
        chunk = self._sock.recv(size)
        self._pending += chunk
        return chunk

    def prime(self) -> bool:
        """Wait for the answer's first bytes; False when the server closed the connection before any."""
        return bool(self._pending) or bool(self._receive())

    def until(self, delimiter: bytes, limit: int) -> bytes:
        """The bytes before ``delimiter`` (which is consumed too)."""
        searched = 0
        while (end := self._pending.find(delimiter, searched)) < 0:
            if len(self._pending) > limit:
                raise ProtocolError(f"no {delimiter!r} within {limit} bytes")
            searched = max(0, len(self._pending) - len(delimiter) + 1)
            if not self._receive():
                raise ProtocolError("the connection closed inside the answer's framing")
        found, self._pending = self._pending[:end], self._pending[end + len(delimiter) :]
        return found

    def exactly(self, size: int) -> bytes:
        """``size`` bytes, or fewer if the connection closed first."""
        data, self._pending = self._pending[:size], self._pending[size:]
        parts, have = [data], len(data)
        while have < size and (chunk := self._sock.recv(max(RECEIVE_SIZE, size - have))):
            parts.append(chunk)
            have += len(chunk)
        data = b"".join(parts)
        if len(data) > size:  # the next answer's first bytes (a server never sends them unasked, but keep them)
            data, self._pending = data[:size], data[size:]
        return data

    def to_close(self) -> bytes:
        parts = [self._pending]
        while chunk := self._sock.recv(RECEIVE_SIZE):
            parts.append(chunk)
        self._pending = b""
        return b"".join(parts)


@dataclass
class _Connection:
    sock: socket.socket
    reader: _Reader = field(init=False)
    used: bool = False
    timeout: float | None = None  # the socket's, set only when it changes (each set is a system call)

    def __post_init__(self) -> None:
        self.reader = _Reader(self.sock)

    def set_timeout(self, timeout: float) -> None:
        if timeout != self.timeout:
            self.sock.settimeout(timeout)
            self.timeout = timeout

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def lean_for(configuration: Any) -> bool:
    """Whether the transport can stand in for the client: http(s) without a proxy."""
    scheme = urlsplit(str(configuration.host)).scheme
    return scheme in ("http", "https") and not getattr(configuration, "proxy", None)


def _tls_context(configuration: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file or None)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif configuration.assert_hostname is False:
        context.check_hostname = False
    return context


class Transport:
    def __init__(self, configuration: Any, user_agent: str = "serverless-karpenter") -> None:
        url = urlsplit(str(configuration.host).rstrip("/"))
        self._configuration = configuration
        self._https = url.scheme == "https"
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if self._https else 80)
        self._prefix = url.path  # an API server behind a path (rare, but the client allows it)
        self._server_name = getattr(configuration, "tls_server_name", None) or self._host
        self._tls = _tls_context(configuration) if self._https else None
        self._fixed_headers = f"Host: {url.netloc}\r\nUser-Agent: {user_agent}\r\nAccept: application/json\r\n"
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self.opened = 0  # connections opened, for tests and benchmarks

    # --- connections ------------------------------------------------------------------------------
    def _open(self, connect_timeout: float) -> _Connection:
        sock = socket.create_connection((self._host, self._port), timeout=connect_timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls is not None:
            sock = self._tls.wrap_socket(sock, server_hostname=self._server_name)
        self.opened += 1
        return _Connection(sock)

    def _take(self, connect_timeout: float) -> _Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._open(connect_timeout)

    def _give_back(self, connection: _Connection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE:
                connection.used = True
                self._idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    # --- one exchange -----------------------------------------------------------------------------
    def _head(self, method: str, target: str, body: bytes | None, content_type: str) -> bytes:
        head = f"{method} {self._prefix}{target} HTTP/1.1\r\n{self._fixed_headers}"
        authorization = self._configuration.auth_settings().get("BearerToken")  # runs the refresh hook
        if authorization and authorization.get("value"):
            head += f"Authorization: {authorization['value']}\r\n"
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        return (head + "\r\n").encode("latin-1")

    def request(
        self, method: str, target: str, body: bytes | None, content_type: str, timeout: float | tuple[float, float]
    ) -> Response:
        """Send ``method target`` (path and query) and read the whole answer."""
        answers, failure = self._round_trip(
            self._head(method, target, body, content_type) + (body or b""), [method], timeout
        )
        if failure is not None:
            raise failure
        return answers[0]

    def pipeline(self, requests: Sequence[Request], timeout: float | tuple[float, float]) -> list[Response | None]:
        """Send ``requests`` back to back on one connection (HTTP/1.1 pipelining: the server answers them in order)
        and read their answers: one write and a few reads for the lot instead of an exchange each. An answer not
        read (the connection broke or was closed first) is None: its request may or may not have been served, so
        this is for requests that may be repeated without harm. The caller keeps a pipeline short: the server
        stops reading while its answers are not read."""
        message = b"".join(
            self._head(method, target, body, kind) + (body or b"") for method, target, body, kind in requests
        )
        answers: list[Response | None] = []
        answers += self._round_trip(message, [method for method, *_ in requests], timeout)[0]
        return answers + [None] * (len(requests) - len(answers))

    def _round_trip(
        self, message: bytes, methods: Sequence[str], timeout: float | tuple[float, float]
    ) -> tuple[list[Response], OSError | None]:
        """Send ``message`` (one request, or several back to back) and read an answer per method, in order: the
        answers read and the failure that stopped the reading, if any. A reused connection that the server closed
        while idle fails before any answer: that one is retried on a fresh connection."""
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        while True:
            connection = self._take(connect)
            reused = connection.used
            try:
                connection.set_timeout(read)
                connection.sock.sendall(message)
                if not connection.reader.prime():
                    raise ConnectionResetError("the server closed the connection")
            except TimeoutError as error:  # the server may have the request: never send it twice from here
                connection.close()
                return [], error
            except OSError as error:
                connection.close()
                if reused:
                    continue  # stale keep-alive: closed by the server while idle, before our request
                return [], error
            answers: list[Response] = []
            keep = True
            try:
                for method in methods:
                    response, keep = _read_answer(connection.reader, method)
                    answers.append(response)
                    if not keep:
                        break
            except OSError as error:
                connection.close()
                return answers, error
            except BaseException:
                connection.close()
                raise
            if keep:
                self._give_back(connection)
            else:
                connection.close()
            if len(answers) < len(methods):
                return answers, ConnectionResetError("the server closed the connection before every answer")
            return answers, None


def _read_answer(reader: _Reader, method: str) -> tuple[Response, bool]:
    status_line, *lines = reader.until(b"\r\n\r\n", MAX_HEAD).decode("latin-1").split("\r\n")
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    try:
        status = int(parts[1])
    except ValueError as error:
        raise ProtocolError(f"bad status: {status_line[:80]!r}") from error
    headers: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.lower()] = value.strip()  # no space is allowed before the colon
    keep = parts[0] == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        data = b""
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        data = _read_chunked(reader)
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError as error:
            raise ProtocolError(f"bad Content-Length {headers['content-length']!r}") from error
        data = reader.exactly(length)
        if len(data) != length:
            raise ProtocolError(f"the answer ended after {len(data)} of {length} bytes")
    else:
        data, keep = reader.to_close(), False  # delimited by the close
    return Response(status, Headers(headers), data), keep


def _read_chunked(reader: _Reader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size_line = reader.until(b"\r\n", MAX_HEADER_LINE)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError as error:
            raise ProtocolError(f"bad chunk size {size_line[:40]!r}") from error
        if size == 0:
            while reader.until(b"\r\n", MAX_HEADER_LINE):
                pass  # trailers carry nothing we read
            return b"".join(chunks)
        chunk = reader.exactly(size)
        if len(chunk) != size or reader.exactly(2) != b"\r\n":
            raise ProtocolError("a chunk ended early")
        chunks.append(chunk)
