"""The read-only checks of ``autoscaler doctor``: each looks at one part of a live installation (the stack's AWS
side through boto3, the cluster side through the API server) and says ok, warn or fail, and what to do.

A check never writes. One that cannot look (an API that does not answer, a permission the caller lacks) says so as
a warning naming the call, rather than guessing either way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from autoscaler import clock, routing
from autoscaler.commands.installation import TRACKED_MANIFESTS, load_manifests
from autoscaler.commands.stack_outputs import StackOutputs
from autoscaler.crds.generate import CRD_KINDS, crd_manifest

OK, WARN, FAIL = "ok", "warn", "fail"
KUBERNETES_GROUP = "serverless-karpenter"  # the group the access entries map the functions to (rbac.yaml binds it)
LEASE = "serverless-karpenter-forwarder"
RECENT = timedelta(hours=1)  # the window of recent errors, throttles
LEASE_STALE = timedelta(seconds=60)
REQUIRED_OUTPUTS = (
    "ClusterName",
    "EventBusName",
    "InterruptionQueueUrl",
    "InterruptionDeadLetterQueueUrl",
    "ProvisioningQueueUrl",
    "ProvisioningDeadLetterQueueUrl",
    "ForwarderRoleArn",
)
# Functions fed by a queue, by the output naming them.
QUEUE_CONSUMERS = {
    "InterruptionFunctionName": "InterruptionQueueUrl",
    "ProvisionerFunctionName": "ProvisioningQueueUrl",
}


@dataclass(frozen=True)
class Finding:
    check: str
    status: str
    detail: str
    action: str = ""  # what to do, when not ok


@dataclass
class Context:
    """What the checks read through: the stack's outputs, a boto3 session and the API server (a KubeRest)."""

    outputs: StackOutputs
    session: Any
    kube: Any
    now: Callable[[], datetime] = clock.utc_now
    clients: dict[str, Any] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = self.session.client(service)
        return self.clients[service]


Check = Callable[[Context], Iterator[Finding]]


def _aws_error(check: str, call: str, error: Exception) -> Finding:
    return Finding(check, WARN, f"cannot read {call}: {error}", "give the identity running doctor read access to it")


# --- the stack -------------------------------------------------------------------------------------------------
def stack_outputs(ctx: Context) -> Iterator[Finding]:
    missing = [key for key in REQUIRED_OUTPUTS if not ctx.outputs.get(key)]
    if missing:
        yield Finding(
            "stack", FAIL, f"{ctx.outputs.source} lacks {', '.join(missing)}", "deploy this version: make deploy"
        )
    else:
        yield Finding("stack", OK, f"{ctx.outputs.source}: cluster {ctx.outputs['ClusterName']}")


def function_health(ctx: Context) -> Iterator[Finding]:
    """Errors and throttles of each function in the last hour (CloudWatch's AWS/Lambda metrics)."""
    cloudwatch = ctx.client("cloudwatch")
    end = ctx.now()
    for key, name in sorted(ctx.outputs.values.items()):
        if not key.endswith("FunctionName"):
            continue
        counts = {}
        for metric in ("Errors", "Throttles"):
            try:
                points = cloudwatch.get_metric_statistics(
                    Namespace="AWS/Lambda",
                    MetricName=metric,
                    Dimensions=[{"Name": "FunctionName", "Value": name}],
                    StartTime=end - RECENT,
                    EndTime=end,
                    Period=int(RECENT.total_seconds()),
                    Statistics=["Sum"],
                )["Datapoints"]
            except Exception as error:  # whatever the AWS error, the check cannot read
                yield _aws_error(f"function {name}", "cloudwatch:GetMetricStatistics", error)
                break
            counts[metric] = int(sum(p.get("Sum", 0) for p in points))
        else:
            if any(counts.values()):
                yield Finding(
                    f"function {name}",
                    WARN,
                    f"{counts['Errors']} errors, {counts['Throttles']} throttles in the last hour",
                    f"read its logs: aws logs tail /aws/lambda/{name} --since 1h (docs/troubleshooting.md)",
                )
            else:
                yield Finding(f"function {name}", OK, "no errors or throttles in the last hour")


