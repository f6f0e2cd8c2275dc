"""The emulator's API failures: an error with its HTTP code, rendered as the ``Status`` object the API server sends,
and the two every resource meets (not found, conflict)."""

from __future__ import annotations

from typing import Any

from autoscaler_dev.kube_emulator.resources import Obj, ResourceType


class ApiError(Exception):
    """An API failure, rendered as a ``Status`` object with its HTTP code."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details
        self.headers = headers

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(resource: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{resource.key} "{name}" not found', {"name": name, "kind": resource.plural})


def conflict(resource: ResourceType, name: str, why: str) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {resource.key} "{name}": {why}')
