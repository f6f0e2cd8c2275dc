"""Garbage collection: instances no NodeClaim accounts for, NodeClaims whose instance is gone, launch templates
no EC2NodeClass / AMI combination uses, instance profiles of deleted EC2NodeClasses.

``decisions`` decides (pure), ``controller`` reads the cloud and the cluster and acts through the ports,
``report`` says what a pass did and which metrics it reports. See docs/garbage-collection.md.
"""

from autoscaler.controllers.garbage_collection.controller import GarbageCollector
from autoscaler.controllers.garbage_collection.decisions import GRACE, ClusterView, Decision
from autoscaler.controllers.garbage_collection.report import Collected, Failure, Report, metric_points

__all__ = [
    "GRACE",
    "ClusterView",
    "Collected",
    "Decision",
    "Failure",
    "GarbageCollector",
    "Report",
    "metric_points",
]
