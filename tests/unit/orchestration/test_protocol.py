"""The replacement protocol, for every policy: replacements first, then the old nodes; adopt what a pass that
died created; give up on a failed or late replacement; converge from a crash between any two writes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from autoscaler.controllers import concurrency
from autoscaler.controllers.orchestration import DISRUPTION_POLICIES, REBALANCE_POLICY, ReasonPolicy
from autoscaler.controllers.orchestration.policy import GiveUp
from autoscaler.controllers.orchestration.record import REPLACES, CommandState, new_record, replaces
from autoscaler.kube.port import ConflictError, TransientClusterError
from tests.unit.disruption.world import NOW
from tests.unit.orchestration.world import ScriptedCluster, World

UNDERUTILIZED = next(p for p in DISRUPTION_POLICIES if p.reason == "Underutilized")


@pytest.fixture(params=[UNDERUTILIZED, REBALANCE_POLICY], ids=lambda p: p.reason)
def policy(request: pytest.FixtureRequest) -> ReasonPolicy:
    return request.param  # type: ignore[no-any-return]


def _given_up(world: World, name: str) -> bool:
    """As the policy gives up: the record gone (released) or kept Failed."""
    record = world.record(name)
    if world.policy.give_up is GiveUp.KEEP_FAILED:
        return record is not None and record.state is CommandState.FAILED
    return record is None and "DisruptionReason" not in _conditions(world, name)


def _conditions(world: World, name: str) -> set[str]:
    status = world.claim(name).status
    return {c.type for c in (status.conditions or []) if c.status == "True"} if status else set()


# --- start and advance ---------------------------------------------------------------------------------------


def test_start_records_each_candidate_and_creates_its_replacements_annotated_with_what_they_replace(
    policy: ReasonPolicy,
) -> None:
    world = World.of(policy, candidates=2)
    outcome = world.start()
    (replacement,) = outcome.created
    assert replaces(replacement) == ("old-0", "old-1")
    assert outcome.started == ["old-0", "old-1"]
    assert outcome.recorded == {"old-0": [replacement.name], "old-1": [replacement.name]}
    for name in world.candidates:
        record = world.record(name)
        assert record is not None and record.reason == policy.reason and record.started == NOW
        assert (record.expected, record.created, record.state) == (1, (replacement.name,), CommandState.REPLACING)
        assert world.cluster.events_for("NodeClaim", name)[0] == "DisruptionLaunching"
        assert not world.claim(name).metadata.deletion_timestamp


def test_candidates_are_deleted_only_once_every_replacement_is_initialized(policy: ReasonPolicy) -> None:
    world = World.of(policy)
    (replacement,) = world.start().created
    waiting = world.advance()
    assert waiting.waiting == {"old-0": f"replacement {replacement.name} is not initialized yet"}
    assert not waiting.deleted and not world.claim("old-0").metadata.deletion_timestamp
    world.initialize(replacement.name)
    done = world.advance()
    assert done.deleted == {"old-0": policy.reason}
    assert world.claim("old-0").metadata.deletion_timestamp  # the termination function drains it
    assert world.cluster.events_for("NodeClaim", "old-0")[-1] == "DisruptionTerminating"
    assert world.advance().deleted == {}  # once


def test_a_command_that_creates_nothing_deletes_its_candidates_without_waiting(policy: ReasonPolicy) -> None:
    world = World.of(policy)
    outcome = world.start(world.command(replacements=[]))
    assert outcome.created == []
    record = world.record("old-0")
    assert record is not None and record.expected == 0 and record.state is CommandState.REPLACING
    if policy.marks_at_start:  # the budget was taken when deciding: at once
        assert outcome.deleted == {"old-0": policy.reason}
    else:  # the budgets and do-not-disrupt are checked by the next step
        assert outcome.deleted == {} and world.advance().deleted == {"old-0": policy.reason}
    assert world.cluster.events_for("NodeClaim", "old-0") == ["DisruptionTerminating"]


def test_each_candidate_waits_only_for_the_replacements_made_for_it(policy: ReasonPolicy) -> None:
    world = World.of(policy, candidates=2)
    outcome = world.start(world.command(replacements=[("old-0",), ("old-1",)]))
    first, _ = outcome.created
    world.initialize(first.name)
    advanced = world.advance()
    assert advanced.deleted == {"old-0": policy.reason} and list(advanced.waiting) == ["old-1"]


# --- giving up -----------------------------------------------------------------------------------------------


def test_a_deleted_replacement_gives_the_command_up(policy: ReasonPolicy) -> None:
    world = World.of(policy)
    (replacement,) = world.start().created
    world.cluster.remove("NodeClaim", replacement.name)  # its launch failed: liveness deleted it
    outcome = world.advance()
    assert outcome.abandoned == {"old-0": f"replacement {replacement.name} failed to launch or was deleted"}
    assert _given_up(world, "old-0") and not world.claim("old-0").metadata.deletion_timestamp
    events = [e for e in world.cluster.events if e.regarding.name == "old-0"]
    assert (events[-1].reason, events[-1].type) == (policy.give_up_event, "Warning")
    assert world.advance().abandoned == {}  # once


def test_replacements_not_initialized_in_time_give_the_command_up_and_are_released(policy: ReasonPolicy) -> None:
    world = World.of(policy)
    (replacement,) = world.start().created
    world.now = NOW + policy.timeout
    assert list(world.advance().waiting) == ["old-0"]  # not yet: the timeout has only just run out
    world.now = NOW + policy.timeout + timedelta(seconds=1)
    outcome = world.advance()
    assert "were not initialized within" in outcome.abandoned["old-0"] and _given_up(world, "old-0")
    assert REPLACES not in (world.claim(replacement.name).metadata.annotations or {})  # consolidation may take it


def test_a_replacement_that_could_not_be_created_gives_up_only_the_candidates_it_was_for(
    policy: ReasonPolicy,
) -> None:
    world = World.of(policy, candidates=2)
    world.cluster.fail("create_nodeclaim", TransientClusterError("the API server is overloaded"))
    outcome = world.start(world.command(replacements=[("old-0",), ("old-1",)]))
    assert "creating a replacement failed" in outcome.abandoned["old-0"] and _given_up(world, "old-0")
    (made,) = outcome.created
    assert outcome.recorded == {"old-1": [made.name]} and replaces(made) == ("old-1",)


def test_a_candidate_that_cannot_be_marked_ends_the_command_before_anything_is_created(policy: ReasonPolicy) -> None:
    world = World.of(policy, candidates=2)
    world.cluster.fail("patch_metadata", ConflictError("changed under us"))
    outcome = world.start()
    assert outcome.created == [] and outcome.failed["old-0"].startswith("marking")
    assert world.record("old-1") is None  # never touched


# --- a pass that died ----------------------------------------------------------------------------------------


def test_replacements_a_pass_that_died_created_are_adopted_not_launched_again(policy: ReasonPolicy) -> None:
    world = World.of(policy)
    (replacement,) = world.start().created
    launching = new_record(policy.reason, 1, NOW, CommandState.LAUNCHING)
    world.set_record("old-0", launching)  # as the pass left it when it died before recording the name
    outcome = world.advance()
    assert outcome.adopted == [replacement.name] and outcome.recorded == {"old-0": [replacement.name]}
    record = world.record("old-0")
    assert record is not None and record.created == (replacement.name,) and record.state is CommandState.REPLACING
    assert len(world.replacements()) == 1


def test_a_record_that_could_not_be_written_is_repaired_by_adoption(policy: ReasonPolicy) -> None:
    clean = World.of(policy, cluster=ScriptedCluster)
    clean.start()
    last_record_write = max(i for i, w in enumerate(clean.cluster.writes) if w == "patch NodeClaim/old-0")
    world = World.of(policy, cluster=ScriptedCluster)
    world.cluster.script = {last_record_write: ConflictError("changed under us")}  # type: ignore[attr-defined]
    outcome = world.start()
    (replacement,) = outcome.created
    assert "recording its replacements" in outcome.failed["old-0"] and outcome.recorded == {}
    again = world.advance()
    assert again.adopted == [replacement.name] and again.recorded == {"old-0": [replacement.name]}
    record = world.record("old-0")
    assert record is not None and record.state is CommandState.REPLACING and len(world.replacements()) == 1


def test_a_command_whose_replacements_were_never_created_is_given_up(policy: ReasonPolicy) -> None:
    world = World.of(policy)
    world.set_record("old-0", new_record(policy.reason, 1, NOW, CommandState.LAUNCHING))
    outcome = world.advance()
    assert outcome.abandoned == {"old-0": "its replacements were not all created"} and _given_up(world, "old-0")


class Died(BaseException):
    """The invocation ended (a timeout, the sandbox frozen): nothing after it runs, nothing catches it."""


@pytest.fixture
def one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(concurrency, "WORKERS", 1)  # the writes in a fixed order, so each crash point is one
    yield


def _succeeds(world: World) -> None:
    """start, then passes that initialize whatever replacements exist: the candidates are deleted."""
    world.start()
    for _ in range(4):
        world.initialize_all()
        world.advance()


def _fails(world: World) -> None:
    """start, then the replacement's launch fails: the command is given up."""
    world.start()
    for replacement in world.replacements():
        world.cluster.remove("NodeClaim", replacement.name)
    for _ in range(3):
        world.advance()


