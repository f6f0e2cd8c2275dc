"""The interruption controller's fixtures: a cluster of three nodes in two NodePools, a moving clock, offerings."""

from __future__ import annotations

import pytest

from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.rebalance.recommendation import (
    ANNOTATION_REBALANCE_POLICY,
)
from tests.support.memory_cluster import MemoryCluster
from tests.unit.interruption.builders import make_node, make_nodeclaim, make_nodepool
from tests.unit.interruption.controller_support import T0, A, B, C, Clock


@pytest.fixture
def cluster() -> MemoryCluster:
    world = MemoryCluster(clock=lambda: T0)
    world.add(make_nodepool("default"), make_nodepool("eager", {ANNOTATION_REBALANCE_POLICY: "Replace"}))
    world.add(make_nodeclaim("a", A, node_name="node-a"), make_node("node-a", A))
    world.add(make_nodeclaim("b", B, zone="us-west-2b", node_name="node-b"), make_node("node-b", B, zone="us-west-2b"))
    world.add(make_nodeclaim("c", C, nodepool="eager", node_name="node-c"), make_node("node-c", C))
    return world


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def offerings(clock: Clock) -> InMemoryUnavailableOfferings:
    return InMemoryUnavailableOfferings(clock)
