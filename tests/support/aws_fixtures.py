"""pytest fixtures for the moto world; import them in a conftest: ``from tests.support.aws_fixtures import *``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from autoscaler_dev.world.aws_world import AWSWorld

__all__ = ["aws_world"]


@pytest.fixture(scope="session")
def aws_world() -> Iterator[AWSWorld]:
    world = AWSWorld.start()
    yield world
    world.stop()
