"""The pending clock ``pod_pending_too_long`` reads: wall time, less the unavailable-offering TTL after each
refusal of the pod's capacity (overlapping windows once), and nothing else."""

from types import SimpleNamespace

from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.world.invariants import Invariants
from autoscaler_dev.world.pending import EXCUSE_SECONDS, PendingClocks


def test_without_refusals_the_clock_is_wall_time_and_a_pod_that_runs_is_forgotten() -> None:
    clocks = PendingClocks()
    assert clocks.observe(0, ["a", "b"]) == {"a": 0, "b": 0}
    assert clocks.observe(100, ["a", "b"]) == {"a": 100, "b": 100}
    assert clocks.observe(200, ["b"]) == {"b": 200}
    assert clocks.observe(300, ["a", "b"]) == {"a": 0, "b": 300}  # pending again: a new wait


def test_a_refusal_stops_only_its_pods_clocks_for_the_ttl() -> None:
    clocks = PendingClocks()
    clocks.observe(0, ["a", "b"])
    clocks.refused(100, ["a"])
    assert clocks.observe(150, ["a", "b"]) == {"a": 100, "b": 150}  # a's window is still running
    waited = clocks.observe(100 + EXCUSE_SECONDS + 50, ["a", "b"])
    assert waited == {"a": 150, "b": 100 + EXCUSE_SECONDS + 50}


def test_overlapping_refusals_excuse_their_union_and_a_neglected_pod_is_still_reported_later() -> None:
    clocks = PendingClocks()
    clocks.observe(0, ["a"])
    clocks.refused(10, ["a"])
    clocks.refused(70, ["a"])  # 60 s into the first window: only the 60 s past its end is new
    now = 70 + EXCUSE_SECONDS + 1000
    assert clocks.observe(now, ["a"]) == {"a": now - (60 + EXCUSE_SECONDS)}


def test_a_refusal_before_the_first_check_starts_the_clock_and_excuses_the_window() -> None:
    clocks = PendingClocks()
    clocks.refused(30, ["new"])
    assert clocks.observe(30 + EXCUSE_SECONDS + 5, ["new"]) == {"new": 5}


def test_a_refusal_excuses_the_pods_of_the_nodeclaims_still_waiting_for_a_launch_only() -> None:
    def claim(name: str, pods: str, provider_id: str = "", deleting: bool = False) -> dict[str, object]:
        metadata: dict[str, object] = {"name": name, "annotations": {wk.ANNOTATION_NOMINATED_PODS: pods}}
        if deleting:
            metadata["deletionTimestamp"] = "2026-12-04T00:00:00Z"
        return {"metadata": metadata, "status": {"providerID": provider_id} if provider_id else {}}

    claims = [
        claim("waiting", "a,b"),
        claim("launched", "c", provider_id="aws:///us-west-2a/i-1"),
        claim("deleting", "d", deleting=True),
    ]
    sim = SimpleNamespace(kube=SimpleNamespace(list=lambda api, kind: claims), clock=SimpleNamespace(elapsed=0.0))
    cut: set[str] = set()
    invariants = refusing(sim, cut)
    invariants._pending.observe(0, "abcd")
    Invariants._capacity_refused(invariants)  # type: ignore[arg-type]
    waited = invariants._pending.observe(EXCUSE_SECONDS + 10, "abcd")
    assert waited == {"a": 10, "b": 10, "c": EXCUSE_SECONDS + 10, "d": EXCUSE_SECONDS + 10}
    assert cut == {"waiting"}  # and decision quality is told whose plans EC2 cut short


def refusing(sim: SimpleNamespace, cut: set[str]) -> SimpleNamespace:
    """The invariants' state that ``_capacity_refused`` reads and writes."""
    invariants = SimpleNamespace(sim=sim, _pending=PendingClocks(), decisions=SimpleNamespace(plan_cut=cut.update))
    invariants._replicas = lambda pods: Invariants._replicas(invariants, pods)  # type: ignore[arg-type]
    return invariants


def test_a_refusal_excuses_the_pending_replicas_of_the_pods_it_refused_and_no_other_workload() -> None:
    """Which replica a plan nominates is arbitrary: with a zonal spread, web's other pending replicas wait for the
    refused zone too. A pending pod of another workload does not."""

    def pod(uid: str, owner: str) -> dict[str, object]:
        owners = [{"kind": "ReplicaSet", "name": owner, "uid": owner, "controller": True}]
        return {"metadata": {"name": uid, "namespace": "default", "uid": uid, "ownerReferences": owners}, "spec": {}}

    objects = {
        "NodeClaim": [{"metadata": {"name": "waiting", "annotations": {wk.ANNOTATION_NOMINATED_PODS: "a"}}}],
        "Pod": [pod("a", "web"), pod("b", "web"), pod("c", "batch")],
    }
    sim = SimpleNamespace(
        kube=SimpleNamespace(list=lambda api, kind: objects[kind]), clock=SimpleNamespace(elapsed=0.0)
    )
    invariants = refusing(sim, set())
    invariants._pending.observe(0, "abc")
    Invariants._capacity_refused(invariants)  # type: ignore[arg-type]
    assert invariants._pending.observe(EXCUSE_SECONDS + 10, "abc") == {"a": 10, "b": 10, "c": EXCUSE_SECONDS + 10}
