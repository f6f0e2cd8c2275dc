"""CapacityBuffers (autoscaling.x-k8s.io): headroom kept provisioned as virtual pods in the scheduling simulation.

``demand`` resolves a buffer's pod shape and chunk count and builds its virtual pods (pure); ``status`` says where
a pass put them and the conditions that follow (pure); ``controller`` reads buffers through the Cluster port and
writes their status. The provisioner schedules the virtual pods after the real ones (so a real pod takes the room
first); disruption counts them as demand (``disruption.rescheduling``).
"""

from autoscaler.controllers.buffers.controller import BufferController, BufferReport, Buffers, read_buffers
from autoscaler.controllers.buffers.demand import buffer_of

__all__ = ["BufferController", "BufferReport", "Buffers", "buffer_of", "read_buffers"]
