"""What one AWS API call asks of IAM: each (action, resource ARN, context) the call is authorized for, as AWS
authorizes it, including the actions it implies.

- the resources an action touches, by ARN (``"*"`` for actions without resource-level permissions);
- ``aws:RequestTag/<key>`` and ``aws:TagKeys`` for the tags a call sets, per resource type it creates;
- ``aws:ResourceTag/<key>`` (and ``ec2:ResourceTag/<key>``) for the tags an existing resource carries;
- implied actions: CreateFleet is also ``ec2:RunInstances`` on every resource it creates or uses (instances,
  volumes, network interfaces, spot requests; the launch template, subnets, security groups, image, and the
  placement group the template places instances in),
  ``ec2:CreateTags`` with ``ec2:CreateAction`` for tags set on create, and ``iam:PassRole`` (passed to
  ``ec2.amazonaws.com``) for the role of the launch template's instance profile; CreateLaunchTemplate's tags are
  ``ec2:CreateTags`` too; AddRoleToInstanceProfile passes the role.

A call this module does not model raises :class:`NotModelled`: the gate denies it rather than guess.
Existing resources are read through :class:`Inventory` (the embedded world reads moto).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from autoscaler_dev.iam.policy import ContextValue, Environment, Request

TO_EC2 = {"iam:PassedToService": "ec2.amazonaws.com"}
# EC2 resource id prefix -> the resource type in its ARN
_EC2_TYPES = {
    "i": "instance",
    "lt": "launch-template",
    "vol": "volume",
    "eni": "network-interface",
    "fleet": "fleet",
    "sg": "security-group",
    "subnet": "subnet",
    "ami": "image",
    "sir": "spot-instances-request",
    "snap": "snapshot",
    "pg": "placement-group",
    "cr": "capacity-reservation",
}
# Calls that need no permission at all.
_UNAUTHORIZED_OK = frozenset({("sts", "GetCallerIdentity")})


class NotModelled(Exception):
    """The call's authorization is not modelled: denying it is the safe answer, and the message says what."""


@dataclass(frozen=True)
class LaunchTemplateFacts:
    id: str
    tags: Mapping[str, str]
    data: Mapping[str, Any]  # LaunchTemplateData of the version a launch uses, as DescribeLaunchTemplateVersions


@dataclass(frozen=True)
class ProfileFacts:
    arn: str
    tags: Mapping[str, str]
    role_arns: tuple[str, ...]


class Inventory(Protocol):
    """What IAM knows of the account's existing resources when it authorizes a call."""

    def ec2_tags(self, resource_id: str) -> Mapping[str, str]: ...

    def launch_template(self, spec: Mapping[str, Any]) -> LaunchTemplateFacts | None:
        """The template a LaunchTemplateSpecification names (by id or name, and version), None if none."""
        ...

    def instance_profile(self, name: str) -> ProfileFacts | None: ...


@dataclass(frozen=True)
class CallFacts:
    """The builders' view: the call, the account it is made in, and the inventory."""

    params: Mapping[str, Any]
    env: Environment
    inventory: Inventory
    base: Mapping[str, ContextValue] = field(default_factory=dict)

    def request(self, action: str, resource: str, context: Mapping[str, ContextValue] | None = None) -> Request:
        return Request(action, resource, {**self.base, **(context or {})})

    def ec2_arn(self, resource_id: str) -> str:
        kind = _EC2_TYPES.get(resource_id.split("-", 1)[0])
        if kind is None:
            raise NotModelled(f"EC2 resource id {resource_id!r} of an unknown type")
        account = "" if kind in ("image", "snapshot") else self.env.account  # Amazon's AMIs carry no account
        return f"arn:{self.env.partition}:ec2:{self.env.region}:{account}:{kind}/{resource_id}"

    def new_ec2_arn(self, kind: str) -> str:
        """A resource the call creates: its id does not exist yet (IAM matches the ARN by ``<type>/*``)."""
        return f"arn:{self.env.partition}:ec2:{self.env.region}:{self.env.account}:{kind}/new"

    def iam_arn(self, kind: str, name: str) -> str:
        return f"arn:{self.env.partition}:iam::{self.env.account}:{kind}/{name}"


