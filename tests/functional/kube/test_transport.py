"""The lean transport against a scripted HTTP server over a real socket: the framings an API server uses, a
keep-alive connection the server closed while idle, a server gone away, a truncated answer."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from autoscaler.kube.connect import plain_client
from autoscaler.kube.port import TransientClusterError
from autoscaler.kube.rest import KubeRest, RetryPolicy
from autoscaler.kube.transport import Transport

Answer = Callable[[socket.socket, bytes], bool]  # writes the answer; False closes the connection


class Scripted:
    """A server on 127.0.0.1 answering each request with the next answer of the script."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers, self.requests, self.connections = answers, [], 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            reader = conn.makefile("rb")
            while self.answers:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    if not (line := reader.readline()):
                        break
                    head += line
                if not head:
                    break
                lengths = [h for h in head.lower().split(b"\r\n") if h.startswith(b"content-length")]
                length = int(lengths[0].split(b":")[1]) if lengths else 0
                self.requests.append(head + reader.read(length))
                if not self.answers.pop(0)(conn, head):
                    break
            reader.close()  # the file holds the socket open too
            conn.close()


def fixed(raw: bytes, keep: bool = True) -> Answer:
    def answer(conn: socket.socket, _: bytes) -> bool:
        conn.sendall(raw)
        return keep

    return answer


@pytest.fixture
def rest() -> Iterator[Callable[[list[Answer]], tuple[KubeRest, Scripted]]]:
    def make(answers: list[Answer]) -> tuple[KubeRest, Scripted]:
        server = Scripted(answers)
        return KubeRest(plain_client(server.url), retry=RetryPolicy(attempts=2, base_delay=0.0)), server

    yield make


def test_chunked_content_length_and_close_delimited_answers_decode(rest) -> None:  # type: ignore[no-untyped-def]
    client, server = rest(
        [
            fixed(b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n3\r\n:1}\r\n0\r\n\r\n'),
            fixed(b'HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{"b":2}'),
            fixed(b'HTTP/1.0 200 OK\r\n\r\n{"c":3}', keep=False),
        ]
    )
    assert client.exchange("GET", "/x")[1] == {"a": 1}
    assert client.exchange("POST", "/y", body={"k": "v"})[1] == {"b": 2}
    assert client.exchange("GET", "/z", query=[("labelSelector", "a in (b,c)")])[1] == {"c": 3}
    assert server.connections == 1  # kept alive across the first three
    assert b'\r\n\r\n{"k":"v"}' in server.requests[1] and b"Content-Length: 9" in server.requests[1]
    assert server.requests[2].startswith(b"GET /z?labelSelector=a%20in%20%28b%2Cc%29 HTTP/1.1")


def test_a_keep_alive_closed_by_the_server_is_retried_once_on_a_fresh_connection() -> None:
    server = Scripted(
        [
            fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", keep=False),  # then closes while idle
            fixed(b'HTTP/1.1 201 Created\r\nContent-Length: 8\r\n\r\n{"ok":1}'),
        ]
    )
    transport = Transport(plain_client(server.url).configuration)
    transport.request("GET", "/a", None, "application/json", 5.0)
    # the kept connection is dead: the request fails on it before any answer and goes out on a fresh one
    answer = transport.request("POST", "/b", b"{}", "application/json", 5.0)
    assert (answer.status, answer.read()) == (201, b'{"ok":1}')
    assert len(server.requests) == 2 and server.connections == 2


def test_a_stale_pooled_connection_is_replaced_without_resending_to_a_live_one() -> None:
    served = Scripted([fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")])
    transport = Transport(plain_client(served.url).configuration)
    transport.request("GET", "/a", None, "application/json", 5.0)  # kept, then the server goes away
    served.listener.close()
    with pytest.raises(OSError):  # the stale one fails, the fresh connection is refused: an error, no loop
        transport.request("GET", "/b", None, "application/json", 2.0)


def test_a_truncated_answer_is_never_returned_but_retried_as_a_transport_failure(rest) -> None:  # type: ignore[no-untyped-def]
    client, server = rest(
        [
            fixed(b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"short"', keep=False),
            fixed(b"HTTP/1.1 503 Unavailable\r\nContent-Length: 2\r\nRetry-After: 0\r\n\r\n{}"),
        ]
    )
    with pytest.raises(TransientClusterError, match="503"):
        client.exchange("GET", "/x")
    assert len(server.requests) == 2  # the truncated 200 was retried (and the 503 after it exhausted the policy)


def dribbled(raw: bytes, piece: int) -> Answer:
    """The answer in small sends, so that the head, chunk sizes and body arrive split across reads."""

    def answer(conn: socket.socket, _: bytes) -> bool:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for start in range(0, len(raw), piece):
            conn.sendall(raw[start : start + piece])
            time.sleep(0.001)  # one send per segment: the reader sees each piece on its own
        return True

    return answer


def test_answers_split_across_reads_are_reassembled(rest) -> None:  # type: ignore[no-untyped-def]
    body = b'{"items":[' + b",".join(b'{"n":%d}' % n for n in range(20_000)) + b"]}"  # larger than one read
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:70_000], body[70_000:])) + b"0\r\n\r\n"
    client, server = rest(
        [
            dribbled(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{"a":1}', 3),
            fixed(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)),
            dribbled(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked, 50_000),
        ]
    )
    assert client.exchange("GET", "/a")[1] == {"a": 1}
    assert len(client.exchange("GET", "/b")[1]["items"]) == 20_000
    assert client.exchange("GET", "/c")[1]["items"][-1] == {"n": 19_999}
    assert server.connections == 1


def test_a_pipeline_reads_answers_in_order_and_leaves_the_unanswered_as_none() -> None:
    server = Scripted(
        [
            fixed(b'HTTP/1.1 201 Created\r\nContent-Length: 7\r\n\r\n{"n":1}'),
            fixed(b'HTTP/1.1 429 Too Many\r\nContent-Length: 7\r\n\r\n{"n":2}', keep=False),  # then closes
            fixed(b"never sent"),
        ]
    )
    transport = Transport(plain_client(server.url).configuration)
    requests = [("POST", f"/e{n}", b'{"e":%d}' % n, "application/json") for n in range(3)]
    first, second, third = transport.pipeline(requests, 5.0)
    assert first is not None and (first.status, first.read()) == (201, b'{"n":1}')
    assert second is not None and (second.status, second.read()) == (429, b'{"n":2}')
    assert third is None  # sent, never answered: the caller decides whether to send it again
    assert server.connections == 1 and server.requests[1].startswith(b"POST /e1 HTTP/1.1")
