"""No mutating action on a wildcard resource without a tag condition, in any synthesized policy, and proof that
the check fails on the mistake it guards against."""

from __future__ import annotations

from tests.infra.conftest import Synthesized
from tests.infra.policies import by_sid, mutating_on_wildcards_without_tags


def test_no_mutating_action_on_a_wildcard_without_a_tag_condition(synth: Synthesized) -> None:
    assert mutating_on_wildcards_without_tags(synth) == []


def test_the_wildcard_check_catches_an_untagged_terminate(synth: Synthesized) -> None:
    """The check above is only worth something if it fails on the mistake it guards against."""
    statement = by_sid(synth, "termination")["TerminateOwnedInstances"]
    condition = statement.pop("Condition")
    try:
        assert mutating_on_wildcards_without_tags(synth) == [
            "TerminateOwnedInstances: ['ec2:TerminateInstances'] on "
            "['arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*']"
        ]
    finally:
        statement["Condition"] = condition
