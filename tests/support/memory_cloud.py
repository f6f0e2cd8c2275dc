"""An in-memory EC2 behind the runtime's cloud port (``autoscaler.runtime.Cloud``), with the owned launch templates
and instance profiles garbage collection reads (``launch_templates`` and ``instance_profiles``, as the runtime has
them) and an EC2NodeClass ``resolver`` that is never to be reached.

Instances go running -> shutting-down (``delete``; after ``shutdown_delay`` more ``get`` calls when EC2 is
slow to report it) -> terminated (``terminate_outside``, or never launched). ``list`` reports the tagged live
instances as the provider does (a shutting-down one with a deletionTimestamp); ``untag`` hides one from it
while ``get`` still finds it. It records ``calls`` ("get <id>", "delete <id>"), the instances it terminated and
the templates and profiles it deleted; ``fail(operation, *errors)`` makes the next calls of ``list``, ``get``,
``templates``, ``profiles`` or ``delete:<provider ID or name>`` raise.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from autoscaler.apis.v1.ec2nodeclass import (
    AMIStatus,
    CapacityReservationStatus,
    EC2NodeClass,
    SecurityGroupStatus,
    SubnetStatus,
)
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import CloudProviderError, NodeClaimNotFoundError
from autoscaler.cloudprovider.owned import OwnedInstanceProfile, OwnedLaunchTemplate
from autoscaler.cloudprovider.types import Drift
from autoscaler.cloudprovider.zonalshift import ShiftedZones

SHUTTING_DOWN_SINCE = "2000-01-01T00:00:00Z"


def bare_instance(provider_id: str) -> NodeClaim:
    """An instance as the provider reports one it knows nothing more about: its provider ID."""
    return NodeClaim.model_validate(
        {
            "metadata": {"name": provider_id},
            "spec": {
                "requirements": [],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            },
            "status": {"providerID": provider_id},
        }
    )


class MemoryCloud:
    def __init__(
        self,
        *instances: NodeClaim | str,
        templates: tuple[OwnedLaunchTemplate, ...] = (),
        profiles: tuple[OwnedInstanceProfile, ...] = (),
        shutdown_delay: int = 0,
    ) -> None:
        self.states: dict[str, str] = {}  # provider ID -> EC2 state
        self.shutdown_delay = shutdown_delay  # get calls a terminating instance is still reported running
        self.templates = list(templates)
        self.profiles = list(profiles)
        self.calls: list[str] = []
        self.terminated: list[str] = []  # provider IDs, in the order ``delete`` terminated them
        self.deleted: list[str] = []  # launch template and instance profile names
        self.launch_templates = _Owned(self, self.templates, "templates")
        self.instance_profiles = _Owned(self, self.profiles, "profiles")
        self.resolver = Unresolved()
        self.shifted: set[str] = set()  # zone IDs ARC shifts the cluster away from
        self.arc_read_errors = 0
        self._views: dict[str, NodeClaim] = {}
        self._untagged: set[str] = set()
        self._pending_gets: dict[str, int] = {}
        self._failures: dict[str, list[Exception]] = {}
        self.launch(*instances)

    # --- the test's side ----------------------------------------------------------------------------
    def launch(self, *instances: NodeClaim | str) -> None:
        """Running instances: a NodeClaim as ``list`` should report it, or just a provider ID."""
        for instance in instances:
            view = bare_instance(instance) if isinstance(instance, str) else instance
            provider_id = view.status.provider_id if view.status else None
            assert provider_id, "an instance needs a provider ID"
            self._views[provider_id] = view
            self.states[provider_id] = "shutting-down" if view.metadata.deletion_timestamp else "running"

    def untag(self, provider_id: str) -> None:
        """Its tags are gone: ``list`` no longer shows it, ``get`` still does."""
        self._untagged.add(provider_id)

    def terminate_outside(self, provider_id: str) -> None:
        """Someone else (a user, a spot reclaim) terminated the instance."""
        self.states[provider_id] = "terminated"

    def fail(self, operation: str, *errors: Exception) -> None:
        self._failures.setdefault(operation, []).extend(errors)

    def _check(self, operation: str) -> None:
        pending = self._failures.get(operation)
        if pending:
            raise pending.pop(0)

    def _view(self, provider_id: str, state: str) -> NodeClaim:
        view = self._views.get(provider_id) or bare_instance(provider_id)
        if state == "shutting-down":  # as the AWS provider reports it
            view = view.model_copy(deep=True)
            view.metadata.deletion_timestamp = view.metadata.deletion_timestamp or SHUTTING_DOWN_SINCE
        return view

    # --- the CloudProvider port ---------------------------------------------------------------------
    def list(self) -> list[NodeClaim]:
        self._check("list")
        return [
            self._view(provider_id, state)
            for provider_id, state in self.states.items()
            if state != "terminated" and provider_id not in self._untagged
        ]

    def get(self, provider_id: str) -> NodeClaim:
        self.calls.append(f"get {provider_id}")
        self._check("get")
        state = self.states.get(provider_id, "terminated")
        if state == "stopping":  # terminating, but EC2 does not say so yet
            self._pending_gets[provider_id] -= 1
            if self._pending_gets[provider_id] < 0:
                state = self.states[provider_id] = "shutting-down"
        if state == "terminated":
            raise NodeClaimNotFoundError(f"instance {provider_id} not found")
        return self._view(provider_id, state)

    def delete(self, nodeclaim: NodeClaim) -> None:
        provider_id = (nodeclaim.status.provider_id if nodeclaim.status else None) or ""
        self.calls.append(f"delete {provider_id}")
        self._check(f"delete:{provider_id}")
        state = self.states.get(provider_id, "terminated")
        if state == "terminated":
            raise NodeClaimNotFoundError(f"instance {provider_id} already terminated")
        if state == "running":
            self._pending_gets[provider_id] = self.shutdown_delay
            self.states[provider_id] = "shutting-down" if self.shutdown_delay == 0 else "stopping"
            self.terminated.append(provider_id)

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        raise NotImplementedError

    def instance_types(self, nodepool: Any) -> builtins.list[Any]:
        raise NotImplementedError

    def is_drifted(self, nodeclaim: NodeClaim) -> Any:
        raise NotImplementedError

    # --- the batch forms the provisioning and disruption passes use: no test of this double reaches them
    def settle_launches(self) -> None:  # nothing runs beside its launches
        return None

    def create_many(
        self, claims: Sequence[NodeClaim], overlays: Any = None
    ) -> builtins.list[NodeClaim | CloudProviderError]:
        raise NotImplementedError

    def get_many(self, provider_ids: Sequence[str]) -> dict[str, NodeClaim | CloudProviderError]:
        raise NotImplementedError

    def tag_registered(self, nodeclaim: NodeClaim, node_name: str) -> None:
        raise NotImplementedError

    def drift_many(self, claims: Sequence[NodeClaim]) -> builtins.list[Drift | CloudProviderError | None]:
        raise NotImplementedError

    # --- the zonal shifts a pass reads (``ZonalShiftCloud``) -----------------------------------------------
    def shifted_zones(self) -> ShiftedZones:
        """The zone IDs in ``shifted`` and the ``arc_read_errors`` counted since the previous ask."""
        errors, self.arc_read_errors = self.arc_read_errors, 0
        return ShiftedZones(frozenset(self.shifted), errors)


class Unresolved:
    """The NodeClassResolver port, for runtimes whose tests never resolve an EC2NodeClass."""

    def subnets(self, nodeclass: EC2NodeClass) -> list[SubnetStatus]:
        raise NotImplementedError

    def security_groups(self, nodeclass: EC2NodeClass) -> list[SecurityGroupStatus]:
        raise NotImplementedError

    def amis(self, nodeclass: EC2NodeClass) -> list[AMIStatus]:
        raise NotImplementedError

    def instance_profile(self, nodeclass: EC2NodeClass) -> str:
        raise NotImplementedError

    def placement_group(self, nodeclass: EC2NodeClass) -> str | None:
        raise NotImplementedError

    def capacity_reservations(self, nodeclass: EC2NodeClass) -> list[CapacityReservationStatus]:
        raise NotImplementedError

    def cleanup(self, nodeclass: EC2NodeClass) -> None:
        raise NotImplementedError


class _Owned:
    """Owned launch templates or instance profiles, as garbage collection lists and deletes them."""

    def __init__(self, cloud: MemoryCloud, items: list[Any], listing: str) -> None:
        self._cloud, self._items, self._listing = cloud, items, listing

    def list_owned(self) -> list[Any]:
        self._cloud._check(self._listing)
        return list(self._items)

    def delete_owned(self, owned: Any) -> bool:
        self._cloud._check(f"delete:{owned.name}")
        self._items.remove(owned)
        self._cloud.deleted.append(owned.name)
        return True
