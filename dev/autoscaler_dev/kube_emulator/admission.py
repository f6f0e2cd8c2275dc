"""Admission as an API server with our CRDs installed performs it: schema and CEL validation of NodePools,
NodeClaims and EC2NodeClasses (422 with the server's message), schema defaults applied to ``spec``, and
CustomResourceDefinitions registering the resources they define."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoscaler.apis.validation import KINDS, FieldError, InvalidObjectError, parse, validate_update
from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.resources import Obj, Registry, ResourceType, resource_from_crd

_RUNTIME = "runtime validation"  # Karpenter checks these in its controller, not at admission


def _invalid(resource: ResourceType, name: str, errors: Sequence[FieldError]) -> ApiError:
    """The API server's 422: ``Kind.group "name" is invalid: field: message`` (a bracketed list when several)."""
    shown = [str(e) for e in errors]
    summary = shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"
    causes = [{"reason": "FieldValueInvalid", "message": e.message, "field": e.path} for e in errors]
    return ApiError(
        422,
        "Invalid",
        f'{resource.kind}.{resource.group} "{name}" is invalid: {summary}',
        {"name": name, "group": resource.group, "kind": resource.kind, "causes": causes},
    )


def validate_karpenter_kinds(operation: str, resource: ResourceType, old: Obj | None, new: Obj) -> Obj:
    """Reject what the CRDs' schema and CEL rules reject; store ``spec`` with its schema defaults. Transition
    rules are checked when the spec changes (they constrain nothing else)."""
    if (resource.api_version, resource.kind) not in KINDS:
        return new
    if old is not None and old.get("spec") == new.get("spec") and old.get("status") == new.get("status"):
        return new  # only metadata changed: the schema leaves metadata to the server's own checks (the hot path)
    name = str((new.get("metadata") or {}).get("name", ""))
    try:
        model = parse(new)
    except InvalidObjectError as error:
        admission_errors = [e for e in error.errors if e.rule != _RUNTIME]
        if admission_errors:
            raise _invalid(resource, name, admission_errors) from None
        return new  # only Karpenter's runtime rules fail: the API server stores it (without defaulting)
    if operation == "UPDATE" and old is not None and old.get("spec") != new.get("spec"):
        try:
            errors = validate_update(parse(old), model)
        except InvalidObjectError:
            errors = []  # the stored object predates a rule: judge the new one alone, as CEL ratcheting does
        if errors:
            raise _invalid(resource, name, errors)
    defaulted: dict[str, Any] = model.to_dict()
    return {**new, "spec": defaulted["spec"]} if "spec" in defaulted else new


def register_custom_resources(registry: Registry) -> Any:
    """An admission step that serves the resources of every CustomResourceDefinition created or updated."""

    def admit(operation: str, resource: ResourceType, old: Obj | None, new: Obj) -> Obj:
        if resource.group == "apiextensions.k8s.io" and resource.kind == "CustomResourceDefinition":
            try:
                registry.add(resource_from_crd(new))
            except (KeyError, TypeError) as error:
                raise ApiError(
                    422, "Invalid", f'CustomResourceDefinition "{new["metadata"]["name"]}" is invalid: missing {error}'
                ) from None
        return new

    return admit
