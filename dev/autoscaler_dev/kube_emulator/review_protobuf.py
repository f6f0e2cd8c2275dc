"""Access reviews sent as protobuf (``application/vnd.kubernetes.protobuf``), as kubectl sends them: the API
server's envelope (``k8s\\0`` + ``runtime.Unknown``) around a SelfSubjectAccessReview or SubjectAccessReview, read
into the JSON shape the authorizer answers. Only the fields of ``authorization.k8s.io/v1``'s specs are read; the
answer goes back as JSON, which kubectl accepts too."""

from __future__ import annotations

from typing import Any

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
Fields = dict[int, list[Any]]  # field number -> its values (bytes for length-delimited, int for varints)

_RESOURCE = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}
_NON_RESOURCE = {1: "path", 2: "verb"}


class ProtobufError(ValueError):
    """A body that is not the API server's protobuf envelope."""


def review_from_protobuf(data: bytes) -> dict[str, Any]:
    """The review's JSON form (``spec`` only: what an access review asks)."""
    if not data.startswith(MAGIC):
        raise ProtobufError("a protobuf body must start with the k8s\\0 envelope")
    unknown = _fields(data[len(MAGIC) :])
    type_meta = _fields(_one(unknown, 1))
    kind = _text(type_meta, 2)
    spec = _fields(_fields(_one(unknown, 2)).get(2, [b""])[0])
    body: dict[str, Any] = {}
    if 1 in spec:
        body["resourceAttributes"] = _strings(_fields(spec[1][0]), _RESOURCE)
    if 2 in spec:
        body["nonResourceAttributes"] = _strings(_fields(spec[2][0]), _NON_RESOURCE)
    if kind == "SubjectAccessReview":
        body["user"] = _text(spec, 3)
        body["groups"] = [g.decode() for g in spec.get(4, [])]
    return {"apiVersion": _text(type_meta, 1), "kind": kind, "spec": body}


def _strings(fields: Fields, names: dict[int, str]) -> dict[str, str]:
    return {name: _text(fields, number) for number, name in names.items() if number in fields}


def _one(fields: Fields, number: int) -> bytes:
    value = fields.get(number, [b""])[0]
    if not isinstance(value, bytes):
        raise ProtobufError(f"field {number} is not a message")
    return value


def _text(fields: Fields, number: int) -> str:
    value = fields.get(number, [b""])[0]
    return value.decode() if isinstance(value, bytes) else ""


def _fields(data: bytes) -> Fields:
    """One message's fields (wire types 0, 1, 2 and 5)."""
    fields: Fields = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, at = int.from_bytes(data[at : at + width], "little"), at + width
        else:
            raise ProtobufError(f"unsupported protobuf wire type {wire}")
        fields.setdefault(number, []).append(value)
    if at != len(data):
        raise ProtobufError("a truncated protobuf message")
    return fields


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise ProtobufError("a truncated protobuf varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
