"""The opt-in minimum saving per consolidation: a NodePool annotation, off by default."""

from __future__ import annotations

import pytest

from autoscaler.controllers.disruption.minimum_saving import MINIMUM_SAVING, UnreadableMinimum, minimum_of
from tests.unit.disruption.world import World, node_and_claim, pod, pool


def one_dear_node(**annotations: str) -> World:
    """An m5.2xlarge ($0.384/h) whose single pod fits an m5.xlarge ($0.192/h): a $0.192/h replacement."""
    nodepool = pool(disruption={"budgets": [{"nodes": "100%"}]})
    nodepool.metadata.annotations = annotations or None
    claim, node = node_and_claim("old", nodepool, "m5.2xlarge")
    return World.of(nodepool, claim, node, pod("a", "node-old", cpu="3"))


def test_without_the_annotation_consolidation_is_karpenters() -> None:
    command = one_dear_node().controller().assess().decisions.command
    assert command is not None and command.savings == pytest.approx(0.192)


@pytest.mark.parametrize("minimum", ["0.1", "50%"])
def test_a_saving_at_or_above_the_minimum_consolidates(minimum: str) -> None:
    command = one_dear_node(**{MINIMUM_SAVING: minimum}).controller().assess().decisions.command
    assert command is not None and command.decision == "replace"


@pytest.mark.parametrize(("minimum", "shown"), [("0.25", "$0.2500/h"), ("60%", "$0.2304/h")])
def test_a_saving_below_the_minimum_leaves_the_node_and_says_why(minimum: str, shown: str) -> None:
    decisions = one_dear_node(**{MINIMUM_SAVING: minimum}).controller().assess().decisions
    assert decisions.command is None
    assert decisions.blocked["node-old"] == (
        f"saving $0.1920/h is below NodePool default's minimum of {shown} ({MINIMUM_SAVING})"
    )


def test_an_unreadable_minimum_is_refused_by_the_parser_and_ignored_by_consolidation() -> None:
    nodepool = pool()
    nodepool.metadata.annotations = {MINIMUM_SAVING: "cheap"}
    with pytest.raises(UnreadableMinimum, match="'cheap' is not"):
        minimum_of(nodepool, 1.0)
    command = one_dear_node(**{MINIMUM_SAVING: "cheap"}).controller().assess().decisions.command
    assert command is not None
