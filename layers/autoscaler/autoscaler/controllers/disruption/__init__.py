"""The disruption function's controller: drift detection, expiration, emptiness and consolidation within budgets.

``DisruptionController(cluster, cloud, unavailable).run()`` is one pass; ``assess()`` decides without writing.
See docs/disruption.md.
"""

from autoscaler.controllers.disruption.assessment import Assessment, DisruptionCloud
from autoscaler.controllers.disruption.controller import DisruptionController, DisruptionResult

__all__ = ["Assessment", "DisruptionCloud", "DisruptionController", "DisruptionResult"]
