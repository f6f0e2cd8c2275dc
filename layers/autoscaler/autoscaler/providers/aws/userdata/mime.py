"""MIME multi-part user data (cloud-init's format): read the user's parts, write ours after them. Pure.

The output matches what EKS nodes expect from Karpenter: boundary ``//``, ``\\n`` line endings, each
part with its headers, the user's parts first.
"""

from __future__ import annotations

from dataclasses import dataclass
from email import message_from_string
from email.message import Message

from autoscaler.providers.aws.userdata.options import UserDataError

SHELL_SCRIPT = 'text/x-shellscript; charset="us-ascii"'
NODE_CONFIG = "application/node.eks.aws"
BOUNDARY = "//"


@dataclass(frozen=True)
class Part:
    """One part: its headers in order (Content-Type first) and its body as written."""

    headers: tuple[tuple[str, str], ...]
    body: str

    @classmethod
    def of(cls, content_type: str, body: str) -> Part:
        return cls((("Content-Type", content_type),), body)

    @property
    def content_type(self) -> str:
        return next((v for k, v in self.headers if k.lower() == "content-type"), "")


def parse(text: str) -> list[Part]:
    """The parts of a multipart MIME document. Raises UserDataError when it is not one."""
    message = message_from_string(text.lstrip())
    if message.defects and not message.is_multipart():
        raise UserDataError(f"userData is not valid MIME: {message.defects[0]!r}")
    if not message.get("Content-Type"):
        raise UserDataError("userData looks like MIME but has no Content-Type header")
    if not message.is_multipart():
        raise UserDataError(f"userData MIME must be multipart (multipart/mixed), got {message.get_content_type()!r}")
    parts = []
    for part in message.get_payload():
        assert isinstance(part, Message)
        body = part.get_payload(decode=False)
        if not isinstance(body, str):
            raise UserDataError("nested multipart parts in userData are not supported")
        parts.append(Part(tuple((k, str(v)) for k, v in part.items()), body))
    return parts


def serialize(parts: list[Part]) -> str:
    """A multipart/mixed document of ``parts``."""
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for part in parts:
        lines.append(f"--{BOUNDARY}")
        lines.extend(f"{key}: {value}" for key, value in part.headers)
        lines.append("")
        lines.append(part.body)
    lines.append(f"--{BOUNDARY}--")
    return "\n".join(lines) + "\n"
