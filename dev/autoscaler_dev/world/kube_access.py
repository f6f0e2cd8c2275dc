"""Who is who in the embedded world's cluster, and what each may do: the identities the world issues tokens
for, the RBAC manifests it enforces (this repository's ``infra/manifests`` unless ``--rbac`` names others) and
the flow control every caller meets.

- the functions: the user their EKS access entry maps their role to, in the group ``serverless-karpenter``
  (``infra/constructs/cluster_access.py``), through a kubeconfig the world writes for them;
- the forwarder: its ServiceAccount ``kube-system/serverless-karpenter-forwarder``;
- the kubelets (``system:node:<name>``, through the Node authorizer), the kube-scheduler and
  kube-controller-manager (its informers as ``system:kube-controller-manager``, each controller's writes with its
  service account), as the bootstrap policy knows them: the world's actors (``actors``, ``controllers``) act as
  these through ``ActingAs``;
- anyone with the world's kubeconfig (``--serve``, kubectl, which sends no credentials over plain http): the
  cluster's admin, who may impersonate (``kubectl auth can-i --as ... --as-group ...``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from autoscaler_dev.kube_emulator import authentication as authn
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.enforcement import ActingAs, enforce
from autoscaler_dev.kube_emulator.flowcontrol import FlowControl, FlowSettings, VirtualTime
from autoscaler_dev.kube_emulator.gate import KubeGate
from autoscaler_dev.world.aws_world import ACCOUNT

REPOSITORY = Path(__file__).resolve().parents[3]
DEFAULT_RBAC = (REPOSITORY / "infra/manifests/rbac.yaml", REPOSITORY / "infra/manifests/forwarder/rbac.yaml")
FUNCTIONS_GROUP = "serverless-karpenter"  # infra.constructs.cluster_access.KUBERNETES_GROUP (a test keeps them equal)
FUNCTIONS = authn.authenticated(
    f"arn:aws:sts::{ACCOUNT}:assumed-role/serverless-karpenter-functions/embedded", FUNCTIONS_GROUP
)
FORWARDER = authn.service_account("kube-system", "serverless-karpenter-forwarder")
SCHEDULER = authn.authenticated("system:kube-scheduler")
CONTROLLER_MANAGER = authn.authenticated("system:kube-controller-manager")  # its shared informers' reads


def controller(name: str) -> authn.User:
    """A kube-controller-manager controller's own credentials (``--use-service-account-credentials``, as EKS)."""
    return authn.service_account("kube-system", name)


POD_GC = controller("pod-garbage-collector")
GARBAGE_COLLECTOR = controller("generic-garbage-collector")
CLOUD_NODE_LIFECYCLE = controller("cloud-node-lifecycle-controller")


class RBACManifestError(ValueError):
    """An ``--rbac`` path that cannot be read as Kubernetes manifests."""


def load_manifests(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every document of every YAML file at ``paths`` (a directory: its ``*.yaml`` files, recursively)."""
    documents: list[dict[str, Any]] = []
    for path in paths:
        files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
        for file in files:
            try:
                documents += [d for d in yaml.safe_load_all(file.read_text()) if isinstance(d, dict)]
            except (OSError, yaml.YAMLError) as error:
                raise RBACManifestError(f"{file}: {error}") from error
    return documents


@dataclass(frozen=True)
class KubeEnforcement:
    """What a world enforces on the Kubernetes side: RBAC (from ``rbac``, the default manifests when empty) and
    priority and fairness. ``KubeEnforcement.off()`` trusts everyone, as the emulator does by default."""

    rbac: bool = True
    rbac_paths: Sequence[Path] = ()
    flow: FlowSettings | None = field(default_factory=FlowSettings)

    @classmethod
    def off(cls) -> KubeEnforcement:
        return cls(rbac=False, flow=None)


@dataclass
class KubeAccess:
    """A world's gate and the tokens and acting identities it issued."""

    kube: KubeEmulator
    gate: KubeGate | None
    directory: Path

    @classmethod
    def install(cls, kube: KubeEmulator, enforcement: KubeEnforcement, clock: VirtualTime) -> KubeAccess:
        directory = Path(tempfile.mkdtemp(prefix="autoscaler-kube-access-"))
        if not enforcement.rbac and enforcement.flow is None:
            return cls(kube, None, directory)
        manifests = load_manifests(enforcement.rbac_paths or DEFAULT_RBAC) if enforcement.rbac else []
        flow = FlowControl(enforcement.flow, clock) if enforcement.flow is not None else None
        authenticator = authn.Authenticator(unauthenticated=authn.ADMIN)  # kubectl over plain http: no credentials
        gate = enforce(kube, manifests, flow=flow, authorize=enforcement.rbac, authenticator=authenticator)
        return cls(kube, gate, directory)

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def acting_as(self, user: authn.User) -> ActingAs:
        return ActingAs(self.kube, self.gate, user)

    def kubeconfig(self, user: authn.User) -> Path:
        """A kubeconfig for ``user`` (the admin's token when nothing is enforced: it is ignored then)."""
        token = self.gate.authenticator.issue(user) if self.gate is not None else authn.DEFAULT_TOKEN
        config = self.kube.kubeconfig()
        config["users"][0]["user"]["token"] = token
        path = self.directory / f"{abs(hash(user.name)):x}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return path

    def summary(self) -> dict[str, Any]:
        """``rbac_denied`` (and the first denials), ``kube_throttled``: numbers for the world's summary."""
        gate = self.gate
        return {
            "rbac_denied": sum(gate.denied.values()) if gate is not None else 0,
            "rbac_first_denials": [d.as_dict() for d in gate.denials] if gate is not None else [],
            "kube_throttled": gate.throttled if gate is not None else 0,
        }
