"""The AWS provider's node repair policies, as Karpenter v1.14.1's AWS provider returns them. Pure.

The kubelet's ``Ready`` (False or Unknown, 30 minutes) and the EKS node monitoring agent's conditions (False):
accelerated hardware 10 minutes (a GPU or Neuron fault idles an expensive node), storage, networking, kernel and
container runtime 30 minutes.
"""

from __future__ import annotations

from datetime import timedelta

from autoscaler.cloudprovider.repair import RepairPolicy

_HALF_HOUR = timedelta(minutes=30)

REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", _HALF_HOUR),
    RepairPolicy("Ready", "Unknown", _HALF_HOUR),
    RepairPolicy("AcceleratedHardwareReady", "False", timedelta(minutes=10)),
    RepairPolicy("StorageReady", "False", _HALF_HOUR),
    RepairPolicy("NetworkingReady", "False", _HALF_HOUR),
    RepairPolicy("KernelReady", "False", _HALF_HOUR),
    RepairPolicy("ContainerRuntimeReady", "False", _HALF_HOUR),
)