def dead_letters(ctx: Context) -> Iterator[Finding]:
    sqs = ctx.client("sqs")
    for key in ("InterruptionDeadLetterQueueUrl", "ProvisioningDeadLetterQueueUrl"):
        url = ctx.outputs.get(key)
        if not url:
            continue
        name = url.rsplit("/", 1)[-1]
        try:
            attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        except Exception as error:
            yield _aws_error(f"dead letters {name}", "sqs:GetQueueAttributes", error)
            continue
        depth = int(attributes["Attributes"].get("ApproximateNumberOfMessages", 0))
        if depth:
            yield Finding(
                f"dead letters {name}",
                WARN,
                f"{depth} messages dead-lettered",
                "read them (aws sqs receive-message) for their reason; docs/troubleshooting.md",
            )
        else:
            yield Finding(f"dead letters {name}", OK, "empty")


def event_sources(ctx: Context) -> Iterator[Finding]:
    """The queue-fed functions' event source mappings exist and are enabled."""
    functions = ctx.client("lambda")
    for function_key, queue_key in QUEUE_CONSUMERS.items():
        name = ctx.outputs.get(function_key)
        if not name:
            continue
        try:
            mappings = functions.list_event_source_mappings(FunctionName=name)["EventSourceMappings"]
        except Exception as error:
            yield _aws_error(f"event source {name}", "lambda:ListEventSourceMappings", error)
            continue
        queue = ctx.outputs.get(queue_key).rsplit("/", 1)[-1]
        states = [m.get("State", "") for m in mappings if str(m.get("EventSourceArn", "")).endswith(f":{queue}")]
        if states and all(state == "Enabled" for state in states):
            yield Finding(f"event source {name}", OK, f"reads {queue}")
        else:
            found = ", ".join(states) or "no mapping"
            yield Finding(
                f"event source {name}",
                FAIL,
                f"from {queue}: {found}",
                "deploy without -c controllersEnabled=false (docs/deploy.md)",
            )


def rules(ctx: Context) -> Iterator[Finding]:
    """The rules feeding each queue exist and are enabled: the interruption rules on the default bus, the cluster
    events' rules on the stack's bus."""
    events = ctx.client("events")
    sqs = ctx.client("sqs")
    wanted = {"InterruptionQueueUrl": ("default", len(routing.INTERRUPTION_RULES))}
    wanted["ProvisioningQueueUrl"] = (ctx.outputs.get("EventBusName"), 1)
    for key, (bus, at_least) in wanted.items():
        url = ctx.outputs.get(key)
        if not url or not bus:
            continue
        name = url.rsplit("/", 1)[-1]
        try:
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            names = events.list_rule_names_by_target(TargetArn=arn, EventBusName=bus)["RuleNames"]
            states = {rule: events.describe_rule(Name=rule, EventBusName=bus)["State"] for rule in names}
        except Exception as error:
            yield _aws_error(f"rules to {name}", "events:ListRuleNamesByTarget", error)
            continue
        disabled = sorted(rule for rule, state in states.items() if state != "ENABLED")
        if len(states) < at_least:
            yield Finding(
                f"rules to {name}",
                FAIL,
                f"{len(states)} rules on bus {bus} target it, {at_least} expected",
                "deploy the stack again (make deploy); a rule deleted by hand is recreated",
            )
        elif disabled:
            yield Finding(
                f"rules to {name}",
                FAIL,
                f"disabled: {', '.join(disabled)}",
                "deploy without -c controllersEnabled=false, or enable them (aws events enable-rule)",
            )
        else:
            yield Finding(f"rules to {name}", OK, f"{len(states)} rules enabled on bus {bus}")


