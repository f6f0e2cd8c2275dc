"""SnapStart hooks: what Lambda's runtime calls before the snapshot and after each restore, run in a fresh
interpreter as a published version's init is (the hooks live in snapshot_restore_py's registries)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Import a handler as Lambda does, then play the runtime: the snapshot hooks, then two restores from one state.
SANDBOX = """
import importlib.util, json, random, sys
import snapshot_restore_py as registry
spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))
before = "kubernetes.client" in sys.modules
for hook, args, kwargs in registry.get_before_snapshot():
    hook(*args, **kwargs)
after = "kubernetes.client" in sys.modules
state = random.getstate()
draws = []
for _ in range(2):
    random.setstate(state)  # each restored sandbox starts from the snapshot's state
    for hook, args, kwargs in registry.get_after_restore():
        hook(*args, **kwargs)
    draws.append(random.random())
print(json.dumps({"before": before, "after": after, "draws": draws}))
"""


def sandbox(function: str) -> dict[str, object]:
    env = {"CLUSTER_NAME": "snap", "AWS_REGION": "us-west-2", "PATH": "/usr/bin:/bin"}
    handler = str(ROOT / "functions" / function / "handler.py")
    out = subprocess.run(
        [sys.executable, "-c", SANDBOX, handler], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


def test_a_function_that_talks_to_the_cluster_imports_its_client_before_the_snapshot() -> None:
    found = sandbox("interruption")
    assert found["before"] is False  # not at import: the pure core and the conversion webhook never pay for it
    assert found["after"] is True  # but in the snapshot, so that no restored sandbox pays for it either


def test_sandboxes_restored_from_one_snapshot_draw_different_retry_jitter() -> None:
    first, second = sandbox("termination")["draws"]  # type: ignore[misc]
    assert first != second


def test_the_conversion_webhook_preloads_nothing() -> None:
    assert sandbox("conversion")["after"] is False
