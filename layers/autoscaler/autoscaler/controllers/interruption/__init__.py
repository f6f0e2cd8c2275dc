"""The interruption controller: EC2 spot warnings, rebalance recommendations, state changes and AWS Health
scheduled changes, turned into cordons, NodeClaim deletions, unavailable offerings and events. Pure."""

from autoscaler.controllers.interruption.controller import DeadLetters, InterruptionController, QueuedMessage
from autoscaler.controllers.interruption.index import FRESH_PER_BATCH, IndexPolicy
from autoscaler.controllers.interruption.messages import MessageKind, parse_body
from autoscaler.controllers.interruption.metrics import metric_points
from autoscaler.controllers.interruption.report import BatchReport, MessageOutcome, Status

__all__ = [
    "FRESH_PER_BATCH",
    "BatchReport",
    "DeadLetters",
    "IndexPolicy",
    "InterruptionController",
    "MessageKind",
    "MessageOutcome",
    "QueuedMessage",
    "Status",
    "metric_points",
    "parse_body",
]
