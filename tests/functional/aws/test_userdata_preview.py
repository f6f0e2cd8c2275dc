"""`autoscaler userdata` against a real launch over moto: the preview is what the launcher puts in the template."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cli import main
from autoscaler.commands.userdata import IMAGE_PLACEHOLDER, template_nodeclaim
from autoscaler_dev.world.aws_world import CLUSTER, REGION, AWSWorld
from tests.functional.aws.helpers import hashed, provider

USER_DATA = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="B"

--B
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "vm.max_map_count=262144" > /etc/sysctl.d/90-map-count.conf

--B--
"""


def sent_templates(provider_: Any) -> list[dict[str, Any]]:
    """Every CreateLaunchTemplate request the provider sends, as sent."""
    requests: list[dict[str, Any]] = []
    provider_.aws.clients.ec2.meta.events.register(
        "provide-client-params.ec2.CreateLaunchTemplate", lambda params, **_: requests.append(dict(params))
    )
    return requests


def nodepool(name: str, nodeclass: str, annotations: dict[str, str]) -> NodePool:
    """A NodePool whose NodeClaims carry labels, taints and startup taints (which reach the user data), on one
    instance type so that its launch has one template."""
    return NodePool.model_validate(
        {
            "metadata": {"name": name, "annotations": annotations},
            "spec": {
                "template": {
                    "metadata": {"labels": {"team": "payments"}},
                    "spec": {
                        "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass},
                        "requirements": [
                            {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]},
                            {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]},
                        ],
                        "taints": [{"key": "dedicated", "value": "payments", "effect": "NoSchedule"}],
                        "startupTaints": [{"key": "example.com/not-ready", "effect": "NoExecute"}],
                    },
                }
            },
        }
    )


@pytest.mark.parametrize("family", ["AL2023", "Bottlerocket"])
def test_the_preview_is_what_the_launch_puts_in_the_template(
    aws_world: AWSWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str], family: str
) -> None:
    alias = {"AL2023": "al2023@latest", "Bottlerocket": "bottlerocket@latest"}[family]
    extra = {"userData": USER_DATA} if family == "AL2023" else {}
    name = f"preview-{family.lower()}"  # NodeClaims are found again by name: one per case
    nodeclass = hashed(
        aws_world.nodeclass(
            name,
            amiSelectorTerms=[{"alias": alias}],
            tags={"team": "payments"},
            detailedMonitoring=True,
            associatePublicIPAddress=False,
            metadataOptions={"httpPutResponseHopLimit": 2},
            **extra,
        )
    )
    # Bottlerocket's kubelet settings come from a v1beta1 NodePool's annotation; AL2023's maxPods from the type.
    kubelet = json.dumps({"maxPods": 42, "systemReserved": {"cpu": "100m"}})
    annotations = {wk.ANNOTATION_KUBELET_COMPATIBILITY: kubelet} if family == "Bottlerocket" else {}
    pool = nodepool(name, nodeclass.name, annotations)
    cloud = provider(aws_world, nodeclass)
    templates = sent_templates(cloud)
    claim = template_nodeclaim(nodeclass, pool)
    launched = cloud.create(
        claim.model_copy(update={"metadata": claim.metadata.model_copy(update={"uid": f"uid-{name}"})})
    )
    (sent,) = templates
    launched_data = sent["LaunchTemplateData"]

    cluster = aws_world.client("eks").describe_cluster(name=CLUSTER)["cluster"]
    manifests = tmp_path / "nodes.yaml"
    manifests.write_text(yaml.safe_dump_all([nodeclass.to_dict(), pool.to_dict()]))
    pods = launched.status.capacity[wk.RESOURCE_PODS]  # type: ignore[union-attr,index]  # the type's pod capacity
    args = ["userdata", "-f", str(manifests), "--cluster-name", CLUSTER, "--endpoint", cluster["endpoint"]]
    args += ["--ca", cluster["certificateAuthority"]["data"], "--region", REGION, "--max-pods", str(pods)]
    args += ["--cidr", cluster["kubernetesNetworkConfig"]["serviceIpv4Cidr"], "--capacity-type", "spot", "-o", "json"]
    capsys.readouterr()
    assert main(args) == 0
    preview = json.loads(capsys.readouterr().out)

    user_data = base64.b64decode(launched_data["UserData"]).decode()
    assert preview["userData"] == user_data
    assert "team" in user_data and "dedicated" in user_data and "example.com/not-ready" in user_data
    assert ("max-pods = 42" if family == "Bottlerocket" else f"maxPods: {pods}") in user_data
    assert preview["launchTemplateData"]["ImageId"] == IMAGE_PLACEHOLDER
    assert {**preview["launchTemplateData"], "ImageId": launched_data["ImageId"]} == {
        k: v for k, v in launched_data.items() if k != "UserData"
    }
