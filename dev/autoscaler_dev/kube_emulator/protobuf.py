"""The few protobuf bodies kubectl sends whatever the server prefers: ``kubectl drain`` posts its Evictions and
DeleteOptions as ``application/vnd.kubernetes.protobuf`` (and does not retry in JSON on 415), ``kubectl auth
can-i`` its access reviews. Those kinds are decoded here from the wire format (Kubernetes' envelope: ``k8s\\0``
then a runtime.Unknown holding the type and the raw message); any other protobuf body is 415, as for any format
the emulator does not read. Only the fields the emulator acts on are read; answers go back as JSON, which kubectl
accepts."""

from __future__ import annotations

from typing import Any

from autoscaler_dev.kube_emulator.errors import ApiError

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"
Fields = dict[int, list[Any]]


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("truncated varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> Fields:
    """One message's fields by number: varints as ints, length-delimited values as bytes."""
    found: Fields = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            length, at = _varint(data, at)
            value, at = data[at : at + length], at + length
        elif wire == 1:
            value, at = data[at : at + 8], at + 8
        elif wire == 5:
            value, at = data[at : at + 4], at + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        found.setdefault(number, []).append(value)
    return found


def _text(message: Fields, number: int) -> str | None:
    values = message.get(number)
    return bytes(values[-1]).decode() if values else None


def _delete_options(message: Fields) -> dict[str, Any]:
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if 1 in message:
        options["gracePeriodSeconds"] = message[1][-1]
    if 2 in message:
        preconditions = fields(message[2][-1])
        options["preconditions"] = {
            k: v for k, v in (("uid", _text(preconditions, 1)), ("resourceVersion", _text(preconditions, 2))) if v
        }
    if 4 in message:
        options["propagationPolicy"] = _text(message, 4)
    if 5 in message:
        options["dryRun"] = [bytes(v).decode() for v in message[5]]
    return options


_RESOURCE_ATTRIBUTES = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}
_NON_RESOURCE_ATTRIBUTES = {1: "path", 2: "verb"}
_ACCESS_REVIEWS = ("SelfSubjectAccessReview", "SubjectAccessReview")


def _strings(message: Fields, names: dict[int, str]) -> dict[str, str]:
    return {name: text for number, name in names.items() if (text := _text(message, number)) is not None}


def _access_review(api_version: str, kind: str, message: Fields) -> dict[str, Any]:
    """A review's ``spec`` (what it asks; the authorizer fills in the status)."""
    spec = fields(message.get(2, [b""])[-1])
    asked: dict[str, Any] = {}
    if 1 in spec:
        asked["resourceAttributes"] = _strings(fields(spec[1][-1]), _RESOURCE_ATTRIBUTES)
    if 2 in spec:
        asked["nonResourceAttributes"] = _strings(fields(spec[2][-1]), _NON_RESOURCE_ATTRIBUTES)
    if kind == "SubjectAccessReview":
        asked["user"] = _text(spec, 3) or ""
        asked["groups"] = [bytes(g).decode() for g in spec.get(4, [])]
    return {"apiVersion": api_version, "kind": kind, "spec": asked}


def decode(raw: bytes) -> dict[str, Any]:
    """An Eviction, DeleteOptions or access review sent as protobuf, as its JSON; 415 for any other kind or a
    malformed body."""
    try:
        if not raw.startswith(_MAGIC):
            raise ValueError("no Kubernetes protobuf envelope")
        unknown = fields(raw[len(_MAGIC) :])
        type_meta = fields(unknown.get(1, [b""])[-1])
        api_version, kind = _text(type_meta, 1) or "", _text(type_meta, 2) or ""
        message = fields(unknown.get(2, [b""])[-1])
        if kind == "DeleteOptions":
            return _delete_options(message)
        if kind in _ACCESS_REVIEWS:
            return _access_review(api_version, kind, message)
        if kind == "Eviction":
            metadata = fields(message.get(1, [b""])[-1])
            eviction: dict[str, Any] = {
                "kind": "Eviction",
                "apiVersion": api_version,
                "metadata": {k: v for k, v in (("name", _text(metadata, 1)), ("namespace", _text(metadata, 3))) if v},
            }
            if 2 in message:
                eviction["deleteOptions"] = _delete_options(fields(message[2][-1]))
            return eviction
    except (ValueError, UnicodeDecodeError, IndexError):
        pass
    raise ApiError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format ("{MEDIA_TYPE}") - accepted media types include: '
        "application/json, application/yaml (and protobuf Evictions, DeleteOptions and access reviews)",
    )
