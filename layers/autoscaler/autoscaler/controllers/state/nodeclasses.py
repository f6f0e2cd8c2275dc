"""The EC2NodeClasses of the current pass, by name. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass


class NodeClassIndex:
    """This pass's EC2NodeClasses by name: the lookup the cloud provider is built with, so that it reads the
    classes the pass read instead of asking the API server once per NodeClaim."""

    def __init__(self) -> None:
        self._classes: dict[str, EC2NodeClass] = {}

    def update(self, nodeclasses: Sequence[EC2NodeClass]) -> None:
        self._classes = {c.name: c for c in nodeclasses}

    def get(self, name: str) -> EC2NodeClass | None:
        return self._classes.get(name)
