"""Hypothesis strategies for valid Karpenter v1beta1 objects (as v0.37 accepted them) of every shape the
conversion distinguishes: each AMI family with and without terms, Ubuntu with and without block device
mappings, kubelet or not, each consolidation policy, NodeClaims with and without a NodePool."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

NAME = st.from_regex(r"[a-z][a-z0-9-]{0,14}[a-z0-9]", fullmatch=True)
LABEL_VALUE = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,10}[A-Za-z0-9])?", fullmatch=True)
DOMAIN_KEY = st.builds(lambda d, n: f"{d}/{n}", st.sampled_from(["example.com", "team.io", "apps.acme.org"]), NAME)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
DURATION = st.builds(lambda n, unit: f"{n}{unit}", st.integers(1, 500), st.sampled_from(["s", "m", "h"]))
NILLABLE = st.one_of(DURATION, st.just("Never"))
QUANTITY = st.one_of(st.integers(0, 64), st.sampled_from(["100m", "1.5", "2Gi", "512Mi", "4"]))
TERM_TAGS = st.dictionaries(DOMAIN_KEY, LABEL_VALUE, min_size=1, max_size=2)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def drop_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


@st.composite
def metadata(draw: st.DrawFn, nodepool_label: bool = False) -> dict[str, Any]:
    labels = draw(optional(st.dictionaries(DOMAIN_KEY, LABEL_VALUE, min_size=1, max_size=3)))
    if nodepool_label and draw(st.booleans()):
        labels = {**(labels or {}), "karpenter.sh/nodepool": draw(NAME)}
    return drop_none(
        name=draw(NAME),
        uid=draw(optional(st.uuids().map(str))),
        resourceVersion=draw(optional(st.integers(1, 10**6).map(str))),
        labels=labels,
        annotations=draw(optional(st.dictionaries(DOMAIN_KEY, TEXT, min_size=1, max_size=3))),
        finalizers=draw(optional(st.just(["karpenter.sh/termination"]))),
    )


@st.composite
def requirement(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(
        st.sampled_from(
            [
                "kubernetes.io/arch",
                "karpenter.sh/capacity-type",
                "topology.kubernetes.io/zone",
                "karpenter.k8s.aws/instance-family",
                "node.kubernetes.io/instance-type",
                "team.io/x",
            ]
        )
    )
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
    if operator in ("Gt", "Lt"):
        return {
            "key": "karpenter.k8s.aws/instance-cpu",
            "operator": operator,
            "values": [str(draw(st.integers(0, 99)))],
        }
    if operator in ("Exists", "DoesNotExist"):
        return drop_none(key=key, operator=operator, minValues=draw(optional(st.integers(1, 50))))
    values = draw(st.lists(LABEL_VALUE, min_size=1, max_size=5))
    min_values = draw(optional(st.integers(1, len(values)))) if operator == "In" else None
    return drop_none(key=key, operator=operator, values=values, minValues=min_values)


@st.composite
def taints(draw: st.DrawFn) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """taints and startupTaints, with no key/effect pair twice across both."""
    pairs = draw(
        st.lists(
            st.tuples(NAME, st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])), unique=True, max_size=4
        )
    )
    made = [drop_none(key=k, value=draw(optional(NAME)), effect=e) for k, e in pairs]
    split = draw(st.integers(0, len(made)))
    return made[:split] or None, made[split:] or None


@st.composite
def kubelet(draw: st.DrawFn) -> dict[str, Any]:
    signals = draw(
        st.lists(st.sampled_from(["memory.available", "nodefs.available", "imagefs.available"]), unique=True)
    )
    low = draw(st.integers(0, 98))
    return drop_none(
        clusterDNS=draw(optional(st.lists(st.ip_addresses(v=4).map(str), min_size=1, max_size=2))),
        maxPods=draw(optional(st.integers(0, 500))),
        podsPerCore=draw(optional(st.integers(0, 20))),
        systemReserved=draw(optional(st.fixed_dictionaries({"cpu": st.just("100m"), "memory": st.just("256Mi")}))),
        kubeReserved=draw(optional(st.fixed_dictionaries({"ephemeral-storage": st.just("1Gi")}))),
        evictionHard=draw(optional(st.fixed_dictionaries({"memory.available": st.just("5%")}))),
        evictionSoft=dict.fromkeys(signals, "10%") or None,
        evictionSoftGracePeriod={s: draw(DURATION) for s in signals} or None,
        evictionMaxPodGracePeriod=draw(optional(st.integers(0, 600))),
        imageGCHighThresholdPercent=draw(optional(st.just(low + 1))),
        imageGCLowThresholdPercent=draw(optional(st.just(low))),
        cpuCFSQuota=draw(optional(st.booleans())),
    )


@st.composite
def reference(draw: st.DrawFn) -> dict[str, Any]:
    api_version = draw(optional(st.sampled_from(["karpenter.k8s.aws/v1beta1", "example.com/v1alpha1"])))
    return drop_none(
        name=draw(NAME), kind=draw(optional(st.sampled_from(["EC2NodeClass", "OtherClass"]))), apiVersion=api_version
    )


@st.composite
def claim_spec(draw: st.DrawFn) -> dict[str, Any]:
    taint_list, startup = draw(taints())
    return drop_none(
        taints=taint_list,
        startupTaints=startup,
        requirements=draw(st.lists(requirement(), max_size=4)),
        kubelet=draw(optional(kubelet())),
        nodeClassRef=draw(reference()),
    )


@st.composite
def disruption(draw: st.DrawFn) -> dict[str, Any]:
    policy = draw(st.sampled_from(["WhenEmpty", "WhenUnderutilized"]))
    after = draw(NILLABLE) if policy == "WhenEmpty" else draw(optional(st.just("Never")))
    budgets = draw(
        optional(
            st.lists(
                st.one_of(
                    st.fixed_dictionaries({"nodes": st.sampled_from(["10%", "0", "3", "100%"])}),
                    st.fixed_dictionaries(
                        {
                            "nodes": st.just("0"),
                            "schedule": st.sampled_from(["@daily", "0 9 * * 1-5"]),
                            "duration": st.sampled_from(["1h", "8h", "30m"]),
                        }
                    ),
                ),
                min_size=1,
                max_size=3,
            )
        )
    )
    return drop_none(consolidationPolicy=policy, consolidateAfter=after, expireAfter=draw(NILLABLE), budgets=budgets)


@st.composite
def nodepools(draw: st.DrawFn) -> dict[str, Any]:
    template_metadata = drop_none(
        labels=draw(optional(st.dictionaries(DOMAIN_KEY, LABEL_VALUE, min_size=1, max_size=2))),
        annotations=draw(optional(st.dictionaries(DOMAIN_KEY, TEXT, min_size=1, max_size=2))),
    )
    spec = drop_none(
        template=drop_none(metadata=template_metadata or None, spec=draw(claim_spec())),
        disruption=draw(disruption()),
        limits=draw(optional(st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITY, min_size=1))),
        weight=draw(optional(st.integers(1, 100))),
    )
    status = draw(
        optional(st.fixed_dictionaries({"resources": st.dictionaries(st.sampled_from(["cpu", "nodes"]), QUANTITY)}))
    )
    return drop_none(
        apiVersion="karpenter.sh/v1beta1", kind="NodePool", metadata=draw(metadata()), spec=spec, status=status
    )


@st.composite
def nodeclaims(draw: st.DrawFn) -> dict[str, Any]:
    spec = draw(claim_spec())
    requests = draw(optional(st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), QUANTITY, min_size=1)))
    if requests:
        spec["resources"] = {"requests": requests}
    status = drop_none(
        nodeName=draw(optional(st.just("ip-10-0-0-1.ec2.internal"))),
        providerID=draw(optional(st.just("aws:///us-west-2a/i-0123456789abcdef0"))),
        imageID=draw(optional(st.just("ami-0123456789abcdef0"))),
        capacity=draw(optional(st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITY, min_size=1))),
    )
    return drop_none(
        apiVersion="karpenter.sh/v1beta1",
        kind="NodeClaim",
        metadata=draw(metadata(nodepool_label=True)),
        spec=spec,
        status=status or None,
    )


AMI_TERM = st.one_of(
    st.fixed_dictionaries({"tags": TERM_TAGS}),
    st.builds(lambda n: {"id": f"ami-{n:017x}"}, st.integers(0, 2**64)),
    st.fixed_dictionaries({"name": NAME}, optional={"owner": st.sampled_from(["self", "amazon", "123456789012"])}),
)
SUBNET_TERM = st.one_of(
    st.fixed_dictionaries({"tags": TERM_TAGS}), st.builds(lambda n: {"id": f"subnet-{n:08x}"}, st.integers(0, 2**32))
)
GROUP_TERM = st.one_of(
    SUBNET_TERM.map(lambda t: {"tags": t["tags"]} if "tags" in t else {"id": "sg-" + t["id"][7:]}),
    st.fixed_dictionaries({"name": NAME}),
)
BLOCK_DEVICE = st.fixed_dictionaries(
    {"deviceName": st.sampled_from(["/dev/xvda", "/dev/xvdb", "/dev/sda1"])},
    optional={
        "rootVolume": st.booleans(),
        "ebs": st.fixed_dictionaries(
            {"volumeSize": st.sampled_from(["20Gi", "100Gi", "1Ti"])},
            optional={
                "volumeType": st.sampled_from(["gp3", "io2"]),
                "encrypted": st.booleans(),
                "iops": st.integers(3000, 16000),
                "throughput": st.integers(125, 1000),
                "deleteOnTermination": st.booleans(),
            },
        ),
    },
)


@st.composite
def nodeclasses(draw: st.DrawFn) -> dict[str, Any]:
    family = draw(st.sampled_from(["AL2", "AL2023", "Bottlerocket", "Ubuntu", "Custom", "Windows2019", "Windows2022"]))
    terms = draw(
        st.lists(AMI_TERM, min_size=1, max_size=3)
        if family == "Custom"
        else optional(st.lists(AMI_TERM, min_size=1, max_size=3))
    )
    bdms = draw(optional(st.lists(BLOCK_DEVICE, min_size=1, max_size=3)))
    if bdms and sum(1 for b in bdms if b.get("rootVolume")) > 1:
        bdms = [{k: v for k, v in b.items() if k != "rootVolume"} for b in bdms]
    meta = draw(metadata())
    if family in ("AL2", "AL2023", "Bottlerocket") and not terms and draw(st.booleans()):
        meta["annotations"] = {
            **meta.get("annotations", {}),
            "compatibility.karpenter.k8s.aws/v1-alias-version": "v20240807",
        }
    role = draw(st.booleans())
    spec = drop_none(
        amiFamily=family,
        amiSelectorTerms=terms,
        subnetSelectorTerms=draw(st.lists(SUBNET_TERM, min_size=1, max_size=3)),
        securityGroupSelectorTerms=draw(st.lists(GROUP_TERM, min_size=1, max_size=3)),
        associatePublicIPAddress=draw(optional(st.booleans())),
        userData=draw(optional(TEXT)),
        role="KarpenterNodeRole" if role else None,
        instanceProfile=None if role else "KarpenterNodeInstanceProfile",
        tags=draw(optional(st.dictionaries(DOMAIN_KEY, TEXT, min_size=1, max_size=3))),
        blockDeviceMappings=bdms,
        instanceStorePolicy=draw(optional(st.just("RAID0"))),
        detailedMonitoring=draw(optional(st.booleans())),
        metadataOptions=draw(
            optional(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "httpEndpoint": st.sampled_from(["enabled", "disabled"]),
                        "httpProtocolIPv6": st.sampled_from(["enabled", "disabled"]),
                        "httpPutResponseHopLimit": st.integers(1, 64),
                        "httpTokens": st.sampled_from(["required", "optional"]),
                    },
                )
            )
        ),
        context=draw(optional(st.just("arn:aws:ec2:us-west-2:123456789012:context/a"))),
    )
    status = draw(
        optional(
            st.fixed_dictionaries(
                {"instanceProfile": st.just("profile"), "subnets": st.just([{"id": "subnet-1", "zone": "us-west-2a"}])}
            )
        )
    )
    return drop_none(
        apiVersion="karpenter.k8s.aws/v1beta1", kind="EC2NodeClass", metadata=meta, spec=spec, status=status
    )


V1BETA1_OBJECTS = st.one_of(nodepools(), nodeclaims(), nodeclasses())
