"""The development machinery of Serverless Karpenter: never shipped to Lambda or in the forwarder's image.

Installed (editable, from ``dev/``) with the project's dev extras, which bring what it needs (moto, aiohttp):
``pip install -e '.[dev]'`` or ``make .venv``. The shipped ``autoscaler`` package never imports it (an
import-linter contract); the ``autoscaler`` command finds the sub-commands that need it by module name.

- ``harness``: the real Lambda handlers loaded and invoked in this process as Lambda would (the one harness).
- ``kube_emulator``: a Kubernetes API server in memory, over HTTP.
- ``world``: the embedded world (moto, the emulator, the stack's resources, actors, faults) and its scenarios.
- ``scheduling_validator``: an independent oracle that checks a scheduling result.
- ``commands``: ``autoscaler simulate`` and ``autoscaler invoke``.
- ``checkout``: where the checkout's ``functions/`` and ``events/`` are.
"""