def _converged(world: World, name: str) -> bool:
    """Deleted; untouched or released (no record, no mark, no disrupted taint); or, where the policy keeps
    failures, given up for good. Nothing half way."""
    if world.claim(name).metadata.deletion_timestamp:
        return True
    record = world.record(name)
    if record is not None:
        return record.state is CommandState.FAILED and world.policy.give_up is GiveUp.KEEP_FAILED
    tainted = "karpenter.sh/disrupted" in {t["key"] for t in world.taints(name)}
    return "DisruptionReason" not in _conditions(world, name) and not tainted


def _times_out(world: World) -> None:
    """start, then the replacement never initializes: the command is given up and the replacement released."""
    world.start()
    world.now = NOW + world.policy.timeout + timedelta(minutes=1)
    for _ in range(3):
        world.advance()


@pytest.mark.parametrize("story", [_succeeds, _fails, _times_out], ids=["replaced", "launch-failed", "timed-out"])
def test_a_crash_between_any_two_writes_converges_without_a_second_launch(
    policy: ReasonPolicy, story: Callable[[World], None], one_at_a_time: None
) -> None:
    clean = World.of(policy, candidates=2, cluster=ScriptedCluster)
    story(clean)
    writes = clean.cluster.made  # type: ignore[attr-defined]
    assert writes >= 6 and all(_converged(clean, n) for n in clean.candidates) and clean.held() == []
    for dies_at in range(writes):
        world = World.of(policy, candidates=2, cluster=ScriptedCluster)
        world.cluster.script = {dies_at: Died()}  # type: ignore[attr-defined]
        with pytest.raises(Died):
            story(world)
        for _ in range(3):  # the passes after: the same code, from what the crash left
            if story is _times_out:
                world.now = NOW + world.policy.timeout + timedelta(minutes=1)
            else:
                world.initialize_all()
            world.advance()
        where = f"died before write {dies_at} ({clean.cluster.writes[dies_at]})"
        assert len(world.replacements()) <= 1, where
        assert all(_converged(world, name) for name in world.candidates), where
        assert world.held() == [], where  # no replacement kept from consolidation by a command that is no more