def resource_tags(tags: Mapping[str, str], service: str = "") -> dict[str, ContextValue]:
    found: dict[str, ContextValue] = {f"aws:ResourceTag/{k}": v for k, v in tags.items()}
    if service:
        found.update({f"{service}:ResourceTag/{k}": v for k, v in tags.items()})
    return found


def request_tags(tags: Mapping[str, str]) -> dict[str, ContextValue]:
    return {**{f"aws:RequestTag/{k}": v for k, v in tags.items()}, "aws:TagKeys": list(tags)}


def _tags(tag_list: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    return {str(t["Key"]): str(t["Value"]) for t in tag_list or ()}


def _tag_specs(specs: Iterable[Mapping[str, Any]] | None) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for spec in specs or ():
        found.setdefault(str(spec["ResourceType"]), {}).update(_tags(spec.get("Tags")))
    return found


# --- EC2 -----------------------------------------------------------------------------------------------------


def _create_tags(call: CallFacts) -> list[Request]:
    tags = _tags(call.params.get("Tags"))
    return [
        call.request(
            "ec2:CreateTags",
            call.ec2_arn(rid),
            {**request_tags(tags), **resource_tags(call.inventory.ec2_tags(rid), "ec2")},
        )
        for rid in call.params.get("Resources", ())
    ]


def _terminate(call: CallFacts) -> list[Request]:
    return [
        call.request("ec2:TerminateInstances", call.ec2_arn(iid), resource_tags(call.inventory.ec2_tags(iid), "ec2"))
        for iid in call.params.get("InstanceIds", ())
    ]


def _delete_launch_template(call: CallFacts) -> list[Request]:
    facts = call.inventory.launch_template(call.params)
    if facts is None:  # EC2 answers not found; IAM authorizes the ARN it can name
        name = call.params.get("LaunchTemplateId") or "lt-unknown"
        return [call.request("ec2:DeleteLaunchTemplate", call.ec2_arn(str(name)))]
    arn = call.ec2_arn(facts.id)
    return [call.request("ec2:DeleteLaunchTemplate", arn, resource_tags(facts.tags, "ec2"))]


def _create_launch_template(call: CallFacts) -> list[Request]:
    arn = call.new_ec2_arn("launch-template")
    tags = _tag_specs(call.params.get("TagSpecifications")).get("launch-template", {})
    requests = [call.request("ec2:CreateLaunchTemplate", arn, request_tags(tags))]
    if tags:
        requests.append(
            call.request("ec2:CreateTags", arn, {**request_tags(tags), "ec2:CreateAction": "CreateLaunchTemplate"})
        )
    return requests


def _create_fleet(call: CallFacts) -> list[Request]:
    """CreateFleet (instant): the fleet, and RunInstances on what each launch template config creates and uses."""
    params = call.params
    fleet_tags = _tag_specs(params.get("TagSpecifications"))
    spot = params.get("TargetCapacitySpecification", {}).get("DefaultTargetCapacityType") == "spot"
    fleet_arn = call.new_ec2_arn("fleet")
    requests = [call.request("ec2:CreateFleet", fleet_arn, request_tags(fleet_tags.get("fleet", {})))]
    if fleet_tags.get("fleet"):
        requests.append(_tag_on_create(call, fleet_arn, fleet_tags["fleet"], "CreateFleet"))
    for config in params.get("LaunchTemplateConfigs", ()):
        template = call.inventory.launch_template(config.get("LaunchTemplateSpecification", {}))
        if template is None:
            continue  # EC2 fails the config (the template does not exist) before anything is authorized for it
        created = _launched_tags(template, fleet_tags, spot)
        used = [call.ec2_arn(template.id)]
        used += [call.ec2_arn(g) for g in _security_groups(template.data)]
        overrides = config.get("Overrides") or [{}]
        images = {str(o.get("ImageId") or template.data.get("ImageId") or "") for o in overrides} - {""}
        subnets = {str(o.get("SubnetId") or "") for o in overrides} - {""}
        used += [call.ec2_arn(i) for i in sorted(images)] + [call.ec2_arn(s) for s in sorted(subnets)]
        group = (template.data.get("Placement") or {}).get("GroupId")
        used += [call.ec2_arn(str(group))] if group else []
        # A launch into a reservation uses the reservation too (EC2 authorizes RunInstances on its ARN).
        target = (template.data.get("CapacityReservationSpecification") or {}).get("CapacityReservationTarget") or {}
        used += [call.ec2_arn(str(target["CapacityReservationId"]))] if target.get("CapacityReservationId") else []
        template_tags = resource_tags(template.tags, "ec2")
        for action in ("ec2:CreateFleet", "ec2:RunInstances"):
            for kind, tags in created.items():
                requests.append(call.request(action, call.new_ec2_arn(kind), request_tags(tags)))
            for arn in used:
                requests.append(call.request(action, arn, template_tags if arn == used[0] else {}))
        for kind, tags in created.items():
            if tags:
                requests.append(_tag_on_create(call, call.new_ec2_arn(kind), tags, "RunInstances"))
        requests += _pass_profile_role(call, template.data)
    return requests


def _launched_tags(
    template: LaunchTemplateFacts, fleet_tags: Mapping[str, Mapping[str, str]], spot: bool
) -> dict[str, dict[str, str]]:
    """The tags each created resource type gets: the launch template's tag specifications, then the fleet's."""
    in_template = _tag_specs(template.data.get("TagSpecifications"))
    kinds = ["instance", "volume", "network-interface", *(["spot-instances-request"] if spot else [])]
    return {kind: {**in_template.get(kind, {}), **fleet_tags.get(kind, {})} for kind in kinds}


def _security_groups(data: Mapping[str, Any]) -> list[str]:
    groups = list(data.get("SecurityGroupIds", ()))
    for interface in data.get("NetworkInterfaces", ()):
        groups += interface.get("Groups", ())
    return sorted(set(groups))


def _tag_on_create(call: CallFacts, arn: str, tags: Mapping[str, str], action: str) -> Request:
    return call.request("ec2:CreateTags", arn, {**request_tags(tags), "ec2:CreateAction": action})


def _pass_profile_role(call: CallFacts, data: Mapping[str, Any]) -> list[Request]:
    profile = data.get("IamInstanceProfile") or {}
    name = profile.get("Name") or str(profile.get("Arn", "")).rsplit("/", 1)[-1]
    facts = call.inventory.instance_profile(name) if name else None
    return [call.request("iam:PassRole", role, TO_EC2) for role in (facts.role_arns if facts else ())]


# --- IAM instance profiles -----------------------------------------------------------------------------------


def _profile(action: str, *, tags_from_request: bool = False, passes_role: bool = False) -> Builder:
    def build(call: CallFacts) -> list[Request]:
        name = str(call.params["InstanceProfileName"])
        facts = call.inventory.instance_profile(name)
        arn = facts.arn if facts else call.iam_arn("instance-profile", name)
        context = resource_tags(facts.tags, "iam") if facts else {}
        if tags_from_request:
            context = {**context, **request_tags(_tags(call.params.get("Tags")))}
        requests = [call.request(action, arn, context)]
        if passes_role:
            requests.append(call.request("iam:PassRole", call.iam_arn("role", str(call.params["RoleName"])), TO_EC2))
        return requests

    return build


# --- the other services --------------------------------------------------------------------------------------


def _everything(action: str) -> Builder:
    return lambda call: [call.request(action, "*")]


def _queue_arn(call: CallFacts, url: str) -> str:
    *_, account, name = url.rstrip("/").split("/")
    return f"arn:{call.env.partition}:sqs:{call.env.region}:{account}:{name}"


def _sqs(action: str) -> Builder:
    def build(call: CallFacts) -> list[Request]:
        if "QueueUrl" in call.params:
            arn = _queue_arn(call, str(call.params["QueueUrl"]))
        else:  # GetQueueUrl
            account = call.params.get("QueueOwnerAWSAccountId") or call.env.account
            arn = f"arn:{call.env.partition}:sqs:{call.env.region}:{account}:{call.params['QueueName']}"
        return [call.request(action, arn)]

    return build


def _table_arn(call: CallFacts, name: str) -> str:
    return f"arn:{call.env.partition}:dynamodb:{call.env.region}:{call.env.account}:table/{name}"


def _dynamodb(action: str) -> Builder:
    def build(call: CallFacts) -> list[Request]:
        if "TableName" in call.params:
            names = [str(call.params["TableName"])]
        else:  # BatchGetItem / BatchWriteItem
            names = sorted(call.params.get("RequestItems", {}))
        return [call.request(action, _table_arn(call, name)) for name in names]

    return build


def _parameter_arn(call: CallFacts, name: str) -> str:
    public = name.startswith("/aws/service/")  # public parameters carry no account
    account = "" if public else call.env.account
    return f"arn:{call.env.partition}:ssm:{call.env.region}:{account}:parameter/{name.lstrip('/')}"


def _ssm(action: str) -> Builder:
    def build(call: CallFacts) -> list[Request]:
        names = call.params.get("Names") or [call.params["Name"]]
        return [call.request(action, _parameter_arn(call, str(n))) for n in names]

    return build


def _describe_cluster(call: CallFacts) -> list[Request]:
    arn = f"arn:{call.env.partition}:eks:{call.env.region}:{call.env.account}:cluster/{call.params['name']}"
    return [call.request("eks:DescribeCluster", arn)]


def _managed_resource(call: CallFacts) -> list[Request]:
    """ARC authorizes on "*" with the resource the call names in ``arc-zonal-shift:ResourceIdentifier``."""
    named = str(call.params.get("resourceIdentifier", ""))
    return [call.request("arc-zonal-shift:GetManagedResource", "*", {"arc-zonal-shift:ResourceIdentifier": named})]


Builder = Callable[[CallFacts], list[Request]]

_BUILDERS: dict[tuple[str, str], Builder] = {
    ("ec2", "CreateFleet"): _create_fleet,
    ("ec2", "CreateLaunchTemplate"): _create_launch_template,
    ("ec2", "CreateTags"): _create_tags,
    ("ec2", "TerminateInstances"): _terminate,
    ("ec2", "DeleteLaunchTemplate"): _delete_launch_template,
    ("iam", "CreateInstanceProfile"): _profile("iam:CreateInstanceProfile", tags_from_request=True),
    ("iam", "TagInstanceProfile"): _profile("iam:TagInstanceProfile", tags_from_request=True),
    ("iam", "AddRoleToInstanceProfile"): _profile("iam:AddRoleToInstanceProfile", passes_role=True),
    ("iam", "RemoveRoleFromInstanceProfile"): _profile("iam:RemoveRoleFromInstanceProfile"),
    ("iam", "DeleteInstanceProfile"): _profile("iam:DeleteInstanceProfile"),
    ("iam", "GetInstanceProfile"): _profile("iam:GetInstanceProfile"),
    ("iam", "ListInstanceProfiles"): _everything("iam:ListInstanceProfiles"),
    ("ssm", "GetParameter"): _ssm("ssm:GetParameter"),
    ("ssm", "GetParameters"): _ssm("ssm:GetParameters"),
    ("eks", "DescribeCluster"): _describe_cluster,
    ("pricing", "GetProducts"): _everything("pricing:GetProducts"),
    ("arc-zonal-shift", "GetManagedResource"): _managed_resource,
}
for _op in ("SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility", "GetQueueAttributes"):
    _BUILDERS[("sqs", _op)] = _sqs(f"sqs:{_op}")
    _BUILDERS[("sqs", f"{_op}Batch")] = _sqs(f"sqs:{_op}")  # a batch is authorized as its single action
_BUILDERS[("sqs", "GetQueueUrl")] = _sqs("sqs:GetQueueUrl")
for _op in ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem"):
    _BUILDERS[("dynamodb", _op)] = _dynamodb(f"dynamodb:{_op}")


def requests_of(
    service: str, operation: str, params: Mapping[str, Any], env: Environment, inventory: Inventory
) -> list[Request]:
    """Every authorization ``operation`` of ``service`` with ``params`` needs; [] for a call that needs none.
    EC2's Describe* actions have no resource-level permissions: they are authorized on ``"*"``."""
    if (service, operation) in _UNAUTHORIZED_OK:
        return []
    base: dict[str, ContextValue] = {"aws:RequestedRegion": env.region}
    call = CallFacts(params, env, inventory, base)
    builder = _BUILDERS.get((service, operation))
    if builder is None and service == "ec2" and operation.startswith("Describe"):
        builder = _everything(f"ec2:{operation}")
    if builder is None:
        raise NotModelled(f"the authorization of {service}:{operation} is not modelled")
    return builder(call)
