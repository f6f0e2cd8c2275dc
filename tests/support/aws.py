"""A moto server over HTTP on 127.0.0.1 and a free port, and boto3 clients pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

REGION = "us-west-2"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


class MotoEndpoint:
    def __init__(self, url: str) -> None:
        self.url = url

    def session(self) -> boto3.session.Session:
        return boto3.session.Session(region_name=REGION, **CREDENTIALS)

    def client(self, service: str) -> Any:
        return self.session().client(service, endpoint_url=self.url)


@pytest.fixture(scope="session")
def moto() -> Iterator[MotoEndpoint]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield MotoEndpoint(f"http://{host}:{port}")
    finally:
        server.stop()
