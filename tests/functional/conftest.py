"""Shared fixtures of the functional tests (defined in tests/support/). Session-scoped ones are declared only
here: one declaration per session, since the moto world's account lives in this process's moto backend."""

from tests.support.aws import moto
from tests.support.aws_fixtures import aws_world
from tests.support.kube import cluster, kube, kube_rest

__all__ = ["aws_world", "cluster", "kube", "kube_rest", "moto"]
