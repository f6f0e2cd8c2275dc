"""The independent evaluator (``tools.crd_eval``) bound to our generated CRDs: their OpenAPI schema (jsonschema)
and CEL rules (cel-python) on an object, as the API server would."""

from __future__ import annotations

import functools
from typing import Any

from autoscaler.crds.conversion import with_conversion
from autoscaler.crds.generate import CRD_KINDS, crd_manifest
from tools import crd_eval


@functools.cache
def schema_for(kind: str, version: str | None = None) -> dict[str, Any]:
    """The OpenAPI schema the CRD of ``kind`` serves at ``version`` (default its own; v1beta1 of a converted kind:
    the conversion CRD's)."""
    crd = next(c for c in CRD_KINDS if c.kind == kind)
    manifest = crd_manifest(crd)
    if version is not None and version != crd.version:
        manifest = with_conversion(manifest, crd, "https://conversion.example.com/")
    return crd_eval.served_schema(manifest, version or crd.version)


def cel_failures(kind: str, obj: Any, old: Any = None, version: str | None = None) -> list[tuple[str, str]]:
    """(path, message) of every CEL rule that rejects ``obj``; transition rules only when ``old`` is given."""
    return crd_eval.cel_failures(schema_for(kind, version), obj, old)


def schema_failures(kind: str, obj: Any, version: str | None = None) -> list[tuple[str, str]]:
    """(path, message) of every OpenAPI keyword (type, pattern, enum, bounds, required) ``obj`` breaks."""
    return crd_eval.schema_failures(schema_for(kind, version), obj)
