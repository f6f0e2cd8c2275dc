"""Request bodies as the API server decodes them: JSON (every patch type is JSON too), YAML (server-side apply) and
the protobuf Evictions and DeleteOptions of ``kubectl drain`` (``protobuf``); anything else is 415 Unsupported Media
Type with the Status the API server sends, never a decoder's exception."""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from autoscaler_dev.kube_emulator import protobuf
from autoscaler_dev.kube_emulator.errors import ApiError

_JSON_TYPES = (
    "application/json",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
)
_YAML_TYPES = ("application/yaml", "application/apply-patch+yaml")


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def unsupported(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format ("{content_type}") - '
        "accepted media types include: " + ", ".join((*_JSON_TYPES, *_YAML_TYPES)),
    )


def decode(raw: bytes, content_type: str) -> Any:
    """The body as JSON values; an empty body is ``{}``. 415 for a format the emulator does not read, 400 for a
    body that does not parse (with the decoder's message, as the API server gives it)."""
    if not raw:
        return {}
    kind = media_type(content_type) or "application/json"
    try:
        if kind in _JSON_TYPES:
            body = orjson.loads(raw)
        elif kind in _YAML_TYPES:
            body = yaml.safe_load(raw.decode())
        elif kind == protobuf.MEDIA_TYPE:
            body = protobuf.decode(raw)
        else:
            raise unsupported(content_type)
    except (ValueError, yaml.YAMLError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ApiError(400, "BadRequest", f"the body of the request could not be decoded: {error}") from None
    if not isinstance(body, (dict, list)):
        raise ApiError(400, "BadRequest", "the request body must be a JSON object")
    return body
