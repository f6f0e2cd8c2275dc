"""Headless Chromium driven over the DevTools protocol, for tests that look at a page as a person would: what it
renders (the DOM after scripts ran, a screenshot) and what it logs (console errors, uncaught exceptions).

``chromium()`` is None where no Chromium is installed (Debian's package ``chromium``; ``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import tempfile
import time
import urllib.request
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

BINARIES = ("chromium", "chromium-browser", "google-chrome")


def chromium() -> str | None:
    return next((path for name in BINARIES if (path := shutil.which(name))), None)


@dataclass
class Page:
    """One tab: send DevTools commands, read what the page logged."""

    socket: websocket.WebSocket
    errors: list[str] = field(default_factory=list)  # console errors and uncaught exceptions, as text
    _id: int = 0

    def command(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self._id += 1
        wanted = self._id
        self.socket.send(json.dumps({"id": wanted, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self._receive(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
        raise TimeoutError(f"no answer to {method} in {timeout}s")

    def wait_for(self, event: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self._receive(deadline)
            if message.get("method") == event:
                params: dict[str, Any] = message.get("params", {})
                return params
        raise TimeoutError(f"no {event} in {timeout}s")

    def _receive(self, deadline: float) -> dict[str, Any]:
        self.socket.settimeout(max(0.1, deadline - time.monotonic()))
        message: dict[str, Any] = json.loads(self.socket.recv())
        self._note(message)
        return message

    def _note(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(str(details.get("exception", {}).get("description") or details.get("text")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append(str(params["entry"].get("text")))

    def evaluate(self, expression: str) -> Any:
        answer = self.command("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def screenshot(self, clip: dict[str, float]) -> bytes:
        import base64

        data = self.command(
            "Page.captureScreenshot", format="png", clip={**clip, "scale": 1}, captureBeyondViewport=True
        )
        return base64.b64decode(data["data"])


@contextmanager
def open_page(url: str, binary: str, width: int = 1400, height: int = 1000) -> Iterator[Page]:
    """``url`` loaded in a fresh headless Chromium (its own profile; no network needed); the page is handed over
    once its load event fired and every script ran."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        process = subprocess.Popen(
            [
                binary,
                "--headless=new",
                "--no-sandbox",  # root in CI
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            port = _devtools_port(process)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
                targets = json.load(answer)
            target = next(t for t in targets if t.get("type") == "page")
            socket = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
            try:
                page = Page(socket)
                for domain in ("Page", "Runtime", "Log"):
                    page.command(f"{domain}.enable")
                page.command("Page.navigate", url=url)
                page.wait_for("Page.loadEventFired", timeout=60)
                yield page
            finally:
                socket.close()
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def _devtools_port(process: subprocess.Popen[str]) -> int:
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    seen = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line and process.poll() is not None:
            break
        seen.append(line)
        found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if found:
            return int(found.group(1))
    raise RuntimeError("Chromium did not start its DevTools endpoint:\n" + "".join(seen[-20:]))


def png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """(width, height, RGB(A) pixels) of an 8-bit, non-interlaced PNG, as Chromium writes its screenshots."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, chunks, header = 8, [], b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and interlace == 0 and color in (2, 6), (depth, color, interlace)
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(line)
        previous = line
    pixels = [tuple(row[x : x + channels]) for row in rows for x in range(0, stride, channels)]
    return width, height, pixels


def file_url(path: Path) -> str:
    return path.resolve().as_uri()
