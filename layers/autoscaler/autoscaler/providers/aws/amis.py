"""AMIs an EC2NodeClass selects: aliases through the EKS-optimized AMIs' public SSM parameters, other
terms through DescribeImages. Per requirement set (architecture x accelerator variant) one image wins, as
Karpenter picks it: a non-deprecated image over a deprecated one (its ``DeprecationTime`` passed), then the
newest by creation date. Deprecated images are always asked for (``IncludeDeprecated``), so that a class whose
only match is deprecated still resolves, with ``deprecated: true`` in ``status.amis`` (the nodeclass function
then warns: ``controllers.nodeclass``). The result lists newest first, as ``status.amis`` does."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import ALIAS_FAMILIES, AMIRequirement, AMIStatus, EC2NodeClass
from autoscaler.clock import parse_time, utc_now
from autoscaler.cloudprovider.nodeclass import NothingMatchedError, ResolutionRefusedError
from autoscaler.providers.aws import families
from autoscaler.providers.aws.cache import TTLCache
from autoscaler.providers.aws.clients import error_code, error_message, transient_errors
from autoscaler.providers.aws.network import tag_filters

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

AMI_TTL = timedelta(minutes=1)
MUTABLE_PARAMETER_TTL = timedelta(minutes=5)  # "recommended" moves with each AMI release
PINNED_PARAMETER_TTL = timedelta(hours=24)
SSM_BATCH = 10  # GetParameters takes at most ten names
WINDOWS2025_MIN_MINOR = 35  # EKS publishes Windows Server 2025 AMIs from Kubernetes 1.35


def _minor(kubernetes_version: str) -> int:
    _, _, minor = kubernetes_version.partition(".")
    return int(minor) if minor.isdigit() else WINDOWS2025_MIN_MINOR  # unparsable: let SSM decide


@dataclass(frozen=True)
class ImageQuery:
    """One DescribeImages call, and the requirement sets known for particular images (from SSM)."""

    filters: tuple[tuple[str, tuple[str, ...]], ...] = ()
    owners: tuple[str, ...] = ()
    known: tuple[tuple[str, tuple[tuple[AMIRequirement, ...], ...]], ...] = ()

    def request(self, include_deprecated: bool) -> dict[str, Any]:
        request: dict[str, Any] = {"IncludeDeprecated": include_deprecated}
        if self.filters:
            request["Filters"] = [{"Name": name, "Values": list(values)} for name, values in self.filters]
        if self.owners:
            request["Owners"] = list(self.owners)
        return request


def term_queries(nodeclass: EC2NodeClass, parameter_images: Sequence[str] = ()) -> list[ImageQuery]:
    """Queries for id / name / owner / tags terms (ids, and the images ``ssmParameter`` terms resolved to,
    batched into one query). An ``ssmParameter`` term makes no query of its own."""
    queries, ids = [], list(parameter_images)
    for term in nodeclass.spec.ami_selector_terms:
        if term.id:
            ids.append(term.id)
            continue
        if term.ssm_parameter:
            continue
        filters: list[tuple[str, tuple[str, ...]]] = []
        owners: tuple[str, ...] = (term.owner,) if term.owner else ()
        if term.name:
            filters.append(("name", (term.name,)))
            # Without an owner, a name could match anyone's public AMI: only ours and Amazon's count.
            owners = owners or ("self", "amazon")
        filters.extend((f["Name"], tuple(f["Values"])) for f in tag_filters(term.tags))
        queries.append(ImageQuery(tuple(filters), owners))
    if ids:
        queries.append(ImageQuery((("image-id", tuple(ids)),)))
    return queries


def is_deprecated(image: dict[str, Any], now: datetime) -> bool:
    """EC2's ``DeprecationTime`` has come (an unreadable one never has)."""
    when = parse_time(image.get("DeprecationTime"))
    return when is not None and when <= now


def newest_per_requirements(
    images: Sequence[dict[str, Any]], queries_known: dict[str, Any], now: datetime | None = None
) -> list[AMIStatus]:
    """One AMI per requirement set: not deprecated first, then the newest by creation date (ties: the greater
    name); newest first. Without ``now`` no image counts as deprecated."""
    best: dict[str, tuple[tuple[bool, str, str], dict[str, Any], tuple[AMIRequirement, ...]]] = {}
    for image in images:
        arch = families.ARCHITECTURES.get(image.get("Architecture", ""))
        if arch is None:
            continue
        arch_requirement = AMIRequirement(key=wk.LABEL_ARCH, operator="In", values=[arch])
        for known in queries_known.get(image["ImageId"], ((),)):
            requirements = (arch_requirement, *known)
            key = json.dumps([r.to_dict() for r in requirements], sort_keys=True)
            usable = now is None or not is_deprecated(image, now)
            candidate = (usable, image.get("CreationDate", ""), image.get("Name", ""))
            current = best.get(key)
            if current is None or candidate > current[0]:
                best[key] = (candidate, image, requirements)
    ordered = sorted(best.values(), key=lambda entry: (entry[0][1], entry[1]["ImageId"]), reverse=True)
    return [
        AMIStatus(
            id=image["ImageId"],
            name=image.get("Name"),
            requirements=list(requirements),
            deprecated=True if not rank[0] else None,
        )
        for rank, image, requirements in ordered
    ]


