"""Scenario files: validation errors name the file and the field; ``check`` compares summary values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autoscaler_dev.world.ec2_market import SCENARIO_CAPACITY, Pool
from autoscaler_dev.world.scenario import DEFAULT_INSTANCE_TYPES, Scenario, ScenarioError, check

MINIMAL = "name: tiny\nduration: 10m\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def test_loads_durations_actions_and_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        MINIMAL
        + "boot: 90s\nactions:\n  - {at: 2m, scale: {workload: web, replicas: 3}}\n  - {at: 30, publish-ami: }\n",
    )
    scenario = Scenario.load(path)
    assert (scenario.duration, scenario.boot, scenario.tick, scenario.seed) == (600.0, 90.0, 10.0, 0)
    assert [(a.at, a.kind, a.args) for a in scenario.actions] == [
        (120.0, "scale", {"workload": "web", "replicas": 3}),
        (30.0, "publish-ami", {}),
    ]
    assert scenario.instance_types == list(DEFAULT_INSTANCE_TYPES)


def test_instance_types_alias(tmp_path: Path) -> None:
    assert Scenario.load(write(tmp_path, MINIMAL + "instanceTypes: [m5.large]\n")).instance_types == ["m5.large"]


def test_capacity_keeps_the_scenario_defaults_for_what_it_leaves_out(tmp_path: Path) -> None:
    assert Scenario.load(write(tmp_path, MINIMAL)).capacity == SCENARIO_CAPACITY  # finite: pools run out
    text = (
        MINIMAL + "capacity:\n  pools: [{instanceType: 'r6i.*', zone: us-west-2a, capacityType: spot, instances: 0}]\n"
    )
    capacity = Scenario.load(write(tmp_path, text)).capacity
    assert capacity.spot_vcpus == SCENARIO_CAPACITY.spot_vcpus and capacity.variation == SCENARIO_CAPACITY.variation
    assert capacity.instances(Pool("r6i.4xlarge", "us-west-2a", "spot"), 16) == 0
    with pytest.raises(ScenarioError, match=r"(?s)scenario\.yaml.*capacity\.spot"):
        Scenario.load(write(tmp_path, MINIMAL + "capacity: {spot: 3}\n"))


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: tiny\n", "duration"),
        (MINIMAL + "colour: blue\n", "colour"),
        (MINIMAL + "actions: [{at: 1m, explode: {}}]\n", "explode"),
        (MINIMAL + "actions: [{at: 1m, scale: {}, patch: {}}]\n", "exactly one"),
        (MINIMAL + "actions: [{at: 1m, scale: 3}]\n", "mapping"),
        ("name: tiny\nduration: soon\n", "duration"),
    ],
)
def test_errors_name_the_file_and_field(tmp_path: Path, text: str, field: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as raised:
        Scenario.load(path)
    assert str(path) in str(raised.value)
    assert field in str(raised.value)


def test_not_a_mapping_or_not_yaml(tmp_path: Path) -> None:
    for text in ("- just\n- a list\n", "name: [unclosed\n"):
        path = write(tmp_path, text)
        with pytest.raises(ScenarioError, match=re.escape(str(path))):
            Scenario.load(path)
    with pytest.raises(ScenarioError, match=r"missing\.yaml"):
        Scenario.load(tmp_path / "missing.yaml")


SUMMARY = {
    "pods_total": 30,
    "pods_running": 30,
    "nodes": 4,
    "nodes_peak": 6,
    "name": "spread",
    "skew": None,
    "nodes_by_nodepool": {"static": 2, "default": 2},
    "nodes_by_type": {"m5.large/spot": 3},
}


@pytest.mark.parametrize(
    ("key", "expected", "met"),
    [
        ("pods_running", "pods_total", True),  # another key
        ("nodes", "nodes_peak", False),
        ("nodes", 4, True),  # a number: equal
        ("nodes", 5, False),
        ("name", "spread", True),  # text that is no key: equal
        ("nodes", "< nodes_peak", True),  # "<op> <key>"
        ("nodes", ">= 4", True),  # "<op> <number>"
        ("nodes", "> 4", False),
        ("nodes", "<= 3.5", False),
        ("nodes", "== 4", True),
        ("nodes", "  >=   2 ", True),  # spaces allowed
        ("skew", "<= 1", False),  # None is not comparable: not met
        ("absent", ">= 0", False),  # a key the summary lacks: not met
        ("absent", None, True),  # ... unless None is what is expected
        ("nodes_by_nodepool.static", 2, True),  # one entry of a mapping
        ("nodes_by_nodepool.static", "< nodes", True),
        ("nodes_by_nodepool.static", 3, False),
        ("nodes_by_nodepool.gone", 0, True),  # an entry the mapping lacks counts 0
        ("nodes_by_type.m5.large/spot", ">= 3", True),  # the entry's name may hold dots
        ("nodes.static", 0, False),  # not a mapping: not met
    ],
)
def test_check(key: str, expected: object, met: bool) -> None:
    assert check(expected, key, SUMMARY) is met


def test_the_soak_loads_with_its_nodepools_actions_and_expectations() -> None:
    """bench/scenarios/soak.yaml runs only in bench/soak.py (an hour of wall time): loading it here keeps it valid."""
    soak = Scenario.load(Path(__file__).parents[3] / "bench" / "scenarios" / "soak.yaml")
    nodepools = [m["metadata"]["name"] for m in soak.manifests if m["kind"] == "NodePool"]
    assert soak.duration == 24 * 3600 and nodepools == ["on-demand", "spot", "batch"]
    kinds = [a.kind for a in soak.actions]
    assert kinds.count("interrupt-spot") == 12 and "publish-ami" in kinds and "patch" in kinds
    assert {"interrupted", "drifted_replaced", "invariant_violations"} <= set(soak.expect)
