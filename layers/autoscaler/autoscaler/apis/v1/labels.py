"""Karpenter v1's well-known labels, annotations, taints, finalizers and tag keys, in one place.

Values are Karpenter's own (``sigs.k8s.io/karpenter/pkg/apis/v1`` and the AWS provider's
``pkg/apis/v1``) so that nodes, NodeClaims and instances look exactly as Karpenter's do.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "karpenter.sh"
AWS_GROUP: Final = "karpenter.k8s.aws"
COMPATIBILITY_GROUP: Final = "compatibility.karpenter.sh"
AWS_COMPATIBILITY_GROUP: Final = "compatibility.karpenter.k8s.aws"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
AWS_API_VERSION: Final = f"{AWS_GROUP}/{VERSION}"

# --- Kubernetes' own well-known node labels -----------------------------------------------------
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_ARCH: Final = "kubernetes.io/arch"
LABEL_OS: Final = "kubernetes.io/os"
LABEL_INSTANCE_TYPE: Final = "node.kubernetes.io/instance-type"
LABEL_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_REGION: Final = "topology.kubernetes.io/region"
LABEL_WINDOWS_BUILD: Final = "node.kubernetes.io/windows-build"
LABEL_EXCLUDE_FROM_LOAD_BALANCERS: Final = "node.kubernetes.io/exclude-from-external-load-balancers"

# --- Karpenter's labels ---------------------------------------------------------------------------
LABEL_NODEPOOL: Final = f"{GROUP}/nodepool"
LABEL_CAPACITY_TYPE: Final = f"{GROUP}/capacity-type"
LABEL_INITIALIZED: Final = f"{GROUP}/initialized"
LABEL_REGISTERED: Final = f"{GROUP}/registered"

CAPACITY_TYPE_SPOT: Final = "spot"
CAPACITY_TYPE_ON_DEMAND: Final = "on-demand"
ARCH_AMD64: Final = "amd64"
ARCH_ARM64: Final = "arm64"

# --- The AWS provider's labels --------------------------------------------------------------------
LABEL_NODECLASS: Final = f"{AWS_GROUP}/ec2nodeclass"
LABEL_ZONE_ID: Final = "topology.k8s.aws/zone-id"
LABEL_INSTANCE_HYPERVISOR: Final = f"{AWS_GROUP}/instance-hypervisor"
LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT: Final = f"{AWS_GROUP}/instance-encryption-in-transit-supported"
LABEL_INSTANCE_CATEGORY: Final = f"{AWS_GROUP}/instance-category"
LABEL_INSTANCE_FAMILY: Final = f"{AWS_GROUP}/instance-family"
LABEL_INSTANCE_GENERATION: Final = f"{AWS_GROUP}/instance-generation"
LABEL_INSTANCE_LOCAL_NVME: Final = f"{AWS_GROUP}/instance-local-nvme"
LABEL_INSTANCE_SIZE: Final = f"{AWS_GROUP}/instance-size"
LABEL_INSTANCE_CPU: Final = f"{AWS_GROUP}/instance-cpu"
LABEL_INSTANCE_CPU_MANUFACTURER: Final = f"{AWS_GROUP}/instance-cpu-manufacturer"
# Not set by our catalogue; Karpenter's NodeClaim CRD accepts it in requirements.
LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED: Final = f"{AWS_GROUP}/instance-cpu-sustained-clock-speed-mhz"
LABEL_INSTANCE_MEMORY: Final = f"{AWS_GROUP}/instance-memory"
LABEL_INSTANCE_EBS_BANDWIDTH: Final = f"{AWS_GROUP}/instance-ebs-bandwidth"
LABEL_INSTANCE_NETWORK_BANDWIDTH: Final = f"{AWS_GROUP}/instance-network-bandwidth"
LABEL_INSTANCE_GPU_NAME: Final = f"{AWS_GROUP}/instance-gpu-name"
LABEL_INSTANCE_GPU_MANUFACTURER: Final = f"{AWS_GROUP}/instance-gpu-manufacturer"
LABEL_INSTANCE_GPU_COUNT: Final = f"{AWS_GROUP}/instance-gpu-count"
LABEL_INSTANCE_GPU_MEMORY: Final = f"{AWS_GROUP}/instance-gpu-memory"
LABEL_INSTANCE_ACCELERATOR_NAME: Final = f"{AWS_GROUP}/instance-accelerator-name"
LABEL_INSTANCE_ACCELERATOR_MANUFACTURER: Final = f"{AWS_GROUP}/instance-accelerator-manufacturer"
LABEL_INSTANCE_ACCELERATOR_COUNT: Final = f"{AWS_GROUP}/instance-accelerator-count"
# Labels Karpenter v1.14 knows and our catalogue does not set yet (reserved capacity, flex); the placement group
# labels come from the class's placement group and the instance's partition.
LABEL_INSTANCE_TENANCY: Final = f"{AWS_GROUP}/instance-tenancy"
LABEL_INSTANCE_CAPABILITY_FLEX: Final = f"{AWS_GROUP}/instance-capability-flex"
LABEL_CAPACITY_RESERVATION_ID: Final = f"{AWS_GROUP}/capacity-reservation-id"
LABEL_CAPACITY_RESERVATION_TYPE: Final = f"{AWS_GROUP}/capacity-reservation-type"
LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE: Final = f"{AWS_GROUP}/capacity-reservation-interruptible"
LABEL_PLACEMENT_GROUP_ID: Final = f"{AWS_GROUP}/placement-group-id"
LABEL_PLACEMENT_GROUP_PARTITION: Final = f"{AWS_GROUP}/placement-group-partition"

# The karpenter.k8s.aws labels the CRDs' label-domain rules allow, in Karpenter v1.14.1's order: a NodeOverlay's
# requirements may name the instance labels and the class; NodePool and NodeClaim requirements (and NodePool
# labels) also the tenancy, reservation and placement group labels.
OVERLAY_AWS_LABELS: Final = (
    LABEL_NODECLASS,
    LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT,
    LABEL_INSTANCE_CATEGORY,
    LABEL_INSTANCE_HYPERVISOR,
    LABEL_INSTANCE_FAMILY,
    LABEL_INSTANCE_GENERATION,
    LABEL_INSTANCE_LOCAL_NVME,
    LABEL_INSTANCE_SIZE,
    LABEL_INSTANCE_CPU,
    LABEL_INSTANCE_CPU_MANUFACTURER,
    LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED,
    LABEL_INSTANCE_MEMORY,
    LABEL_INSTANCE_EBS_BANDWIDTH,
    LABEL_INSTANCE_NETWORK_BANDWIDTH,
    LABEL_INSTANCE_GPU_NAME,
    LABEL_INSTANCE_GPU_MANUFACTURER,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_INSTANCE_GPU_MEMORY,
    LABEL_INSTANCE_ACCELERATOR_NAME,
    LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
    LABEL_INSTANCE_ACCELERATOR_COUNT,
    LABEL_INSTANCE_CAPABILITY_FLEX,
)
# The instance labels our catalogue sets, which a NodePool may constrain: those above but the class and the two
# Karpenter v1.14 knows and we do not set yet.
AWS_INSTANCE_LABELS: Final = tuple(
    label
    for label in OVERLAY_AWS_LABELS
    if label not in (LABEL_NODECLASS, LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED, LABEL_INSTANCE_CAPABILITY_FLEX)
)
_RESERVATION_LABELS: Final = (
    LABEL_INSTANCE_TENANCY,
    LABEL_CAPACITY_RESERVATION_TYPE,
    LABEL_CAPACITY_RESERVATION_ID,
    LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
)
_PLACEMENT_GROUP_LABELS: Final = (LABEL_PLACEMENT_GROUP_ID, LABEL_PLACEMENT_GROUP_PARTITION)
REQUIREMENT_AWS_LABELS: Final = (*_RESERVATION_LABELS, *OVERLAY_AWS_LABELS, *_PLACEMENT_GROUP_LABELS)
# Karpenter v1.14.1's NodePool label rule lists capacity-reservation-interruptible twice; kept, so that the
# generated rule is Karpenter's character for character.
TEMPLATE_LABEL_AWS_LABELS: Final = (
    *_RESERVATION_LABELS,
    LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
    *OVERLAY_AWS_LABELS,
    *_PLACEMENT_GROUP_LABELS,
)

# Labels in restricted domains that Karpenter nevertheless knows and lets NodePools and pods use: those our
# instance type catalogue sets (the scheduler's view). API_WELL_KNOWN_LABELS below is Karpenter's full set.
WELL_KNOWN_LABELS: Final = frozenset(
    {
        LABEL_NODEPOOL,
        LABEL_ZONE,
        LABEL_REGION,
        LABEL_INSTANCE_TYPE,
        LABEL_ARCH,
        LABEL_OS,
        LABEL_CAPACITY_TYPE,
        LABEL_WINDOWS_BUILD,
        LABEL_ZONE_ID,
        *AWS_INSTANCE_LABELS,
    }
)

# Karpenter v1.14.1's well-known labels (core and AWS provider): what its runtime validation lets a NodePool
# label and require inside the restricted domains. The labels here that WELL_KNOWN_LABELS lacks are accepted
# by the API and not yet acted on.
API_WELL_KNOWN_LABELS: Final = WELL_KNOWN_LABELS | {
    *_RESERVATION_LABELS,
    *_PLACEMENT_GROUP_LABELS,
    LABEL_INSTANCE_CAPABILITY_FLEX,
    LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED,
}
# Domains Karpenter v1.14.1's runtime validation reserves (with their sub-domains), and the labels it forbids.
API_RESTRICTED_LABEL_DOMAINS: Final = (GROUP, AWS_GROUP)
# Values Karpenter knows for some well-known labels: a requirement In none of them can never be met.
CAPACITY_TYPE_RESERVED: Final = "reserved"
WELL_KNOWN_VALUES: Final = {
    LABEL_CAPACITY_TYPE: frozenset({CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_RESERVED}),
    LABEL_INSTANCE_TENANCY: frozenset({"default", "dedicated"}),
}

# Domains reserved by the kubelet or by Karpenter, and the sub-domains exempt from them.
RESTRICTED_LABEL_DOMAINS: Final = ("kubernetes.io", "k8s.io", GROUP, AWS_GROUP)
LABEL_DOMAIN_EXCEPTIONS: Final = ("kops.k8s.io", "node.kubernetes.io", "node-restriction.kubernetes.io")
RESTRICTED_LABELS: Final = frozenset({LABEL_HOSTNAME})

# Deprecated beta labels, read as their stable equivalents.
NORMALIZED_LABELS: Final = {
    "failure-domain.beta.kubernetes.io/zone": LABEL_ZONE,
    "failure-domain.beta.kubernetes.io/region": LABEL_REGION,
    "beta.kubernetes.io/arch": LABEL_ARCH,
    "beta.kubernetes.io/os": LABEL_OS,
    "beta.kubernetes.io/instance-type": LABEL_INSTANCE_TYPE,
}

# --- Annotations ----------------------------------------------------------------------------------
ANNOTATION_DO_NOT_DISRUPT: Final = f"{GROUP}/do-not-disrupt"
ANNOTATION_NODEPOOL_HASH: Final = f"{GROUP}/nodepool-hash"
ANNOTATION_NODEPOOL_HASH_VERSION: Final = f"{GROUP}/nodepool-hash-version"
ANNOTATION_NODECLASS_HASH: Final = f"{AWS_GROUP}/ec2nodeclass-hash"
ANNOTATION_NODECLASS_HASH_VERSION: Final = f"{AWS_GROUP}/ec2nodeclass-hash-version"
ANNOTATION_TERMINATION_TIMESTAMP: Final = f"{GROUP}/nodeclaim-termination-timestamp"
ANNOTATION_KUBELET_COMPATIBILITY: Final = f"{COMPATIBILITY_GROUP}/v1beta1-kubelet-conversion"
ANNOTATION_NODECLASS_REFERENCE: Final = f"{COMPATIBILITY_GROUP}/v1beta1-nodeclass-reference"
ANNOTATION_UBUNTU_COMPATIBILITY: Final = f"{AWS_COMPATIBILITY_GROUP}/v1beta1-ubuntu"
# A pinned alias version, kept on a v1beta1 EC2NodeClass (which has no alias) for the way back to v1.
ANNOTATION_ALIAS_VERSION_COMPATIBILITY: Final = f"{AWS_COMPATIBILITY_GROUP}/v1-alias-version"
# Ours: a NodeClaim converted from v1beta1 without its NodePool at hand; its expireAfter is the NodePool's.
ANNOTATION_EXPIRE_AFTER_COMPATIBILITY: Final = f"{COMPATIBILITY_GROUP}/v1beta1-expire-after-from-nodepool"
# Set by Karpenter's storage-version migration; dropped when an object is read as v1beta1.
ANNOTATION_STORED_VERSION_MIGRATED: Final = f"{GROUP}/stored-version-migrated"
ANNOTATION_INSTANCE_TAGGED: Final = f"{AWS_GROUP}/tagged"
# Karpenter v1alpha1's: a NodeClaim some of whose instance types a NodeOverlay priced (the launch then follows the
# overlaid prices: EC2 Fleet's prioritized strategies) or gave capacity.
ANNOTATION_PRICE_OVERLAY_APPLIED: Final = f"{GROUP}/price-overlay-applied"
ANNOTATION_CAPACITY_OVERLAY_APPLIED: Final = f"{GROUP}/capacity-overlay-applied"
# Ours: the UIDs of the pods a NodeClaim was created for, held on it until it initializes (NodeClaim only).
ANNOTATION_NOMINATED_PODS: Final = "serverless-karpenter.io/nominated-pods"
# Karpenter v1beta1's annotations, replaced by do-not-disrupt in v1.
ANNOTATION_DO_NOT_EVICT_V1BETA1: Final = f"{GROUP}/do-not-evict"
ANNOTATION_DO_NOT_CONSOLIDATE_V1BETA1: Final = f"{GROUP}/do-not-consolidate"

# --- Taints and finalizers ------------------------------------------------------------------------
TAINT_DISRUPTED: Final = f"{GROUP}/disrupted"
TAINT_UNREGISTERED: Final = f"{GROUP}/unregistered"
FINALIZER_TERMINATION: Final = f"{GROUP}/termination"
FINALIZER_NODECLASS_TERMINATION: Final = f"{AWS_GROUP}/termination"

# --- AWS tag keys ---------------------------------------------------------------------------------
TAG_CLUSTER_NAME: Final = "eks:eks-cluster-name"
TAG_CLUSTER_ARN: Final = "eks:eks-cluster-arn"
TAG_CLUSTER_PREFIX: Final = "kubernetes.io/cluster/"
TAG_NODEPOOL: Final = LABEL_NODEPOOL
TAG_NODECLASS: Final = LABEL_NODECLASS
TAG_NODECLAIM: Final = f"{GROUP}/nodeclaim"
TAG_NAME: Final = "Name"
TAG_REGION: Final = LABEL_REGION
TAG_LAUNCH_TEMPLATE_CLUSTER: Final = f"{AWS_GROUP}/cluster"

# Tag keys a user may not set on an EC2NodeClass: we own them, and IAM conditions key on them.
RESTRICTED_TAG_KEYS: Final = frozenset({TAG_CLUSTER_NAME, TAG_NODEPOOL, TAG_NODECLAIM, TAG_NODECLASS})

# --- Resources ------------------------------------------------------------------------------------
RESOURCE_CPU: Final = "cpu"
RESOURCE_MEMORY: Final = "memory"
RESOURCE_PODS: Final = "pods"
RESOURCE_EPHEMERAL_STORAGE: Final = "ephemeral-storage"
RESOURCE_NVIDIA_GPU: Final = "nvidia.com/gpu"
RESOURCE_AMD_GPU: Final = "amd.com/gpu"
RESOURCE_AWS_NEURON: Final = "aws.amazon.com/neuron"
RESOURCE_HABANA_GAUDI: Final = "habana.ai/gaudi"
RESOURCE_AWS_POD_ENI: Final = "vpc.amazonaws.com/pod-eni"
RESOURCE_EFA: Final = "vpc.amazonaws.com/efa"
RESOURCE_AWS_NEURON_CORE: Final = "aws.amazon.com/neuroncore"
# Karpenter v1.14.1's WellKnownResources (core's plus those the AWS provider adds; not the GPUs): a NodeOverlay
# may not add capacity of these.
API_WELL_KNOWN_RESOURCES: Final = frozenset(
    {
        RESOURCE_CPU,
        RESOURCE_MEMORY,
        RESOURCE_EPHEMERAL_STORAGE,
        RESOURCE_PODS,
        RESOURCE_AWS_POD_ENI,
        RESOURCE_AWS_NEURON,
        RESOURCE_AWS_NEURON_CORE,
        RESOURCE_HABANA_GAUDI,
        RESOURCE_EFA,
    }
)


def label_domain(key: str) -> str:
    """The DNS prefix of a label key: ``"karpenter.sh/nodepool"`` -> ``"karpenter.sh"``."""
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def is_restricted_node_label(key: str) -> bool:
    """True when Karpenter must not put this label on a node: it is reserved and not well known."""
    if key in WELL_KNOWN_LABELS:
        return False
    domain = label_domain(key)
    if any(domain.endswith(exception) for exception in LABEL_DOMAIN_EXCEPTIONS):
        return False
    if any(domain.endswith(restricted) for restricted in RESTRICTED_LABEL_DOMAINS):
        return True
    return key in RESTRICTED_LABELS


def normalize_label(key: str) -> str:
    """The stable name of a label that may be given by its deprecated beta name."""
    return NORMALIZED_LABELS.get(key, key)
