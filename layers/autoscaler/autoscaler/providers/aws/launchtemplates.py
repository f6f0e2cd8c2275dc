"""Launch templates on EC2: ensured by name before a launch (recreated when deleted behind our back),
deleted with their EC2NodeClass."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from autoscaler.apis.v1 import labels as wk
from autoscaler.providers.aws.cache import TTLCache, utc_now
from autoscaler.providers.aws.clients import error_code, is_not_found, transient_errors
from autoscaler.providers.aws.launchconfig import LaunchConfig, launch_template_data, launch_template_tags, tag_list

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

log = logging.getLogger(__name__)
LAUNCH_TEMPLATE_TTL = timedelta(minutes=5)
NOT_FOUND = "InvalidLaunchTemplateName.NotFoundException"
ALREADY_EXISTS = "InvalidLaunchTemplateName.AlreadyExistsException"


class LaunchTemplates:
    def __init__(self, clients: AWSClients, cluster_name: str, clock: Callable[[], datetime] = utc_now) -> None:
        self._clients, self._cluster = clients, cluster_name
        self._known: TTLCache[bool] = TTLCache(LAUNCH_TEMPLATE_TTL, clock)

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

    def delete_for(self, nodeclass_name: str) -> list[str]:
        """Delete this cluster's templates of the class; return their names."""
        ec2, deleted = self._clients.ec2, []
        filters = [
            {"Name": f"tag:{wk.TAG_LAUNCH_TEMPLATE_CLUSTER}", "Values": [self._cluster]},
            {"Name": f"tag:{wk.TAG_NODECLASS}", "Values": [nodeclass_name]},
        ]
        with transient_errors("deleting launch templates"):
            for page in ec2.get_paginator("describe_launch_templates").paginate(Filters=filters):  # type: ignore[arg-type]
                for template in page.get("LaunchTemplates", []):
                    try:
                        ec2.delete_launch_template(LaunchTemplateId=template["LaunchTemplateId"])
                    except ClientError as error:
                        if not is_not_found(error):
                            raise
                    deleted.append(template["LaunchTemplateName"])
                    self._known.invalidate(template["LaunchTemplateName"])
        return deleted
