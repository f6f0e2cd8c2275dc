"""EC2 placement groups: the one an EC2NodeClass selects (``spec.placementGroupSelector``), resolved with
DescribePlacementGroups, and what each strategy means for instance types and launches.

Every function that needs the group resolves it itself (Karpenter keeps no placement group in the class's
status either): an answer is kept a minute, and the last one found is kept a day, so that an EC2 error while a
group is known does not stop launches into it. A group that is not ``available`` is not found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from autoscaler.apis.v1.selector_terms import PlacementGroupSelector
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import CloudProviderError, NodeClassNotReadyError
from autoscaler.providers.aws.cache import TTLCache
from autoscaler.providers.aws.clients import error_code, error_message, transient_errors

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

CLUSTER, PARTITION, SPREAD = "cluster", "partition", "spread"
ANSWER_TTL = timedelta(minutes=1)
LAST_KNOWN_TTL = timedelta(hours=24)
# EC2's answers for a name or an id that names no group: the group is not found, not an error.
NOT_FOUND_CODES = frozenset({"InvalidPlacementGroup.Unknown", "InvalidPlacementGroupId.NotFound"})


@dataclass(frozen=True)
class PlacementGroup:
    id: str
    name: str
    strategy: str  # cluster, partition or spread
    partition_count: int = 0
    spread_level: str = ""

    @classmethod
    def from_ec2(cls, raw: dict[str, Any]) -> PlacementGroup:
        return cls(
            id=raw.get("GroupId", ""),
            name=raw.get("GroupName", ""),
            strategy=raw.get("Strategy", ""),
            partition_count=int(raw.get("PartitionCount") or 0),
            spread_level=raw.get("SpreadLevel", ""),
        )

    def supports(self, info: dict[str, Any]) -> bool:
        """Whether an instance type (its DescribeInstanceTypes entry) may launch into this group: EC2 lists the
        strategies each type supports (burstable types have no cluster placement, for one)."""
        strategies = (info.get("PlacementGroupInfo") or {}).get("SupportedStrategies")
        return strategies is None or self.strategy in strategies


class PlacementGroups:
    def __init__(self, clients: AWSClients, clock: Callable[[], datetime] = utc_now) -> None:
        self._clients = clients
        self._answers: TTLCache[tuple[PlacementGroup | None]] = TTLCache(ANSWER_TTL, clock)
        self._last_known: TTLCache[PlacementGroup] = TTLCache(LAST_KNOWN_TTL, clock)

    def resolve(self, selector: PlacementGroupSelector | None) -> PlacementGroup | None:
        """The available group ``selector`` names (by id or name), or None: no selector, or no such group.
        When EC2 cannot answer and no earlier answer is known, raises TransientCloudError (throttling, 5xx) or
        NodeClassNotReadyError (a refusal such as a missing ``ec2:DescribePlacementGroups``, in EC2's words)."""
        if selector is None:
            return None
        key = ("id", selector.id) if selector.id else ("name", selector.name)
        cached = self._answers.get(key)
        if cached is not None:
            return cached[0]
        try:
            found = self._describe(selector)
        except CloudProviderError:
            last = self._last_known.get(key)
            if last is None:
                raise
            return last
        if found is not None:
            self._last_known.put(key, found)
        return self._answers.put(key, (found,))[0]

    def _describe(self, selector: PlacementGroupSelector) -> PlacementGroup | None:
        request: dict[str, Any] = {"Filters": [{"Name": "state", "Values": ["available"]}]}
        if selector.id:
            request["GroupIds"] = [selector.id]
        else:
            request["GroupNames"] = [selector.name]
        try:
            with transient_errors("describing placement groups"):
                groups = self._clients.ec2.describe_placement_groups(**request)["PlacementGroups"]
        except ClientError as error:
            if error_code(error) in NOT_FOUND_CODES:
                return None
            named = selector.id or selector.name
            refusal = f"describing placement group {named}: {error_code(error)}: {error_message(error)}"
            raise NodeClassNotReadyError(refusal) from error
        return PlacementGroup.from_ec2(dict(groups[0])) if groups else None
