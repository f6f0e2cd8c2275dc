"""Lambda SnapStart hooks, registered by every function at init (``powertools``).

With SnapStart, a published version's init runs once and the sandbox is snapshotted; every cold start after
that restores the snapshot. What init left undone is paid by each restored sandbox, and whatever state init
created is shared by all of them. So:

- before the snapshot: import what the first invocation would otherwise import lazily (the ``kubernetes``
  client, about 120 ms, kept out of plain imports so the pure core and the conversion webhook never pay it).
  Nothing here opens a connection or reads credentials: those would be stale in a restored sandbox, and the
  runtime builds them on the first invocation, after the restore.
- after a restore: reseed ``random``. Every sandbox restored from one snapshot starts from the same state, so
  their retry jitter would be identical and their retries would arrive together.

The hooks are Lambda's ``snapshot_restore_py`` registries, which the Python runtime provides; elsewhere
(tests without it, local runs) nothing is registered.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Sequence

# Imported on first use by autoscaler.kube.connect; what a function that talks to the cluster will need.
KUBERNETES_CLIENT = ("kubernetes.client", "kubernetes.config")


def register(preload: Sequence[str] = KUBERNETES_CLIENT) -> bool:
    """Register the hooks; False when the runtime has no SnapStart hook registry."""
    try:
        from snapshot_restore_py import register_after_restore, register_before_snapshot
    except ImportError:
        return False
    register_before_snapshot(before_snapshot, tuple(preload))
    register_after_restore(after_restore)
    return True


def before_snapshot(modules: Sequence[str]) -> None:
    for module in modules:
        importlib.import_module(module)


def after_restore() -> None:
    random.seed()  # from os.urandom: distinct in every restored sandbox
