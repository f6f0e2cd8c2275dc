"""The EKS bearer token must never reach a log: it is a presigned STS URL, and anyone holding it (or its
X-Amz-Signature with the rest of its query) acts as the function on the cluster for 15 minutes.

Every logger runs at DEBUG (botocore, urllib3, the kubernetes client, the core's, Powertools' JSON), the token
provider signs, and the adapter sends real requests (200, a retried 500, a 403) to a stub API server that checks
it got the token, so an empty log scan means nothing leaked, not that nothing was sent.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import boto3
import pytest

from autoscaler.kube import eks_auth
from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.connect import eks_client
from autoscaler.kube.eks_auth import ClusterEndpoint, decode_token
from autoscaler.kube.port import ForbiddenError
from autoscaler.kube.rest import KubeRest, RetryPolicy
from autoscaler.powertools import powertools

CLUSTER = "demo"
REGION = "us-west-2"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN"


class _StubApiServer(BaseHTTPRequestHandler):
    """Answers like an API server, and remembers the Authorization headers it was sent."""

    seen: list[str] = []
    failed_once = False

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization", ""))
        if self.path.startswith("/api/v1/nodes") and not type(self).failed_once:
            type(self).failed_once = True
            self._answer(500, {"kind": "Status", "message": "etcdserver: leader changed"})
        elif self.path.startswith("/api/v1/nodes"):
            self._answer(200, {"kind": "NodeList", "items": [], "metadata": {"resourceVersion": "7"}})
        else:
            self._answer(403, {"kind": "Status", "reason": "Forbidden", "message": "secrets is forbidden"})

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:  # the stub's own access log is not the product's
        pass


@pytest.fixture
def api_server() -> Iterator[str]:
    _StubApiServer.seen, _StubApiServer.failed_once = [], False
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubApiServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def every_log_record(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Everything]:
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "DEBUG")
    handler, root = _Everything(), logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    names = ("botocore", "urllib3", "kubernetes", "autoscaler")
    saved = {name: (lg.level, lg.handlers[:], lg.propagate) for name in names for lg in [logging.getLogger(name)]}
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield handler
    finally:  # powertools() re-routes the core's loggers to its (now closed) stdout: put them back
        root.removeHandler(handler)
        root.setLevel(previous)
        for name, (level, handlers, propagate) in saved.items():
            logger = logging.getLogger(name)
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate = propagate


def _secrets(token: str) -> list[str]:
    url = decode_token(token)
    query = parse_qs(urlparse(url).query)
    # the token, its payload, the URL, the signature, and the session token the URL carries
    return [token, token.removeprefix("k8s-aws-v1."), url, query["X-Amz-Signature"][0], SESSION_TOKEN, SECRET_KEY]


def _logged_text(record: logging.LogRecord, formatter: logging.Formatter | None) -> str:
    text = record.getMessage() + repr(vars(record))
    return text + formatter.format(record) if formatter else text


def test_the_eks_token_never_reaches_a_log(
    api_server: str, every_log_record: _Everything, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = powertools("security-logs")  # the JSON logger, with the core's loggers routed through it
    formatter = tools.logger.registered_formatter
    logging.getLogger("autoscaler").addHandler(every_log_record)  # it no longer propagates to the root
    session = boto3.session.Session(
        region_name=REGION,
        aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
        aws_secret_access_key=SECRET_KEY,
        aws_session_token=SESSION_TOKEN,
    )
    monkeypatch.setitem(eks_auth._ENDPOINTS, (CLUSTER, REGION), ClusterEndpoint(api_server, ""))  # no DescribeCluster
    api_client = eks_client(CLUSTER, session=session, endpoint=api_server)  # the production wiring
    cluster = KubernetesCluster(KubeRest(api_client, retry=RetryPolicy(attempts=3, base_delay=0.0, max_delay=0.0)))

    tools.logger.debug("listing nodes")
    assert cluster.nodes() == []  # after one retried 500
    with pytest.raises(ForbiddenError) as forbidden:
        cluster.list_raw("StorageClass")
    tools.logger.warning("request failed", extra={"error": str(forbidden.value)})

    token = _StubApiServer.seen[0].removeprefix("Bearer ")
    assert token.startswith("k8s-aws-v1.") and set(_StubApiServer.seen) == {f"Bearer {token}"}
    assert "X-Amz-Signature=" in decode_token(token) and SESSION_TOKEN in decode_token(token)
    assert any(r.name.startswith("botocore") for r in every_log_record.records)  # DEBUG was really on
    assert any(r.name.startswith("urllib3") for r in every_log_record.records)

    leaks = [
        (record.name, record.getMessage()[:120])
        for record in every_log_record.records
        for secret in _secrets(token)
        if secret in _logged_text(record, formatter)
    ]
    assert leaks == []
    printed = capsys.readouterr()
    assert "listing nodes" in printed.out  # Powertools wrote its JSON lines here
    assert not [s for s in _secrets(token) if s in printed.out + printed.err]


def test_a_token_in_an_exception_message_would_be_caught_by_this_scan(every_log_record: _Everything) -> None:
    """The scan looks at formatted messages and args alike: a leak of the base64 payload alone is found."""
    payload = base64.urlsafe_b64encode(b"https://sts.us-west-2.amazonaws.com/?X-Amz-Signature=abc").decode()
    logging.getLogger("kubernetes.client.rest").debug("sending with %s", f"Bearer k8s-aws-v1.{payload}")
    [record] = [r for r in every_log_record.records if r.name == "kubernetes.client.rest"]
    assert payload in _logged_text(record, None)


def test_without_the_redaction_botocore_would_log_the_signature(
    every_log_record: _Everything, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why eks_auth filters botocore.auth: take the filter away and the signature is in the DEBUG log."""
    monkeypatch.setattr(logging.getLogger("botocore.auth"), "filters", [])
    session = boto3.session.Session(
        region_name=REGION, aws_access_key_id="AKIAIOSFODNN7EXAMPLE", aws_secret_access_key=SECRET_KEY
    )
    token = eks_auth.EksTokenProvider(CLUSTER, session.client("sts")).token()
    signature = parse_qs(urlparse(decode_token(token)).query)["X-Amz-Signature"][0]
    assert any(signature in record.getMessage() for record in every_log_record.records)
