"""How an EC2NodeClass selects subnets, security groups, AMIs, capacity reservations and a placement group.

Terms of a list are ORed; the fields of a term ANDed. The rules are Karpenter v1.14.1's, quirks included: its
subnet, security group and capacity reservation rules forbid mixing ``id`` with other fields only when *every*
term mixes them (``!self.all(...)``), so a list where one term does is admitted; its AMI rules use
``exists`` and forbid it in any term.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field

from autoscaler.apis.rules import ApiModel, Rule, has

AMIFamily = Literal["AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"]
# Alias family (as written in `alias: family@version`) -> amiFamily.
ALIAS_FAMILIES: dict[str, AMIFamily] = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
WINDOWS_ALIASES = ("windows2019", "windows2022", "windows2025")
UBUNTU_REMOVED = (
    "the Ubuntu AMI family was removed in Karpenter v1: pin your Ubuntu EKS AMI in amiSelectorTerms "
    "(by id, or by name and owner) with amiFamily: AL2, whose bootstrap script works on Ubuntu, or use "
    "amiFamily: Custom with your own userData"
)

Tags = Annotated[dict[str, str], Field(max_length=20)]
_NON_EMPTY_TAGS = Rule(
    "empty tag keys or values aren't supported",
    "self.all(k, k != '' && self[k] != '')",
    lambda tags: all(k and v for k, v in tags.items()),
)
SelectorTags = Annotated[Tags, _NON_EMPTY_TAGS]


def alias_family(alias: str) -> str:
    return alias.split("@", 1)[0]


_alias_families = ",".join(f"'{f}'" for f in ALIAS_FAMILIES)
_windows = ",".join(f"'{f}'" for f in WINDOWS_ALIASES)
Alias = Annotated[
    str,
    Field(max_length=30),
    Rule(UBUNTU_REMOVED, None, lambda a: alias_family(a).lower() != "ubuntu"),
    Rule(
        "'alias' is improperly formatted, must match the format 'family@version'",
        "self.matches('^[a-zA-Z0-9]+@.+$')",
        lambda a: bool(re.match(r"^[a-zA-Z0-9]+@.+$", a)),
    ),
    Rule(
        "family is not supported, must be one of the following: " + ", ".join(f"'{f}'" for f in ALIAS_FAMILIES),
        f"self.split('@')[0] in [{_alias_families}]",
        lambda a: alias_family(a) in ALIAS_FAMILIES,
    ),
    Rule(
        "windows families may only specify version 'latest'",
        f"self.split('@')[0] in [{_windows}] ? self.split('@')[1] == 'latest' : true",
        lambda a: alias_family(a) not in WINDOWS_ALIASES or a.split("@", 1)[1] == "latest",
    ),
]


class SubnetSelectorTerm(ApiModel):
    tags: SelectorTags | None = None
    id: Annotated[str, Field(pattern=r"subnet-[0-9a-z]+")] | None = None


class SecurityGroupSelectorTerm(ApiModel):
    tags: SelectorTags | None = None
    id: Annotated[str, Field(pattern=r"sg-[0-9a-z]+")] | None = None
    name: str | None = None


class AMISelectorTerm(ApiModel):
    alias: Alias | None = None
    tags: SelectorTags | None = None
    id: Annotated[str, Field(pattern=r"ami-[0-9a-z]+")] | None = None
    name: str | None = None
    owner: str | None = None
    # An SSM parameter (name or ARN) holding an AMI id, resolved like Karpenter's alias parameters.
    ssm_parameter: str | None = Field(default=None, alias="ssmParameter")


class CapacityReservationSelectorTerm(ApiModel):
    """On-Demand Capacity Reservations or Capacity Blocks to launch into, by id or by tags (and owner)."""

    tags: SelectorTags | None = None
    id: Annotated[str, Field(pattern=r"^cr-[0-9a-z]+$")] | None = None
    owner_id: Annotated[str, Field(pattern=r"^[0-9]{12}$")] | None = Field(default=None, alias="ownerID")
    instance_match_criteria: Literal["open", "targeted"] | None = Field(default=None, alias="instanceMatchCriteria")


class PlacementGroupSelector(ApiModel):
    """The placement group every instance of the class launches into, by name or id."""

    __rules__ = (
        Rule(
            "expected at least one, got none, ['name', 'id']",
            "has(self.name) || has(self.id)",
            lambda s: has(s.name) or has(s.id),
        ),
        Rule(
            "'name' and 'id' are mutually exclusive",
            "!(has(self.name) && has(self.id))",
            lambda s: not (has(s.name) and has(s.id)),
        ),
    )

    name: Annotated[str, Field(min_length=1)] | None = None
    id: Annotated[str, Field(pattern=r"^pg-[0-9a-z]+$")] | None = None


def _field(term: ApiModel, wire_name: str) -> object:
    """A term's field by its name in the manifest (``ownerID`` is ``owner_id``)."""
    for name, info in type(term).model_fields.items():
        if (info.alias or name) == wire_name:
            return getattr(term, name)
    raise AttributeError(wire_name)