def access_entries(ctx: Context) -> Iterator[Finding]:
    """Each function role that talks to the API server has an access entry mapping it to KUBERNETES_GROUP."""
    eks = ctx.client("eks")
    cluster = ctx.outputs.get("ClusterName")
    for key, role in sorted(ctx.outputs.values.items()):
        if not key.endswith("RoleArn") or key in ("ForwarderRoleArn", "NodeRoleArn", "ConversionRoleArn"):
            continue
        check = f"access entry {key.removesuffix('RoleArn')}"
        try:
            entry = eks.describe_access_entry(clusterName=cluster, principalArn=role)["accessEntry"]
        except Exception as error:
            code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
            if code == "ResourceNotFoundException":
                yield Finding(check, FAIL, f"no access entry for {role}", "deploy the stack again (make deploy)")
            else:
                yield _aws_error(check, "eks:DescribeAccessEntry", error)
            continue
        groups = entry.get("kubernetesGroups", [])
        if KUBERNETES_GROUP in groups:
            yield Finding(check, OK, f"maps to group {KUBERNETES_GROUP}")
        else:
            yield Finding(check, FAIL, f"maps to {groups or 'no group'}", "deploy the stack again (make deploy)")


CHECKS_AWS: Sequence[Check] = (stack_outputs, function_health, dead_letters, event_sources, rules, access_entries)


# --- the cluster -----------------------------------------------------------------------------------------------
def _needs(documents: list[Any]) -> Iterator[tuple[str, str, str, str, str]]:
    """(namespace, group, resource, verb, name) of every rule of the ClusterRoles and Roles in ``documents``."""
    for role in documents:
        if role["kind"] not in ("ClusterRole", "Role"):
            continue
        namespace = role["metadata"].get("namespace", "") if role["kind"] == "Role" else ""
        for rule in role.get("rules", []):
            for group in rule.get("apiGroups", []):
                for resource in rule.get("resources", []):
                    for verb in rule.get("verbs", []):
                        for name in rule.get("resourceNames", [""]):
                            yield namespace, group, resource, verb, name


