"""EC2 placement groups in the moto world, which has none: the API, and what a group does to a launch.

CreatePlacementGroup, DescribePlacementGroups and DeletePlacementGroup with EC2's answers (a duplicate name is
``InvalidPlacementGroup.Duplicate``, an unknown name or id ``InvalidPlacementGroup.Unknown``, a group that still
holds instances ``InvalidPlacementGroup.InUse``). CreateFleet (``ec2_fleet``) asks ``room`` how many instances a
pool may take for a launch template that places them in a group, as EC2 enforces it:

- cluster: one zone. The first instance fixes it; overrides in any other zone have no capacity.
- spread (rack level): at most seven running instances per zone, answered with EC2's own message.
- partition: EC2 picks the partition (the least filled), reported in ``Placement.PartitionNumber``.

Groups live on moto's EC2 backend object, so resetting moto's backends forgets them.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.responses import EC2Response
from moto.moto_api._internal import mock_random

SPREAD_PER_ZONE = 7
SPREAD_LIMIT = (
    "You've reached the limit of instances in this spread placement group. A spread placement group can have up to "
    "seven instances per Availability Zone."
)
_LIVE = ("pending", "running", "stopping", "stopped")
_installed = threading.Lock()


@dataclass
class Group:
    id: str
    name: str
    strategy: str
    partition_count: int = 0
    spread_level: str = ""

    def to_ec2(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"GroupId": self.id, "GroupName": self.name, "Strategy": self.strategy}
        answer["State"] = "available"
        if self.partition_count:
            answer["PartitionCount"] = self.partition_count
        if self.spread_level:
            answer["SpreadLevel"] = self.spread_level
        return answer


def install() -> None:
    """Serve placement groups on every moto server this process starts from now on (idempotent)."""
    with _installed:
        if "create_placement_group" in vars(EC2Response):
            return
        EC2Response.create_placement_group = _create  # type: ignore[attr-defined]
        EC2Response.describe_placement_groups = _describe  # type: ignore[attr-defined]
        EC2Response.delete_placement_group = _delete  # type: ignore[attr-defined]


def groups_of(backend: Any) -> dict[str, Group]:
    """The backend's groups by id."""
    if not hasattr(backend, "placement_groups_by_id"):
        backend.placement_groups_by_id = {}
    groups: dict[str, Group] = backend.placement_groups_by_id
    return groups


def _unknown(what: str) -> EC2ClientError:
    return EC2ClientError("InvalidPlacementGroup.Unknown", f"The Placement Group '{what}' is unknown.")


def _create(self: Any) -> ActionResult:
    groups = groups_of(self.ec2_backend)
    name = self._get_param("GroupName") or f"pg-{mock_random.get_random_hex(8)}"
    if any(g.name == name for g in groups.values()):
        raise EC2ClientError("InvalidPlacementGroup.Duplicate", f"The Placement Group '{name}' already exists.")
    strategy = self._get_param("Strategy") or "cluster"
    group = Group(
        f"pg-{mock_random.get_random_hex(17)}",
        name,
        strategy,
        int(self._get_param("PartitionCount") or (2 if strategy == "partition" else 0)),
        self._get_param("SpreadLevel") or ("rack" if strategy == "spread" else ""),
    )
    groups[group.id] = group
    return ActionResult({"PlacementGroup": group.to_ec2()})


def _describe(self: Any) -> ActionResult:
    groups = list(groups_of(self.ec2_backend).values())
    ids, names = self._get_param("GroupIds", []), self._get_param("GroupNames", [])
    for wanted, key in ((ids, "id"), (names, "name")):
        missing = [w for w in wanted if not any(getattr(g, key) == w for g in groups)]
        if missing:
            raise _unknown(missing[0])
    selected = [g for g in groups if (not ids or g.id in ids) and (not names or g.name in names)]
    for wanted in self._get_param("Filters", []):
        if wanted.get("Name") == "strategy":
            selected = [g for g in selected if g.strategy in wanted.get("Values", [])]
        elif wanted.get("Name") == "state":  # every group here is available
            selected = selected if "available" in wanted.get("Values", []) else []
    return ActionResult({"PlacementGroups": [g.to_ec2() for g in selected]})


def _delete(self: Any) -> ActionResult:
    groups = groups_of(self.ec2_backend)
    name = self._get_param("GroupName")
    group = next((g for g in groups.values() if g.name == name), None)
    if group is None:
        raise _unknown(name)
    if any(True for _ in _members(self.ec2_backend, group)):
        raise EC2ClientError("InvalidPlacementGroup.InUse", f"The Placement Group '{name}' is in use.")
    del groups[group.id]
    return ActionResult(EmptyResult())


def _members(backend: Any, group: Group) -> Iterable[Any]:
    for reservation in backend.reservations.values():
        for instance in reservation.instances:
            if instance.state in _LIVE and getattr(instance.placement, "group_id", "") == group.id:
                yield instance


def group_of_template(backend: Any, spec: Any) -> Group | None:
    """The group a fleet launch spec's launch template places its instances in (by GroupId or GroupName)."""
    template_spec = spec.launch_template_spec or {}
    if not template_spec.get("LaunchTemplateId"):
        return None
    template = backend.get_launch_template(template_spec["LaunchTemplateId"])
    placement = template.get_version(template_spec.get("Version")).data.get("Placement") or {}
    groups = groups_of(backend)
    if placement.get("GroupId"):
        return groups.get(placement["GroupId"])
    return next((g for g in groups.values() if g.name == placement.get("GroupName")), None)


def live_by_zone(backend: Any, group: Group) -> Counter[str]:
    """The group's live instances per zone (what ``room`` decides from; read once per fleet)."""
    return Counter(i.placement.zone for i in _members(backend, group))


def room(group: Group, zones: Counter[str], zone: str) -> tuple[int | None, str]:
    """How many more instances ``group``, holding ``zones`` (``live_by_zone``), takes in ``zone`` (None: no limit of
    the group's) and, at 0, EC2's message for the refusal ('' for an ordinary shortage)."""
    if group.strategy == "cluster" and zones and zone not in zones:
        return 0, ""
    if group.strategy == "spread":
        left = max(0, SPREAD_PER_ZONE - zones[zone])
        return left, SPREAD_LIMIT if left == 0 else ""
    return None, ""


def place(backend: Any, group: Group, instances: Iterable[Any]) -> None:
    """Put launched instances in ``group`` as EC2 reports them: the group's name and id, and for a partition
    group the least filled partition."""
    for instance in instances:
        if group.partition_count:
            filled = Counter(getattr(i.placement, "partition_number", 0) for i in _members(backend, group))
            instance.placement.partition_number = min(range(1, group.partition_count + 1), key=lambda p: (filled[p], p))
        instance.placement.group_name, instance.placement.group_id = group.name, group.id
