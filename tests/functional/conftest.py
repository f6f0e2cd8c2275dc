"""Shared fixtures of the functional tests (defined in tests/support/)."""

from tests.support.aws import moto
from tests.support.kube import cluster, kube, kube_rest

__all__ = ["cluster", "kube", "kube_rest", "moto"]
