"""EC2 instances: describe, list, terminate and tag in batches, and CreateFleet."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.providers.aws.clients import transient_errors
from autoscaler.providers.aws.ec2instance import LIVE_STATES, Instance

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

BATCH = 500  # instance ids per Describe/Terminate call, well under EC2's limits
TAGGING_THREADS = 8  # concurrent CreateTags calls: EC2's CreateTags bucket refills far faster than that


def _chunks(items: Sequence[str], size: int = BATCH) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class Instances:
    def __init__(self, clients: AWSClients) -> None:
        self._clients = clients

    def _describe(self, filters: list[dict[str, Any]]) -> list[Instance]:
        found: list[Instance] = []
        with transient_errors("describing instances"):
            for page in self._clients.ec2.get_paginator("describe_instances").paginate(Filters=filters):  # type: ignore[arg-type]
                for reservation in page["Reservations"]:
                    found.extend(Instance.from_ec2(dict(i)) for i in reservation["Instances"])
        return found

    def describe(self, ids: Sequence[str]) -> dict[str, Instance]:
        """The live instances among ``ids`` (filters, not InstanceIds, so one unknown id fails nothing)."""
        found: dict[str, Instance] = {}
        for chunk in _chunks(sorted(set(ids))):
            filters = [
                {"Name": "instance-id", "Values": chunk},
                {"Name": "instance-state-name", "Values": LIVE_STATES},
            ]
            found.update({i.id: i for i in self._describe(filters)})
        return found

    def owned(self, cluster_name: str, extra: Sequence[dict[str, Any]] = ()) -> list[Instance]:
        """Live instances carrying this cluster's launch tags (and ``extra`` filters). The ownership tag must say
        ``owned``, as the IAM policy's terminate condition requires."""
        filters = [
            {"Name": "tag-key", "Values": [wk.TAG_NODEPOOL]},
            {"Name": "tag-key", "Values": [wk.TAG_NODECLASS]},
            {"Name": f"tag:{wk.TAG_CLUSTER_PREFIX}{cluster_name}", "Values": ["owned"]},
            {"Name": "instance-state-name", "Values": LIVE_STATES},
            *extra,
        ]
        return self._describe(filters)

    def terminate(self, ids: Sequence[str], cluster_name: str) -> tuple[set[str], set[str]]:
        """Terminate the live instances among ``ids`` that ``cluster_name`` owns. Returns (those terminated, the
        live ones it does not own, left alone); the others are gone. A foreign id must not reach the call: IAM
        refuses a whole TerminateInstances when one of its instances is not allowed."""
        live = self.describe(ids)
        owned = {iid for iid, instance in live.items() if instance.owned_by(cluster_name)}
        with transient_errors("terminating instances"):
            for chunk in _chunks(sorted(owned)):
                self._clients.ec2.terminate_instances(InstanceIds=chunk)
        return owned, set(live) - owned

    def tag(self, ids: Sequence[str], tags: dict[str, str]) -> None:
        with transient_errors("tagging instances"):
            self._clients.ec2.create_tags(
                Resources=list(ids), Tags=[{"Key": k, "Value": v} for k, v in sorted(tags.items())]
            )

    def tag_each(self, tags_by_id: Mapping[str, dict[str, str]]) -> dict[str, Exception]:
        """Tag many instances each with its own tags (one CreateTags per instance, ``TAGGING_THREADS`` at a
        time: a launch of hundreds must not wait for them one by one); returns the failures by instance."""
        failures: dict[str, Exception] = {}
        if not tags_by_id:
            return failures
        with ThreadPoolExecutor(max_workers=min(TAGGING_THREADS, len(tags_by_id))) as pool:
            futures = {pool.submit(self.tag, [iid], tags): iid for iid, tags in tags_by_id.items()}
            for future, iid in futures.items():
                error = future.exception()
                if isinstance(error, Exception):
                    failures[iid] = error
        return failures

    def create_fleet(self, request: dict[str, Any]) -> dict[str, Any]:
        with transient_errors("creating a fleet"):
            return dict(self._clients.ec2.create_fleet(**request))
