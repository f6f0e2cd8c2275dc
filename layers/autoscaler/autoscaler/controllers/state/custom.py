"""Custom resources a pass reads whole (NodeOverlays, CapacityBuffers): listed, validated, the live ones kept."""

from __future__ import annotations

import logging
from typing import TypeVar

from autoscaler.apis.v1.common import KubeObject
from autoscaler.apis.validation import InvalidObjectError, parse
from autoscaler.kube.port import Cluster, ForbiddenError, NotFoundError

log = logging.getLogger(__name__)
Model = TypeVar("Model", bound=KubeObject)


def read_live(cluster: Cluster, kind: str, model: type[Model], skipped: list[str] | None = None) -> list[Model]:
    """The cluster's objects of ``kind`` that parse as ``model`` and are not being deleted. An invalid one is logged
    and skipped (its error added to ``skipped`` when given). No CRD (404) or no permission (403): none."""
    try:
        raw = cluster.list_raw(kind)
    except (NotFoundError, ForbiddenError) as error:
        log.info("no %ss read: %s", kind, error)
        return []
    found = []
    for body in raw:
        try:
            obj = parse(body)
        except InvalidObjectError as error:
            log.warning("skipping an invalid %s: %s", kind, error)
            if skipped is not None:
                skipped.append(str(error))
            continue
        if isinstance(obj, model) and not obj.metadata.deletion_timestamp:
            found.append(obj)
    return found
