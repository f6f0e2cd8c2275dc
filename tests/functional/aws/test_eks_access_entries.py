"""EKS access entries as the moto world serves them (moto has none): what ``cdk deploy`` creates for each function
role and ``autoscaler doctor`` reads, with EKS's errors."""

from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from autoscaler_dev.world.aws_world import CLUSTER, AWSWorld


def _code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_an_entry_is_created_read_updated_listed_and_deleted(aws_world: AWSWorld) -> None:
    eks = aws_world.client("eks")
    principal = f"arn:aws:iam::123456789012:role/functions-{uuid.uuid4().hex[:8]}"
    created = eks.create_access_entry(clusterName=CLUSTER, principalArn=principal, kubernetesGroups=["sk"])
    assert created["accessEntry"]["type"] == "STANDARD" and created["accessEntry"]["username"] == principal
    assert eks.describe_access_entry(clusterName=CLUSTER, principalArn=principal)["accessEntry"][
        "kubernetesGroups"
    ] == ["sk"]
    eks.update_access_entry(clusterName=CLUSTER, principalArn=principal, kubernetesGroups=["other"])
    assert eks.describe_access_entry(clusterName=CLUSTER, principalArn=principal)["accessEntry"][
        "kubernetesGroups"
    ] == ["other"]
    assert principal in eks.list_access_entries(clusterName=CLUSTER)["accessEntries"]
    with pytest.raises(ClientError) as twice:
        eks.create_access_entry(clusterName=CLUSTER, principalArn=principal)
    assert _code(twice) == "ResourceInUseException"
    eks.delete_access_entry(clusterName=CLUSTER, principalArn=principal)
    with pytest.raises(ClientError) as gone:
        eks.describe_access_entry(clusterName=CLUSTER, principalArn=principal)
    assert _code(gone) == "ResourceNotFoundException"


def test_system_groups_and_unknown_clusters_are_refused(aws_world: AWSWorld) -> None:
    eks = aws_world.client("eks")
    with pytest.raises(ClientError) as reserved:
        eks.create_access_entry(
            clusterName=CLUSTER, principalArn="arn:aws:iam::123456789012:role/x", kubernetesGroups=["system:masters"]
        )
    assert _code(reserved) == "InvalidParameterException"
    with pytest.raises(ClientError) as missing:
        eks.list_access_entries(clusterName="no-such-cluster")
    assert _code(missing) == "ResourceNotFoundException"