def exclusive_fields(field: str, others: tuple[str, ...], message: str, *, when_every_term: bool = False) -> Rule:
    """``field`` may not share a term with any of ``others``: in any term, or (``when_every_term``, Karpenter's
    quirk) only in all of them at once (so an empty list fails too, as ``!self.all`` does in CEL)."""
    cel_others = " || ".join(f"has(x.{o})" for o in others)
    if len(others) > 1:
        cel_others = f"({cel_others})"

    def mixes(term: ApiModel) -> bool:
        return has(_field(term, field)) and any(has(_field(term, o)) for o in others)

    if when_every_term:
        return Rule(message, f"!self.all(x, has(x.{field}) && {cel_others})", lambda terms: not all(map(mixes, terms)))
    return Rule(message, f"!self.exists(x, has(x.{field}) && {cel_others})", lambda terms: not any(map(mixes, terms)))


def mixing_message(field: str, where: str) -> str:
    return f"'{field}' is mutually exclusive, cannot be set with a combination of other fields in {where}"


def at_least_one_field(fields: tuple[str, ...]) -> Rule:
    names = ", ".join(f"'{f}'" for f in fields)
    return Rule(
        f"expected at least one, got none, [{names}]",
        "self.all(x, " + " || ".join(f"has(x.{f})" for f in fields) + ")",
        lambda terms: all(any(has(_field(t, f)) for f in fields) for t in terms),
    )


def _not_empty(field: str) -> Rule:
    return Rule(f"{field} cannot be empty", "self.size() != 0", lambda terms: len(terms) != 0)


SubnetTerms = Annotated[
    list[SubnetSelectorTerm],
    Field(max_length=30),
    _not_empty("subnetSelectorTerms"),
    at_least_one_field(("tags", "id")),
    exclusive_fields("id", ("tags",), mixing_message("id", "a subnet selector term"), when_every_term=True),
]
_IN_SECURITY_GROUP = "a security group selector term"
SecurityGroupTerms = Annotated[
    list[SecurityGroupSelectorTerm],
    Field(max_length=30),
    _not_empty("securityGroupSelectorTerms"),
    at_least_one_field(("tags", "id", "name")),
    exclusive_fields("id", ("tags", "name"), mixing_message("id", _IN_SECURITY_GROUP), when_every_term=True),
    exclusive_fields("name", ("tags", "id"), mixing_message("name", _IN_SECURITY_GROUP), when_every_term=True),
]
AMITerms = Annotated[
    list[AMISelectorTerm],
    Field(min_length=1, max_length=30),
    at_least_one_field(("tags", "id", "name", "alias", "ssmParameter")),
    exclusive_fields("id", ("alias", "tags", "name", "owner"), mixing_message("id", "amiSelectorTerms")),
    exclusive_fields("alias", ("id", "tags", "name", "owner"), mixing_message("alias", "amiSelectorTerms")),
    Rule(
        "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
        "!(self.exists(x, has(x.alias)) && self.size() != 1)",
        lambda terms: not (any(has(t.alias) for t in terms) and len(terms) != 1),
    ),
]
CapacityReservationTerms = Annotated[
    list[CapacityReservationSelectorTerm],
    Field(max_length=30),
    at_least_one_field(("tags", "id", "instanceMatchCriteria")),
    exclusive_fields(
        "id",
        ("tags", "ownerID", "instanceMatchCriteria"),
        "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term",
        when_every_term=True,
    ),
]
