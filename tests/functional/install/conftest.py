"""The install tests' own fixture; moto and the emulator come from tests/functional/conftest.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.aws import CREDENTIALS, REGION


@pytest.fixture
def aws_env(moto: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The command's own boto3 session, pointed at moto as a user's environment would point it at AWS."""
    for key, value in {
        "AWS_ENDPOINT_URL": moto.url,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"],
    }.items():
        monkeypatch.setenv(key, value)
    return moto
