"""Two NodePools whose nodes cannot host each other's pods: an arm64 spot pool with a taint (one bare pod on it,
which tolerates the taint) and the default amd64 on-demand pool. Consolidation used to take one node of each into
one multi-node command, replacing both with one arm64 spot node dearer than the arm64 node it replaced: the
default node's deletion (its pod fits elsewhere) paid for it. Each replacement is now priced against the
candidates it stands in for (its NodePool's, and other NodePools' whose pods it takes), so the default node is
deleted on its own and the arm64 node stays."""

from __future__ import annotations

from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.disruption.methods import Command, Methods
from autoscaler.controllers.disruption.rescheduling import Rescheduler
from autoscaler.controllers.orchestration.budgets import Budgets, counts
from tests.unit.controllers.provisioning_doubles import CATALOGUE, instance_type
from tests.unit.disruption.world import TYPES, FakeCloud, World, node_and_claim, pod, pool

M6G = instance_type("m6g.large", 2, 8, 0.077, arch="arm64")  # dearer than c6g.large, spot or not
TAINT = {"key": "dedicated", "value": "arm", "effect": "NoSchedule"}


def two_pools() -> World:
    default = pool(
        template_spec={
            "requirements": [
                {"key": wk.LABEL_ARCH, "operator": "In", "values": ["amd64"]},
                {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
            ]
        }
    )
    arm = pool(
        "arm-spot",
        template_spec={
            "requirements": [
                {"key": wk.LABEL_ARCH, "operator": "In", "values": ["arm64"]},
                {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]},
            ],
            "taints": [TAINT],
        },
    )
    TYPES[M6G.name] = M6G
    arm_claim, arm_node = node_and_claim("arm", arm, "c6g.large", capacity_type="spot", taints=[TAINT])
    arm_node["spec"]["taints"] = [TAINT]
    small_claim, small_node = node_and_claim("small", default, "m5.large")
    # Room for web-0, and not a candidate itself: multi-node consolidation's first prefix is the two pools' nodes.
    big_claim, big_node = node_and_claim(
        "big", default, "m5.xlarge", annotations={wk.ANNOTATION_DO_NOT_DISRUPT: "true"}
    )
    bare = pod("bare", "node-arm", cpu="500m", ownerReferences=[])
    bare["spec"].update(
        tolerations=[{"key": "dedicated", "operator": "Equal", "value": "arm", "effect": "NoSchedule"}],
        nodeSelector={wk.LABEL_ARCH: "arm64"},
    )
    objects: list[Any] = [default, arm, arm_claim, arm_node, small_claim, small_node, big_claim, big_node]
    objects += [bare, pod("web-0", "node-small", cpu="500m"), pod("web-1", "node-big", cpu="3")]
    return World.of(*objects, cloud=FakeCloud(types=(*CATALOGUE, M6G)))


def test_a_node_of_one_pool_does_not_pay_for_a_dearer_node_in_another() -> None:
    world = two_pools()
    decisions = world.controller().assess().decisions
    command = decisions.command
    assert isinstance(command, Command)
    assert [c.name for c in command.candidates] == ["small"], command.describe()
    assert command.decision == "delete"  # web-0 fits on node-big
    # The arm node stays: its own move (spot for a dearer spot) is refused, as the next test shows.


def test_the_multi_node_command_that_mixed_the_pools_is_refused_with_the_reason() -> None:
    world = two_pools()
    found = world.controller().assess()
    by_name = {c.name: c for c in found.candidates.candidates}
    pools = list(found.nodepools.values())
    rescheduler = Rescheduler(found.state, pools, found.instance_types, frozenset(), world.now)
    budgets = Budgets(pools, *counts(found.claims, found.state.nodes), world.now)
    why = Methods(rescheduler, budgets).consolidate([by_name["arm"], by_name["small"]], "multi")
    assert why == "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
