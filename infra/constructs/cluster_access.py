"""Who may do what in the cluster: the node role, EKS access entries, the forwarder's Pod Identity.

- Nodes join with `KarpenterNodeRole-<cluster>` (created unless an existing role is given) and an EC2_LINUX
  access entry (skipped for an existing role, which usually has one already).
- Each function role that talks to the API server gets a STANDARD access entry mapping it to the Kubernetes
  group KUBERNETES_GROUP, which `infra/manifests/rbac.yaml` binds to least-privilege ClusterRoles.
- The forwarder's service account gets, through EKS Pod Identity, a role that can only put events on the bus;
  with the cluster's OIDC issuer (`-c forwarderOidcIssuer`), the same role is trusted through IRSA too, for a
  forwarder on Fargate, which has no Pod Identity agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Aws
from aws_cdk import aws_eks as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.constructs.autoscaler_function import AutoscalerFunction, tag_role

KUBERNETES_GROUP = "serverless-karpenter"
NODE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
)


class NodeRole(Construct):
    """The role instances launch with: the given one, or `KarpenterNodeRole-<cluster>` with EKS's node policies."""

    def __init__(
        self, scope: Construct, construct_id: str, *, role_name: str, existing_arn: str | None, tags: Mapping[str, str]
    ) -> None:
        super().__init__(scope, construct_id)
        self.created = existing_arn is None
        if existing_arn is not None:
            self.role: iam.IRole = iam.Role.from_role_arn(self, "Existing", existing_arn, mutable=False)
            return
        self.role = iam.Role(
            self,
            "Role",
            role_name=role_name,
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description="Nodes launched by serverless-karpenter",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(name) for name in NODE_MANAGED_POLICIES],
        )
        tag_role(self.role, tags)


class ClusterAccess(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        node_role: NodeRole,
        functions: Sequence[AutoscalerFunction],
        bus: events.IEventBus,
        forwarder_namespace: str,
        forwarder_service_account: str,
        role_tags: Mapping[str, str],
        oidc_issuer: str | None = None,
        forwarder: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        if node_role.created:
            eks.CfnAccessEntry(
                self, "Nodes", cluster_name=cluster_name, principal_arn=node_role.role.role_arn, type="EC2_LINUX"
            )
        self.function_entries = [
            eks.CfnAccessEntry(
                self,
                function.node.id,
                cluster_name=cluster_name,
                principal_arn=function.role.role_arn,
                type="STANDARD",
                kubernetes_groups=[KUBERNETES_GROUP],
            )
            for function in functions
            if function.spec.kubernetes
        ]
        self.forwarder_role: iam.Role | None = None
        if not forwarder:  # -c forwarder=none: nothing in the cluster puts events on the bus
            return

        pod_identity = iam.SessionTagsPrincipal(iam.ServicePrincipal("pods.eks.amazonaws.com")).with_conditions(
            {
                "StringEquals": {
                    "aws:RequestTag/eks-cluster-name": cluster_name,
                    "aws:RequestTag/kubernetes-namespace": forwarder_namespace,
                    "aws:RequestTag/kubernetes-service-account": forwarder_service_account,
                }
            }
        )
        principals: list[iam.IPrincipal] = [pod_identity]
        if oidc_issuer is not None:
            subject = f"system:serviceaccount:{forwarder_namespace}:{forwarder_service_account}"
            provider = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
                self, "ClusterOidc", f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:oidc-provider/{oidc_issuer}"
            )
            principals.append(
                iam.OpenIdConnectPrincipal(provider).with_conditions(
                    {
                        "StringEquals": {
                            f"{oidc_issuer}:sub": subject,
                            f"{oidc_issuer}:aud": "sts.amazonaws.com",
                        }
                    }
                )
            )
        self.forwarder_role = iam.Role(
            self,
            "ForwarderRole",
            description="serverless-karpenter forwarder: put cluster events on the bus",
            assumed_by=iam.CompositePrincipal(*principals),
        )
        tag_role(self.forwarder_role, role_tags)
        self.forwarder_role.add_to_policy(
            iam.PolicyStatement(sid="PutClusterEvents", actions=["events:PutEvents"], resources=[bus.event_bus_arn])
        )
        eks.CfnPodIdentityAssociation(
            self,
            "Forwarder",
            cluster_name=cluster_name,
            namespace=forwarder_namespace,
            service_account=forwarder_service_account,
            role_arn=self.forwarder_role.role_arn,
        )
