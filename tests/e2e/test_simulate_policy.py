"""``autoscaler simulate --consolidation-policy``: one scenario under another policy, end to end. The consolidation
scenario expects underutilized nodes consolidated; under WhenEmpty that expectation must fail and nothing is
consolidated, which shows the switch reaches the NodePools the functions read."""

from __future__ import annotations

import json

import pytest

from autoscaler.cli import build_parser
from tests.support.scenarios import SCENARIOS


def test_a_scenario_runs_under_the_policy_given_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = str(SCENARIOS / "consolidation.yaml")
    args = build_parser().parse_args(["simulate", scenario, "--consolidation-policy", "WhenEmpty", "-o", "json"])
    assert args.run(args) == 1  # its "consolidated: >= 1" is not met
    summary = json.loads(capsys.readouterr().out)
    assert summary["consolidated"] == 0
    assert summary["pods_running"] == summary["pods_total"] == 20


def test_an_unknown_policy_is_refused_by_the_parser() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["simulate", str(SCENARIOS / "consolidation.yaml"), "--consolidation-policy", "X"])
