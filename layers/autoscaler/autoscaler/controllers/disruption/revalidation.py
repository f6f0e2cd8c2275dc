"""Re-validation: the consolidation a pass decided, checked again against a fresh read of the pods just before its
first write. Pure.

Karpenter waits 15 seconds after deciding and simulates again, because its decisions come from a cache that
trails the cluster and its loop acts within seconds of a pod event. A pass here reads the cluster once and may
then decide for up to a few minutes (multi-node consolidation stops after one, single-node after three): the risk
is the gap between that read and the first write, not the seconds after deciding. So the pass does not sleep: it
reads the bound and pending pods again right before it starts the command, and

- gives the command up when a pod arrived on a candidate meanwhile (the decision did not account for it), or when
  an empty candidate is no longer empty;
- otherwise simulates the command again with the fresh pods (pending pods included, so that room they now need
  is not taken) and gives it up unless the same decision comes out: the pods still fit, with no more replacements
  than before and, for a replacement, still a cheaper one. The command that starts is the fresh one.

Drift is not re-validated: a drifted node must go whatever the pods do, and its replacements are sized then.
A command given up so is counted (``karpenter_voluntary_disruption_failed_validations_total``) and logged with its
reason; the next pass decides afresh.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from autoscaler.cloudprovider import OfferingKey
from autoscaler.controllers.disruption.assessment import Assessment
from autoscaler.controllers.disruption.methods import Command, Methods
from autoscaler.controllers.disruption.rescheduling import Rescheduler
from autoscaler.controllers.disruption.verification import PlacementCheck
from autoscaler.controllers.state.pods import is_reschedulable, pod_ref, pods_by_node
from autoscaler.kube.port import KubeObject


def revalidate(
    found: Assessment,
    command: Command,
    bound: Sequence[KubeObject],
    pending: Sequence[KubeObject],
    now: datetime,
    *,
    unavailable: frozenset[OfferingKey],
    spot_to_spot: bool,
    checks: Sequence[PlacementCheck],
) -> Command | str:
    """``command`` as it stands on the fresh pods, or why it no longer holds."""
    if not command.consolidation_type:
        return command
    on_node = pods_by_node(bound)
    fresh = []
    for candidate in command.candidates:
        pods = [p for p in on_node.get(candidate.node_name, ()) if is_reschedulable(p)]
        arrived = {pod_ref(p) for p in pods} - {pod_ref(p) for p in candidate.pods}
        if arrived:
            names = ", ".join(sorted(f"{ref.namespace}/{ref.name}" for ref in arrived)[:3])
            return f"pods arrived on {candidate.node_name} after the pass read the cluster ({names})"
        fresh.append(dataclasses.replace(candidate, pods=pods))
    if command.consolidation_type == "empty":
        return dataclasses.replace(command, candidates=fresh)
    state = dataclasses.replace(found.state, bound_pods=list(bound), pending_pods=list(pending))
    pools = [found.nodepools[name] for name in found.instance_types if name in found.nodepools]
    rescheduler = Rescheduler(state, pools, found.instance_types, unavailable, now, checks=checks)
    assert found.budgets is not None  # set by every assessment that decides
    again = Methods(rescheduler, found.budgets, spot_to_spot=spot_to_spot, totals=found.totals).consolidate(
        fresh, command.consolidation_type
    )
    if isinstance(again, str):
        return again
    if again.decision != command.decision:
        return f"a fresh simulation would {again.decision} rather than {command.decision}: {again.describe()}"
    return again
