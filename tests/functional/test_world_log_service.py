"""In the embedded world every function shares one process and the core's loggers: each line a core module logs
during an invocation carries the invoked function's ``service``, as it would in its own Lambda (not the service of
whichever function was built last)."""

from __future__ import annotations

import io
import json
import logging
from types import SimpleNamespace
from typing import Any

from autoscaler_dev.world.functions import Functions


def test_core_log_lines_carry_the_service_of_the_function_invoked() -> None:
    stream = io.StringIO()
    functions = Functions(log=stream)
    core = logging.getLogger("autoscaler.controllers.somewhere")

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        core.warning("a core line for %s", event["function"])
        return {}

    for name in ("provisioner", "disruption", "provisioner"):
        functions.modules[name] = SimpleNamespace(handler=handler, tools=functions.modules[name].tools)
        functions.invoke(name, {"function": name})
    lines = [json.loads(line) for line in stream.getvalue().splitlines() if "a core line" in line]
    assert [(line["message"], line["service"]) for line in lines] == [
        ("a core line for provisioner", "provisioner"),
        ("a core line for disruption", "disruption"),
        ("a core line for provisioner", "provisioner"),
    ]
