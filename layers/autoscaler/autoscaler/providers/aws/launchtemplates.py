"""Launch templates on EC2: ensured by name before a launch (recreated when deleted behind our back),
deleted with their EC2NodeClass, and listed and deleted by garbage collection (the OwnedLaunchTemplates port).
Only templates carrying this cluster's marks are ever listed or deleted."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from autoscaler.apis.v1 import labels as wk
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.owned import OwnedLaunchTemplate
from autoscaler.providers.aws.cache import TTLCache
from autoscaler.providers.aws.clients import error_code, is_not_found, transient_errors
from autoscaler.providers.aws.launchconfig import LaunchConfig, launch_template_data, launch_template_tags, tag_list

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

log = logging.getLogger(__name__)
LAUNCH_TEMPLATE_TTL = timedelta(minutes=5)
NOT_FOUND = "InvalidLaunchTemplateName.NotFoundException"
ALREADY_EXISTS = "InvalidLaunchTemplateName.AlreadyExistsException"
PAGE_SIZE = 200  # EC2's largest page of launch templates (moto, without it, answers 15 and no next token)


class LaunchTemplates:
    def __init__(self, clients: AWSClients, cluster_name: str, clock: Callable[[], datetime] = utc_now) -> None:
        self._clients, self._cluster = clients, cluster_name
        self._known: TTLCache[bool] = TTLCache(LAUNCH_TEMPLATE_TTL, clock)
        self._images: dict[tuple[str, int | None], str | None] = {}

    def ensure(self, config: LaunchConfig) -> str:
        """The template's name, after creating it when EC2 does not have it."""
        name = config.name
        if self._known.get(name):
            return name
        ec2 = self._clients.ec2
        with transient_errors("ensuring a launch template"):
            try:
                ec2.describe_launch_templates(LaunchTemplateNames=[name])
            except ClientError as error:
                if not is_not_found(error) and error_code(error) != NOT_FOUND:
                    raise
                try:
                    ec2.create_launch_template(
                        LaunchTemplateName=name,
                        LaunchTemplateData=launch_template_data(config),  # type: ignore[arg-type]
                        TagSpecifications=self._tag_specifications(config),
                    )
                    log.info("created launch template %s", name)
                except ClientError as race:
                    if error_code(race) != ALREADY_EXISTS:
                        raise
        self._known.put(name, True)
        return name

    @staticmethod
    def _tag_specifications(config: LaunchConfig) -> Any:
        return [{"ResourceType": "launch-template", "Tags": tag_list(launch_template_tags(config))}]

    def forget(self, name: str) -> None:
        """EC2 said the template is gone: the next ensure() recreates it."""
        self._known.invalidate(name)

    def _owned_filters(self) -> list[dict[str, Any]]:
        """Both of the cluster's marks on a template: its name (Karpenter's) and its ownership tag, which the
        IAM policy's delete condition requires too."""
        return [
            {"Name": f"tag:{wk.TAG_LAUNCH_TEMPLATE_CLUSTER}", "Values": [self._cluster]},
            {"Name": f"tag:{wk.TAG_CLUSTER_PREFIX}{self._cluster}", "Values": ["owned"]},
        ]

    def _describe(self, extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found = []
        with transient_errors("listing launch templates"):
            pages = self._clients.ec2.get_paginator("describe_launch_templates").paginate(
                Filters=[*self._owned_filters(), *extra],  # type: ignore[list-item]
                PaginationConfig={"PageSize": PAGE_SIZE},
            )
            for page in pages:
                found += [dict(t) for t in page.get("LaunchTemplates", []) if self._is_owned(t.get("Tags", []))]
        return found

    def _is_owned(self, tags: Any) -> bool:
        """The filters again, on the answer: a template without every mark is never ours to delete."""
        values = {t["Key"]: t["Value"] for t in tags}
        return (
            values.get(wk.TAG_LAUNCH_TEMPLATE_CLUSTER) == self._cluster
            and values.get(f"{wk.TAG_CLUSTER_PREFIX}{self._cluster}") == "owned"
            and bool(values.get(wk.TAG_NODEPOOL))
            and bool(values.get(wk.TAG_NODECLASS))
        )

    def _delete(self, template_id: str, name: str) -> bool:
        self._known.invalidate(name)
        with transient_errors("deleting a launch template"):
            try:
                self._clients.ec2.delete_launch_template(LaunchTemplateId=template_id)
            except ClientError as error:
                if is_not_found(error):
                    return False
                raise
        log.info("deleted launch template %s (%s)", name, template_id)
        return True

    def delete_for(self, nodeclass_name: str) -> list[str]:
        """Delete this cluster's templates of the class; return their names."""
        templates = self._describe([{"Name": f"tag:{wk.TAG_NODECLASS}", "Values": [nodeclass_name]}])
        for template in templates:
            self._delete(template["LaunchTemplateId"], template["LaunchTemplateName"])
        return [t["LaunchTemplateName"] for t in templates]

    # --- the OwnedLaunchTemplates port (garbage collection) ----------------------------------------------
    def list_owned(self) -> list[OwnedLaunchTemplate]:
        owned, listed = [], self._describe([])
        ids = {t["LaunchTemplateId"] for t in listed}
        self._images = {key: image for key, image in self._images.items() if key[0] in ids}  # forget deleted ones
        for template in listed:
            tags = {t["Key"]: t["Value"] for t in template.get("Tags", [])}
            owned.append(
                OwnedLaunchTemplate(
                    id=template["LaunchTemplateId"],
                    name=template["LaunchTemplateName"],
                    nodeclass=tags[wk.TAG_NODECLASS],
                    image_id=self._image(template["LaunchTemplateId"], template.get("LatestVersionNumber")),
                    created_at=template.get("CreateTime"),
                )
            )
        return owned

    def _image(self, template_id: str, version: int | None) -> str | None:
        """The AMI of the template's latest version (the one CreateFleet launches). A version never changes,
        so the answer is kept for as long as the container lives."""
        key = (template_id, version)
        if key not in self._images:
            with transient_errors("reading a launch template version"):
                try:
                    versions = self._clients.ec2.describe_launch_template_versions(
                        LaunchTemplateId=template_id, Versions=["$Latest"]
                    )["LaunchTemplateVersions"]
                except ClientError as error:
                    if not is_not_found(error):
                        raise
                    versions = []
            if not versions:
                return None  # deleted since it was listed: nothing to keep
            self._images[key] = versions[0].get("LaunchTemplateData", {}).get("ImageId")
        return self._images[key]

    def delete_owned(self, template: OwnedLaunchTemplate) -> bool:
        return self._delete(template.id, template.name)
