"""The report's sections: the grouped summary (keys it does not know included), the decision log's sentences, the
per-node table and the tour's index; and what feeds them (the decision log read from the functions' structured
logs, each NodeClaim's steps read from the objects, the pods' pending-time percentiles)."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta

from autoscaler_dev.world.decision_log import DecisionLog
from autoscaler_dev.world.lifecycle import NodeLifecycles, apply_terminations
from autoscaler_dev.world.observer import pending_percentiles
from autoscaler_dev.world.report import tables
from autoscaler_dev.world.report.decisions import DISRUPTION, INTERRUPTION, PROVISIONING, rows
from autoscaler_dev.world.report.page import tour_index
from autoscaler_dev.world.report.summary import DISRUPTION as DISRUPTION_GROUP
from autoscaler_dev.world.report.summary import NODES, PODS, RUN, SAFETY, entry, grouped_summary, value_text
from autoscaler_dev.world.timeline import Decision, NodeHistory, Timeline

START = datetime(2026, 1, 1, tzinfo=UTC)


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_keys_other_branches_add_land_in_a_group_with_a_readable_label() -> None:
    assert entry("iam_denied") == (SAFETY, "IAM denied", "")
    assert entry("rbac_denied").group == entry("ec2_throttled").group == entry("kube_throttled").group == SAFETY
    assert entry("kube_throttled").label == "Kubernetes throttled"
    assert entry("nodes_by_zone") == (NODES, "Nodes by zone", "")
    assert entry("churn_replacements").group == entry("savings_realized_per_hour").group == DISRUPTION_GROUP
    assert entry("savings_realized_per_hour").unit == "$/h"
    assert entry("launches_per_hour").unit == entry("evictions_per_hour").unit == ""  # rates of counts, not prices
    assert entry("nomination_wait_p90_s").unit == "s"
    assert entry("something_new").group == RUN
    groups = grouped_summary({"pods_total": 3, "iam_denied": 2, "invariants": {"new_invariant": 0}, "odd": None})
    assert list(groups) == [PODS, SAFETY, RUN]
    assert [r.text for r in groups[SAFETY]] == ["2", "new_invariant=0"]
    assert groups[RUN][0].text == "-"


def test_values_carry_their_units() -> None:
    assert value_text(65, "s") == "1m 05s"
    assert value_text(3725.0, "s") == "1h 02m 05s"
    assert value_text(float("inf"), "s") == "never"
    assert value_text(1.5, "s") == "1.5 s"
    assert value_text(0.0421, "$/h") == "$0.0421/h"
    assert value_text(0.5, "%") == "50.0%"
    assert value_text({"a": 1, "b": 2}) == "a=1, b=2"


def _decisions() -> list[Decision]:
    options = [["m5.large", 0.096], ["m6i.large", 0.096], ["r5.large", 0.126], ["m5.xlarge", 0.192], ["c5.4xl", 0.68]]
    return [
        Decision(30, "provisioner", "nodepools", "", {"offered": {"default": 36}, "skipped": {"gpu": "is not ready"}}),
        Decision(
            30,
            "provisioner",
            "provisioned",
            "",
            {
                "nodeclaim": "default-a",
                "nodepool": "default",
                "pods": 5,
                "pod_names": ["ns/web-1", "ns/web-2", "ns/web-3", "ns/web-4", "ns/web-5"],
                "instance_types": options,
                "zones": ["us-west-2a"],
                "capacity_types": ["spot"],
                "requests": {"cpu": "1", "memory": "2Gi"},
            },
        ),
        Decision(
            31,
            "provisioner",
            "launched",
            "",
            {"nodeclaim": "default-a", "instance_type": "m6i.large", "zone": "us-west-2a", "capacity_type": "spot"},
        ),
        Decision(
            600,
            "disruption",
            "disrupting",
            "",
            {
                "reason": "Underutilized",
                "consolidation_type": "single",
                "action": "replace",
                "candidates": [
                    {
                        "nodeclaim": "default-a",
                        "node": "ip-1",
                        "instance_type": "m5.xlarge",
                        "capacity_type": "spot",
                        "price": 0.192,
                        "pods": 2,
                    }
                ],
                "replacements": [[["m5.large", 0.096]]],
                "savings": 0.096,
            },
        ),
        Decision(
            700,
            "interruption",
            "interruption",
            "",
            {
                "kind": "spot_interrupted",
                "action": "CordonAndDrain",
                "nodeclaim": "default-b",
                "node": "ip-2",
                "instance_id": "i-2",
                "latency_s": 1.5,
            },
        ),
        Decision(
            800,
            "garbage_collection",
            "collected",
            "",
            {"resource": "Instance", "collected": "i-9", "reason": "has no NodeClaim"},
        ),
    ]


def test_the_decision_log_says_what_was_decided_and_why() -> None:
    sections = rows(_decisions())
    assert list(sections)[:3] == [PROVISIONING, DISRUPTION, INTERRUPTION]
    (provisioned,) = sections[PROVISIONING]  # the launch is told with its NodeClaim, not on its own
    assert provisioned.subject == "default-a"
    assert "5 pods (ns/web-1, ns/web-2, ns/web-3, ...) on NodePool default" in provisioned.why
    assert "5 instance types fit of the 36 it offers (31 too small or ruled out by the requirements)" in provisioned.why
    assert "m5.large $0.0960/h" in provisioned.why and "and 1 more" in provisioned.why
    assert "Launched m6i.large (spot, us-west-2a), listed at $0.0960/h" in provisioned.why
    assert "NodePool gpu is not ready" in provisioned.why
    (disrupting,) = sections[DISRUPTION]
    assert disrupting.what == "disrupting (single)"
    assert "Underutilized: replace ip-1 (m5.xlarge spot, $0.1920/h, 2 pods)" in disrupting.why
    assert "Predicted saving $0.0960/h" in disrupting.why
    (acted,) = sections[INTERRUPTION]
    assert acted.subject == "ip-2" and "1.5 s after the warning" in acted.why
    page = _text(tables.decision_log(_decisions()))
    assert "Garbage collection (1)" in page and "has no NodeClaim" in page


def test_a_launch_a_node_overlay_priced_names_the_prioritized_strategy() -> None:
    decisions = _decisions()
    plain = rows(decisions)[PROVISIONING][0].why
    launched = next(d for d in decisions if d.kind == "launched")
    launched.fields["price_overlaid"] = True
    overlaid = rows(decisions)[PROVISIONING][0].why
    assert "CreateFleet's price-capacity-optimized pick" in plain
    assert "CreateFleet's capacity-optimized-prioritized pick" in overlaid


def test_the_node_table_tells_each_disrupted_node_s_story_and_folds_the_quiet_ones() -> None:
    ended = NodeHistory(
        "default-a",
        "default",
        "ip-1",
        "m5.xlarge",
        "us-west-2a",
        "spot",
        {
            "created": 30,
            "launched": 31,
            "registered": 90,
            "initialized": 95,
            "drifted": 400,
            "disrupting": 600,
            "cordoned": 601,
            "deleting": 620,
            "drained": 700,
            "terminated": 760,
        },
        {"drifted": "AMIDrift", "disrupting": "Underutilized"},
    )
    quiet = NodeHistory("default-q", "default", "ip-9", "m5.large", "us-west-2b", "on-demand", {"created": 10})
    page = tables.node_table({"default-a": ended, "default-q": quiet}, _decisions())
    first, folded = page.split('id="nodes-quiet"')
    assert 'id="nodes-ended" open' in first
    row = re.search(r"<tr><td>default-a</td>.*?</tr>", first)
    assert row is not None
    cells = re.findall(r"<td>(.*?)</td>", row.group(0))
    assert cells[5:15] == ["00:30", "00:31", "01:30", "01:35", "06:40", "10:00", "10:01", "10:20", "11:40", "12:40"]
    assert "drifted: AMIDrift" in cells[15] and "Underutilized: replace" in cells[15]
    assert "default-q" in folded and "default-q" not in first


def test_the_tour_index_links_each_page_with_the_figures_its_scenario_expects() -> None:
    results = [
        {
            "scenario": "spot-storm",
            "page": "/tmp/report-spot-storm.html",
            "checks": {"max_cordon_seconds <= 10": True, "pods_running pods_total": False},
            "summary": {"max_cordon_seconds": 2.2, "pods_running": 9, "pods_total": 10, "cost_per_hour": 1.5},
        }
    ]
    page = tour_index(results)
    assert '<a href="report-spot-storm.html">spot-storm</a>' in page
    text = _text(page)
    assert "NOT met" in text
    assert re.search(r"Longest warning-to-cordon time\s+2.2 s \(expected <= 10\)\s+ok", text)
    assert re.search(r"Pods running\s+9 \(expected pods_total\)\s+FAILED", text)
    assert "$1.50/h" in text


def test_decisions_are_read_from_structured_log_lines_with_an_interruption_s_latency() -> None:
    timeline = Timeline("t")
    clock = {"now": 301.0}
    log = DecisionLog(timeline, START, lambda: clock["now"], {"i-1": 300.0})
    cordoned = (START + timedelta(seconds=301.5)).isoformat()
    lines = [
        json.dumps(
            {
                "level": "INFO",
                "message": "acted on interruption",
                "service": "x",
                "decision": "interruption",
                "instance_id": "i-1",
                "cordoned_at": cordoned,
                "function_name": "f",
                "cold_start": True,
            }
        ),
        json.dumps({"level": "INFO", "message": "no decision here"}),
        "not json at all",
        json.dumps({"level": "INFO", "message": "odd", "decision": 3}),
    ]
    log.read("interruption", "\n".join(lines) + "\n")
    (decision,) = timeline.decisions
    assert (decision.t, decision.function, decision.kind) == (301.0, "interruption", "interruption")
    assert decision.fields == {"instance_id": "i-1", "cordoned_at": cordoned, "latency_s": 1.5}


def _claim(name: str, conditions: dict[str, str], **metadata: object) -> dict[str, object]:
    stamp = (START + timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "metadata": {
            "name": name,
            "labels": {"karpenter.sh/nodepool": "default", "node.kubernetes.io/instance-type": "m5.large"},
            "creationTimestamp": stamp,
            **metadata,
        },
        "status": {
            "providerID": f"aws:///us-west-2a/{name}",
            "conditions": [{"type": t, "status": "True", "reason": r} for t, r in conditions.items()],
        },
    }


def test_each_nodeclaim_s_steps_are_read_from_the_objects() -> None:
    histories: dict[str, NodeHistory] = {}
    tracker = NodeLifecycles(histories, START)
    tracker.observe([_claim("a", {"Launched": "Launched"})], [], 10)
    node = {"metadata": {"name": "ip-a"}, "spec": {"providerID": "aws:///us-west-2a/a", "unschedulable": True}}
    deleting = _claim("a", {"Launched": "x", "Registered": "x", "Drifted": "AMIDrift"}, deletionTimestamp="later")
    tracker.observe([deleting], [node], 20)
    tracker.observe([_claim("a", {"InstanceTerminating": "x"})], [], 30)
    tracker.observe([], [], 40)
    history = histories["a"]
    assert history.steps == {
        "created": 5,
        "launched": 10,
        "registered": 20,
        "drifted": 20,
        "deleting": 20,
        "cordoned": 20,
        "drained": 30,
        "terminated": 40,
    }
    assert history.why == {"drifted": "AMIDrift"}
    assert (history.node, history.nodepool, history.instance_type) == ("ip-a", "default", "m5.large")


def test_pending_percentiles_by_nearest_rank() -> None:
    seconds = [float(s) for s in range(1, 101)]
    assert pending_percentiles(seconds) == {
        "pod_pending_p50_s": 50.0,
        "pod_pending_p90_s": 90.0,
        "pod_pending_p99_s": 99.0,
        "pod_pending_max_s": 100.0,
    }
    assert set(pending_percentiles([]).values()) == {None}


def test_a_drain_seen_only_by_the_termination_controller_is_dated_from_its_decision() -> None:
    histories = {"a": NodeHistory("a", steps={"created": 0, "deleting": 50, "terminated": 90})}
    ended = {"node": "ip-a", "nodeclaim": "a", "reason": "Drained"}
    apply_terminations(histories, [Decision(80, "termination", "node-terminated", "", ended)])
    assert histories["a"].steps["drained"] == 80 and histories["a"].why["terminated"] == "Drained"
