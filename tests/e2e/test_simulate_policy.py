"""``autoscaler simulate --consolidation-policy``: one scenario under another policy, end to end. The consolidation
scenario's load drops: under WhenEmptyOrUnderutilized pods are evicted from underutilized nodes; under WhenEmpty
none is (empty nodes may still go), which shows the switch reaches the NodePools the functions read."""

from __future__ import annotations

import json

import pytest

from autoscaler.cli import build_parser
from tests.support.scenarios import SCENARIOS


def test_a_scenario_runs_under_the_policy_given_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = str(SCENARIOS / "consolidation.yaml")
    evicted = {}
    for policy in ("WhenEmptyOrUnderutilized", "WhenEmpty"):
        args = build_parser().parse_args(["simulate", scenario, "--consolidation-policy", policy, "-o", "json"])
        args.run(args)
        summary = json.loads(capsys.readouterr().out)
        assert summary["pods_running"] == summary["pods_total"] == 20
        evicted[policy] = summary["evictions_per_hour"].get("Underutilized", 0)
    assert evicted["WhenEmptyOrUnderutilized"] > 0 and evicted["WhenEmpty"] == 0


def test_an_unknown_policy_is_refused_by_the_parser() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["simulate", str(SCENARIOS / "consolidation.yaml"), "--consolidation-policy", "X"])
