"""What every controller reads of the cluster: one pass's read (``ClusterState``), the NodeClaims in flight and
the pods nominated to them, the EC2NodeClass index, and helpers for Nodes, NodeClaims and pods. Pure; it imports
no other controller, and every controller may import it."""

from autoscaler.controllers.state.cluster import ClusterState
from autoscaler.controllers.state.inflight import InFlight, in_flight
from autoscaler.controllers.state.nodeclasses import NodeClassIndex

__all__ = ["ClusterState", "InFlight", "NodeClassIndex", "in_flight"]
