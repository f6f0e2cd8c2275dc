"""CustomResourceDefinitions generated from the v1 models (``autoscaler crds``)."""

from autoscaler.crds.generate import CRD_KINDS, crd_manifest
from autoscaler.crds.render import write_crds

__all__ = ["CRD_KINDS", "crd_manifest", "write_crds"]