class AMIResolver:
    def __init__(self, clients: AWSClients, clock: Callable[[], datetime] = utc_now) -> None:
        self._clients, self._clock = clients, clock
        self._parameters: TTLCache[str] = TTLCache(MUTABLE_PARAMETER_TTL, clock)
        self._amis: TTLCache[list[AMIStatus]] = TTLCache(AMI_TTL, clock)

    def resolve(self, nodeclass: EC2NodeClass, kubernetes_version: str) -> list[AMIStatus]:
        """The class's AMIs. Raises NothingMatchedError naming what was looked for when nothing matched."""
        alias = nodeclass.spec.alias
        key = json.dumps([nodeclass.spec.to_dict().get("amiSelectorTerms"), kubernetes_version], sort_keys=True)
        return self._amis.get_or_load(key, lambda: self._resolve(nodeclass, alias, kubernetes_version))

    def _resolve(self, nodeclass: EC2NodeClass, alias: str | None, kubernetes_version: str) -> list[AMIStatus]:
        if alias:
            family_name, _, version = alias.partition("@")
            family = ALIAS_FAMILIES[family_name]
            if family == "Windows2025" and _minor(kubernetes_version) < WINDOWS2025_MIN_MINOR:
                raise ResolutionRefusedError(
                    f"Windows Server 2025 requires EKS version 1.{WINDOWS2025_MIN_MINOR} or higher, "
                    f"current version: {kubernetes_version}"
                )
            known = self._alias_images(family, kubernetes_version, version)
            if not known:
                raise NothingMatchedError(
                    f'no SSM parameter for alias "{alias}" resolved to an AMI (Kubernetes {kubernetes_version})'
                )
            queries = [ImageQuery((("image-id", tuple(known)),), known=tuple(known.items()))]
        else:
            queries = term_queries(nodeclass, self._parameter_images(nodeclass))
        images: dict[str, dict[str, Any]] = {}
        known_requirements: dict[str, Any] = {}
        with transient_errors("describing images"):
            for query in queries:
                known_requirements.update(dict(query.known))
                for page in self._clients.ec2.get_paginator("describe_images").paginate(
                    **query.request(include_deprecated=True)
                ):
                    images.update({i["ImageId"]: dict(i) for i in page["Images"]})
        amis = newest_per_requirements(list(images.values()), known_requirements, self._clock())
        if not amis:
            raise NothingMatchedError.for_terms("AMI", "amiSelectorTerms", nodeclass.spec.ami_selector_terms)
        return amis

    def _parameter_images(self, nodeclass: EC2NodeClass) -> list[str]:
        """The AMI ids ``ssmParameter`` terms hold (GetParameter, any parameter the role may read, name or ARN;
        re-read every 5 minutes, so a changed value drifts the class's nodes). A missing parameter, or a value
        that is not an AMI id, is skipped as Karpenter skips it."""
        images = []
        for term in nodeclass.spec.ami_selector_terms:
            if not term.ssm_parameter:
                continue
            value = self._parameters.get(term.ssm_parameter)
            if value is None:
                try:
                    with transient_errors("reading an SSM parameter"):
                        value = self._clients.ssm.get_parameter(Name=term.ssm_parameter)["Parameter"]["Value"]
                except ClientError as error:
                    if error_code(error) == "ParameterNotFound":
                        continue
                    raise ResolutionRefusedError(
                        f"reading SSM parameter {term.ssm_parameter!r}: {error_code(error)}: {error_message(error)}"
                    ) from error
                self._parameters.put(term.ssm_parameter, value, MUTABLE_PARAMETER_TTL)
            if value.startswith("ami-"):
                images.append(value)
        return images

    def _alias_images(
        self, family: Any, kubernetes_version: str, version: str
    ) -> dict[str, tuple[tuple[AMIRequirement, ...], ...]]:
        """Image id -> the requirement sets it serves, from the family's SSM parameters (missing ones skipped)."""
        parameters = families.alias_parameters(family, kubernetes_version, version)
        ttl = MUTABLE_PARAMETER_TTL if version == families.LATEST else PINNED_PARAMETER_TTL
        values: dict[str, str] = {}
        missing = [p.path for p in parameters if self._parameters.get(p.path) is None]
        with transient_errors("reading SSM parameters"):
            for start in range(0, len(missing), SSM_BATCH):
                answer = self._clients.ssm.get_parameters(Names=missing[start : start + SSM_BATCH])
                for found in answer.get("Parameters", []):
                    self._parameters.put(found["Name"], found["Value"], ttl)
        for parameter in parameters:
            image_id = self._parameters.get(parameter.path)
            if image_id:
                values[parameter.path] = image_id
        known: dict[str, tuple[tuple[AMIRequirement, ...], ...]] = {}
        for parameter in parameters:
            if parameter.path in values:
                known[values[parameter.path]] = known.get(values[parameter.path], ()) + parameter.requirement_sets
        return known