def _review(ctx: Context, subject: Mapping[str, Any], need: tuple[str, str, str, str, str]) -> bool | None:
    """Whether the API server allows ``need`` to ``subject`` (a SubjectAccessReview); None when it cannot say."""
    namespace, group, resource, verb, name = need
    resource, _, subresource = resource.partition("/")
    attributes = {"group": group, "resource": resource, "verb": verb}
    attributes |= {k: v for k, v in (("namespace", namespace), ("name", name), ("subresource", subresource)) if v}
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {**subject, "resourceAttributes": attributes},
    }
    try:
        answer = ctx.kube.exchange("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=body)[1]
    except Exception:  # not served, or not allowed to ask: cannot say
        return None
    return bool((answer.get("status") or {}).get("allowed"))


def access_reviews(ctx: Context) -> Iterator[Finding]:
    """SubjectAccessReview of every verb the functions (their group) and the forwarder (its service account) need,
    as the tracked RBAC grants them."""
    namespace = ctx.outputs.get("ForwarderNamespace", "kube-system")
    account = ctx.outputs.get("ForwarderServiceAccount", "serverless-karpenter-forwarder")
    subjects = {
        "functions": (
            {"user": "serverless-karpenter:doctor", "groups": [KUBERNETES_GROUP]},
            load_manifests(TRACKED_MANIFESTS / "rbac.yaml"),
        ),
        "forwarder": (
            {"user": f"system:serviceaccount:{namespace}:{account}", "groups": ["system:serviceaccounts"]},
            load_manifests(TRACKED_MANIFESTS / "forwarder" / "rbac.yaml"),
        ),
    }
    for who, (subject, documents) in subjects.items():
        needs = [
            (namespace if n and who == "forwarder" else n, g, r, v, name) for n, g, r, v, name in _needs(documents)
        ]
        answers = {need: _review(ctx, subject, need) for need in needs}
        if any(answer is None for answer in answers.values()):
            yield Finding(
                f"rbac {who}",
                WARN,
                "the API server did not answer SubjectAccessReview (authorization.k8s.io/v1)",
                "run doctor as an identity allowed to create subjectaccessreviews",
            )
            continue
        denied = [f"{v} {r}{'/' + name if name else ''}" for (_, _, r, v, name), ok in answers.items() if not ok]
        if denied:
            yield Finding(
                f"rbac {who}",
                FAIL,
                f"denied: {', '.join(denied[:6])}{' ...' if len(denied) > 6 else ''}",
                "apply the RBAC: autoscaler manifests --from-stack NAME | kubectl apply -f -",
            )
        else:
            yield Finding(f"rbac {who}", OK, f"{len(needs)} verbs allowed")


def schema_digest(crd: Mapping[str, Any]) -> str:
    """A digest of the v1 schema a CRD serves, to tell whether the installed CRDs are this version's."""
    versions = {v["name"]: v.get("schema") for v in crd.get("spec", {}).get("versions", [])}
    served = [name for name in versions if name in ("v1", "v1alpha1", "v1beta1")]
    primary = "v1" if "v1" in versions else (served[0] if served else "")
    return hashlib.sha256(json.dumps(versions.get(primary), sort_keys=True).encode()).hexdigest()[:12]


def crds(ctx: Context) -> Iterator[Finding]:
    for kind in CRD_KINDS:
        name = f"{kind.plural}.{kind.group}"
        wanted = schema_digest(crd_manifest(kind))
        try:
            installed = ctx.kube.get_path(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        except LookupError:
            yield Finding(f"crd {name}", FAIL, "not installed", "autoscaler manifests ... | kubectl apply -f -")
            continue
        found = schema_digest(installed)
        if found == wanted:
            yield Finding(f"crd {name}", OK, f"schema {wanted}")
        else:
            yield Finding(
                f"crd {name}",
                WARN,
                f"schema {found}, this version's is {wanted}",
                "apply this version's CRDs (docs/upgrade.md: CRDs first)",
            )


def forwarder_lease(ctx: Context) -> Iterator[Finding]:
    namespace = ctx.outputs.get("ForwarderNamespace", "kube-system")
    try:
        lease = ctx.kube.get_path(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE}")
    except LookupError:
        yield Finding("forwarder", FAIL, f"no Lease {namespace}/{LEASE}: no forwarder ever led", _FORWARDER_ACTION)
        return
    spec = lease.get("spec") or {}
    renewed = clock.parse_time(spec.get("renewTime"))
    age = ctx.now() - renewed if renewed else None
    if age is None or age > LEASE_STALE:
        shown = f"{int(age.total_seconds())} s ago" if age is not None else "never"
        yield Finding(
            "forwarder", FAIL, f"Lease last renewed {shown} by {spec.get('holderIdentity')}", _FORWARDER_ACTION
        )
    else:
        yield Finding(
            "forwarder", OK, f"{spec.get('holderIdentity')} renewed its Lease {int(age.total_seconds())} s ago"
        )


_FORWARDER_ACTION = "kubectl -n kube-system get pods -l app.kubernetes.io/name=serverless-karpenter-forwarder; logs"


def ready_objects(ctx: Context) -> Iterator[Finding]:
    """NodePools and EC2NodeClasses Ready, with the reasons when not."""
    for label, path in (
        ("nodepools", "/apis/karpenter.sh/v1/nodepools"),
        ("ec2nodeclasses", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses"),
    ):
        try:
            items = ctx.kube.get_path(path).get("items") or []
        except LookupError:
            continue  # the CRD check says why
        if not items:
            yield Finding(label, WARN, "none", "create one (events/manifests/ has examples)")
            continue
        not_ready = []
        for item in items:
            ready = [c for c in (item.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
            if not ready or ready[0].get("status") != "True":
                why = f"{ready[0].get('reason')}: {ready[0].get('message', '')}" if ready else "no Ready condition yet"
                not_ready.append(f"{item['metadata']['name']} ({why})")
        if not_ready:
            yield Finding(
                label, WARN, f"not Ready: {'; '.join(not_ready)}", "kubectl describe it; docs/troubleshooting.md"
            )
        else:
            yield Finding(label, OK, f"{len(items)} Ready")


CHECKS_CLUSTER: Sequence[Check] = (access_reviews, crds, forwarder_lease, ready_objects)
CHECKS: Sequence[Check] = (*CHECKS_AWS, *CHECKS_CLUSTER)


def run_checks(ctx: Context, checks: Sequence[Check] = CHECKS) -> list[Finding]:
    return [finding for check in checks for finding in check(ctx)]
